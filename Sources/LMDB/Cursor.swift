internal import CLMDB
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A key and its value, both zero-copy views into the map (valid while the transaction lives).
public typealias Entry = (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)

/// A cursor over one database, inside one transaction. Closed when released.
public final class Cursor {
    let handle: OpaquePointer
    let database: Database
    // Keeps the transaction alive as long as the cursor.
    private let transaction: Transaction

    init(transaction: Transaction, database: Database) throws {
        var c: OpaquePointer?
        try check(mdb_cursor_open(transaction.handle, database.dbi, &c), "mdb_cursor_open(\(database.name ?? "<main>"))")
        self.handle = c!
        self.database = database
        self.transaction = transaction
    }

    deinit { mdb_cursor_close(handle) }

    private func move(_ op: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil, value: UnsafeRawBufferPointer? = nil)
        throws -> Entry?
    {
        var k = MDB_val(mv_size: key?.count ?? 0, mv_data: UnsafeMutableRawPointer(mutating: key?.baseAddress))
        var v = MDB_val(mv_size: value?.count ?? 0, mv_data: UnsafeMutableRawPointer(mutating: value?.baseAddress))
        let rc = mdb_cursor_get(handle, &k, &v, op)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "mdb_cursor_get(\(database.name ?? "<main>"))")
        return (UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
                UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }

    public func first() throws -> Entry? { try move(MDB_FIRST) }
    public func last() throws -> Entry? { try move(MDB_LAST) }
    public func next() throws -> Entry? { try move(MDB_NEXT) }
    public func previous() throws -> Entry? { try move(MDB_PREV) }
    public func current() throws -> Entry? { try move(MDB_GET_CURRENT) }

    /// Positions at exactly `key` (its first value in a dupSort database).
    public func find(_ key: [UInt8]) throws -> Entry? {
        try key.withUnsafeBytes { (k) throws in try move(MDB_SET_KEY, key: k) }
    }

    /// Positions at exactly `key` (its first value in a dupSort database). Looking up keys in order through one
    /// cursor is cheaper than `Transaction.get`: LMDB skips the descent from the root when the key lies on the page
    /// the cursor stands on.
    public func find(_ key: UnsafeRawBufferPointer) throws -> Entry? {
        try move(MDB_SET_KEY, key: key)
    }

    /// Positions at exactly `key`, for lookups made in ascending key order: looks at the entry after the current one
    /// first (one step and one comparison, where a search compares the key with the page's bounds and then
    /// bisects), and searches only when that is not it. On a cursor not yet positioned the step lands on the first
    /// entry, so the first lookup works too.
    public func findForward(_ key: UnsafeRawBufferPointer) throws -> Entry? {
        if let next = try next(), next.key.sameBytes(as: key) { return next }
        return try find(key)
    }

    /// Positions at the first key ≥ `key`.
    public func seek(_ key: [UInt8]) throws -> Entry? {
        try key.withUnsafeBytes { (k) throws in try move(MDB_SET_RANGE, key: k) }
    }

    // MARK: - Duplicates (dupSort databases)

    public func nextDuplicate() throws -> Entry? { try move(MDB_NEXT_DUP) }
    public func previousDuplicate() throws -> Entry? { try move(MDB_PREV_DUP) }
    public func firstDuplicate() throws -> Entry? { try move(MDB_FIRST_DUP) }
    public func lastDuplicate() throws -> Entry? { try move(MDB_LAST_DUP) }
    /// Moves to the first value of the next key.
    public func nextKey() throws -> Entry? { try move(MDB_NEXT_NODUP) }

    /// Positions at the pair (`key`, `value`), if present.
    public func find(_ key: [UInt8], value: [UInt8]) throws -> Entry? {
        try key.withUnsafeBytes { (k) throws in
            try value.withUnsafeBytes { (v) throws in try move(MDB_GET_BOTH, key: k, value: v) }
        }
    }

    /// Number of values under the current key.
    public func duplicateCount() throws -> Int {
        var n: Int = 0
        try check(mdb_cursor_count(handle, &n), "mdb_cursor_count")
        return Int(n)
    }

    // MARK: - Writes

    /// Stores through the cursor; with `.append` the key must sort after every key present.
    public func put(key: [UInt8], value: [UInt8], flags: PutFlags = []) throws {
        try key.withUnsafeBytes { (kb) throws in
            try value.withUnsafeBytes { (vb) throws in
                var k = MDB_val(mv_size: kb.count, mv_data: UnsafeMutableRawPointer(mutating: kb.baseAddress))
                var v = MDB_val(mv_size: vb.count, mv_data: UnsafeMutableRawPointer(mutating: vb.baseAddress))
                try check(mdb_cursor_put(handle, &k, &v, flags.rawValue), "mdb_cursor_put(\(database.name ?? "<main>"))")
            }
        }
    }

    /// Deletes the entry under the cursor.
    public func deleteCurrent() throws {
        try check(mdb_cursor_del(handle, 0), "mdb_cursor_del")
    }
}

extension UnsafeRawBufferPointer {
    /// Whether both hold the same bytes. Short ones (keys) eight bytes at a time, inline: a call to `memcmp` cost
    /// more than the comparison (2% of a replay's cycles); long ones (values) with `memcmp`, which is vectorised
    /// (the loop cost 8% of a replay that compares each rebuilt projection with the stored one).
    @inline(__always)
    public func sameBytes(as other: UnsafeRawBufferPointer) -> Bool {
        guard count == other.count else { return false }
        guard let a = baseAddress, let b = other.baseAddress else { return count == 0 }
        if count > 64 { return memcmp(a, b, count) == 0 }
        var i = 0
        while i + 8 <= count {
            if a.loadUnaligned(fromByteOffset: i, as: UInt64.self) != b.loadUnaligned(fromByteOffset: i, as: UInt64.self) {
                return false
            }
            i += 8
        }
        while i < count {
            if a.load(fromByteOffset: i, as: UInt8.self) != b.load(fromByteOffset: i, as: UInt8.self) { return false }
            i += 1
        }
        return true
    }

    /// Reads a big-endian UInt64 from the first 8 bytes (keys of the log).
    public var bigEndianUInt64: UInt64 {
        precondition(count >= 8, "need 8 bytes for a UInt64")
        var v: UInt64 = 0
        for i in 0..<8 { v = (v << 8) | UInt64(self[i]) }
        return v
    }
}

extension UInt64 {
    /// The 8 bytes of this value in big-endian order, so that byte order is numeric order (log keys).
    public var bigEndianBytes: [UInt8] {
        withUnsafeBytes(of: bigEndian) { Array($0) }
    }
}
