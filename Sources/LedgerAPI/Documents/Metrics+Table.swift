import Foundation
import LedgerCore

// MARK: - Buckets of valid time in a time zone

/// The length of a metric's buckets.
public enum MetricInterval: String, CaseIterable, Sendable {
    case day, week, month
}

public enum MetricBuckets {
    /// The most buckets one series may have (ten years by day).
    public static let maxBuckets = 3_660

    /// The boundaries of the `interval` buckets that cover `[from, to)` in `timeZone`: the first at the start of the
    /// day, ISO week (from Monday) or month holding `from`, each next one a day, week or month later on the
    /// calendar (so a day across a daylight-saving change is 23 or 25 hours), the last at or after `to`. Nil when
    /// `to` is not after `from` or more than `maxBuckets` would be needed.
    public static func boundaries(from: UnixMillis, to: UnixMillis, interval: MetricInterval, timeZone: TimeZone)
        -> [UnixMillis]?
    {
        guard to > from else { return nil }
        if timeZone.secondsFromGMT() == 0 && (timeZone.identifier == "UTC" || timeZone.identifier == "GMT") {
            return utcBoundaries(from: from, to: to, interval: interval)
        }
        var calendar = Calendar(identifier: .iso8601)
        calendar.timeZone = timeZone
        let unit: Calendar.Component =
            switch interval {
            case .day: .day
            case .week: .weekOfYear
            case .month: .month
            }
        let first = Date(timeIntervalSince1970: Double(from) / 1000)
        guard var date = calendar.dateInterval(of: unit, for: first)?.start else { return nil }
        var boundaries: [UnixMillis] = []
        while true {
            let ms = UnixMillis((date.timeIntervalSince1970 * 1000).rounded())
            boundaries.append(ms)
            if ms >= to { return boundaries }
            guard boundaries.count <= maxBuckets, let next = calendar.date(byAdding: unit, value: 1, to: date) else {
                return nil
            }
            date = next
        }
    }
}

extension MetricBuckets {
    static let day: UnixMillis = 86_400_000

    /// `boundaries` in UTC by the civil calendar alone (UTC has no daylight saving): the common case, without the
    /// calendar library.
    static func utcBoundaries(from: UnixMillis, to: UnixMillis, interval: MetricInterval) -> [UnixMillis]? {
        let firstDay = floorDiv(from, day)
        var (year, month) = civil(fromDays: firstDay)
        var date: Int64 =
            switch interval {
            case .day: firstDay
            case .week: firstDay - (firstDay + 3).mod(7)  // 1970-01-01 was a Thursday; ISO weeks start on Monday
            case .month: days(year: year, month: month)
            }
        var boundaries: [UnixMillis] = []
        while true {
            let ms = date * day
            boundaries.append(ms)
            if ms >= to { return boundaries }
            guard boundaries.count <= maxBuckets else { return nil }
            switch interval {
            case .day: date += 1
            case .week: date += 7
            case .month:
                (year, month) = month == 12 ? (year + 1, 1) : (year, month + 1)
                date = days(year: year, month: month)
            }
        }
    }

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }

    /// The year and month of the day `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64) {
        let z = days + 719_468
        let era = floorDiv(z, 146_097)
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month)
    }

    /// The day the first of `month` of `year` is, counted from 1970-01-01 (`days_from_civil`).
    static func days(year: Int64, month: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDiv(y, 400)
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}

extension Int64 {
    /// The remainder in `0..<n`.
    fileprivate func mod(_ n: Int64) -> Int64 { ((self % n) + n) % n }
}

// MARK: - A metric as a table: one row per bucket

/// The metrics `GET /v1/metrics/{name}` and `storeledger metrics NAME` answer, each a set of columns of
/// `MetricBucket` (docs/metrics.md defines them).
public enum MetricName: String, CaseIterable, Sendable {
    /// Subscriptions at each bucket's end: live, active, in a free trial, on another offer, in the grace period, in
    /// billing retry.
    case subscriptions
    /// New subscriptions, renewals, reactivations and churn by reason in each bucket.
    case movements
    /// Free trials that ended in each bucket, those converted to a paid period, and the rate.
    case conversion
    /// Monthly recurring revenue at each bucket's end, per currency (and in the operator's currency, with a rate
    /// table).
    case mrr
    /// Refunds and reversals dated in each bucket, and the amount given back per currency.
    case refunds
    /// Renewal retention by cohort: for the subscriptions whose first period began in each bucket, how many reached
    /// their 1st (the cohort's size), 2nd, … 24th period.
    case retention
}

/// A metric's rows: the bucket's start and end, then the metric's columns, every value a whole number (amounts in
/// milliunits; a rate in thousandths).
public struct MetricTable: Sendable {
    public var name: MetricName
    public var environment: String
    public var interval: MetricInterval
    public var timeZone: String
    public var productId: String?
    /// The entitlement whose granting products the figures keep, when asked.
    public var entitlement: String?
    /// The log position the figures are known at.
    public var asOf: UInt64
    /// Whether the figures were read from those the write path maintains (by whole UTC days, as known now), rather
    /// than folded on demand from every subscription.
    public var maintained: Bool
    public var columns: [String]
    public var rows: [(start: UnixMillis, end: UnixMillis, values: [Int64])]

    public init(
        _ name: MetricName, buckets: [MetricBucket], environment: AppStoreEnvironment, interval: MetricInterval,
        timeZone: String, productId: String?, entitlement: String? = nil, asOf: UInt64, maintained: Bool = false,
        rates: ExchangeRates? = nil
    ) {
        self.entitlement = entitlement
        self.maintained = maintained
        self.name = name
        self.environment = environment.rawValue
        self.interval = interval
        self.timeZone = timeZone
        self.productId = productId
        self.asOf = asOf
        let currencies = Set(buckets.flatMap { name == .mrr ? Array($0.mrr.keys) : Array($0.refunded.keys) }).sorted()
        switch name {
        case .subscriptions:
            columns = ["live", "active", "trials", "offers", "in_grace_period", "in_billing_retry"]
        case .movements:
            columns = ["new", "renewals", "reactivations", "churned"] + ChurnReason.allCases.map { "churned_\($0.rawValue)" }
        case .conversion:
            columns = ["trials_ended", "trials_converted", "conversion_permille"]
        case .mrr:
            columns = currencies.map { "mrr_\($0)" } + ["unpriced"] + (rates.map { ["mrr_in_\($0.currency)", "unconverted"] } ?? [])
        case .refunds:
            columns = ["refunds", "reversals", "purchases", "refund_permille"] + currencies.map { "refunded_\($0)" }
        case .retention:
            columns = (1...Metrics.retentionPeriods).map { "period_\($0)" }
        }
        rows = buckets.map { b in
            let values: [Int64]
            switch name {
            case .subscriptions:
                values = [b.live, b.active, b.trials, b.offers, b.inGracePeriod, b.inBillingRetry].map(Int64.init)
            case .movements:
                values = ([b.new, b.renewals, b.reactivations, b.churnedTotal] + ChurnReason.allCases.map { b.churned[$0] ?? 0 })
                    .map(Int64.init)
            case .conversion:
                let rate = b.trialsEnded == 0 ? 0 : (Int64(b.trialsConverted) * 1000 + Int64(b.trialsEnded) / 2) / Int64(b.trialsEnded)
                values = [Int64(b.trialsEnded), Int64(b.trialsConverted), rate]
            case .mrr:
                var v = currencies.map { b.mrr[$0] ?? 0 } + [Int64(b.unpriced)]
                if let rates {
                    let converted = b.mrr(in: rates)
                    v += [converted.amount, Int64(converted.unconverted)]
                }
                values = v
            case .refunds:
                let rate = b.purchases == 0 ? 0 : (Int64(b.refunds) * 1000 + Int64(b.purchases) / 2) / Int64(b.purchases)
                values = [Int64(b.refunds), Int64(b.reversals), Int64(b.purchases), rate] + currencies.map { b.refunded[$0] ?? 0 }
            case .retention:
                values = (0..<Metrics.retentionPeriods).map { Int64(b.retained.isEmpty ? 0 : b.retained[$0]) }
            }
            return (b.start, b.end, values)
        }
    }

    /// The table as CSV (RFC 4180): a header line, then one line per bucket; instants as ISO-8601 in UTC.
    public var csv: String {
        var out = "start,end," + columns.joined(separator: ",") + "\r\n"
        for row in rows {
            out += Self.iso(row.start) + "," + Self.iso(row.end) + ","
                + row.values.map(String.init).joined(separator: ",") + "\r\n"
        }
        return out
    }

    /// A bucket's boundary (a whole second) as ISO-8601 in UTC.
    static func iso(_ ms: UnixMillis) -> String {
        let days = MetricBuckets.floorDiv(ms, MetricBuckets.day)
        let (year, month) = MetricBuckets.civil(fromDays: days)
        let day = days - MetricBuckets.days(year: year, month: month) + 1
        let seconds = (ms - days * MetricBuckets.day) / 1000
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(seconds / 3600)):\(two(seconds / 60 % 60)):\(two(seconds % 60))Z"
    }
}

extension MetricTable: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("metric"); o.string(name.rawValue)
            o.key("environment"); o.string(environment)
            o.key("interval"); o.string(interval.rawValue)
            o.key("timeZone"); o.string(timeZone)
            if let productId { o.key("productId"); o.string(productId) }
            if let entitlement { o.key("entitlement"); o.string(entitlement) }
            o.key("asOf"); o.number(asOf)
            o.key("maintained"); o.bool(maintained)
            o.key("columns"); o.array(columns) { $0.string($1) }
            o.key("rows")
            o.array(rows) { a, row in
                a.object { r in
                    r.key("start"); r.number(row.start)
                    r.key("end"); r.number(row.end)
                    for (column, value) in zip(columns, row.values) {
                        r.key(column); r.number(value)
                    }
                }
            }
        }
    }
}
