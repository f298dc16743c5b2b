/// A calendar length such as `P1M`, `P7D`, `P2W` or `P1Y`: months and days, added in UTC with the day of month clamped
/// (January 31 + P1M = February 28 or 29), the way App Store periods are counted. Foundation-free.
public struct CalendarDuration: Hashable, Sendable, Codable, CustomStringConvertible {
    public var months: Int
    public var days: Int

    public init(months: Int = 0, days: Int = 0) {
        self.months = months
        self.days = days
    }

    /// Parses the date part of an ISO-8601 duration: `P` then any of `nY`, `nM`, `nW`, `nD` in that order.
    public init?(iso8601 text: String) {
        var bytes = text.utf8.makeIterator()
        guard bytes.next() == UInt8(ascii: "P") else { return nil }
        var months = 0, days = 0, number = 0, digits = 0, units = 0
        var lastRank = -1
        while let b = bytes.next() {
            if b >= 48 && b <= 57 {
                guard digits < 9 else { return nil }
                number = number * 10 + Int(b - 48)
                digits += 1
                continue
            }
            guard digits > 0 else { return nil }
            let rank: Int
            switch b {
            case UInt8(ascii: "Y"): rank = 0; months += number * 12
            case UInt8(ascii: "M"): rank = 1; months += number
            case UInt8(ascii: "W"): rank = 2; days += number * 7
            case UInt8(ascii: "D"): rank = 3; days += number
            default: return nil
            }
            guard rank > lastRank else { return nil }
            lastRank = rank
            number = 0
            digits = 0
            units += 1
        }
        guard digits == 0, units > 0 else { return nil }
        self.months = months
        self.days = days
    }

    public var description: String {
        var s = "P"
        if months % 12 == 0 && months > 0 { s += "\(months / 12)Y" } else if months > 0 { s += "\(months)M" }
        if days > 0 || months == 0 { s += "\(days)D" }
        return s
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let text = try c.decode(String.self)
        guard let d = CalendarDuration(iso8601: text) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "not an ISO-8601 duration: \(text)")
        }
        self = d
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }

    /// The instant this duration after `instant` (UTC calendar arithmetic).
    /// - Complexity: O(1).
    public func added(to instant: UnixMillis) -> UnixMillis {
        let msPerDay: Int64 = 86_400_000
        var day = instant / msPerDay
        var msOfDay = instant % msPerDay
        if msOfDay < 0 {
            msOfDay += msPerDay
            day -= 1
        }
        if months != 0 {
            let (y, m, d) = CivilCalendar.date(fromDays: day)
            let total = y * 12 + (m - 1) + Int64(months)
            let ny = total >= 0 ? total / 12 : (total - 11) / 12
            let nm = total - ny * 12 + 1
            day = CivilCalendar.days(fromYear: ny, month: nm, day: min(d, Self.daysInMonth(ny, nm)))
        }
        // Saturates: an instant near the ends of Int64 (stored by an older build) must not trap.
        return day.saturatingAdd(Int64(days)).saturatingMultiply(msPerDay).saturatingAdd(msOfDay)
    }

    static func daysInMonth(_ y: Int64, _ m: Int64) -> Int64 {
        switch m {
        case 2: (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

/// Howard Hinnant's civil-calendar algorithms (proleptic Gregorian, UTC, day 0 = 1970-01-01), without Foundation: the
/// fold's calendar arithmetic and every date the ledger writes as text (`TimelinePicture`) use these.
public enum CivilCalendar {
    /// The day number of a calendar date (month 1...12).
    public static func days(fromYear y0: Int64, month m: Int64, day d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The calendar date (year, month 1...12, day 1...31) of a day number.
    public static func date(fromDays z0: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? yoe + era * 400 + 1 : yoe + era * 400, m, d)
    }
}
