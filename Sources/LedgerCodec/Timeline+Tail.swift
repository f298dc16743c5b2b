import LedgerCore

extension Timeline {
    /// The incremental core's fast path, on a stored timeline: applies `events` (after everything it knows, as
    /// `apply(contentsOf:rules:)`) decoding only its latest period; the earlier periods' records are copied as they
    /// were stored. Returns the new encoding, preceded by the new `lastSeq` as eight big-endian bytes when `stamped`
    /// (see `encoded(after:)`): the same bytes as decoding the timeline whole, applying and encoding. Returns nil when
    /// this path does not apply (an event falls in the past, or a step needs an earlier period: a revision, a
    /// restored copy, a refund reversal); the caller then decodes the whole timeline.
    /// - Complexity: O(size of the encoding) to copy it, plus the steps of the events on the latest period.
    public static func appending(
        _ events: [LedgerEvent], toEncoded bytes: UnsafeRawBufferPointer, rules: FoldRules, stamped: Bool = false
    ) throws(FactDecodingError) -> [UInt8]? {
        try onTail(events, toEncoded: bytes, rules: rules, stamped: stamped, keepingBefore: false)?.bytes
    }

    /// `appending(_:toEncoded:rules:stamped:)`, also handing back the timeline before and after the events as the
    /// tail path decoded them (only the latest period; the earlier ones left out), for deriving lifecycle events:
    /// `Lifecycle.statements` says the same about the periods such a timeline holds.
    public static func appendingWithTimelines(
        _ events: [LedgerEvent], toEncoded bytes: UnsafeRawBufferPointer, rules: FoldRules, stamped: Bool = false
    ) throws(FactDecodingError) -> (bytes: [UInt8], before: Timeline, after: Timeline)? {
        guard let tail = try onTail(events, toEncoded: bytes, rules: rules, stamped: stamped, keepingBefore: true),
            let before = tail.before
        else { return nil }
        return (tail.bytes, before, tail.after)
    }

    /// The tail path itself, for both: the timeline as decoded is kept only when asked (`keepingBefore`). Inlined,
    /// so that `appending` keeps no copy and hands back no timeline it does not need.
    @inline(__always)
    private static func onTail(
        _ events: [LedgerEvent], toEncoded bytes: UnsafeRawBufferPointer, rules: FoldRules, stamped: Bool,
        keepingBefore: Bool
    ) throws(FactDecodingError) -> (bytes: [UInt8], before: Timeline?, after: Timeline)? {
        var stored = StoredTail()
        var timeline = try Timeline(decoding: bytes, leavingOutEarlierPeriods: true, stored: &stored)
        let before = keepingBefore ? timeline : nil
        let earlierPeriods = stored.earlierPeriods.map { UnsafeRawBufferPointer(rebasing: bytes[$0]) }
        if earlierPeriods == nil {
            guard timeline.apply(contentsOf: events, rules: rules) else { return nil }
        } else {
            // Without its stored id bounds the fold cannot tell a renewal without reading every period.
            guard stored.boundsStored, timeline.applyToLatestPeriod(contentsOf: events, rules: rules) else { return nil }
        }
        var w = BinaryWriter(capacity: 8 + timeline.estimatedSize(earlierPeriods: earlierPeriods?.count ?? 0))
        if stamped { w.writeBigEndian(timeline.lastSeq) }
        // The latest period's terms, when the events left them as they were (and a renewal shares them), are copied
        // from the stored bytes rather than written again.
        timeline.encode(into: &w, earlierPeriods: earlierPeriods, storedTerms: stored.latestTerms)
        return (w.finish(), before, timeline)
    }
}
