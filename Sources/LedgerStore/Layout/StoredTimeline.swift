import LMDB
import LedgerCodec
import LedgerCore

/// The value of `timelines`, the projection of one subscription: the seq its timeline reflects (its stamp, BE, 8)
/// ‖ the timeline's binary form. Every projection is written and read here, so the incremental engine, the queries
/// and a replay cannot disagree about it.
enum StoredTimeline {
    /// The stored form of `timeline`.
    static func encode(_ timeline: Timeline) -> [UInt8] {
        timeline.encoded(after: timeline.lastSeq)
    }

    /// The stored form of `timeline`, appended to `w` (a writer reused from one timeline to the next costs no
    /// allocation).
    static func encode(_ timeline: Timeline, into w: inout BinaryWriter) {
        timeline.encode(after: timeline.lastSeq, into: &w)
    }

    /// The timeline a stored projection holds.
    static func decode(_ stored: MappedBytes) throws -> Timeline {
        try withTimelineBytes(of: stored) { bytes throws(FactDecodingError) in try Timeline(decoding: bytes) }
    }

    /// The stored projection with `events` applied by the tail path of the incremental core (only the last period
    /// decoded, the earlier ones copied as stored), in its stored form; nil when that path does not apply.
    static func appending(_ events: [LedgerEvent], to stored: MappedBytes, rules: FoldRules) throws -> [UInt8]? {
        try withTimelineBytes(of: stored) { bytes throws(FactDecodingError) in
            try Timeline.appending(events, toEncoded: bytes, rules: rules, stamped: true)
        }
    }

    /// `appending(_:to:rules:)`, also handing back the timeline before and after as the tail path decoded them (its
    /// latest period only), for the lifecycle events.
    static func appendingWithTimelines(_ events: [LedgerEvent], to stored: MappedBytes, rules: FoldRules) throws
        -> (bytes: [UInt8], before: Timeline, after: Timeline)?
    {
        try withTimelineBytes(of: stored) { bytes throws(FactDecodingError) in
            try Timeline.appendingWithTimelines(events, toEncoded: bytes, rules: rules, stamped: true)
        }
    }

    /// Runs `body` on the timeline's bytes (after the stamp); truncated or undecodable bytes are corruption.
    private static func withTimelineBytes<T>(
        of stored: MappedBytes, _ body: (UnsafeRawBufferPointer) throws(FactDecodingError) -> T
    ) throws -> T {
        guard stored.count >= 8 else { throw LedgerError.corrupted("a stored timeline is truncated") }
        do {
            return try stored.withUnsafeBytes { (bytes) throws(FactDecodingError) in
                try body(UnsafeRawBufferPointer(rebasing: bytes[8...]))
            }
        } catch {
            throw LedgerError.corrupted("timeline does not decode: \(error)")
        }
    }
}
