import LMDB
import LedgerCore

/// The metrics the write path maintains: every subscription's changes (`Metrics.contributions`) summed by UTC day,
/// environment and product in `metric_days`. An input that changes a timeline changes the table by the contributions
/// of the timeline after it less those before it, so an append pays for the subscriptions it touched, and a metric
/// over buckets of whole UTC days (by day, ISO week or month in UTC) is read from the days instead of every
/// timeline.
struct MetricDayChanges {
    private(set) var sums: [MetricDayKey: [MetricCounter: Int64]] = [:]

    var isEmpty: Bool { sums.isEmpty }

    /// Adds `t`'s contributions (`sign` 1), or takes them back (`sign` -1).
    mutating func add(_ t: Timeline, sign: Int64 = 1) {
        let environment = t.environment
        Metrics.contributions(of: t) { instant, product, counter, delta in
            let key = MetricDayKey(environment: environment, day: MetricDayKey.day(of: instant), product: product ?? "")
            sums[key, default: [:]][counter, default: 0] &+= sign &* delta
        }
    }

    /// The change from `before` (nil: a new subscription) to `after`.
    mutating func replace(_ before: Timeline?, with after: Timeline) {
        if let before { add(before, sign: -1) }
        add(after)
    }

    /// Adds the changes to the stored days; a day left with no counter is deleted.
    func write(_ layout: StoreLayout, _ txn: Transaction) throws {
        for (key, changes) in sums.sorted(by: { $0.key < $1.key }) where changes.contains(where: { $0.value != 0 }) {
            let bytes = key.bytes
            var day: [MetricCounter: Int64] = [:]
            if let stored = try txn.get(layout.metricDays, key: bytes) {
                try stored.withUnsafeBytes { try StoredMetricDay.decode($0, into: &day) }
            }
            for (counter, delta) in changes { day[counter, default: 0] &+= delta }
            if day.values.allSatisfy({ $0 == 0 }) {
                _ = try txn.delete(layout.metricDays, key: bytes)
            } else {
                try txn.put(layout.metricDays, key: bytes, value: StoredMetricDay.encode(day))
            }
        }
    }

    /// The table as every stored timeline sums to: `metric_days` rebuilt from `timelines` (after a change of rules, a
    /// replay or an upgrade).
    /// - Complexity: O(stored timelines × their change instants).
    static func rebuild(_ layout: StoreLayout, _ txn: Transaction) throws {
        try txn.clear(layout.metricDays)
        for (key, day) in try summed(layout, txn) {
            try txn.put(layout.metricDays, key: key.bytes, value: StoredMetricDay.encode(day))
        }
    }

    /// What `metric_days` should hold: every stored timeline's contributions summed, zero sums left out, by key.
    static func summed(_ layout: StoreLayout, _ txn: Transaction) throws -> [(key: MetricDayKey, day: [MetricCounter: Int64])] {
        var all = MetricDayChanges()
        let cursor = try txn.cursor(layout.timelines)
        var entry = try cursor.first()
        while let e = entry {
            all.add(try StoredTimeline.decode(e.value))
            entry = try cursor.next()
        }
        return all.sums.sorted { $0.key < $1.key }.compactMap { key, day in
            let nonzero = day.filter { $0.value != 0 }
            return nonzero.isEmpty ? nil : (key, nonzero)
        }
    }

    /// Whether `metric_days` holds exactly what the stored timelines sum to; the first day that differs otherwise.
    static func firstDifference(_ layout: StoreLayout, _ txn: Transaction) throws -> String? {
        let expected = try summed(layout, txn)
        let cursor = try txn.cursor(layout.metricDays)
        var entry = try cursor.first()
        var index = 0
        while let e = entry {
            guard index < expected.count else { return "metric_days holds more days than the timelines sum to" }
            let (key, day) = expected[index]
            var found: [MetricCounter: Int64] = [:]
            try e.value.withUnsafeBytes { try StoredMetricDay.decode($0, into: &found) }
            if !e.key.hasSameBytes(as: key.bytes) || found != day {
                return "metric_days differs from the timelines' sums on day \(key.day) of \(key.environment.rawValue)"
                    + (key.product.isEmpty ? "" : " for \(key.product)")
            }
            index += 1
            entry = try cursor.next()
        }
        return index == expected.count ? nil : "metric_days lacks \(expected.count - index) days the timelines sum to"
    }

    /// Every stored day of `environment`, summed into `figures` (each day's changes dated at its first instant).
    static func sum(
        _ environment: AppStoreEnvironment, into figures: inout MetricAccumulator, _ layout: StoreLayout,
        _ txn: Transaction
    ) throws {
        let cursor = try txn.cursor(layout.metricDays)
        var entry = try cursor.seek(MetricDayKey.first(of: environment))
        var day: [MetricCounter: Int64] = [:]
        while let e = entry {
            guard let key = e.key.withUnsafeBytes({ MetricDayKey($0, of: environment) }) else { break }
            day.removeAll(keepingCapacity: true)
            try e.value.withUnsafeBytes { try StoredMetricDay.decode($0, into: &day) }
            let product = key.product.isEmpty ? nil : key.product
            for (counter, delta) in day {
                figures.add(key.day &* MetricDayKey.millisPerDay, product: product, counter, delta)
            }
            entry = try cursor.next()
        }
    }
}
