internal import CLMDB

/// A fixed number of cursors on one database, each left where its last lookup found its key: for lookups that form
/// several ascending sequences at once (sequence i through cursor i), each cursor looking forward as
/// `Cursor.findForward` does.
///
/// The set owns the cursors' C handles (opened on first use, closed in `deinit`) in storage of its own rather than
/// an array of `Cursor` objects, so that a lookup retains and releases nothing and needs no check of exclusive
/// access: it costs what LMDB's step or search costs. Valid inside the transaction it was made in, like a `Cursor`.
public final class ForwardCursors {
    private let handles: UnsafeMutableBufferPointer<OpaquePointer?>
    private let database: Database
    // Keeps the transaction alive as long as the cursors.
    private let transaction: Transaction

    /// `count` cursors on `database`, none opened yet.
    public init(_ transaction: Transaction, _ database: Database, count: Int) {
        precondition(count > 0, "a set of no cursors")
        handles = .allocate(capacity: count)
        handles.initialize(repeating: nil)
        self.database = database
        self.transaction = transaction
    }

    deinit {
        for case let handle? in handles { mdb_cursor_close(handle) }
        handles.deallocate()
    }

    /// How many cursors the set has.
    public var count: Int { handles.count }

    /// Positions cursor `index` at exactly `key`, looking at the entry after its current one first (see
    /// `Cursor.findForward`).
    public func find(_ key: UnsafeRawBufferPointer, through index: Int) throws -> Cursor.Entry? {
        precondition(index >= 0 && index < handles.count, "no such cursor")
        let handle = try handles[index] ?? open(index)
        return try findCursorForward(handle, database, key)
    }

    /// Moves cursor `index` to the entry before its current one (nil at the first, or when it stands nowhere yet).
    public func previous(through index: Int) throws -> Cursor.Entry? {
        guard let handle = handles[index] else { return nil }
        return try moveCursor(handle, database, MDB_PREV)
    }

    /// Moves cursor `index` to the entry after its current one (nil at the last, or when it stands nowhere yet).
    public func next(through index: Int) throws -> Cursor.Entry? {
        guard let handle = handles[index] else { return nil }
        return try moveCursor(handle, database, MDB_NEXT)
    }

    private func open(_ index: Int) throws -> OpaquePointer {
        let handle = try openCursor(transaction, database)
        handles[index] = handle
        return handle
    }
}
