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
            var timelines: [Timeline] = []
            if let user {
                timelines = try userTimelines(user, env, asOf: asOf, txn).timelines.map(\.timeline)
            } else {
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
            }
            return Revenue.summary(
                timelines: timelines, environment: env, from: from, to: to, asOf: knownAsOf, user: user,
                product: product)
        }
    }
}
