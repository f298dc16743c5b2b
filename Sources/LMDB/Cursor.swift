internal import CLMDB

/// A cursor over one database, inside one transaction. Closed when released.
public final class Cursor {
    /// The key and value a cursor stands on, both in the map (see `MappedBytes` for how long they stay valid).
    public struct Entry {
        public let key: MappedBytes
        public let value: MappedBytes
    }

    let handle: OpaquePointer
    let database: Database
    // Keeps the transaction alive as long as the cursor.
    private let transaction: Transaction

    init(transaction: Transaction, database: Database) throws {
        self.handle = try openCursor(transaction, database)
        self.database = database
        self.transaction = transaction
    }

    deinit { mdb_cursor_close(handle) }

    public func first() throws -> Entry? { try moveCursor(handle, database, MDB_FIRST) }
    public func last() throws -> Entry? { try moveCursor(handle, database, MDB_LAST) }
    public func next() throws -> Entry? { try moveCursor(handle, database, MDB_NEXT) }
    public func previous() throws -> Entry? { try moveCursor(handle, database, MDB_PREV) }
    public func current() throws -> Entry? { try moveCursor(handle, database, MDB_GET_CURRENT) }

    /// Positions at exactly `key` (its first value in a dupSort database).
    public func find(_ key: [UInt8]) throws -> Entry? {
        try key.withUnsafeBytes { (k) throws in try moveCursor(handle, database, MDB_SET_KEY, key: k) }
    }

    /// Positions at exactly `key` (its first value in a dupSort database). Looking up keys in order through one
    /// cursor is cheaper than `Transaction.get`: LMDB skips the descent from the root when the key lies on the page
    /// the cursor stands on.
    public func find(_ key: UnsafeRawBufferPointer) throws -> Entry? {
        try moveCursor(handle, database, MDB_SET_KEY, key: key)
    }

    /// Positions at exactly `key`, for lookups made in ascending key order: looks at the entry after the current one
    /// first (one step and one comparison, where a search compares the key with the page's bounds and then
    /// bisects), and searches only when that is not it. On a cursor not yet positioned the step lands on the first
    /// entry, so the first lookup works too.
    public func findForward(_ key: UnsafeRawBufferPointer) throws -> Entry? {
        try findCursorForward(handle, database, key)
    }

    /// Positions at the first key ≥ `key`.
    public func seek(_ key: [UInt8]) throws -> Entry? {
        try key.withUnsafeBytes { (k) throws in try moveCursor(handle, database, MDB_SET_RANGE, key: k) }
    }

    // MARK: - Duplicates (dupSort databases)

    public func nextDuplicate() throws -> Entry? { try moveCursor(handle, database, MDB_NEXT_DUP) }
    public func previousDuplicate() throws -> Entry? { try moveCursor(handle, database, MDB_PREV_DUP) }
    public func firstDuplicate() throws -> Entry? { try moveCursor(handle, database, MDB_FIRST_DUP) }
    public func lastDuplicate() throws -> Entry? { try moveCursor(handle, database, MDB_LAST_DUP) }
    /// Moves to the first value of the next key.
    public func nextKey() throws -> Entry? { try moveCursor(handle, database, MDB_NEXT_NODUP) }

    /// Positions at the pair (`key`, `value`), if present.
    public func find(_ key: [UInt8], value: [UInt8]) throws -> Entry? {
        try key.withUnsafeBytes { (k) throws in
            try value.withUnsafeBytes { (v) throws in try moveCursor(handle, database, MDB_GET_BOTH, key: k, value: v) }
        }
    }

    /// Number of values under the current key.
    public func duplicateCount() throws -> Int {
        var n: Int = 0
        try check(insideLMDB { mdb_cursor_count(handle, &n) }, "mdb_cursor_count")
        return Int(n)
    }

    // MARK: - Writes

    /// Stores through the cursor; with `.append` the key must sort after every key present.
    public func put(key: [UInt8], value: [UInt8], flags: PutFlags = []) throws {
        try key.withUnsafeBytes { (kb) throws in
            try value.withUnsafeBytes { (vb) throws in
                var k = MDB_val(mv_size: kb.count, mv_data: UnsafeMutableRawPointer(mutating: kb.baseAddress))
                var v = MDB_val(mv_size: vb.count, mv_data: UnsafeMutableRawPointer(mutating: vb.baseAddress))
                try check(insideLMDB { mdb_cursor_put(handle, &k, &v, flags.rawValue) }, "mdb_cursor_put(\(database.name ?? "<main>"))")
            }
        }
    }

    /// Deletes the entry under the cursor.
    public func deleteCurrent() throws {
        try check(insideLMDB { mdb_cursor_del(handle, 0) }, "mdb_cursor_del")
    }
}

// MARK: - Cursor handles (shared by `Cursor` and `ForwardCursors`)

/// Opens an LMDB cursor on `database` in `transaction`; the caller closes it (`mdb_cursor_close`).
func openCursor(_ transaction: Transaction, _ database: Database) throws -> OpaquePointer {
    var c: OpaquePointer?
    try check(mdb_cursor_open(transaction.handle, database.dbi, &c), "mdb_cursor_open(\(database.name ?? "<main>"))")
    return c!
}

/// Moves the cursor `handle` (`mdb_cursor_get` with `op`); nil when there is no such entry.
@inline(__always)
func moveCursor(
    _ handle: OpaquePointer, _ database: Database, _ op: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil,
    value: UnsafeRawBufferPointer? = nil
) throws -> Cursor.Entry? {
    var k = MDB_val(mv_size: key?.count ?? 0, mv_data: UnsafeMutableRawPointer(mutating: key?.baseAddress))
    var v = MDB_val(mv_size: value?.count ?? 0, mv_data: UnsafeMutableRawPointer(mutating: value?.baseAddress))
    let rc = insideLMDB { mdb_cursor_get(handle, &k, &v, op) }
    if rc == MDB_NOTFOUND { return nil }
    try check(rc, "mdb_cursor_get(\(database.name ?? "<main>"))")
    return Cursor.Entry(
        key: MappedBytes(UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)),
        value: MappedBytes(UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)))
}

/// `Cursor.findForward` on the cursor `handle`.
@inline(__always)
func findCursorForward(_ handle: OpaquePointer, _ database: Database, _ key: UnsafeRawBufferPointer) throws
    -> Cursor.Entry?
{
    if let next = try moveCursor(handle, database, MDB_NEXT), sameBytes(next.key.buffer, key) { return next }
    return try moveCursor(handle, database, MDB_SET_KEY, key: key)
}
