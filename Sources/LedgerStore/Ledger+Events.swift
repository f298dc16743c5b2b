import LMDB
import LedgerCodec
import LedgerCore

/// A stored event and where it sits in the log.
public struct StoredEvent: Sendable, Hashable {
    public var event: LedgerEvent
    /// The link of the hash chain after this event.
    public var chainHash: [UInt8]
    /// The key of its raw input in the raw store (the seq of the first event that input produced).
    public var rawKey: UInt64
}

// MARK: - Reading the log

extension Ledger {
    /// The last sequence number written (0 for an empty ledger).
    public func lastSeq() throws -> UInt64 {
        try environment.read { txn in try batch.lastSeq(txn) }
    }

    /// Events with seq > `after`, in log order, at most `limit`.
    public func events(after: UInt64, limit: Int) throws -> [StoredEvent] {
        try environment.read { txn in
            let cursor = try txn.cursor(layout.log)
            var out: [StoredEvent] = []
            var entry = try cursor.seek((after &+ 1).bigEndianBytes)
            while let e = entry, out.count < limit {
                out.append(try storedEvent(seq: e.key.bigEndianUInt64, logValue: e.value, txn))
                entry = try cursor.next()
            }
            return out
        }
    }

    /// The event at `seq`, if written.
    public func event(seq: UInt64) throws -> StoredEvent? {
        try environment.read { txn in
            guard let v = try txn.get(layout.log, key: seq.bigEndianBytes) else { return nil }
            return try storedEvent(seq: seq, logValue: v, txn)
        }
    }

    /// Every event recorded under one event key (a transaction id, or a synthetic key such as `renewal:<otid>`), oldest
    /// first: the revisions of that transaction as they arrived.
    public func events(key: String) throws -> [StoredEvent] {
        try environment.read { txn in
            var out: [StoredEvent] = []
            try layout.forEachRevision(of: key, txn) { seq, stored in
                let event = try decodeEvent(seq: seq, stored)
                guard let logValue = try txn.get(layout.log, key: seq.bigEndianBytes),
                    let log = StoreLayout.LogEntry(logValue)
                else { throw LedgerError.corrupted("event \(seq) of \(key) has no log entry") }
                out.append(StoredEvent(event: event, chainHash: log.link, rawKey: log.rawKey))
                return true
            }
            return out
        }
    }

    /// Every event of one subscription (transactions, renewal infos, notifications, claims), in log order.
    public func events(original otid: OriginalTransactionID, environment env: AppStoreEnvironment, upTo asOf: UInt64? = nil)
        throws -> [LedgerEvent]
    {
        try environment.read { txn in try subscriptionEvents(env, otid, upTo: asOf, txn) }
    }

    /// The raw bytes an event was decoded from, exactly as received.
    public func raw(of event: StoredEvent) throws -> [UInt8]? {
        try environment.read { txn in try txn.value(layout.raw, key: event.rawKey.bigEndianBytes) }
    }

    /// Refused inputs with number > `after`, oldest first.
    public func rejectedInputs(after: UInt64 = 0, limit: Int = 100) throws -> [RejectedInput] {
        try environment.read { txn in
            let cursor = try txn.cursor(layout.rejected)
            var out: [RejectedInput] = []
            var entry = try cursor.seek((after &+ 1).bigEndianBytes)
            while let e = entry, out.count < limit {
                out.append(try RejectedInput(number: e.key.bigEndianUInt64, decoding: e.value))
                entry = try cursor.next()
            }
            return out
        }
    }

    // MARK: - Internals shared with projections and verification

    func subscriptionEvents(
        _ env: AppStoreEnvironment, _ otid: OriginalTransactionID, upTo asOf: UInt64?,
        metadata parts: LedgerEvent.MetadataParts = .whole, _ txn: Transaction
    ) throws -> [LedgerEvent] {
        try Self.subscriptionEvents(layout, env, otid, upTo: asOf, metadata: parts, txn)
    }

    static func subscriptionEvents(
        _ layout: StoreLayout, _ env: AppStoreEnvironment, _ otid: OriginalTransactionID, upTo asOf: UInt64?,
        metadata parts: LedgerEvent.MetadataParts = .whole, _ txn: Transaction
    ) throws -> [LedgerEvent] {
        let cursor = try txn.cursor(layout.byOTID)
        guard let first = try cursor.find(StoreLayout.subscriptionKey(env, otid)) else { return [] }
        return try subscriptionEvents(layout, first, cursor, upTo: asOf, metadata: parts, txn)
    }

    /// The events of the subscription whose first `by_otid` entry is `first`, where `cursor` stands; the cursor is
    /// left on one of its entries (`nextKey()` moves to the next subscription). `.forFold` for events that only go
    /// into a fold.
    static func subscriptionEvents(
        _ layout: StoreLayout, _ first: Entry, _ cursor: Cursor, upTo asOf: UInt64?,
        metadata parts: LedgerEvent.MetadataParts = .whole, _ txn: Transaction
    ) throws -> [LedgerEvent] {
        var scan = SubscriptionScan(reader: nil)
        try readSubscription(layout, first, cursor, upTo: asOf, metadata: parts, into: &scan, txn)
        return scan.events
    }

    /// `subscriptionEvents(_:_:_:upTo:metadata:_:)` into `scan.events`, for a scan of many subscriptions that reuses
    /// its buffers from one to the next (see `SubscriptionScan`).
    static func readSubscription(
        _ layout: StoreLayout, _ first: Entry, _ cursor: Cursor, upTo asOf: UInt64?,
        metadata parts: LedgerEvent.MetadataParts, into scan: inout SubscriptionScan, _ txn: Transaction
    ) throws {
        scan.events.removeAll(keepingCapacity: true)
        scan.events.reserveCapacity(try cursor.duplicateCount())
        var entry: Entry? = first
        while let e = entry {
            guard let seq = StoreLayout.eventsKey(byOTIDValue: e.value, into: &scan.eventsKey) else {
                throw LedgerError.corrupted("a by_otid value of \(Array(e.key)) is malformed")
            }
            if let asOf, seq > asOf { break }
            let found =
                try scan.reader?.event(ordinal: scan.events.count, key: scan.eventsKey)
                ?? txn.get(layout.events, key: scan.eventsKey)
            guard let stored = found else { throw LedgerError.corrupted("by_otid names event \(seq), which is missing") }
            scan.events.append(try decodeEvent(seq: seq, stored, strings: &scan.strings, metadata: parts))
            entry = try cursor.nextDuplicate()
        }
    }

    func storedEvent(seq: UInt64, logValue: UnsafeRawBufferPointer, _ txn: Transaction) throws -> StoredEvent {
        guard let log = StoreLayout.LogEntry(logValue) else {
            throw LedgerError.corrupted("log entry \(seq) is \(logValue.count) bytes")
        }
        guard let stored = try txn.get(layout.events, key: log.eventsKey(seq: seq)) else {
            throw LedgerError.corrupted("log seq \(seq) names an event that is missing")
        }
        return StoredEvent(event: try decodeEvent(seq: seq, stored), chainHash: log.link, rawKey: log.rawKey)
    }
}

/// What a scan of many subscriptions (a replay) reuses from one subscription to the next, so that each costs no
/// allocation of its own: the events array, the strings that repeat (a product id is shared by many subscriptions
/// too), the key buffer, and the `events` cursors.
struct SubscriptionScan {
    var events: [LedgerEvent] = []
    var strings = RepeatedStrings()
    var eventsKey: [UInt8] = []
    let reader: EventReader?

    init(reader: EventReader?) {
        self.reader = reader
        eventsKey.reserveCapacity(64)
    }
}

/// Looks events up by key for a scan of many subscriptions in key order (a replay), with one `events` cursor per
/// event ordinal: the first event of each subscription, the second, and so on. The n-th events of neighbouring
/// subscriptions tend to be neighbours (subscriptions bought about the same time renew about the same time, and
/// Apple's ids grow with time), so each cursor's lookups go forward (`Cursor.findForward`). Valid for the transaction
/// it was made in.
final class EventReader {
    private let transaction: Transaction
    private let events: Database
    /// Retained here and released in `deinit`: a cursor taken out of an array of references for each lookup was
    /// retained and released. Unchecked: a reader belongs to one chunk of one replay worker, and the dynamic
    /// exclusivity check of each lookup cost as much as LMDB's page search.
    @exclusivity(unchecked) private var cursors: [Unmanaged<Cursor>] = []
    /// Ordinals from here on share the last cursor (long histories are few).
    private static let cursorLimit = 32

    init(_ transaction: Transaction, _ layout: StoreLayout) {
        self.transaction = transaction
        self.events = layout.events
    }

    deinit { for cursor in cursors { cursor.release() } }

    /// The stored event under `key`, the `ordinal`-th of its subscription; nil when absent.
    func event(ordinal: Int, key: [UInt8]) throws -> UnsafeRawBufferPointer? {
        let i = min(ordinal, Self.cursorLimit - 1)
        while cursors.count <= i { cursors.append(Unmanaged.passRetained(try transaction.cursor(events))) }
        return try cursors[i]._withUnsafeGuaranteedRef { cursor in
            try key.withUnsafeBytes { k in try cursor.findForward(k)?.value }
        }
    }
}

func decodeEvent(seq: UInt64, _ bytes: UnsafeRawBufferPointer) throws -> LedgerEvent {
    var strings = RepeatedStrings()
    return try decodeEvent(seq: seq, bytes, strings: &strings)
}

func decodeEvent(
    seq: UInt64, _ bytes: UnsafeRawBufferPointer, strings: inout RepeatedStrings,
    metadata parts: LedgerEvent.MetadataParts = .whole
) throws -> LedgerEvent {
    do {
        return try LedgerEvent(seq: seq, decoding: bytes, strings: &strings, metadata: parts)
    } catch {
        throw LedgerError.corrupted("event \(seq) does not decode: \(error.reason)")
    }
}
