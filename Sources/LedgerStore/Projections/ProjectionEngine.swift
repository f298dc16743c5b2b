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

    /// Brings the timelines of every subscription `events` touch up to date, and writes the lifecycle events each
    /// input said about each of them (`Lifecycle.events`, at the input's last seq about the subscription); `events`
    /// are in log order, `inputs[i]` names the input of `events[i]` (the seq of its first event). A change of rules
    /// among them refolds every subscription and derives its lifecycle events again under the new rules instead (as
    /// a replay does). Timelines and `by_user` entries are written through `report`, which tells the readers' cache.
    func apply(_ events: [LedgerEvent], inputs: [UInt64], in txn: Transaction, report: inout WriteReport) throws {
        let rules = try history.rules(asOf: .max, layout, txn)
        if events.contains(where: { $0.fact.kind == .rules }) {
            // The refold reads each subscription's events from `by_otid`: the claims that named no environment are
            // indexed first under every environment where their subscription is known, as `update` indexes them.
            // An import's batches hold a change of rules among other events.
            try indexClaimsOfEveryEnvironmentWhereKnown(txn, report: &report)
            try refoldEverySubscription(rules, txn, report: &report)
            return
        }
        let (order, groups) = try groupBySubscription(events, inputs: inputs, txn, report: &report)
        for key in order {
            guard let (environment, otid) = key.withUnsafeBytes({ StoreLayout.decodeSubscriptionKey($0) }) else {
                throw LedgerError.corrupted("a subscription key of \(key) does not decode")
            }
            try update(key, environment, otid, with: groups[key]!, rules, txn, report: &report)
        }
    }

    /// The events grouped by the subscription they are about, in log order inside each group, and the groups in the
    /// order they first appear. A claim that named no environment joins the subscription in every environment where
    /// it is known, and is indexed there.
    private func groupBySubscription(
        _ events: [LedgerEvent], inputs: [UInt64], _ txn: Transaction, report: inout WriteReport
    ) throws -> (order: [[UInt8]], groups: [[UInt8]: [(event: LedgerEvent, input: UInt64)]]) {
        var order: [[UInt8]] = []
        var groups: [[UInt8]: [(event: LedgerEvent, input: UInt64)]] = [:]
        var claimsOfEveryEnvironment: [(BindingClaim, LedgerEvent, UInt64)] = []
        for (event, input) in zip(events, inputs) {
            guard let otid = event.fact.originalTransactionId else { continue }
            if case .binding(let claim) = event.fact, claim.everyEnvironment {
                claimsOfEveryEnvironment.append((claim, event, input))
                continue
            }
            let key = StoreLayout.subscriptionKey(event.fact.environment, otid)
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append((event, input))
        }
        guard !claimsOfEveryEnvironment.isEmpty else { return (order, groups) }
        for (claim, event, input) in claimsOfEveryEnvironment {
            for environment in AppStoreEnvironment.known {
                let key = StoreLayout.subscriptionKey(environment, claim.originalTransactionId)
                guard try groups[key] != nil || txn.get(layout.timelines, key: key) != nil else { continue }
                try index(claim, seq: event.seq, in: environment, txn, report: &report)
                if groups[key] == nil { order.append(key) }
                groups[key, default: []].append((event, input))
            }
        }
        // Such claims joined their groups last: back into log order.
        for key in order { groups[key]!.sort { $0.event.seq < $1.event.seq } }
        return (order, groups)
    }

    /// Brings one subscription's stored timeline up to date with `group` (its events of this batch, in log order),
    /// input by input, writing the lifecycle events each input says.
    private func update(
        _ key: [UInt8], _ environment: AppStoreEnvironment, _ otid: OriginalTransactionID,
        with group: [(event: LedgerEvent, input: UInt64)], _ rules: FoldRules, _ txn: Transaction,
        report: inout WriteReport
    ) throws {
        let runs = Self.inputRuns(group)
        var timeline: Timeline?
        if let stored = try txn.get(layout.timelines, key: key) {
            // The common case, one input's events after everything known about the latest period: only that
            // period is decoded, the earlier ones are copied as stored. So where the two sides first differ, the
            // whole timelines do (the metrics are summed again from there, or not at all).
            if runs.count == 1, let tail = try StoredTimeline.appendingWithTimelines(runs[0], to: stored, rules: rules) {
                let metrics = Self.metricsChange(from: tail.before, to: tail.after)
                try report.putTimeline(key, tail.bytes, metrics: metrics, layout, txn)
                try write(Lifecycle.events(before: tail.before, after: tail.after, seq: runs[0].last!.seq, rules: rules), txn)
                return
            }
            timeline = try StoredTimeline.decode(stored)
        }
        let before = timeline
        // Input by input, so that each says what it changed, as a replay of the log derives it.
        let adopting = timeline == nil ? try adoptClaimsOfEveryEnvironment(environment, otid, txn, report: &report) : false
        for run in runs {
            let seq = run.last!.seq
            guard var next = timeline else {
                // New here: claims that named no environment say nothing until the subscription's own first
                // event (they join the fold then).
                if run.allSatisfy({ Self.namesNoEnvironment($0) }) { continue }
                let after =
                    adopting
                    ? try refold(environment, otid, upTo: seq, rules, txn)
                    : Timeline.fold(
                        group.prefix { $0.event.seq <= seq }.map(\.event), originalTransactionId: otid,
                        environment: environment, rules: rules, ties: .canonical)
                try write(Lifecycle.events(before: nil, after: after, seq: seq, rules: rules), txn)
                timeline = after
                continue
            }
            // `apply` leaves the timeline untouched when it declines, so a refold starts from the facts alone.
            if !next.apply(contentsOf: run, rules: rules) {
                next = try refold(environment, otid, upTo: seq, rules, txn)
            }
            try write(Lifecycle.events(before: timeline, after: next, seq: seq, rules: rules), txn)
            timeline = next
        }
        if let timeline {
            let metrics = before.map { Self.metricsChange(from: $0, to: timeline) } ?? .whole
            try report.putTimeline(key, StoredTimeline.encode(timeline), metrics: metrics, layout, txn)
        }
    }

    /// What a write did to a subscription's metrics: they change only with what it contributes (a claim moves its
    /// owner, no figure), from the first instant where that may differ.
    static func metricsChange(from before: Timeline, to after: Timeline) -> MetricDays.Change {
        Metrics.firstChange(before, after).map { .from($0) } ?? .none
    }

    /// The events of a subscription's group split by input, in log order.
    static func inputRuns(_ group: [(event: LedgerEvent, input: UInt64)]) -> [[LedgerEvent]] {
        var runs: [[LedgerEvent]] = []
        var current: UInt64?
        for (event, input) in group {
            if input != current {
                runs.append([])
                current = input
            }
            runs[runs.count - 1].append(event)
        }
        return runs
    }

    /// A claim that named no environment.
    static func namesNoEnvironment(_ event: LedgerEvent) -> Bool {
        if case .binding(let claim) = event.fact { return claim.everyEnvironment }
        return false
    }

    /// Writes the lifecycle events one input said about one subscription.
    private func write(_ said: [LifecycleEvent], _ txn: Transaction) throws {
        for (i, e) in said.enumerated() {
            try txn.put(layout.lifecycle, key: StoreLayout.lifecycleKey(seq: e.seq, e.environment, index: i), value: e.encoded())
        }
    }

    /// Every stored timeline refolded from its events under `rules` (a change of rules: periods' ends, owners and
    /// the kinds of plan changes may all follow from them), and every lifecycle event derived again under them, as
    /// a replay derives them (docs/lifecycle.md: a change of rules restates the stream). One pass over `by_otid`, in
    /// this write transaction.
    /// - Complexity: O(events of the ledger).
    private func refoldEverySubscription(_ rules: FoldRules, _ txn: Transaction, report: inout WriteReport) throws {
        try txn.clear(layout.lifecycle)
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
                try report.putTimeline(key, StoredTimeline.encode(timeline), metrics: .none, layout, txn)
                let inputs = try LifecycleReplay.inputs(of: scan.events, layout, txn)
                for said in LifecycleReplay.entries(
                    scan.events, inputs: inputs, otid: otid, environment: environment, rules: rules)
                {
                    try txn.put(layout.lifecycle, key: said.key, value: said.event.encoded())
                }
            }
            entry = try cursor.nextKey()
        }
        try MetricDays.reset(layout, txn)
    }

    /// The subscription folded from every event the store has of it up to `seq`.
    private func refold(
        _ environment: AppStoreEnvironment, _ otid: OriginalTransactionID, upTo seq: UInt64, _ rules: FoldRules,
        _ txn: Transaction
    ) throws -> Timeline {
        let all = try SubscriptionScan.events(layout, environment, otid, upTo: seq, metadata: .forFold, txn)
        return Timeline.fold(all, originalTransactionId: otid, environment: environment, rules: rules, ties: .canonical)
    }

    /// Indexes every claim that named no environment under each environment where `by_otid` knows its
    /// subscription (a claim indexed there already stays as it is).
    /// - Complexity: O(such claims × environments).
    private func indexClaimsOfEveryEnvironmentWhereKnown(_ txn: Transaction, report: inout WriteReport) throws {
        let claims = try txn.cursor(layout.bindingsAny)
        let byOTID = try txn.cursor(layout.byOTID)
        var revisionKey: [UInt8] = []
        var entry = try claims.first()
        while let e = entry {
            let (claim, seq) = try claim(named: e, revisionKey: &revisionKey, txn)
            for environment in AppStoreEnvironment.known
            where try byOTID.find(StoreLayout.subscriptionKey(environment, claim.originalTransactionId)) != nil {
                try index(claim, seq: seq, in: environment, txn, report: &report)
            }
            entry = try claims.next()
        }
    }

    /// Indexes the claims that named no environment of a subscription under `environment` (where it has just
    /// appeared); false when there are none.
    private func adoptClaimsOfEveryEnvironment(
        _ environment: AppStoreEnvironment, _ otid: OriginalTransactionID, _ txn: Transaction,
        report: inout WriteReport
    ) throws -> Bool {
        let cursor = try txn.cursor(layout.bindingsAny)
        var entry = try cursor.find(StoreLayout.anyEnvironmentKey(otid))
        guard entry != nil else { return false }
        var revisionKey: [UInt8] = []
        while let e = entry {
            let (claim, seq) = try claim(named: e, revisionKey: &revisionKey, txn)
            try index(claim, seq: seq, in: environment, txn, report: &report)
            entry = try cursor.nextDuplicate()
        }
        return true
    }

    /// The claim a `bindings_any` entry names, and its seq; `revisionKey` is scratch space kept between entries.
    private func claim(named entry: Cursor.Entry, revisionKey: inout [UInt8], _ txn: Transaction) throws
        -> (BindingClaim, UInt64)
    {
        guard let seq = EventReference.decode(entry.value, revisionKey: &revisionKey),
            let stored = try txn.get(layout.events, key: revisionKey),
            case .binding(let claim) = try StoreLayout.decodeEvent(seq: seq, stored).fact
        else { throw LedgerError.corrupted("bindings_any names a claim that is missing") }
        return (claim, seq)
    }

    /// `by_otid` and `by_user` entries of a claim that named no environment, in `environment`.
    private func index(
        _ claim: BindingClaim, seq: UInt64, in environment: AppStoreEnvironment, _ txn: Transaction,
        report: inout WriteReport
    ) throws {
        do {
            try txn.put(
                layout.byOTID, key: StoreLayout.subscriptionKey(environment, claim.originalTransactionId),
                value: EventReference.encode(seq: seq, eventKey: Fact.binding(claim).eventKey), flags: .noDuplicateData)
        } catch let error as LMDBError where error == .keyExists {
            // Indexed already (by an earlier claim of the same user, or this claim in the same batch).
        }
        try report.indexUser(claim.appUserId, environment, otid: claim.originalTransactionId, layout, txn)
    }
}
