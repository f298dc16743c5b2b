import LMDB
import LedgerCodec
import LedgerCore
import LedgerErrors

// MARK: - Queries on the projections (two clocks: `at` = valid time, `asOf` = knowledge, a log seq)

extension Ledger {
    /// One subscription's timeline evaluated at instant `at`, as known after log seq `asOf` (default: everything).
    ///
    /// The latest knowledge is read from the stored projection; an earlier `asOf` folds only the facts with
    /// seq ≤ asOf (no stored history of projections is needed). Nil when nothing is known of the subscription.
    public func timeline(
        _ otid: OriginalTransactionID, environment env: AppStoreEnvironment = .production, at: UnixMillis,
        asOf: UInt64? = nil
    ) throws -> TimelineView? {
        try environment.read { txn in
            guard let (timeline, knownAsOf) = try timeline(env, otid, asOf: asOf, txn) else { return nil }
            return try view(of: timeline, env, otid, at: at, knownAsOf: knownAsOf, txn)
        }
    }

    /// `timeline` evaluated at `at` under the rules in force at `knownAsOf`, with the subscription's latest check
    /// against Apple as of then: the timeline answer, whether read fresh or kept (`AnswerCache`).
    func view(
        of timeline: Timeline, _ env: AppStoreEnvironment, _ otid: OriginalTransactionID, at: UnixMillis,
        knownAsOf: UInt64, _ txn: Transaction
    ) throws -> TimelineView {
        var view = timeline.view(at: at, asOf: knownAsOf, rules: try history.rules(asOf: knownAsOf, layout, txn))
        view.reconciliation = try lastReconciliation(env, otid, asOf: knownAsOf, txn)
        return view
    }

    /// The subscriptions of `env` that may have been active at or after `since`: a period that ends then or later,
    /// or has no end. What `storeledger reconcile --active-since` asks Apple about; it reads every stored timeline.
    public func subscriptions(environment env: AppStoreEnvironment, activeSince since: UnixMillis) throws
        -> [OriginalTransactionID]
    {
        try environment.read { txn in
            var out: [OriginalTransactionID] = []
            let cursor = try txn.cursor(layout.timelines)
            var entry = try cursor.first()
            while let e = entry {
                if let (environment, otid) = e.key.withUnsafeBytes({ StoreLayout.decodeSubscriptionKey($0) }),
                    environment == env,
                    try StoredTimeline.decode(e.value).periods.contains(where: { ($0.end ?? .max) >= since })
                {
                    out.append(otid)
                }
                entry = try cursor.next()
            }
            return out
        }
    }

    /// The subscription's latest reconciliation with seq ≤ `asOf` (its revisions under `reconciliation:<otid>`,
    /// oldest first; usually a handful).
    func lastReconciliation(
        _ env: AppStoreEnvironment, _ otid: OriginalTransactionID, asOf: UInt64, _ txn: Transaction
    ) throws -> ReconciliationView? {
        var last: ReconciliationView?
        try layout.forEachRevision(of: ReconciliationFact.eventKey(otid), txn) { seq, stored in
            guard seq <= asOf else { return false }
            if case .reconciliation(let check) = try StoreLayout.decodeEvent(seq: seq, stored).fact,
                check.environment == env
            {
                last = ReconciliationView(seq: seq, check: check)
            }
            return true
        }
        return last
    }

    /// One app user's entitlements, subscriptions and binding history at `at`, as known after `asOf`.
    public func customer(
        _ user: AppUserID, environment env: AppStoreEnvironment = .production, at: UnixMillis, asOf: UInt64? = nil
    ) throws -> CustomerView {
        try environment.read { txn in try customer(user, env, at: at, asOf: asOf, txn).view }
    }

    /// A customer as read in `txn`, with what the answer rests on: the timelines evaluated and the `by_user` entries
    /// (subscription keys) that named them, the operator's grants, and the log's last seq in `txn`.
    func customer(
        _ user: AppUserID, _ env: AppStoreEnvironment, at: UnixMillis, asOf: UInt64?, _ txn: Transaction
    ) throws -> (
        view: CustomerView, timelines: [Timeline], grants: [GrantRecord], subscriptions: [[UInt8]], lastSeq: UInt64
    ) {
        let last = try batch.lastSeq(txn)
        let knownAsOf = min(asOf ?? last, last)
        let names = try IdentityNames(identities, layout, txn)
        let stored = try names.asked(user)
        let owned = try userTimelines(stored, env, asOf: asOf, txn, names)
        let timelines = owned.timelines.map(\.timeline)
        let subscriptions = owned.keys
        let grants = OperatorGrants.fold(try grantEvents(stored, env, asOf: knownAsOf, txn).map { ($0.seq, $0.grant) })
        let view = Entitlements.customer(
            user: user, environment: env, timelines: timelines, grants: grants, at: at, asOf: knownAsOf,
            rules: try history.rules(asOf: knownAsOf, layout, txn))
        return (view, timelines, grants, subscriptions, last)
    }

    /// The subscriptions `by_user` names for `user` (as the log names them) in `env` (its entries: subscription
    /// keys), and the timelines of those known, as known after `asOf`, naming people as `names` shows them.
    func userTimelines(
        _ user: AppUserID, _ env: AppStoreEnvironment, asOf: UInt64?, _ txn: Transaction, _ names: IdentityNames
    ) throws -> (keys: [[UInt8]], timelines: [(otid: OriginalTransactionID, timeline: Timeline)]) {
        var keys: [[UInt8]] = []
        var timelines: [(otid: OriginalTransactionID, timeline: Timeline)] = []
        let cursor = try txn.cursor(layout.byUser)
        var entry = try cursor.find(StoreLayout.userKey(env, user))
        while let e = entry {
            keys.append(Array(e.value))
            if let (_, otid) = StoreLayout.decodeSubscriptionKey(e.value),
                let (timeline, _) = try storedTimeline(env, otid, asOf: asOf, txn)
            {
                timelines.append((otid, try names.shown(timeline)))
            }
            entry = try cursor.nextDuplicate()
        }
        return (keys, timelines)
    }

    /// The operator's grants and revokes for `user` (as the log names them) in `env` with seq ≤ `asOf`, in log
    /// order: the revisions of `grant:<appUserId>` (one seek when there are none).
    func grantEvents(_ user: AppUserID, _ env: AppStoreEnvironment, asOf: UInt64, _ txn: Transaction) throws
        -> [(seq: UInt64, grant: OperatorGrant, event: LedgerEvent)]
    {
        var out: [(seq: UInt64, grant: OperatorGrant, event: LedgerEvent)] = []
        try layout.forEachRevision(of: OperatorGrant.eventKey(user), txn) { seq, stored in
            guard seq <= asOf else { return false }
            let event = try StoreLayout.decodeEvent(seq: seq, stored)
            if case .grant(let g) = event.fact, g.environment == env { out.append((seq, g, event)) }
            return true
        }
        return out
    }

    /// The operator's grants to `user` in `env`, as known after `asOf` (default: everything), by start.
    public func grants(_ user: AppUserID, environment env: AppStoreEnvironment = .production, asOf: UInt64? = nil)
        throws -> [GrantRecord]
    {
        try environment.read { txn in
            let stored = try IdentityNames(identities, layout, txn).asked(user)
            return OperatorGrants.fold(try grantEvents(stored, env, asOf: asOf ?? .max, txn).map { ($0.seq, $0.grant) })
        }
    }

    /// Why `user` has, or has not, `entitlement` at `at`, as known after `asOf`: the customer's answer for it and
    /// the chain of facts behind it (`Entitlements.explain`), each with its event's provenance.
    public func explain(
        _ user: AppUserID, entitlement: String, environment env: AppStoreEnvironment = .production, at: UnixMillis,
        asOf: UInt64? = nil
    ) throws -> EntitlementExplanation {
        try environment.read { txn in
            let last = try batch.lastSeq(txn)
            let knownAsOf = min(asOf ?? last, last)
            let names = try IdentityNames(identities, layout, txn)
            let stored = try names.asked(user)
            let owned = try userTimelines(stored, env, asOf: asOf, txn, names).timelines
            let timelines = owned.map(\.timeline)
            var events: [UInt64: LedgerEvent] = [:]
            for (otid, _) in owned {
                for event in try SubscriptionScan.events(layout, env, otid, upTo: knownAsOf, txn) {
                    events[event.seq] = try names.shown(event)
                }
            }
            let grantEvents = try grantEvents(stored, env, asOf: knownAsOf, txn)
            for g in grantEvents { events[g.seq] = try names.shown(g.event) }
            return Entitlements.explain(
                entitlement: entitlement, user: user, environment: env, timelines: timelines,
                grants: OperatorGrants.fold(grantEvents.map { ($0.seq, $0.grant) }), events: events, at: at,
                asOf: knownAsOf, rules: try history.rules(asOf: knownAsOf, layout, txn))
        }
    }

    /// The timeline of (env, otid) as known after `asOf`, and the seq it reflects, naming people as answers show them.
    func timeline(_ env: AppStoreEnvironment, _ otid: OriginalTransactionID, asOf: UInt64?, _ txn: Transaction) throws
        -> (Timeline, UInt64)?
    {
        try storedTimeline(env, otid, asOf: asOf, txn).map { (try IdentityNames(identities, layout, txn).shown($0.0), $0.1) }
    }

    /// The timeline of (env, otid) as known after `asOf`, and the seq it reflects, naming people as the log does.
    func storedTimeline(_ env: AppStoreEnvironment, _ otid: OriginalTransactionID, asOf: UInt64?, _ txn: Transaction)
        throws -> (Timeline, UInt64)?
    {
        let key = StoreLayout.subscriptionKey(env, otid)
        guard let stored = try txn.get(layout.timelines, key: key) else { return nil }
        let last = try batch.lastSeq(txn)
        if asOf == nil || asOf! >= last {
            return (try StoredTimeline.decode(stored), last)
        }
        let events = try SubscriptionScan.events(layout, env, otid, upTo: asOf, metadata: .forFold, txn)
        guard !events.isEmpty else { return nil }
        // Folded as (env, otid): a claim that names no environment is indexed under each subscription it applies
        // to, so the events alone do not say which environment's timeline this is.
        let rules = try history.rules(asOf: asOf!, layout, txn)
        return (
            Timeline.fold(events, originalTransactionId: otid, environment: env, rules: rules, ties: .canonical), asOf!
        )
    }
}
