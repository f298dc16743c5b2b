internal import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An LMDB environment: one memory-mapped file holding named databases.
///
/// Thread-safe: opened with `MDB_NOTLS`, so read transactions are not tied to threads. LMDB allows a single write
/// transaction at a time; `write` serialises them. The map grows on `MDB_MAP_FULL` (the write closure runs again in a
/// fresh transaction, so it must not have side effects outside the transaction it is given) and adopts the size chosen
/// by another process on `MDB_MAP_RESIZED`.
public final class Environment: @unchecked Sendable {
    /// How to open an environment.
    public struct Options: Sendable {
        /// Initial map size in bytes; it grows by doubling (up to `maxMapSize`) when full.
        public var mapSize: Int = 1 << 30
        /// The map never grows beyond this.
        public var maxMapSize: Int = 1 << 40
        public var maxDatabases: UInt32 = 32
        public var maxReaders: UInt32 = 1024
        /// The path names a file rather than a directory (`MDB_NOSUBDIR`).
        public var noSubdirectory = false
        public var readOnly = false
        /// Skip fsync on commit (`MDB_NOSYNC`). Only for throwaway data: acknowledged writes may be lost.
        public var unsafeNoSync = false
        /// File mode for newly created files.
        public var fileMode: UInt32 = 0o640

        public init() {}
    }

    let handle: OpaquePointer
    public let path: String
    public let options: Options
    /// Readers hold it shared; resizing the map holds it exclusively (LMDB requires no live transaction then).
    private let resizeLock = ReadWriteLock()
    /// LMDB has one writer at a time; waiting on this lock is cheaper and clearer than waiting inside LMDB.
    private let writerLock = Mutex()
    /// Number of stale reader slots cleared at open (`mdb_reader_check`).
    public private(set) var staleReadersCleared: Int32 = 0

    /// Opens (creating if needed) the environment at `path`, a directory unless `noSubdirectory`.
    public init(path: String, options: Options = Options()) throws {
        var env: OpaquePointer?
        try check(mdb_env_create(&env), "mdb_env_create")
        guard let env else { throw LMDBError(code: ENOMEM, operation: "mdb_env_create") }
        self.handle = env
        self.path = path
        self.options = options
        do {
            try check(mdb_env_set_maxdbs(env, options.maxDatabases), "mdb_env_set_maxdbs")
            try check(mdb_env_set_maxreaders(env, options.maxReaders), "mdb_env_set_maxreaders")
            try check(mdb_env_set_mapsize(env, options.mapSize), "mdb_env_set_mapsize")
            var flags = UInt32(MDB_NOTLS)
            if options.noSubdirectory { flags |= UInt32(MDB_NOSUBDIR) }
            if options.readOnly { flags |= UInt32(MDB_RDONLY) }
            if options.unsafeNoSync { flags |= UInt32(MDB_NOSYNC) }
            try check(mdb_env_open(env, path, flags, mdb_mode_t(options.fileMode)), "mdb_env_open(\(path))")
            var dead: Int32 = 0
            try check(mdb_reader_check(env, &dead), "mdb_reader_check")
            staleReadersCleared = dead
        } catch {
            mdb_env_close(env)
            throw error
        }
    }

    deinit { mdb_env_close(handle) }

    // MARK: - Databases

    /// Opens a named database (or the unnamed one when `name` is nil), creating it unless read-only.
    ///
    /// Database handles stay valid for the life of the environment; open them once at start-up.
    public func openDatabase(_ name: String?, flags: Database.Flags = []) throws -> Database {
        var creating = flags
        if options.readOnly {
            // A handle opened in a transaction is private to it until that transaction commits, even a read-only one.
            resizeLock.lockShared()
            defer { resizeLock.unlock() }
            let txn = try Transaction(environment: self, readOnly: true)
            let db = try txn.openDatabase(name, flags: creating)
            try txn.commit()
            return db
        }
        creating.insert(.create)
        return try write { txn in try txn.openDatabase(name, flags: creating) }
    }

    // MARK: - Transactions

    /// Runs `body` in a read-only transaction. Values handed out inside are zero-copy views of the map, valid only
    /// until `body` returns.
    public func read<R>(_ body: (Transaction) throws -> R) throws -> R {
        resizeLock.lockShared()
        defer { resizeLock.unlock() }
        while true {
            let txn: Transaction
            do {
                txn = try Transaction(environment: self, readOnly: true)
            } catch let error as LMDBError where error == .mapResized {
                // Another process grew the map. Adopting its size needs no live transaction: drop the shared lock.
                resizeLock.unlock()
                adoptMapSize()
                resizeLock.lockShared()
                continue
            }
            defer { txn.abort() }
            return try body(txn)
        }
    }

    /// Runs `body` in a write transaction: commits (durably, unless `unsafeNoSync`) when it returns, aborts when it
    /// throws. On `MDB_MAP_FULL` the map is doubled and `body` runs again in a new transaction.
    public func write<R>(_ body: (Transaction) throws -> R) throws -> R {
        writerLock.lock()
        defer { writerLock.unlock() }
        while true {
            do {
                return try attemptWrite(body)
            } catch let error as LMDBError where error == .mapFull {
                try grow()
            } catch let error as LMDBError where error == .mapResized {
                adoptMapSize()
            }
        }
    }

    private func attemptWrite<R>(_ body: (Transaction) throws -> R) throws -> R {
        resizeLock.lockShared()
        defer { resizeLock.unlock() }
        let txn = try Transaction(environment: self, readOnly: false)
        let result: R
        do {
            result = try body(txn)
        } catch {
            txn.abort()
            throw error
        }
        try txn.commit()
        return result
    }

    /// Doubles the map. Called with no transaction of ours alive (writer lock held, resize lock exclusive).
    private func grow() throws {
        resizeLock.lockExclusive()
        defer { resizeLock.unlock() }
        let current = info.mapSize
        guard current < options.maxMapSize else {
            throw LMDBError(code: MDB_MAP_FULL, operation: "map at its maximum size \(options.maxMapSize)")
        }
        let next = min(current * 2, options.maxMapSize)
        try check(mdb_env_set_mapsize(handle, next), "mdb_env_set_mapsize(\(next))")
    }

    private func adoptMapSize() {
        resizeLock.lockExclusive()
        defer { resizeLock.unlock() }
        _ = mdb_env_set_mapsize(handle, 0)
    }

    // MARK: - Facts about the environment

    /// The map's size and use.
    public struct Info: Sendable {
        public var mapSize: Int
        public var lastPageNumber: Int
        public var lastTransactionID: Int
        public var maxReaders: Int
        public var readersInUse: Int
        public var pageSize: Int
        /// Bytes in use: (last page + 1) × page size.
        public var usedBytes: Int { (lastPageNumber + 1) * pageSize }
    }

    public var info: Info {
        var i = MDB_envinfo()
        mdb_env_info(handle, &i)
        var s = MDB_stat()
        mdb_env_stat(handle, &s)
        return Info(
            mapSize: Int(i.me_mapsize), lastPageNumber: Int(i.me_last_pgno), lastTransactionID: Int(i.me_last_txnid),
            maxReaders: Int(i.me_maxreaders), readersInUse: Int(i.me_numreaders), pageSize: Int(s.ms_psize))
    }

    /// Flushes the map to disk (only needed with `unsafeNoSync`).
    public func sync(force: Bool = true) throws {
        try check(mdb_env_sync(handle, force ? 1 : 0), "mdb_env_sync")
    }

    /// Writes a consistent copy of the environment into the directory `path` (which must exist and be empty).
    public func copy(to path: String, compact: Bool = false) throws {
        try check(mdb_env_copy2(handle, path, compact ? UInt32(MDB_CP_COMPACT) : 0), "mdb_env_copy2(\(path))")
    }
}
