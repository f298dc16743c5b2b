import Foundation
import LedgerCore

// MARK: - Instants

/// Parses instants as docs/socket-api.md and docs/cli.md write them (query strings, CLI flags): milliseconds since
/// epoch or ISO-8601, with or without fractional seconds.
public enum Instant {
    /// The instants a caller may ask about (`at`, `from`, `to`, `--at`, …): 1970-01-01T00:00:00Z through
    /// 9999-12-31T23:59:59.999Z, the last instant ISO-8601's four-digit years can write. It holds every instant the
    /// ledger accepts into a fact (2008..2200) with centuries to spare, and keeps what is computed from a caller's
    /// instant (a picture's range and ticks, a period's end, a calendar date) far from the ends of Int64.
    public static let queryRange: ClosedRange<UnixMillis> = 0...253_402_300_799_999
    /// How `queryRange` is named in refusals.
    public static let queryRangeText = "1970-01-01T00:00:00Z...9999-12-31T23:59:59.999Z (0...253402300799999 ms)"

    public static func parse(_ text: String) -> UnixMillis? {
        if let ms = Int64(text) { return ms }
        let plain = ISO8601DateFormatter()
        if let d = plain.date(from: text) { return milliseconds(d) }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = fractional.date(from: text) { return milliseconds(d) }
        return nil
    }

    /// `text` as an instant within `queryRange`; nil when it is no instant or lies outside.
    public static func parseInQueryRange(_ text: String) -> UnixMillis? {
        guard let ms = parse(text), queryRange.contains(ms) else { return nil }
        return ms
    }

    /// A date's milliseconds, or nil when they do not fit Int64 (converting would trap).
    private static func milliseconds(_ date: Date) -> UnixMillis? {
        UnixMillis(exactly: (date.timeIntervalSince1970 * 1000).rounded())
    }
}

// MARK: - Log positions

/// The log sequence numbers a caller may name (`after`, `asOf`, `--after`, `--as-of`).
public enum QuerySeq {
    /// The largest: no ledger comes near it, a reader holding seqs in a signed 64-bit integer (as most JSON readers
    /// do) reads every one, and the seq after it is still a UInt64 (a read of what follows `UInt64.max` would wrap
    /// around to the log's start).
    public static let max = UInt64(Int64.max)
    /// How the range is named in refusals.
    public static let rangeText = "0...\(max)"
}
