import LMDB
import LedgerCodec
import LedgerCore

/// Reads the events of subscriptions for a fold: each `by_otid` entry of a subscription names one event
/// (`EventReference`), read from `events`, with the receipt creation date derived for it if an older build stored
/// it without (`ReceiptCreationDates`).
///
/// A scan of many subscriptions (a replay) reuses what it holds from one subscription to the next, so that each
/// costs no allocation of its own: the events array, the strings that repeat (a product id is shared by many
/// subscriptions too), the key buffer, and the `events` cursors.
struct SubscriptionScan {
    /// The events of the subscription read last, in log order.
    private(set) var events: [LedgerEvent] = []
    private var strings = RepeatedStrings()
    private var revisionKey: [UInt8] = []
    /// For a scan in key order, one `events` cursor per event ordinal (see `init(inKeyOrder:_:)`); nil to look
    /// each event up from the root.
    private let eventCursors: ForwardCursors?
    /// Ordinals from the last cursor on share it (long histories are few).
    private static let eventCursorCount = 32

    /// A scan that looks each event up on its own (one subscription, or a few).
    init() {
        eventCursors = nil
        revisionKey.reserveCapacity(64)
    }

    /// A scan of many subscriptions in `by_otid` key order (a replay), in `txn`, with one `events` cursor per event
    /// ordinal: the first event of each subscription, the second, and so on. The n-th events of neighbouring
    /// subscriptions tend to be neighbours (subscriptions bought about the same time renew about the same time, and
    /// Apple's ids grow with time), so each cursor's lookups go forward (`ForwardCursors`).
    init(inKeyOrder txn: Transaction, _ layout: StoreLayout) {
        eventCursors = ForwardCursors(txn, layout.events, count: Self.eventCursorCount * StoreLayout.eventKeyKinds)
        revisionKey.reserveCapacity(64)
    }

    /// Every event of one subscription with seq ≤ `asOf` (all when nil), in log order. `.forFold` for events that
    /// only go into a fold.
    static func events(
        _ layout: StoreLayout, _ env: AppStoreEnvironment, _ otid: OriginalTransactionID, upTo asOf: UInt64?,
        metadata parts: LedgerEvent.MetadataParts = .whole, _ txn: Transaction
    ) throws -> [LedgerEvent] {
        let cursor = try txn.cursor(layout.byOTID)
        guard let first = try cursor.find(StoreLayout.subscriptionKey(env, otid)) else { return [] }
        var scan = SubscriptionScan()
        try scan.read(first, cursor, upTo: asOf, metadata: parts, layout, txn)
        return scan.events
    }

    /// Reads into `events` the events with seq ≤ `asOf` (all when nil) of the subscription whose first `by_otid`
    /// entry is `first`, where `cursor` stands; the cursor is left on one of its entries (`nextKey()` moves to the
    /// next subscription). With `checkingKeys`, an event whose fact is not the one of the key its entry names is
    /// `corrupted` too.
    mutating func read(
        _ first: Cursor.Entry, _ cursor: Cursor, upTo asOf: UInt64?, metadata parts: LedgerEvent.MetadataParts,
        checkingKeys: Bool = false, _ layout: StoreLayout, _ txn: Transaction
    ) throws {
        events.removeAll(keepingCapacity: true)
        events.reserveCapacity(try cursor.duplicateCount())
        var entry: Cursor.Entry? = first
        while let e = entry {
            guard let seq = EventReference.decode(e.value, revisionKey: &revisionKey) else {
                throw LedgerError.corrupted("a by_otid value of \(Array(e.key)) is malformed")
            }
            if let asOf, seq > asOf { break }
            // One cursor per ordinal and kind of key: the n-th transactions of neighbouring subscriptions are
            // neighbours, their n-th notifications are not.
            let index = min(events.count, Self.eventCursorCount - 1) * StoreLayout.eventKeyKinds
                + StoreLayout.eventKeyKind(first: revisionKey.first)
            // Optional chaining, not `if let`: a binding copies the reference, a retain and a release per event.
            let found =
                try revisionKey.withUnsafeBytes { key in try eventCursors?.find(key, through: index) }?.value
                ?? txn.get(layout.events, key: revisionKey)
            guard let stored = found else { throw LedgerError.corrupted("by_otid names event \(seq), which is missing") }
            events.append(try StoreLayout.decodeEvent(seq: seq, stored, strings: &strings, metadata: parts))
            try ReceiptCreationDates.apply(to: &events[events.count - 1], layout, txn)
            if checkingKeys, !events[events.count - 1].fact.hasEventKey(e.value.extracting(8..<e.value.count)) {
                throw LedgerError.corrupted("event \(seq) is stored under another key")
            }
            entry = try cursor.nextDuplicate()
        }
    }
}
