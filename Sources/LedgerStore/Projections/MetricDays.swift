import LMDB
import LedgerCore

/// The subscription metrics the store maintains: every subscription's changes (`Metrics.contributions`) summed by UTC
/// day, environment and product in `metric_days`.
///
/// The write path only marks each subscription whose timeline's contributions changed (`metric_dirty`), with the
/// first instant they may differ at (`Metrics.firstChange`). The follower (`MetricsFollower`) then sums each marked
/// subscription in, off the write path and coalesced (a subscription an append burst touched many times is summed
/// once): what its timeline contributes now less what it contributed when last summed (`metric_points`), restated
/// from the marked instant's day on (`MetricPoints.restating`: a renewal restates its tail, not its history). A
/// read adds the same correction for subscriptions still marked, so every answer is exact whatever the follower has
/// done; buckets of whole UTC days as known now cost O(days × products + marked subscriptions), whatever the number
/// of subscriptions.
enum MetricDays {
    /// What a write did to a subscription's contributions.
    enum Change {
        /// Nothing (`Metrics.firstChange` found none).
        case none
        /// They may differ from this instant on; the states before it are as they were.
        case from(UnixMillis)
        /// Anything (a subscription new here, a refold).
        case whole
    }

    /// The write path's part: `key`'s timeline changed. A mark holds the earliest instant of every change since the
    /// subscription was last summed (eight bytes, big-endian, its sign bit flipped), or nothing for the whole.
    static func markChanged(_ key: [UInt8], _ change: Change, _ layout: StoreLayout, _ txn: Transaction) throws {
        let instant: UnixMillis
        switch change {
        case .none: return
        case .whole: return try txn.put(layout.metricDirty, key: key, value: [])
        case .from(let from): instant = from
        }
        if let marked = try txn.get(layout.metricDirty, key: key) {
            guard let earlier = marked.withUnsafeBytes({ markedInstant($0) }), earlier > instant else { return }
        }
        try txn.put(layout.metricDirty, key: key, value: BigEndian.bytes(UInt64(bitPattern: instant) ^ (1 << 63)))
    }

    /// The instant a mark holds; nil for the whole timeline.
    private static func markedInstant(_ value: UnsafeRawBufferPointer) -> UnixMillis? {
        guard value.count == 8 else { return nil }
        var bits: UInt64 = 0
        for b in value { bits = bits << 8 | UInt64(b) }
        return UnixMillis(bitPattern: bits ^ (1 << 63))
    }

    /// Sums up to `limit` marked subscriptions into `metric_days`, clearing their marks; how many it did.
    static func catchUp(limit: Int, _ layout: StoreLayout, _ txn: Transaction) throws -> Int {
        var marks: [(key: [UInt8], from: UnixMillis?)] = []
        let cursor = try txn.cursor(layout.metricDirty)
        var entry = try cursor.first()
        while let e = entry, marks.count < limit {
            marks.append((Array(e.key), e.value.withUnsafeBytes { markedInstant($0) }))
            entry = try cursor.next()
        }
        var changes = DayChanges()
        for (key, from) in marks {
            guard let (environment, _) = key.withUnsafeBytes({ StoreLayout.decodeSubscriptionKey($0) }) else {
                throw LedgerError.corrupted("a metric_dirty key does not name a subscription")
            }
            let (now, difference) = try pointsNowAndDifference(key, restatingFrom: from, layout, txn)
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
        return marks.count
    }

    /// What subscription `key`'s timeline contributes now, and how that differs from what it contributed when last
    /// summed in, restated from the instant its mark holds (`from`; nil: the whole timeline).
    private static func pointsNowAndDifference(
        _ key: [UInt8], restatingFrom from: UnixMillis?, _ layout: StoreLayout, _ txn: Transaction
    ) throws -> (MetricPoints, [MetricPoints.Point]) {
        let before = try txn.get(layout.metricPoints, key: key).map { stored in
            try stored.withUnsafeBytes { try MetricPoints(decoding: $0) }
        } ?? MetricPoints()
        guard let stored = try txn.get(layout.timelines, key: key) else {
            return (MetricPoints(), MetricPoints.difference(from: before, to: MetricPoints()))
        }
        let (now, difference) = MetricPoints.restating(try StoredTimeline.decode(stored), from: from ?? .min, before: before)
        return (now, difference)
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
                let from = m.value.withUnsafeBytes { markedInstant($0) }
                let (_, difference) = try pointsNowAndDifference(key, restatingFrom: from, layout, txn)
                for p in difference {
                    for i in figures.indices { figures[i].add(p.day &* MetricDayKey.millisPerDay, product: p.product, p.counter, p.sum) }
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
