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
            let timelines =
                try user.map { try userTimelines($0, env, asOf: asOf, txn).timelines.map(\.timeline) }
                ?? everyTimeline(env, asOf: asOf, txn)
            return Revenue.summary(
                timelines: timelines, environment: env, from: from, to: to, asOf: knownAsOf, user: user,
                product: product)
        }
    }
}

// MARK: - Subscription metrics over buckets, as known at a log position

extension Ledger {
    /// The metrics of every subscription of `env` (of `product` when given) for each bucket between consecutive
    /// `boundaries`, as known after log seq `asOf` (default: everything), and the seq they are known at
    /// (`Metrics.series`). Folded on demand from every stored timeline: a report, not a hot read.
    public func metrics(
        environment env: AppStoreEnvironment = .production, boundaries: [UnixMillis], product: String? = nil,
        asOf: UInt64? = nil
    ) throws -> (buckets: [MetricBucket], asOf: UInt64) {
        try environment.read { txn in
            let last = try batch.lastSeq(txn)
            let timelines = try everyTimeline(env, asOf: asOf, txn)
            return (
                Metrics.series(timelines: timelines, environment: env, boundaries: boundaries, product: product),
                min(asOf ?? last, last)
            )
        }
    }

    /// Every subscription of `env`, folded as known after `asOf` (its stored timeline when `asOf` is nil or the last
    /// seq).
    func everyTimeline(_ env: AppStoreEnvironment, asOf: UInt64?, _ txn: Transaction) throws -> [Timeline] {
        var timelines: [Timeline] = []
        let cursor = try txn.cursor(layout.timelines)
        var entry = try cursor.first()
        while let e = entry {
            if let (environment, otid) = e.key.withUnsafeBytes({ StoreLayout.decodeSubscriptionKey($0) }),
                environment == env, let (timeline, _) = try timeline(env, otid, asOf: asOf, txn)
            {
                timelines.append(timeline)
            }
            entry = try cursor.next()
        }
        return timelines
    }
}
