/// Typed lifecycle events, derived from timeline changes: what a timeline says happened (`statements(of:rules:)`),
/// and what an append made it say differently (`events(before:after:seq:rules:)`). Pure functions of the timelines,
/// so the incremental store and a replay of the log derive the same events, ids included.
public enum Lifecycle {
    /// What the timeline says happened, in valid-time order (`LifecycleStatement.precedes`): one statement per period
    /// (its purchase, renewal, trial, conversion or plan change), per refund and reversal, per stated change that
    /// downstream systems act on (auto-renew off and on, billing issue, grace period, recovery, pending plan change,
    /// expiry), and per transfer. Ids are unique within a timeline.
    ///
    /// A statement about a period depends only on that period and the one before, and never on where the period
    /// ends (an upgrade ends the old period early: the PRODUCT_CHANGE says so), so a timeline whose earlier periods
    /// were left out (the store's tail path) says the same about the periods it has.
    /// - Complexity: O(periods + stated changes + owners).
    public static func statements(of timeline: Timeline, rules: FoldRules) -> [LifecycleStatement] {
        statements(of: timeline, rules: rules, from: .min)
    }

    /// The statements of `timeline` whose valid time is `cut` or later (`statements(of:rules:)` without those
    /// before): only these are made, so an append that changed the end of a long timeline pays for its end.
    static func statements(of timeline: Timeline, rules: FoldRules, from cut: UnixMillis) -> [LifecycleStatement] {
        var all: [LifecycleStatement] = []
        let periods = timeline.periods
        // Periods wholly before the cut are passed over without copying them (a copy retains each of their fields).
        let first =
            cut == .min
            ? 0
            : periods.withUnsafeBufferPointer { ps in
                ps.firstIndex { p in
                    p.start >= cut || p.revocations.contains { $0.date >= cut || ($0.reversedAt ?? .min) >= cut }
                } ?? ps.count
            }
        for i in periods.indices[first...] {
            let p = periods[i]
            if p.start >= cut { all.append(purchase(timeline, i, rules: rules)) }
            for r in p.revocations where r.date >= cut || (r.reversedAt.map { $0 >= cut } ?? false) {
                let cause = "\(p.transactionId.rawValue)@\(r.date)"
                if r.date >= cut {
                    all.append(
                        LifecycleStatement(
                            type: .refund, cause: cause, at: r.date, period: p, reason: r.type ?? "REFUND_FULL",
                            refundAmount: r.isFamilyRevoke
                                ? nil : p.terms?.price.map { refundedAmount(price: $0, revocation: r) }))
                }
                if let back = r.reversedAt, back >= cut {
                    all.append(LifecycleStatement(type: .refundReversed, cause: cause, at: back, period: p))
                }
            }
        }
        for c in timeline.statedChanges where c.at >= cut {
            let type: LifecycleEventType
            switch c.kind {
            case .autoRenewOff: type = .cancellation
            case .autoRenewOn: type = .uncancellation
            case .billingRetry: type = .billingIssue
            case .gracePeriod: type = .gracePeriodStarted
            case .recovered: type = .billingRecovered
            case .pendingChange: type = .productChange
            case .expired: type = .expiration
            default: continue
            }
            all.append(
                LifecycleStatement(
                    type: type, cause: "\(c.kind.rawValue)@\(c.at)", at: c.at, productId: timeline.product(at: c.at),
                    expiresAt: c.kind == .gracePeriod ? c.until : nil, reason: c.kind == .expired ? c.detail : nil,
                    newProductId: c.kind == .pendingChange ? c.detail : nil, pending: c.kind == .pendingChange))
        }
        for (i, o) in timeline.owners.enumerated() where o.cause == .transfer && o.from >= cut {
            var from: [String] = []
            for before in timeline.owners[..<i] where before.to == o.from && before.appUserId != o.appUserId {
                if !from.contains(before.appUserId.rawValue) { from.append(before.appUserId.rawValue) }
            }
            all.append(
                LifecycleStatement(
                    type: .transfer, cause: "\(o.appUserId.rawValue)@\(o.from)", at: o.from,
                    productId: timeline.product(at: o.from), fromAppUserIds: from, toAppUserId: o.appUserId.rawValue))
        }
        all.sort(by: LifecycleStatement.precedes)
        // Two statements of one type and cause would share an id: the later ones get a suffix (never seen from the
        // fold's own rules, which merge changes of one kind at one instant; kept so ids stay unique whatever comes).
        var i = 1
        while i < all.count {
            var k = 2
            var j = i
            while j < all.count, all[j].at == all[i - 1].at, all[j].type == all[i - 1].type,
                all[j].cause == all[i - 1].cause
            {
                all[j].cause += "#\(k)"
                k += 1
                j += 1
            }
            i = j + 1
        }
        return all
    }

    /// The events an append said: the difference between the timeline `before` it (nil: the subscription was new)
    /// and `after` it, at the log position `seq` of the input. A statement not said before is an event (`late` when
    /// its valid time is before the last event `before` had folded); one said before that now reads otherwise is a
    /// CORRECTION with what stands now; one said before that no longer holds is a CORRECTION, `retracted`. Nothing
    /// is rewritten silently. In valid-time order.
    /// - Complexity: O(size of the two timelines).
    ///
    /// Only the statements from the first instant where the two timelines differ are made and compared
    /// (`firstDifference`): those before it are the same on both sides, so they say nothing. A replay, which derives
    /// the stream input by input, then costs what each input changed, not the size of its timeline.
    public static func events(before: Timeline?, after: Timeline, seq: UInt64, rules: FoldRules) -> [LifecycleEvent] {
        events(before: before, after: after, seq: seq, rules: rules, everything: false)
    }

    /// `everything`: every statement of both timelines made and compared, no cut: what the cut must agree with
    /// (LifecyclePropertyTests compares the two).
    package static func events(
        before: Timeline?, after: Timeline, seq: UInt64, rules: FoldRules, everything: Bool
    ) -> [LifecycleEvent] {
        var cut = UnixMillis.min
        if let before, !everything {
            guard let differs = firstDifference(before, after) else { return [] }
            cut = differs
        }
        let old = before.map { statements(of: $0, rules: rules, from: cut) } ?? []
        let new = statements(of: after, rules: rules, from: cut)
        if old == new { return [] }
        let otid = after.originalTransactionId, env = after.environment
        // Statements of one subscription share its environment and OTID, so their ids are equal when their types and
        // causes are: matched on those, and an id is made only for an event said.
        let said = SaidBefore(old)
        var stillSaid = [Bool](repeating: false, count: old.count)
        let folded = before?.frontier?.instant
        var out: [LifecycleEvent] = []
        func event(_ s: LifecycleStatement, id: String, late: Bool, corrects: String?, retracted: Bool) {
            out.append(
                LifecycleEvent(
                    id: id, seq: seq, originalTransactionId: otid, environment: env,
                    appUserId: after.lifecycleOwner(at: s.at)?.rawValue,
                    entitlements: s.productId.map {
                        rules.catalog.entitlements(for: $0, type: s.type == .consumablePurchase ? .consumable : nil)
                    } ?? [],
                    late: late, corrects: corrects, retracted: retracted, statement: s))
        }
        for s in new {
            if let i = said.index(of: s) {
                stillSaid[i] = true
                if old[i] != s {
                    let id = s.id(otid, env)
                    event(s, id: id + "/corrected@\(seq)", late: false, corrects: id, retracted: false)
                }
            } else {
                event(s, id: s.id(otid, env), late: folded.map { s.at < $0 } ?? false, corrects: nil, retracted: false)
            }
        }
        for (i, s) in old.enumerated() where !stillSaid[i] {
            let id = s.id(otid, env)
            event(s, id: id + "/corrected@\(seq)", late: false, corrects: id, retracted: true)
        }
        out.sort { a, b in
            if a.statement != b.statement { return LifecycleStatement.precedes(a.statement, b.statement) }
            return a.id < b.id
        }
        return out
    }

    /// The statements said before an input, found by type and cause: by looking through them when they are few (an
    /// append's usually are: those from the first difference on), through a dictionary otherwise.
    private struct SaidBefore {
        struct Key: Hashable {
            var type: LifecycleEventType
            var cause: String
        }
        let statements: [LifecycleStatement]
        let index: [Key: Int]?

        init(_ statements: [LifecycleStatement]) {
            self.statements = statements
            if statements.count > 16 {
                var index: [Key: Int] = [:]
                index.reserveCapacity(statements.count)
                for (i, s) in statements.enumerated() { index[Key(type: s.type, cause: s.cause)] = i }
                self.index = index
            } else {
                index = nil
            }
        }

        func index(of s: LifecycleStatement) -> Int? {
            if let index { return index[Key(type: s.type, cause: s.cause)] }
            return statements.firstIndex { $0.type == s.type && $0.cause == s.cause }
        }
    }

    /// What a refund gave back, in milliunits: the price, or the share a prorated refund states
    /// (`revocationPercentage`, milliunits of 100%).
    public static func refundedAmount(price: Int64, revocation r: Revocation) -> Int64 {
        guard r.type == "REFUND_PRORATED", let share = r.percentage, share >= 0, share < 100_000 else { return price }
        return price / 100_000 * share + price % 100_000 * share / 100_000
    }

    /// The earliest valid instant at which a statement of `a` and one of `b` may differ; nil when none can (their
    /// periods, stated changes and owners are equal). Every statement depends only on what the timeline holds at or
    /// before its own instant: a period's on it and the period before (and the billing changes between them), a
    /// refund's on its period, a stated change's and a transfer's on the periods begun by then and the owners
    /// before. So the first element that differs in each list, and every element after it on either side, bound
    /// the cut from below; a first period that differs gives none (a change before any period names the first
    /// period's product).
    /// - Complexity: O(periods + stated changes + owners) comparisons, no statement made.
    static func firstDifference(_ a: Timeline, _ b: Timeline) -> UnixMillis? {
        var cut: UnixMillis?
        func bound(_ x: UnixMillis) { cut = min(cut ?? x, x) }
        func firstUnequal<T: Equatable>(_ x: [T], _ y: [T]) -> Int? {
            let n = min(x.count, y.count)
            // Through the buffers: the elements are compared where they lie, not copied (a copy retains each field).
            let i = x.withUnsafeBufferPointer { xs in
                y.withUnsafeBufferPointer { ys in
                    var i = 0
                    while i < n && xs[i] == ys[i] { i += 1 }
                    return i
                }
            }
            return i < x.count || i < y.count ? i : nil
        }
        if let i = firstUnequal(a.periods, b.periods) {
            if i == 0 { return .min }
            // Each side read in place (concatenating them copied every period from `i`).
            func boundPeriods(_ periods: [Period]) {
                periods.withUnsafeBufferPointer { ps in
                    for j in ps.indices where j >= i {
                        bound(ps[j].start)
                        for r in ps[j].revocations {
                            bound(r.date)
                            if let back = r.reversedAt { bound(back) }
                        }
                    }
                }
            }
            boundPeriods(a.periods)
            boundPeriods(b.periods)
        }
        if let i = firstUnequal(a.statedChanges, b.statedChanges) {
            for c in a.statedChanges[i...] { bound(c.at) }
            for c in b.statedChanges[i...] { bound(c.at) }
        }
        if let i = firstUnequal(a.owners, b.owners) {
            for o in a.owners[i...] { bound(o.from) }
            for o in b.owners[i...] { bound(o.from) }
        }
        return cut
    }

    /// The statement of the period at `i`: what it was to the one before.
    private static func purchase(_ t: Timeline, _ i: Int, rules: FoldRules) -> LifecycleStatement {
        let p = t.periods[i]
        let periodType = LifecyclePeriodType(p.offer)
        let type: LifecycleEventType
        var reason: String?
        var from: String?
        switch p.type {
        case .consumable: type = .consumablePurchase
        case .nonConsumable, .nonRenewing: type = .nonRenewingPurchase
        case .autoRenewable:
            let change = t.planChange(i, rules: rules)
            switch change {
            case _ where periodType == .trial: type = .trialStarted
            case .upgrade, .downgrade, .crossgrade:
                type = .productChange
                reason = change.rawValue
                from = t.periods[i - 1].productId
            case .purchase: type = .initialPurchase
            default:
                type = i > 0 && LifecyclePeriodType(t.periods[i - 1].offer) == .trial ? .trialConverted : .renewal
                if change == .resubscribe { reason = "resubscribe" }
            }
        }
        return LifecycleStatement(
            type: type, cause: p.transactionId.rawValue, at: p.start, period: p, periodType: periodType, reason: reason,
            fromProductId: from)
    }
}

extension LifecycleStatement {
    /// A statement about the period `p`, with its product, transaction, price and expiry. Built whole: a statement
    /// changed after its initializer is copied when it is returned or appended (see `Period`).
    fileprivate init(
        type: LifecycleEventType, cause: String, at: UnixMillis, period p: Period,
        periodType: LifecyclePeriodType? = nil, reason: String? = nil, fromProductId: String? = nil,
        refundAmount: Int64? = nil
    ) {
        self.init(
            type: type, cause: cause, at: at, productId: p.productId, transactionId: p.transactionId.rawValue,
            periodType: periodType, price: p.terms?.price, currency: p.terms?.currency, expiresAt: p.expiresDate,
            reason: reason, fromProductId: fromProductId, refundAmount: refundAmount)
    }
}

extension Timeline {
    /// The product of the latest period begun by `instant` (the first period when none had): what a stated change
    /// at that instant is about.
    func product(at instant: UnixMillis) -> String? {
        (periods.last { $0.start <= instant } ?? periods.first)?.productId
    }

    /// The owner a lifecycle event at `instant` names: the owner then, the first owner owning from the start (so the
    /// answer does not depend on which periods a timeline holds). Under `share`, the first of the owners then.
    func lifecycleOwner(at instant: UnixMillis) -> AppUserID? {
        for (i, o) in owners.enumerated() where (i == 0 || o.from <= instant) && (o.to.map { instant < $0 } ?? true) {
            return o.appUserId
        }
        return nil
    }
}
