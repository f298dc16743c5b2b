import LMDB
import LedgerCodec
import LedgerCore

// MARK: - What-if replay: the same log folded under other rules

extension LedgerAudit {
    /// What a what-if replay found.
    public struct WhatIfReport: Sendable, Hashable {
        public var at: UnixMillis
        /// The log position folded to.
        public var asOf: UInt64
        /// Subscriptions folded (twice: under the ledger's rules and under the others).
        public var subscriptions: Int
        /// Customers compared: every app user who owns, owned or claimed a subscription under either rules.
        public var customers: Int
        /// Every entitlement that would differ, by environment, user and entitlement.
        public var differences: [EntitlementDifference]
    }

    /// Folds every subscription of the log (to `asOf`, default all) under the ledger's rules and under `alternative`
    /// (another catalog or binding policy), evaluates every customer at `at` both ways, and reports the entitlements
    /// that would differ (`Entitlements.differences`). Nothing is written: this is how a configuration change is
    /// reviewed before it is applied.
    /// - Complexity: O(events) folding, in one read transaction; holds both folds of every subscription in memory
    ///   until the customers are compared.
    public func whatIf(_ alternative: FoldRules, at: UnixMillis, asOf: UInt64? = nil) throws -> WhatIfReport {
        try environment.read { txn in
            let last = try batch.lastSeq(txn)
            let limit = min(asOf ?? last, last)
            let rules = try history.rules(asOf: limit, layout, txn)
            var before: [Timeline] = []
            var after: [Timeline] = []
            // (environment, user) → indices of the subscriptions they own, owned or claimed under either rules.
            var customers: [CustomerKey: [Int]] = [:]
            let cursor = try txn.cursor(layout.byOTID)
            var scan = SubscriptionScan(inKeyOrder: txn, layout)
            var entry = try cursor.first()
            while let e = entry {
                guard let (env, otid) = StoreLayout.decodeSubscriptionKey(e.key) else {
                    throw LedgerError.corrupted("by_otid key is malformed")
                }
                try scan.read(e, cursor, upTo: limit, metadata: .forFold, layout, txn)
                if !scan.events.isEmpty {
                    let index = before.count
                    let mine = Timeline.fold(
                        scan.events, originalTransactionId: otid, environment: env, rules: rules, ties: .canonical)
                    let theirs = Timeline.fold(
                        scan.events, originalTransactionId: otid, environment: env, rules: alternative,
                        ties: .canonical)
                    before.append(mine)
                    after.append(theirs)
                    var users = Set<AppUserID>()
                    for t in [mine, theirs] {
                        for o in t.owners { users.insert(o.appUserId) }
                        for r in t.refusedClaims { users.insert(r.appUserId) }
                    }
                    for user in users { customers[CustomerKey(environment: env, user: user), default: []].append(index) }
                }
                entry = try cursor.nextKey()
            }
            var differences: [EntitlementDifference] = []
            for key in customers.keys.sorted() {
                let indices = customers[key]!
                // The operator's grants name their entitlement, not a product: the same under either rules, and
                // counted in both answers (a grant keeps what a catalog change would take).
                let grants = OperatorGrants.fold(
                    try ledger.grantEvents(key.user, key.environment, asOf: limit, txn).map { ($0.seq, $0.grant) })
                let was = Entitlements.customer(
                    user: key.user, environment: key.environment, timelines: indices.map { before[$0] }, grants: grants,
                    at: at, asOf: limit, rules: rules)
                let would = Entitlements.customer(
                    user: key.user, environment: key.environment, timelines: indices.map { after[$0] }, grants: grants,
                    at: at, asOf: limit, rules: alternative)
                differences += Entitlements.differences(before: was, after: would)
            }
            // Each customer as answers name them, in their order.
            let names = try IdentityNames(identities, layout, txn)
            for i in differences.indices { differences[i].appUserId = try names.shown(differences[i].appUserId) }
            differences = differences.enumerated().sorted {
                ($0.element.environment, $0.element.appUserId, $0.offset) < ($1.element.environment, $1.element.appUserId, $1.offset)
            }.map(\.element)
            return WhatIfReport(
                at: at, asOf: limit, subscriptions: before.count, customers: customers.count, differences: differences)
        }
    }

    /// A customer: one app user in one environment, ordered by environment name, then user id.
    private struct CustomerKey: Hashable, Comparable {
        var environment: AppStoreEnvironment
        var user: AppUserID

        static func < (a: CustomerKey, b: CustomerKey) -> Bool {
            (a.environment.rawValue, a.user.rawValue) < (b.environment.rawValue, b.user.rawValue)
        }
    }
}
