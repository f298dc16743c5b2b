import LedgerCore

// MARK: - AppleDate

/// Apple's V1 formatted dates, `"2018-11-29 08:29:26 Etc/GMT"`, to milliseconds since epoch. Only the GMT/UTC
/// spellings are accepted: the `_pst` variants are never needed because every date also comes in GMT.
enum AppleDate {
    static func parse(_ text: String) -> UnixMillis? {
        let u = Array(text.utf8)
        guard u.count >= 19, u[4] == 0x2D, u[7] == 0x2D, u[10] == 0x20 || u[10] == 0x54, u[13] == 0x3A, u[16] == 0x3A
        else { return nil }
        func number(_ from: Int, _ to: Int) -> Int? {
            var v = 0
            for i in from..<to {
                let d = Int(u[i]) - 48
                guard d >= 0 && d <= 9 else { return nil }
                v = v * 10 + d
            }
            return v
        }
        guard let year = number(0, 4), let month = number(5, 7), let day = number(8, 10), let hour = number(11, 13),
            let minute = number(14, 16), let second = number(17, 19), (1...12).contains(month), (1...31).contains(day),
            hour < 24, minute < 60, second < 61
        else { return nil }
        let zone = String(decoding: u[19...], as: UTF8.self).trimmingSpaces()
        guard ["Etc/GMT", "GMT", "UTC", "Etc/UTC", "Z", ""].contains(zone) else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return (Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)) * 1000
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}


extension String {
    fileprivate func trimmingSpaces() -> String {
        var s = Substring(self)
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
