internal import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A transaction, only ever seen inside `Environment.read` or `Environment.write` (closure-scoped, like GRDB's).
///
/// Not `Sendable`: it belongs to the closure that received it. What it reads is `MappedBytes`, in the map: valid until
/// the transaction ends (in a write transaction, until the next write to that database).
public final class Transaction {
    let handle: OpaquePointer
    unowned let environment: Environment
    public let isReadOnly: Bool
    private var finished = false

    init(environment: Environment, readOnly: Bool) throws {
        var txn: OpaquePointer?
        try check(
            insideLMDB { mdb_txn_begin(environment.handle, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn) },
            readOnly ? "mdb_txn_begin(read)" : "mdb_txn_begin(write)")
        self.handle = txn!
        self.environment = environment
        self.isReadOnly = readOnly
    }

    deinit { if !finished { mdb_txn_abort(handle) } }

    /// The transaction's id (`mdb_txn_id`): in a read transaction, the id of the commit whose snapshot it reads; in a
    /// write transaction, the id its commit will have (one more than the last commit's).
    public var id: Int { Int(mdb_txn_id(handle)) }

    func commit() throws {
        precondition(!finished, "transaction already finished")
        finished = true
        try check(insideLMDB { mdb_txn_commit(handle) }, "mdb_txn_commit")
    }

    func abort() {
        guard !finished else { return }
        finished = true
        mdb_txn_abort(handle)
    }

    /// Opens a named database in this transaction (see `Environment.openDatabase`).
    func openDatabase(_ name: String?, flags: Database.Flags) throws -> Database {
        if let name { try checkDatabaseRecord(name) }
        var dbi: MDB_dbi = 0
        try check(insideLMDB { mdb_dbi_open(handle, name, flags.rawValue, &dbi) }, "mdb_dbi_open(\(name ?? "<main>"))")
        return Database(dbi: dbi, name: name, flags: flags.subtracting(.create))
    }

    /// A named database's record in the main database names its root page. LMDB asserts (aborts the process)
    /// when it finds a root of 0 or 1, the meta pages, on a damaged file; refuse such a record as corrupted first, and
    /// one past the last page LMDB has written, and a root page that does not hold together
    /// (`Environment.checkRootPage`).
    private func checkDatabaseRecord(_ name: String) throws {
        var info = MDB_envinfo()
        try check(mdb_env_info(mdb_txn_env(handle), &info), "mdb_env_info")
        // The main database, where the named databases' records are (opening it sets its key order, which a read
        // of it needs).
        var main: MDB_dbi = 0
        try check(insideLMDB { mdb_dbi_open(handle, nil, 0, &main) }, "mdb_dbi_open(<main>)")
        var value = MDB_val()
        let rc = name.withCString { cName -> Int32 in
            var key = MDB_val(mv_size: strlen(cName), mv_data: UnsafeMutableRawPointer(mutating: cName))
            return insideLMDB { mdb_get(handle, main, &key, &value) }
        }
        if rc == MDB_NOTFOUND { return }
        try check(rc, "mdb_get(<main>, \(name))")
        // An MDB_db: pad (4), flags (2), depth (2), branch, leaf and overflow pages, entries (8 each), root (8).
        guard value.mv_size == 48, let data = value.mv_data else {
            throw LMDBError(code: MDB_CORRUPTED, operation: "the record of database \(name) is \(value.mv_size) bytes, not 48")
        }
        let root = data.loadUnaligned(fromByteOffset: 40, as: UInt64.self).littleEndian
        let lastPage = UInt64(UInt(bitPattern: info.me_last_pgno))
        guard root != UInt64.max else { return }
        if root < 2 || root > lastPage {
            throw LMDBError(
                code: MDB_CORRUPTED,
                operation: "the record of database \(name) names root page \(root), outside 2...\(lastPage)")
        }
        // The root page itself, read from the data file (the environment checked at open that it holds every page
        // up to the last; LMDB writes pages to the file, never through the map): LMDB reads its header unchecked.
        var stat = MDB_stat()
        var fd: mdb_filehandle_t = -1
        try check(mdb_env_stat(mdb_txn_env(handle), &stat), "mdb_env_stat")
        try check(mdb_env_get_fd(mdb_txn_env(handle), &fd), "mdb_env_get_fd")
        var page = [UInt8](repeating: 0, count: Int(stat.ms_psize))
        let read = page.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(root) * off_t($0.count)) }
        guard read == page.count else {
            throw LMDBError(code: read < 0 ? errno : MDB_CORRUPTED, operation: "reading root page \(root) of \(name)")
        }
        try page.withUnsafeBytes { try Environment.checkRootPage($0, number: root, of: "database \(name)") }
    }

    // MARK: - Reads (zero-copy)

    /// The value stored under `key`, in the map, or nil when absent.
    public func get(_ db: Database, key: UnsafeRawBufferPointer) throws -> MappedBytes? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        let rc = insideLMDB { mdb_get(handle, db.dbi, &k, &v) }
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "mdb_get(\(db.name ?? "<main>"))")
        return MappedBytes(UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }

    /// The value stored under `key`, in the map, or nil when absent.
    public func get(_ db: Database, key: [UInt8]) throws -> MappedBytes? {
        try key.withUnsafeBytes { (k) throws in try get(db, key: k) }
    }

    /// A copy of the value stored under `key`.
    public func value(_ db: Database, key: [UInt8]) throws -> [UInt8]? {
        try get(db, key: key)?.withUnsafeBytes { Array($0) }
    }

    // MARK: - Writes

    /// Stores `value` under `key`.
    public func put(_ db: Database, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, flags: PutFlags = [])
        throws
    {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try check(insideLMDB { mdb_put(handle, db.dbi, &k, &v, flags.rawValue) }, "mdb_put(\(db.name ?? "<main>"))")
    }

    /// Stores `value` under `key`.
    public func put(_ db: Database, key: [UInt8], value: [UInt8], flags: PutFlags = []) throws {
        try key.withUnsafeBytes { (k) throws in
            try value.withUnsafeBytes { (v) throws in try put(db, key: k, value: v, flags: flags) }
        }
    }

    /// Deletes `key` (every value of it in a dupSort database, or just `value` when given). Returns false if absent.
    @discardableResult
    public func delete(_ db: Database, key: [UInt8], value: [UInt8]? = nil) throws -> Bool {
        try key.withUnsafeBytes { (kb) throws -> Bool in
            var k = MDB_val(mv_size: kb.count, mv_data: UnsafeMutableRawPointer(mutating: kb.baseAddress))
            let rc: Int32
            if let value {
                rc = value.withUnsafeBytes { vb in
                    var v = MDB_val(mv_size: vb.count, mv_data: UnsafeMutableRawPointer(mutating: vb.baseAddress))
                    return insideLMDB { mdb_del(handle, db.dbi, &k, &v) }
                }
            } else {
                rc = insideLMDB { mdb_del(handle, db.dbi, &k, nil) }
            }
            if rc == MDB_NOTFOUND { return false }
            try check(rc, "mdb_del(\(db.name ?? "<main>"))")
            return true
        }
    }

    /// Removes every entry of `db` (the database itself stays).
    public func clear(_ db: Database) throws {
        try check(insideLMDB { mdb_drop(handle, db.dbi, 0) }, "mdb_drop(\(db.name ?? "<main>"))")
    }

    // MARK: - Cursors and statistics

    /// Opens a cursor on `db`, valid inside this transaction.
    public func cursor(_ db: Database) throws -> Cursor {
        try Cursor(transaction: self, database: db)
    }

    /// Entry count and page use of `db`.
    public func statistics(_ db: Database) throws -> Database.Statistics {
        var s = MDB_stat()
        try check(insideLMDB { mdb_stat(handle, db.dbi, &s) }, "mdb_stat")
        // The counts come from the database's record as stored: a damaged one may hold any 64-bit number.
        func count(_ value: Int, _ what: String) throws -> Int {
            guard value >= 0 else {
                throw LMDBError(
                    code: MDB_CORRUPTED, operation: "the record of \(db.name ?? "<main>") counts \(UInt(bitPattern: value)) \(what)")
            }
            return value
        }
        return Database.Statistics(
            entries: try count(Int(s.ms_entries), "entries"), depth: Int(s.ms_depth),
            branchPages: try count(Int(s.ms_branch_pages), "branch pages"),
            leafPages: try count(Int(s.ms_leaf_pages), "leaf pages"),
            overflowPages: try count(Int(s.ms_overflow_pages), "overflow pages"), pageSize: Int(s.ms_psize))
    }
}
