import Foundation
import LedgerCore

// MARK: - Instants

/// Parses instants as docs/socket-api.md and docs/cli.md write them (query strings, CLI flags): milliseconds since
/// epoch, ISO-8601 with or without fractional seconds, or a calendar date `YYYY-MM-DD` (its midnight in the time zone
/// the reading is in, UTC unless it names one), which is what people type.
public enum Instant {
    /// The instants a caller may ask about (`at`, `from`, `to`, `--at`, …): 1970-01-01T00:00:00Z through
    /// 9999-12-31T23:59:59.999Z, the last instant ISO-8601's four-digit years can write. It holds every instant the
    /// ledger accepts into a fact (2008..2200) with centuries to spare, and keeps what is computed from a caller's
    /// instant (a picture's range and ticks, a period's end, a calendar date) far from the ends of Int64.
    public static let queryRange: ClosedRange<UnixMillis> = 0...253_402_300_799_999
    /// How `queryRange` is named in refusals.
    public static let queryRangeText = "1970-01-01T00:00:00Z...9999-12-31T23:59:59.999Z (0...253402300799999 ms)"

    /// `text` as an instant, a date alone at its midnight UTC.
    public static func parse(_ text: String) -> UnixMillis? { parse(text, timeZone: utc) }

    /// `text` as an instant, a date alone at its midnight in `timeZone`.
    public static func parse(_ text: String, timeZone: TimeZone) -> UnixMillis? {
        if let ms = Int64(text) { return ms }
        if let date = calendarDate(text) { return midnight(of: date, in: timeZone) }
        let plain = ISO8601DateFormatter()
        if let d = plain.date(from: text) { return milliseconds(d) }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = fractional.date(from: text) { return milliseconds(d) }
        return nil
    }

    /// `text` as an instant within `queryRange`; nil when it is no instant or lies outside.
    public static func parseInQueryRange(_ text: String, timeZone: TimeZone = utc) -> UnixMillis? {
        guard let ms = parse(text, timeZone: timeZone), queryRange.contains(ms) else { return nil }
        return ms
    }

    public static let utc = TimeZone(secondsFromGMT: 0)!

    /// Year, month and day of a text that is exactly `YYYY-MM-DD`; nil for any other text.
    private static func calendarDate(_ text: String) -> (year: Int, month: Int, day: Int)? {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var n = 0
            for b in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) else { return nil }
                n = n * 10 + Int(b - UInt8(ascii: "0"))
            }
            return n
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10) else { return nil }
        return (year, month, day)
    }

    /// The first instant of a calendar date in `zone` (the start of the day, where a time-zone change skips
    /// midnight); nil for a date the calendar does not have (`2024-02-30`).
    private static func midnight(of date: (year: Int, month: Int, day: Int), in zone: TimeZone) -> UnixMillis? {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        guard (1...12).contains(date.month), (1...31).contains(date.day),
            let noon = calendar.date(from: DateComponents(year: date.year, month: date.month, day: date.day, hour: 12)),
            calendar.component(.day, from: noon) == date.day, calendar.component(.month, from: noon) == date.month
        else { return nil }
        return milliseconds(calendar.startOfDay(for: noon))
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
