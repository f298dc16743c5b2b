import LMDB
import LedgerCodec
import LedgerCore

/// Keeps the timeline projections in step with the log, inside the append's write transaction.
///
/// The incremental core: for each subscription the batch touched, the stored timeline is decoded and the new events
/// are applied to it. An event after everything known resumes in O(1); one that lands in the past makes `apply`
/// refuse, and that one subscription is refolded from its own events (never more). Customers need no rewrite: they
/// are read through `by_user` from the timelines they own.
struct ProjectionEngine {
    let layout: StoreLayout
    /// The rules in force (the log's latest change, else the configuration's), read in each write transaction.
    let history: RulesHistory

    /// Brings the timelines of every subscription `events` touch up to date; `events` are in log order. A change of
    /// rules among them refolds every subscription under the new rules instead. `changes` learns each timeline
    /// written and each customer given a `by_user` entry (every answer, after a change of rules), and each
    /// subscription checked against Apple (its timeline answer shows the latest check).
    func apply(_ events: [LedgerEvent], in txn: Transaction, changes: inout CommitChanges) throws {
        let rules = try history.rules(asOf: .max, layout, txn)
        if events.contains(where: { $0.fact.kind == .rules }) {
            changes.everything = true
            try refoldEverySubscription(rules, txn)
            return
        }
        // Group by subscription, keeping log order inside each group.
        var order: [[UInt8]] = []
        var groups: [[UInt8]: [LedgerEvent]] = [:]
        var claimsOfEveryEnvironment: [(BindingClaim, LedgerEvent)] = []
        for event in events {
            guard let otid = event.fact.originalTransactionId else {
                if case .reconciliation(let check) = event.fact {
                    changes.subscriptions.insert(StoreLayout.subscriptionKey(check.environment, check.originalTransactionId))
                }
                continue
            }
            if case .binding(let claim) = event.fact, claim.everyEnvironment {
                claimsOfEveryEnvironment.append((claim, event))
                continue
            }
            let key = StoreLayout.subscriptionKey(event.fact.environment, otid)
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(event)
        }
        // A claim that named no environment joins the subscription in every environment where it is known.
        for (claim, event) in claimsOfEveryEnvironment {
            for environment in AppStoreEnvironment.known {
                let key = StoreLayout.subscriptionKey(environment, claim.originalTransactionId)
                guard try groups[key] != nil || txn.get(layout.timelines, key: key) != nil else { continue }
                try index(claim, seq: event.seq, in: environment, txn, changes: &changes)
                if groups[key] == nil { order.append(key) }
                groups[key, default: []].append(event)
            }
        }
        for key in order {
            changes.subscriptions.insert(key)
            let group = groups[key]!
            guard let (environment, otid) = key.withUnsafeBytes({ StoreLayout.decodeSubscriptionKey($0) }) else {
                throw LedgerError.corrupted("a subscription key of \(key) does not decode")
            }
            var timeline: Timeline
            if let stored = try txn.get(layout.timelines, key: key) {
                // The common case, events after everything known about the latest period: only that period is
                // decoded, the earlier ones are copied as stored.
                if let updated = try StoredTimeline.appending(group, to: stored, rules: rules) {
                    try txn.put(layout.timelines, key: key, value: updated)
                    continue
                }
                timeline = try StoredTimeline.decode(stored)
                // `apply` leaves the timeline untouched when it declines, so a refold starts from the facts alone.
                if !timeline.apply(contentsOf: group, rules: rules) {
                    timeline = try refold(environment, otid, rules, txn)
                }
            } else if try adoptClaimsOfEveryEnvironment(environment, otid, txn, changes: &changes) {
                // New in this environment, and claimed before without one: those claims apply here too.
                timeline = try refold(environment, otid, rules, txn)
            } else {
                timeline = Timeline.fold(
                    group, originalTransactionId: otid, environment: environment, rules: rules, ties: .canonical)
            }
            try txn.put(layout.timelines, key: key, value: StoredTimeline.encode(timeline))
        }
    }

    /// Every stored timeline refolded from its events under `rules` (a change of rules: periods' ends, owners and
    /// the kinds of plan changes may all follow from them). One pass over `by_otid`, in this write transaction.
    /// - Complexity: O(events of the ledger).
    private func refoldEverySubscription(_ rules: FoldRules, _ txn: Transaction) throws {
        let cursor = try txn.cursor(layout.byOTID)
        var scan = SubscriptionScan()
        var entry = try cursor.first()
        while let e = entry {
            let key = Array(e.key)  // Valid until the cursor moves on.
            guard let (environment, otid) = StoreLayout.decodeSubscriptionKey(e.key) else {
                throw LedgerError.corrupted("by_otid key is malformed")
            }
            try scan.read(e, cursor, upTo: nil, metadata: .forFold, layout, txn)
            if !scan.events.isEmpty {
                let timeline = Timeline.fold(
                    scan.events, originalTransactionId: otid, environment: environment, rules: rules, ties: .canonical)
                try txn.put(layout.timelines, key: key, value: StoredTimeline.encode(timeline))
            }
            entry = try cursor.nextKey()
        }
    }

    /// The subscription folded from every event the store has of it.
    private func refold(
        _ environment: AppStoreEnvironment, _ otid: OriginalTransactionID, _ rules: FoldRules, _ txn: Transaction
    ) throws -> Timeline {
        let all = try SubscriptionScan.events(layout, environment, otid, upTo: nil, metadata: .forFold, txn)
        return Timeline.fold(all, originalTransactionId: otid, environment: environment, rules: rules, ties: .canonical)
    }

    /// Indexes the claims that named no environment of a subscription under `environment` (where it has just
    /// appeared); false when there are none.
    private func adoptClaimsOfEveryEnvironment(
        _ environment: AppStoreEnvironment, _ otid: OriginalTransactionID, _ txn: Transaction,
        changes: inout CommitChanges
    ) throws -> Bool {
        let cursor = try txn.cursor(layout.bindingsAny)
        var entry = try cursor.find(StoreLayout.anyEnvironmentKey(otid))
        guard entry != nil else { return false }
        var revisionKey: [UInt8] = []
        while let e = entry {
            guard let seq = EventReference.decode(e.value, revisionKey: &revisionKey),
                let stored = try txn.get(layout.events, key: revisionKey),
                case .binding(let claim) = try stored.withUnsafeBytes({ try LedgerEvent(seq: seq, decoding: $0) }).fact
            else { throw LedgerError.corrupted("bindings_any names a claim of \(otid) that is missing") }
            try index(claim, seq: seq, in: environment, txn, changes: &changes)
            entry = try cursor.nextDuplicate()
        }
        return true
    }

    /// `by_otid` and `by_user` entries of a claim that named no environment, in `environment`.
    private func index(
        _ claim: BindingClaim, seq: UInt64, in environment: AppStoreEnvironment, _ txn: Transaction,
        changes: inout CommitChanges
    ) throws {
        changes.customers.insert(StoreLayout.userKey(environment, claim.appUserId))
        for (database, key, value) in [
            (
                layout.byOTID, StoreLayout.subscriptionKey(environment, claim.originalTransactionId),
                EventReference.encode(seq: seq, eventKey: Fact.binding(claim).eventKey)
            ),
            (
                layout.byUser, StoreLayout.userKey(environment, claim.appUserId),
                StoreLayout.subscriptionKey(environment, claim.originalTransactionId)
            ),
        ] {
            do {
                try txn.put(database, key: key, value: value, flags: .noDuplicateData)
            } catch let error as LMDBError where error == .keyExists {
                // Indexed already (by an earlier claim of the same user, or this claim in the same batch).
            }
        }
    }
}
