import LMDB
import LedgerCore
import LedgerErrors

// MARK: - Revenue over an interval, as known at a log position

extension Ledger {
    /// The revenue over `[from, to)` (valid time; nil: an open end) as known after log seq `asOf` (default:
    /// everything): of the periods `user` bought when given (the subscriptions `by_user` names for them), else of
    /// every subscription of `env`; of `product` when given (`Revenue.summary`).
    ///
    /// Without a user it reads every stored timeline, and with an `asOf` before the last seq folds every
    /// subscription's events up to it (as a customer read folds the customer's): a report, not a hot read.
    public func revenue(
        user: AppUserID? = nil, product: String? = nil, environment env: AppStoreEnvironment = .production,
        from: UnixMillis? = nil, to: UnixMillis? = nil, asOf: UInt64? = nil
    ) throws -> RevenueSummary {
        try environment.read { txn in
            let last = try batch.lastSeq(txn)
            let knownAsOf = min(asOf ?? last, last)
            let names = try IdentityNames(identities, layout, txn)
            let stored = try user.map { try names.asked($0) }
            let timelines =
                try stored.map { try userTimelines($0, env, asOf: asOf, txn, names).timelines.map(\.timeline) }
                ?? everyTimeline(env, asOf: asOf, txn)
            // Every subscription's timeline names people as the log does; its entries' buyers are shown after.
            var summary = Revenue.summary(
                timelines: timelines, environment: env, from: from, to: to, asOf: knownAsOf, user: user,
                product: product)
            for i in summary.entries.indices {
                if let buyer = summary.entries[i].appUserId { summary.entries[i].appUserId = try names.shown(buyer) }
            }
            return summary
        }
    }
}

// MARK: - Subscription metrics over buckets, as known at a log position

/// A metric's buckets, the log position they are known at, and whether they were read from the figures the write
/// path maintains (`metric_days`) or folded on demand from every subscription.
public struct MetricFigures: Sendable, Hashable {
    public var buckets: [MetricBucket]
    public var asOf: UInt64
    public var maintained: Bool
}

extension Ledger {
    /// The metrics of every subscription of `env` (of `product` when given) for each bucket between consecutive
    /// `boundaries`, as known after log seq `asOf` (default: everything), and the seq they are known at.
    ///
    /// Buckets of whole UTC days (by day, ISO week or month in UTC) as known now are summed from `metric_days`, which
    /// the write path keeps: O(days of the environment × products), whatever the number of subscriptions. Any other
    /// question (a past `asOf`, buckets in another time zone, or `folding`) is folded on demand from every
    /// subscription (`Metrics.sum`): a report, not a hot read. Both give the same figures.
    ///
    /// `entitlement` keeps the periods of the products that grant it in the catalog the log holds as known at
    /// `asOf` (an unconfigured product grants the entitlement named after it; with `product`, that product if it
    /// grants it, else nothing).
    public func metrics(
        environment env: AppStoreEnvironment = .production, boundaries: [UnixMillis], product: String? = nil,
        entitlement: String? = nil, asOf: UInt64? = nil, folding: Bool = false
    ) throws -> MetricFigures {
        try metrics(
            environment: env, bucketings: [boundaries], product: product, entitlement: entitlement, asOf: asOf,
            folding: folding)[0]
    }

    /// `metrics(environment:boundaries:…)` for several sets of boundaries (a year by day and by month), in one read:
    /// every set as known at the same log position, the days or the timelines read once for all of them.
    public func metrics(
        environment env: AppStoreEnvironment = .production, bucketings: [[UnixMillis]], product: String? = nil,
        entitlement: String? = nil, asOf: UInt64? = nil, folding: Bool = false
    ) throws -> [MetricFigures] {
        try environment.read { txn in
            let last = try batch.lastSeq(txn)
            let knownAsOf = min(asOf ?? last, last)
            var products = product.map { Set([$0]) }
            if let entitlement {
                // As the fold grants: the configured products whose list holds it, and a product the catalog does not
                // configure grants the entitlement named after it.
                let catalog = try history.rules(asOf: knownAsOf, layout, txn).catalog
                let grants = { (product: String) in catalog.entitlements(for: product).contains(entitlement) }
                var granting = Set(catalog.products.keys.filter(grants))
                if grants(entitlement) { granting.insert(entitlement) }
                products = products.map { $0.intersection(granting) } ?? granting
            }
            var figures = bucketings.map { MetricAccumulator(boundaries: $0, products: products) }
            let wholeDays = bucketings.allSatisfy { $0.allSatisfy { $0 % MetricDayKey.millisPerDay == 0 } }
            let maintained = !folding && knownAsOf == last && wholeDays
            if maintained {
                try MetricDays.sum(env, into: &figures, layout, txn)
            } else {
                Metrics.sum(try everyTimeline(env, asOf: asOf, txn), environment: env, into: &figures)
            }
            return figures.map { MetricFigures(buckets: $0.buckets(), asOf: knownAsOf, maintained: maintained) }
        }
    }

    /// The first instant of the last UTC day on which any subscription of `env` changes, as the maintained metrics
    /// have summed it (nil: none yet): where a chart of the ledger's figures has something to show.
    public func lastMetricDay(environment env: AppStoreEnvironment) throws -> UnixMillis? {
        try environment.read { txn in
            let cursor = try txn.cursor(layout.metricDays)
            var entry = try cursor.seek(StoreLayout.environmentPrefix(env))
            var last: Int64?
            while let e = entry, let key = e.key.withUnsafeBytes({ MetricDayKey($0, of: env) }) {
                last = key.day
                entry = try cursor.next()
            }
            return last.map { $0 &* MetricDayKey.millisPerDay }
        }
    }

    /// Sums every subscription the write path marked into the maintained metrics (`MetricDays`), in write
    /// transactions of 512 subscriptions; how many it summed. A server's follower does this after
    /// each commit; a command that appended many inputs calls it before it returns, so that the next read finds them
    /// summed.
    @discardableResult
    public func catchUpMetrics(progress: ProgressHandler? = nil) throws -> Int {
        let marked = try environment.read { txn in try txn.statistics(layout.metricDirty).entries }
        var total = 0
        while true {
            let done = try MetricsFollower.catchUp(limit: 512, environment, layout, observers)
            total += done
            if done > 0 { progress?(UInt64(total), UInt64(max(marked, total))) }
            if done < 512 { return total }
        }
    }

    /// Every timeline of `env` as known after `asOf`, naming people as the log does.
    func everyTimeline(_ env: AppStoreEnvironment, asOf: UInt64?, _ txn: Transaction) throws -> [Timeline] {
        var timelines: [Timeline] = []
        let cursor = try txn.cursor(layout.timelines)
        var entry = try cursor.first()
        while let e = entry {
            if let (environment, otid) = e.key.withUnsafeBytes({ StoreLayout.decodeSubscriptionKey($0) }),
                environment == env, let (timeline, _) = try storedTimeline(env, otid, asOf: asOf, txn)
            {
                timelines.append(timeline)
            }
            entry = try cursor.next()
        }
        return timelines
    }
}
