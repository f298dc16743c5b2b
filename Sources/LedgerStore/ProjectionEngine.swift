import LMDB
import LedgerCore

/// Keeps the timeline projections in step with the log, inside the append's write transaction.
///
/// The incremental core: for each subscription the batch touched, the stored timeline is decoded and the new events
/// are applied to it. An event after everything known resumes in O(1); one that lands in the past makes `apply`
/// refuse, and that one subscription is refolded from its own events (never more). Customers need no rewrite: they
/// are read through `by_user` from the timelines they own.
struct ProjectionEngine {
    let layout: StoreLayout
    let rules: FoldRules

    /// Brings the timelines of every subscription `events` touch up to date; `events` are in log order.
    func apply(_ events: [LedgerEvent], in txn: Transaction) throws {
        // Group by subscription, keeping log order inside each group.
        var order: [[UInt8]] = []
        var groups: [[UInt8]: [LedgerEvent]] = [:]
        for event in events {
            guard let otid = event.fact.originalTransactionId else { continue }
            let key = StoreLayout.subscriptionKey(event.fact.environment, otid)
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(event)
        }
        for key in order {
            let group = groups[key]!
            let first = group[0]
            var timeline: Timeline
            if let stored = try txn.get(layout.timelines, key: key) {
                // The common case, events after everything known about the latest period: only that period is
                // decoded, the earlier ones are copied as stored.
                if let updated = try appendedTimeline(group, stored) {
                    try txn.put(layout.timelines, key: key, value: updated)
                    continue
                }
                timeline = try decodeTimeline(stored)
                // `apply` leaves the timeline untouched when it declines, so a refold starts from the facts alone.
                if !timeline.apply(contentsOf: group, rules: rules) {
                    let all = try Ledger.subscriptionEvents(
                        layout, first.fact.environment, first.fact.originalTransactionId!, upTo: nil, metadata: .forFold,
                        txn)
                    timeline = Timeline.fold(all, rules: rules)
                }
            } else {
                timeline = Timeline.fold(group, rules: rules)
            }
            try txn.put(layout.timelines, key: key, value: Self.stamped(timeline))
        }
    }

    /// The stored form: the seq the timeline reflects, then its bytes.
    static func stamped(_ timeline: Timeline) -> [UInt8] {
        timeline.encoded(after: timeline.lastSeq)
    }

    /// The stored timeline with `events` applied by the tail path, stamped; nil when that path does not apply.
    private func appendedTimeline(_ events: [LedgerEvent], _ stored: UnsafeRawBufferPointer) throws -> [UInt8]? {
        try Self.withTimelineBytes(of: stored) { bytes throws(FactDecodingError) in
            try Timeline.appending(events, toEncoded: bytes, rules: rules, stamped: true)
        }
    }

    func decodeTimeline(_ stored: UnsafeRawBufferPointer) throws -> Timeline {
        try Self.withTimelineBytes(of: stored) { bytes throws(FactDecodingError) in try Timeline(decoding: bytes) }
    }

    /// Runs `body` on a stored projection's timeline bytes (after its stamp); truncated or undecodable bytes are
    /// corruption.
    private static func withTimelineBytes<T>(
        of stored: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(FactDecodingError) -> T
    ) throws -> T {
        guard stored.count >= 8 else { throw LedgerError.corrupted("a stored timeline is truncated") }
        do {
            return try body(UnsafeRawBufferPointer(rebasing: stored[8...]))
        } catch {
            throw LedgerError.corrupted("timeline does not decode: \(error)")
        }
    }
}
