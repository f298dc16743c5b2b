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
    let writerLock = Mutex()
    /// Number of stale reader slots cleared at open (`mdb_reader_check`).
    public let staleReadersCleared: Int32

    /// Opens (creating if needed) the environment at `path`, a directory unless `noSubdirectory`.
    ///
    /// Throws (never crashes) when the files cannot be opened: garbage or damaged meta pages (`MDB_INVALID`), a
    /// version mismatch, no permission, a path of the wrong kind, a full disk.
    public init(path: String, options: Options = Options()) throws {
        var created: OpaquePointer?
        try check(mdb_env_create(&created), "mdb_env_create")
        guard let env = created else { throw LMDBError(code: ENOMEM, operation: "mdb_env_create") }
        // Every fallible step runs before `self` is fully initialised: a class whose init throws after that point is
        // deinitialised, and `deinit` would close the handle a second time after the `catch` closed it.
        var dead: Int32 = 0
        do {
            try check(mdb_env_set_maxdbs(env, options.maxDatabases), "mdb_env_set_maxdbs")
            try check(mdb_env_set_maxreaders(env, options.maxReaders), "mdb_env_set_maxreaders")
            try check(mdb_env_set_mapsize(env, options.mapSize), "mdb_env_set_mapsize")
            var flags = UInt32(MDB_NOTLS)
            if options.noSubdirectory { flags |= UInt32(MDB_NOSUBDIR) }
            if options.readOnly { flags |= UInt32(MDB_RDONLY) }
            if options.unsafeNoSync { flags |= UInt32(MDB_NOSYNC) }
            try Self.checkPageSizes(dataFile: options.noSubdirectory ? path : path + "/data.mdb")
            try check(insideLMDB { mdb_env_open(env, path, flags, mdb_mode_t(options.fileMode)) }, "mdb_env_open(\(path))")
            try check(mdb_reader_check(env, &dead), "mdb_reader_check")
            try Self.checkFileHoldsMap(env, dataFile: options.noSubdirectory ? path : path + "/data.mdb")
            mdb_env_set_assert(env, lmdbAssertionFailed)
        } catch {
            mdb_env_close(env)
            throw error
        }
        self.handle = env
        self.path = path
        self.options = options
        self.staleReadersCleared = dead
    }

    deinit { mdb_env_close(handle) }

    /// LMDB takes the page size from the meta pages before anything else, unchecked: it reads the second meta page
    /// at the offset the first names, and divides by the size of the one it uses (0 stops the process with SIGFPE;
    /// below the page header's size, its arithmetic wraps). Each meta page LMDB would accept (the meta flag, LMDB's
    /// magic and version; a file of fewer bytes than a meta page is LMDB's to refuse) must name a power of two from
    /// 512 to 32 KiB, LMDB's largest, and both the same: LMDB writes them so.
    private static func checkPageSizes(dataFile: String) throws {
        let fd = open(dataFile, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var sizes: [UInt32] = []
        var offset: off_t = 0
        for _ in 0..<2 {
            var head = [UInt8](repeating: 0, count: 48)
            let read = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            guard read == head.count else { return }
            let field = { (at: Int) in head.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt32.self).littleEndian } }
            let flags = UInt16(truncatingIfNeeded: field(8) >> 16)
            guard flags & 0x08 != 0, field(16) == 0xBEEF_C0DE, field(20) == 1 else { return }
            let size = field(40)
            guard size >= 512, size <= 0x8000, size & (size - 1) == 0 else {
                throw LMDBError(
                    code: MDB_CORRUPTED,
                    operation: "\(dataFile)'s meta page \(sizes.count) gives a page size of \(size) bytes")
            }
            sizes.append(size)
            offset = off_t(size)
        }
        if sizes.count == 2, sizes[0] != sizes[1] {
            throw LMDBError(
                code: MDB_CORRUPTED,
                operation: "\(dataFile)'s meta pages give page sizes of \(sizes[0]) and \(sizes[1]) bytes")
        }
    }

    /// A data file shorter than the pages its meta page claims (truncated by a copy or a full disk) would fault
    /// (SIGBUS) on the first read of a missing page; refuse it as corrupted instead. So is a meta page whose free or
    /// main database root is a meta page (0 or 1) or past its last page, whose free database is not kept by integer
    /// keys, or whose root pages do not hold together (`checkRootPage`): LMDB asserts (aborts) on the first, reads
    /// outside the page on the others. The meta page's numbers are taken as unsigned and compared in pages: a damaged
    /// last page or transaction id near 2^64 must not trap in the arithmetic that checks it.
    private static func checkFileHoldsMap(_ env: OpaquePointer, dataFile: String) throws {
        var i = MDB_envinfo()
        var s = MDB_stat()
        try check(mdb_env_info(env, &i), "mdb_env_info")
        try check(mdb_env_stat(env, &s), "mdb_env_stat")
        var st = stat()
        guard stat(dataFile, &st) == 0 else { return }
        let pageSize = Int(s.ms_psize)
        let lastPage = UInt64(UInt(bitPattern: i.me_last_pgno))
        if lastPage >= UInt64(max(st.st_size, 0)) / UInt64(pageSize) {
            throw LMDBError(
                code: MDB_CORRUPTED,
                operation: "\(dataFile) holds \(st.st_size) bytes but its meta page names page \(lastPage), past its end")
        }
        // The meta page in force is the one of the newest transaction. Each is a page header (16 bytes), then the
        // magic and version (4 + 4), the address and map size (8 + 8), the free and main databases' records (48
        // each: pad 4, flags 2, depth 2, page counts and entries 8 each, the root last), the last page (8) and the
        // transaction id (8).
        let fd = open(dataFile, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var pages = [UInt8](repeating: 0, count: 2 * pageSize)
        guard pages.withUnsafeMutableBytes({ pread(fd, $0.baseAddress, $0.count, 0) }) == pages.count else { return }
        func field(_ page: Int, _ offset: Int) -> UInt64 {
            pages.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: page * pageSize + offset, as: UInt64.self) }
                .littleEndian
        }
        let meta = field(1, 144) > field(0, 144) ? 1 : 0
        // Not the layout read above: LMDB's checks hold.
        guard field(meta, 144) == UInt64(UInt(bitPattern: i.me_last_txnid)) else { return }
        // LMDB keeps its free list by integer keys, and nothing else: other flags (a dupsort) send a cursor on it
        // to an assertion.
        let freeFlags = UInt16(truncatingIfNeeded: field(meta, 44))
        if freeFlags != UInt16(MDB_INTEGERKEY) {
            throw LMDBError(
                code: MDB_CORRUPTED,
                operation: "\(dataFile)'s meta page gives its free database the flags 0x\(String(freeFlags, radix: 16))")
        }
        var root = [UInt8](repeating: 0, count: pageSize)
        for (name, offset) in [("free", 80), ("main", 128)] {
            let number = field(meta, offset)
            if number == UInt64.max { continue }
            if number < 2 || number > lastPage {
                throw LMDBError(
                    code: MDB_CORRUPTED,
                    operation: "\(dataFile)'s meta page names root page \(number) for its \(name) database, outside 2...\(lastPage)")
            }
            let read = root.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(number) * off_t(pageSize)) }
            guard read == pageSize else { return }
            try root.withUnsafeBytes {
                try checkRootPage($0, number: number, of: "the \(name) database", branchKeys: name == "free" ? 1 : 2)
            }
        }
    }

    /// A database's root page as LMDB reads it without a check: its header (number 8, pad 2, flags 2, the bounds
    /// of its free space 2 + 2), then the offsets of its nodes (2 each), each node a header of 8 bytes. A root
    /// numbered otherwise than its place, neither a branch nor a leaf, with bounds outside the page (a key count
    /// LMDB computes from them is then huge: its search reads past the page, or never ends), a branch of fewer than
    /// `branchKeys` keys (LMDB asserts on a branch of one key but in its free database), or a node outside the page
    /// is damage. LMDB writes every page's own number into it.
    static func checkRootPage(_ page: UnsafeRawBufferPointer, number: UInt64, of what: String, branchKeys: Int = 2)
        throws
    {
        let header = 16
        let pageSize = page.count
        let pgno = page.loadUnaligned(fromByteOffset: 0, as: UInt64.self).littleEndian
        let flags = page.loadUnaligned(fromByteOffset: 10, as: UInt16.self).littleEndian
        let lower = Int(page.loadUnaligned(fromByteOffset: 12, as: UInt16.self).littleEndian)
        let upper = Int(page.loadUnaligned(fromByteOffset: 14, as: UInt16.self).littleEndian)
        let branch: UInt16 = 0x01
        let leaf: UInt16 = 0x02
        let leaf2: UInt16 = 0x20
        func damaged(_ why: String) -> LMDBError {
            LMDBError(code: MDB_CORRUPTED, operation: "the root page \(number) of \(what) \(why)")
        }
        guard pgno == number else { throw damaged("is numbered \(pgno)") }
        guard flags == branch || flags == leaf || flags == leaf | leaf2 else {
            throw damaged("has the flags 0x\(String(flags, radix: 16)), neither a branch nor a leaf")
        }
        guard header <= lower, lower <= upper, upper <= pageSize, (lower - header) % 2 == 0 else {
            throw damaged("has its free space at \(lower)..<\(upper), outside \(header)..<\(pageSize)")
        }
        let keys = (lower - header) / 2
        if flags == branch && keys < branchKeys { throw damaged("is a branch of \(keys) keys") }
        guard flags & leaf2 == 0 else { return }  // Keys of one size, packed: no node offsets.
        for index in 0..<keys {
            let offset = Int(page.loadUnaligned(fromByteOffset: header + 2 * index, as: UInt16.self).littleEndian)
            guard offset >= upper, offset + 8 <= pageSize else {
                throw damaged("has node \(index) at \(offset), outside \(upper)..<\(pageSize)")
            }
        }
    }

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

    /// Opens several named databases in one transaction (creating them unless read-only), so a new environment
    /// gains all of them in one commit: no reader ever finds some without the others.
    public func openDatabases(_ specs: [(name: String?, flags: Database.Flags)]) throws -> [Database] {
        if options.readOnly {
            resizeLock.lockShared()
            defer { resizeLock.unlock() }
            let txn = try Transaction(environment: self, readOnly: true)
            let dbs = try specs.map { try txn.openDatabase($0.name, flags: $0.flags) }
            try txn.commit()
            return dbs
        }
        return try write { txn in try specs.map { try txn.openDatabase($0.name, flags: $0.flags.union(.create)) } }
    }

    // MARK: - Transactions

    /// Runs `body` in a read-only transaction. What it reads is `MappedBytes`, in the map, valid only until `body`
    /// returns.
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
        try write(body, committed: { _ in })
    }

    /// `write(_:)`, then `committed` with the committed transaction's id, while the writer lock is still held: what it
    /// tells others happens before any later write transaction commits.
    public func write<R>(_ body: (Transaction) throws -> R, committed: (Int) -> Void) throws -> R {
        writerLock.lock()
        defer { writerLock.unlock() }
        while true {
            do {
                var id = 0
                let result = try attemptWrite { txn in
                    id = txn.id
                    return try body(txn)
                }
                committed(id)
                return result
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
        do {
            try txn.commit()
        } catch let error as LMDBError where error.code == EIO && Self.filesystemIsFull(at: path) {
            // Some filesystems report a failed write-back of a full disk as EIO; callers should hear "full", which
            // they can act on, rather than an I/O error, which suggests a failing disk.
            throw LMDBError(code: ENOSPC, operation: "mdb_txn_commit (EIO with the filesystem full)")
        }
        return result
    }

    /// Whether the filesystem holding `path` has less than 1 MiB left for this process.
    static func filesystemIsFull(at path: String) -> Bool {
        var fs = statvfs()
        guard statvfs(path, &fs) == 0 else { return false }
        return UInt64(fs.f_bavail) * UInt64(fs.f_frsize) < 1 << 20
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

    /// The id of the last committed write transaction, by this process or another (`mdb_env_info`'s
    /// `me_last_txnid`, read from the meta pages: no transaction, no reader slot). Every commit adds one, so a reader
    /// that knows what the commit with this id changed knows what any read transaction begun now would see.
    public var lastCommittedTransactionID: Int {
        resizeLock.lockShared()
        defer { resizeLock.unlock() }
        var i = MDB_envinfo()
        mdb_env_info(handle, &i)
        return Int(i.me_last_txnid)
    }

    /// Flushes the map to disk (only needed with `unsafeNoSync`).
    public func sync(force: Bool = true) throws {
        try check(mdb_env_sync(handle, force ? 1 : 0), "mdb_env_sync")
    }

    /// Writes a consistent copy of the environment into the directory `path` (which must exist and be empty).
    ///
    /// The copy runs in a read transaction of its own: a writer, in this process or another, keeps writing meanwhile.
    public func copy(to path: String, compact: Bool = false) throws {
        // A read transaction, like `read`'s: held under the shared resize lock, and started again at the map size
        // another process grew it to.
        resizeLock.lockShared()
        defer { resizeLock.unlock() }
        while true {
            let status = insideLMDB { mdb_env_copy2(handle, path, compact ? UInt32(MDB_CP_COMPACT) : 0) }
            guard status == MDB_MAP_RESIZED else {
                return try check(status, "mdb_env_copy2(\(path))")
            }
            // The copy made its file (O_EXCL) before its transaction failed to start: remove it to start over.
            unlink(options.noSubdirectory ? path : path + "/data.mdb")
            resizeLock.unlock()
            adoptMapSize()
            resizeLock.lockShared()
        }
    }
}

// MARK: - Assertions

/// What LMDB's failed assertions report to before it aborts: a damaged page it found past every check the wrapper
/// makes first. Set once, at start, by the process (a command line tool prints its own coded error and exits);
/// called with LMDB's description of what failed. nil: LMDB's own message, then abort.
nonisolated(unsafe) public var lmdbAssertionHandler: (@convention(c) (UnsafePointer<CChar>?) -> Void)?

private let lmdbAssertionFailed: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Void = { _, message in
    lmdbAssertionHandler?(message)
}
