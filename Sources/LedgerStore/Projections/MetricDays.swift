import LMDB
import LedgerCore

/// The subscription metrics the store maintains: every subscription's changes (`Metrics.contributions`) summed by UTC
/// day, environment and product in `metric_days`.
///
/// The write path only marks each subscription whose timeline it wrote (`metric_dirty`, one put). The follower
/// (`MetricsFollower`) then sums each marked subscription in, off the write path and coalesced (a subscription an
/// append burst touched many times is summed once): what its timeline contributes now less what it contributed when
/// last summed (`metric_points`). A read adds the same correction for subscriptions still marked, so every answer is
/// exact whatever the follower has done; buckets of whole UTC days as known now cost O(days × products + marked
/// subscriptions), whatever the number of subscriptions.
enum MetricDays {
    /// The write path's part: `key`'s timeline changed.
    static func markChanged(_ key: [UInt8], _ layout: StoreLayout, _ txn: Transaction) throws {
        try txn.put(layout.metricDirty, key: key, value: [])
    }

    /// Sums up to `limit` marked subscriptions into `metric_days`, clearing their marks; how many it did.
    static func catchUp(limit: Int, _ layout: StoreLayout, _ txn: Transaction) throws -> Int {
        var keys: [[UInt8]] = []
        let cursor = try txn.cursor(layout.metricDirty)
        var entry = try cursor.first()
        while let e = entry, keys.count < limit {
            keys.append(Array(e.key))
            entry = try cursor.next()
        }
        var changes = DayChanges()
        for key in keys {
            guard let (environment, _) = key.withUnsafeBytes({ StoreLayout.decodeSubscriptionKey($0) }) else {
                throw LedgerError.corrupted("a metric_dirty key does not name a subscription")
            }
            let (before, now) = try pointsBeforeAndNow(key, layout, txn)
            let difference = MetricPoints.difference(from: before, to: now)
            guard !difference.isEmpty else {
                _ = try txn.delete(layout.metricDirty, key: key)
                continue
            }
            changes.add(difference, environment)
            if now.points.isEmpty {
                _ = try txn.delete(layout.metricPoints, key: key)
            } else {
                try txn.put(layout.metricPoints, key: key, value: now.encoded)
            }
            _ = try txn.delete(layout.metricDirty, key: key)
        }
        try changes.write(layout, txn)
        return keys.count
    }

    /// What subscription `key` contributed when last summed in, and what its timeline contributes now.
    private static func pointsBeforeAndNow(_ key: [UInt8], _ layout: StoreLayout, _ txn: Transaction) throws
        -> (MetricPoints, MetricPoints)
    {
        let before = try txn.get(layout.metricPoints, key: key).map { stored in
            try stored.withUnsafeBytes { try MetricPoints(decoding: $0) }
        }
        let now = try txn.get(layout.timelines, key: key).map { MetricPoints(try StoredTimeline.decode($0)) }
        return (before ?? MetricPoints(), now ?? MetricPoints())
    }

    /// Starts the sums over: `metric_days` and `metric_points` emptied and every subscription marked (after a change
    /// of rules, a replay or an upgrade rewrote the timelines). Writes a key per subscription; the sums are made by
    /// `catchUp`, in transactions of their own.
    static func reset(_ layout: StoreLayout, _ txn: Transaction) throws {
        try txn.clear(layout.metricDays)
        try txn.clear(layout.metricPoints)
        let cursor = try txn.cursor(layout.timelines)
        var entry = try cursor.first()
        while let e = entry {
            try txn.put(layout.metricDirty, key: Array(e.key), value: [])
            entry = try cursor.next()
        }
    }

    /// Every day of `environment`, summed into each of `figures` (each day's changes dated at its first instant), corrected
    /// for the subscriptions still marked.
    static func sum(
        _ environment: AppStoreEnvironment, into figures: inout [MetricAccumulator], _ layout: StoreLayout,
        _ txn: Transaction
    ) throws {
        let prefix = StoreLayout.environmentPrefix(environment)
        let cursor = try txn.cursor(layout.metricDays)
        var entry = try cursor.seek(prefix)
        var day: [MetricCounter: Int64] = [:]
        while let e = entry {
            guard let key = e.key.withUnsafeBytes({ MetricDayKey($0, of: environment) }) else { break }
            day.removeAll(keepingCapacity: true)
            try e.value.withUnsafeBytes { try StoredMetricDay.decode($0, into: &day) }
            let product = key.product.isEmpty ? nil : key.product
            for (counter, delta) in day {
                for i in figures.indices { figures[i].add(key.day &* MetricDayKey.millisPerDay, product: product, counter, delta) }
            }
            entry = try cursor.next()
        }
        let marked = try txn.cursor(layout.metricDirty)
        var mark = try marked.seek(prefix)
        while let m = mark, m.key.withUnsafeBytes({ $0.starts(with: prefix) }) {
            let key = Array(m.key)
            if key.withUnsafeBytes({ StoreLayout.decodeSubscriptionKey($0)?.0 }) == environment {
                let (before, now) = try pointsBeforeAndNow(key, layout, txn)
                for (points, sign) in [(before, Int64(-1)), (now, 1)] {
                    for p in points.points {
                        for i in figures.indices {
                            figures[i].add(p.day &* MetricDayKey.millisPerDay, product: p.product, p.counter, sign &* p.sum)
                        }
                    }
                }
            }
            mark = try marked.next()
        }
    }

    /// The first way the maintained sums differ from the stored timelines, if any: a subscription not marked whose
    /// `metric_points` are not what its timeline contributes, points of a subscription with no timeline, or a day of
    /// `metric_days` that is not the sum of every subscription's points.
    /// - Complexity: O(stored timelines × their change instants).
    static func firstDifference(_ layout: StoreLayout, _ txn: Transaction) throws -> String? {
        let timelines = try txn.cursor(layout.timelines)
        var entry = try timelines.first()
        while let e = entry {
            let key = Array(e.key)
            if try txn.get(layout.metricDirty, key: key) == nil {
                let now = MetricPoints(try StoredTimeline.decode(e.value))
                let stored = try txn.get(layout.metricPoints, key: key).map { try $0.withUnsafeBytes { try MetricPoints(decoding: $0) } }
                if now != (stored ?? MetricPoints()) {
                    let name = key.withUnsafeBytes { StoreLayout.decodeSubscriptionKey($0) }
                        .map { "\($0.0.rawValue)/\($0.1)" } ?? "\(key)"
                    return "metric_points of \(name) differ from what its timeline contributes"
                }
            }
            entry = try timelines.next()
        }
        var expected = DayChanges()
        let points = try txn.cursor(layout.metricPoints)
        var point = try points.first()
        while let p = point {
            let key = Array(p.key)
            guard let (environment, otid) = key.withUnsafeBytes({ StoreLayout.decodeSubscriptionKey($0) }) else {
                return "a metric_points key does not name a subscription"
            }
            guard try txn.get(layout.timelines, key: key) != nil else {
                return "metric_points of \(environment.rawValue)/\(otid) have no timeline"
            }
            expected.add(try p.value.withUnsafeBytes { try MetricPoints(decoding: $0) }.points, environment)
            point = try points.next()
        }
        let sums = expected.nonzero
        let days = try txn.cursor(layout.metricDays)
        var day = try days.first()
        var index = 0
        while let d = day {
            guard index < sums.count else { return "metric_days holds days no subscription's points sum to" }
            var found: [MetricCounter: Int64] = [:]
            try d.value.withUnsafeBytes { try StoredMetricDay.decode($0, into: &found) }
            let (key, sum) = sums[index]
            if !d.key.hasSameBytes(as: key.bytes) || found != sum {
                return "metric_days differs from the subscriptions' points on day \(key.day) of \(key.environment.rawValue)"
                    + (key.product.isEmpty ? "" : " for \(key.product)")
            }
            index += 1
            day = try days.next()
        }
        return index == sums.count ? nil : "metric_days lacks \(sums.count - index) days the subscriptions' points sum to"
    }

    /// Changes to `metric_days`, by day: each day's counters in a short list (a day holds a few), found by one look-up
    /// per run of points on the same day (a subscription's points come in key order).
    struct DayChanges {
        private var changes: [(key: MetricDayKey, counters: [(counter: MetricCounter, sum: Int64)])] = []
        private var place: [MetricDayKey: Int] = [:]

        mutating func add(_ points: [MetricPoints.Point], _ environment: AppStoreEnvironment) {
            var last: Int?
            for p in points {
                let key = MetricDayKey(environment: environment, day: p.day, product: p.product ?? "")
                let i: Int
                if let last, changes[last].key == key {
                    i = last
                } else if let known = place[key] {
                    i = known
                } else {
                    i = changes.count
                    place[key] = i
                    changes.append((key, []))
                }
                last = i
                if let j = changes[i].counters.firstIndex(where: { $0.counter == p.counter }) {
                    changes[i].counters[j].sum &+= p.sum
                } else {
                    changes[i].counters.append((p.counter, p.sum))
                }
            }
        }

        /// The days in key order, each with its counters, zero sums left out (a day left with none is left out too).
        var days: [(key: MetricDayKey, counters: [(counter: MetricCounter, sum: Int64)])] {
            changes.indices.sorted { changes[$0].key < changes[$1].key }.compactMap { i in
                let kept = changes[i].counters.filter { $0.sum != 0 }
                return kept.isEmpty ? nil : (changes[i].key, kept)
            }
        }

        /// The days with a nonzero sum, in key order, their zero sums left out.
        var nonzero: [(key: MetricDayKey, day: [MetricCounter: Int64])] {
            days.map { ($0.key, Dictionary(uniqueKeysWithValues: $0.counters.map { ($0.counter, $0.sum) })) }
        }

        /// Adds the changes to the stored days; a day left with no counter is deleted.
        func write(_ layout: StoreLayout, _ txn: Transaction) throws {
            for (key, changes) in days {
                let bytes = key.bytes
                var day = try txn.get(layout.metricDays, key: bytes).map { stored in
                    try stored.withUnsafeBytes { try StoredMetricDay.decode($0) }
                } ?? []
                for (counter, delta) in changes {
                    if let i = day.firstIndex(where: { $0.counter == counter }) {
                        day[i].sum &+= delta
                    } else {
                        day.append((counter, delta))
                    }
                }
                if day.allSatisfy({ $0.sum == 0 }) {
                    _ = try txn.delete(layout.metricDays, key: bytes)
                } else {
                    try txn.put(layout.metricDays, key: bytes, value: StoredMetricDay.encode(day))
                }
            }
        }
    }
}
