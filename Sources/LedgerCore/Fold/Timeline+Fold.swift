/// Stated changes of one kind closer than this are one change told twice (a V2 notification and the renewal info it
/// carries are signed milliseconds apart).
let sameChangeWindow: UnixMillis = 60_000

extension Timeline {
    /// Folds one subscription's events, in any order and with duplicates, into its timeline. Events of another OTID
    /// or environment are ignored. `ties` orders different facts at one fold position (the ledger's is
    /// `FactOrder.canonical`).
    /// - Complexity: O(n log n) for n events (one sort of small keys; O(n) when they come in fold order, as from the
    ///   log), each step O(1) for a new period or a later renewal info, notification or claim, O(periods) at worst.
    public static func fold(
        _ events: some Sequence<LedgerEvent>, originalTransactionId: OriginalTransactionID,
        environment: AppStoreEnvironment, rules: FoldRules, ties: FactOrder
    ) -> Timeline {
        fold(
            Array(events), originalTransactionId: originalTransactionId, environment: environment, rules: rules,
            ties: ties)
    }

    /// What the sort moves: the first two parts of the event's `FoldPosition` and where the event is.
    private struct FoldKey {
        var instant: UnixMillis
        var kind: Fact.Kind
        var index: Int
    }

    /// `fold(_:originalTransactionId:environment:rules:ties:)` of an array (what the store passes), without going
    /// through the generic `Sequence` entry point, which is not specialized in another module.
    public static func fold(
        _ events: [LedgerEvent], originalTransactionId: OriginalTransactionID, environment: AppStoreEnvironment,
        rules: FoldRules, ties: FactOrder
    ) -> Timeline {
        // The events are sorted by key, not moved: an event is large (its fact and metadata hold several references).
        var keys: [FoldKey] = []
        keys.reserveCapacity(events.count)
        var transactions = 0
        for i in events.indices {
            guard
                let (instant, kind) = instantAndKind(
                    of: events[i], originalTransactionId: originalTransactionId, environment: environment)
            else { continue }
            keys.append(FoldKey(instant: instant, kind: kind, index: i))
            if kind == .transaction { transactions += 1 }
        }
        // The fold order: position (instant, kind, id), then identical facts by seq, other facts by `ties`.
        // Instants and kinds decide almost always; ids and facts are looked at only on a tie.
        keys.sort { a, b in
            if a.instant != b.instant { return a.instant < b.instant }
            if a.kind != b.kind { return a.kind < b.kind }
            return foldsBefore(events[a.index], events[b.index], ties: ties)
        }
        var timeline = Timeline(originalTransactionId: originalTransactionId, environment: environment)
        timeline.step(events, in: keys, transactions: transactions, rules: rules)
        return timeline
    }

    /// Steps `events` in the order of `keys` (sorted), `transactions` of them transactions; the rest of
    /// `fold(_:originalTransactionId:environment:rules:ties:)`. Not inlined into it: a function that assigns an
    /// optional field of a local timeline (`frontier`) and then returns the timeline makes the compiler copy it whole,
    /// every field retained and then released; through a mutating call it is built where it is returned.
    @inline(never)
    private mutating func step(_ events: [LedgerEvent], in keys: [FoldKey], transactions: Int, rules: FoldRules) {
        // At most one period per transaction: the array is allocated once, not grown period by period.
        periods.reserveCapacity(transactions)
        var previous: FoldKey?
        for key in keys {
            lastSeq = max(lastSeq, events[key.index].seq)
            // An identical fact at the same instant is the same revision delivered again: its first (smallest seq)
            // copy was folded.
            if let p = previous, p.instant == key.instant, p.kind == key.kind,
                FoldPosition(events[p.index]) == FoldPosition(events[key.index]),
                events[p.index].fact == events[key.index].fact
            {
                continue
            }
            step(
                events[key.index].fact, seq: events[key.index].seq, at: key.instant, rules: rules,
                format: events[key.index].metadata.source.transactionFormat)
            previous = key
        }
        frontier = keys.last.map { FoldPosition(events[$0.index]) }
    }

    /// The fold order of two events at one instant, of one kind: by id, then identical facts by seq, other facts by
    /// `ties`. Out of line, so that the sort's comparison of instants and kinds, which almost always decides, stays
    /// small enough to be inlined into the sort.
    @inline(never)
    private static func foldsBefore(_ x: LedgerEvent, _ y: LedgerEvent, ties: FactOrder) -> Bool {
        let px = FoldPosition(x), py = FoldPosition(y)
        if px != py { return px < py }
        if x.fact == y.fact { return x.seq < y.seq }
        // Two users' claims at one instant: the one the log recorded first folds first (the ledger heard it first).
        // Any order of the facts' content would decide by the users' ids.
        if case .binding = x.fact, case .binding = y.fact { return x.seq < y.seq }
        // Two revisions of one transaction stated at one instant (one receipt's `in_app` and `latest_receipt_info`):
        // the one stating a revocation folds last, so a copy without it never undoes it.
        if case .transaction(let a) = x.fact, case .transaction(let b) = y.fact,
            (a.revocationDate == nil) != (b.revocationDate == nil)
        {
            return a.revocationDate == nil
        }
        return ties.precedes(x.fact, y.fact)
    }

    /// Folds events whose OTID and environment are taken from the events themselves (the smallest environment code
    /// present, then the smallest OTID in it); for callers that partition by OTID and environment already.
    /// - Complexity: as `fold(_:originalTransactionId:environment:rules:ties:)`.
    public static func fold(_ events: some Sequence<LedgerEvent>, rules: FoldRules, ties: FactOrder) -> Timeline {
        let all = Array(events)
        var key: (AppStoreEnvironment, OriginalTransactionID)?
        for e in all {
            guard let otid = e.fact.originalTransactionId else { continue }
            let env = e.fact.environment
            // Equality first: almost every event names the same OTID, and `==` is cheaper than the numeric order.
            if let k = key, k.0 == env && k.1 == otid { continue }
            if let k = key, AppStoreEnvironment.precedes(k.0, env) || (k.0 == env && !(otid < k.1)) { continue }
            key = (env, otid)
        }
        guard let key else { return Timeline(originalTransactionId: "", environment: .production) }
        return fold(all, originalTransactionId: key.1, environment: key.0, rules: rules, ties: ties)
    }

    /// The incremental path. When the event falls after every event already folded (the common case: a renewal,
    /// a later renewal info, a new claim, a restore observed now), folds it in and returns true; the result equals
    /// `fold` of all the events. Otherwise returns false and leaves the timeline unchanged: the caller refolds the
    /// OTID from all its events. Events of another OTID or environment are ignored (true, unchanged).
    /// - Complexity: O(1) amortised for an event about the latest period; O(periods) at worst.
    public mutating func apply(_ event: LedgerEvent, rules: FoldRules) -> Bool {
        guard concerns(event) else { return true }
        let position = FoldPosition(event)
        if let frontier, !(frontier < position) { return false }
        step(event, at: position, rules: rules)
        return true
    }

    /// The incremental path for the new events of one write transaction, in any order (one input states its
    /// notification, transactions, renewal info and claims in document order, not fold order). When every event
    /// falls after everything already folded and no two share a fold position, folds them in fold order and returns
    /// true; otherwise returns false and leaves the timeline unchanged, and the caller refolds.
    /// - Complexity: O(k log k) for k events, plus their steps.
    public mutating func apply(contentsOf events: [LedgerEvent], rules: FoldRules) -> Bool {
        applyInFoldOrder(events, rules: rules, earlierPeriodsLeftOut: false)
    }

    /// `apply(contentsOf:rules:)` on a timeline whose `periods` are only its latest: the earlier ones are left where
    /// they are stored (how LedgerCodec brings a long timeline up to date without reading them all). Declines (false)
    /// also when a step would need a period left out: a transaction that is not surely new (it may revise or restore
    /// any period), a refund reversal (of any period), a new period that does not go last. The timeline is then
    /// half-applied and only fit to be dropped.
    package mutating func applyToLatestPeriod(contentsOf events: [LedgerEvent], rules: FoldRules) -> Bool {
        applyInFoldOrder(events, rules: rules, earlierPeriodsLeftOut: true)
    }

    /// The tail path on a timeline held decoded (LedgerCodec's `appendingWithTimelines` on a stored one):
    /// `apply(contentsOf:rules:)` stepping only the latest period, handing back the timeline before and after the
    /// events with only that period and those the events added (the earlier ones left out), for deriving lifecycle
    /// events. Returns nil, and leaves the timeline unchanged, when the path does not apply (as
    /// `applyToLatestPeriod`); the caller then applies on the whole timeline or refolds.
    ///
    /// The earlier periods are neither copied nor retained: `self.periods` keeps its buffer, which takes the tail
    /// back in place (so hold no other copy of the timeline while calling this, or that buffer is copied whole).
    /// - Complexity: O(1) but for the steps of the events on the latest period.
    package mutating func applyOnTail(contentsOf events: [LedgerEvent], rules: FoldRules)
        -> (before: Timeline, after: Timeline)?
    {
        guard periods.count > 1 else {
            let before = self
            guard apply(contentsOf: events, rules: rules) else { return nil }
            return (before, self)
        }
        // Without id bounds the fold cannot tell a renewal without reading every period.
        guard idBounds.built else { return nil }
        var earlier = periods
        periods = []
        let latest = earlier.removeLast()
        var tail = self
        tail.periods = [latest]
        let before = tail
        guard tail.applyToLatestPeriod(contentsOf: events, rules: rules) else {
            earlier.append(latest)
            periods = earlier
            return nil
        }
        earlier.append(contentsOf: tail.periods)
        let after = tail
        tail.periods = earlier
        self = tail
        return (before, after)
    }

    private mutating func applyInFoldOrder(_ events: [LedgerEvent], rules: FoldRules, earlierPeriodsLeftOut: Bool)
        -> Bool
    {
        // One array, made in one pass (`filter` then `map` made two, and copied each event into both).
        var mine: [(position: FoldPosition, event: LedgerEvent)] = []
        mine.reserveCapacity(events.count)
        for e in events where concerns(e) { mine.append((FoldPosition(e), e)) }
        guard !mine.isEmpty else { return true }
        mine.sort { $0.position < $1.position }
        if let frontier, !(frontier < mine[0].position) { return false }
        // Equal positions are ordered by the facts in the fold (`FactOrder`); leave those rare cases to a refold.
        for i in mine.indices.dropFirst() where !(mine[i - 1].position < mine[i].position) { return false }
        let latest = periods.first?.transactionId
        for (position, event) in mine {
            if earlierPeriodsLeftOut && needsEarlierPeriods(event.fact, rules: rules) { return false }
            step(event, at: position, rules: rules)
        }
        // A new period placed before the latest may belong among the periods left out.
        return !earlierPeriodsLeftOut || periods.first?.transactionId == latest
    }

    /// Steps `event`, at `position`: after every event folded.
    private mutating func step(_ event: LedgerEvent, at position: FoldPosition, rules: FoldRules) {
        step(event.fact, seq: event.seq, at: position.instant, rules: rules, format: event.metadata.source.transactionFormat)
        frontier = position
        lastSeq = max(lastSeq, event.seq)
    }

    /// True when stepping `fact` may read or change a period before the latest.
    private func needsEarlierPeriods(_ fact: Fact, rules: FoldRules) -> Bool {
        switch fact {
        case .transaction(let t): !isSurelyNew(t, oneTime: isOneTimePurchase(t, rules: rules))
        case .notification(let n): n.notificationType == "REFUND_REVERSED"
        case .renewal, .binding, .reconciliation, .rules, .grant, .erasure: false
        }
    }

    /// True when the event belongs to this timeline.
    func concerns(_ event: LedgerEvent) -> Bool { concerns(event.fact) }

    /// The instant and kind of the event's fold position (`FoldPosition` without its id), or nil when the event is
    /// not of the timeline of `originalTransactionId` in `environment` (`concerns`): one switch on the fact. Inlined, so that an event read out of an array is
    /// read in place (only these fields), not copied whole.
    @inline(__always)
    private static func instantAndKind(
        of event: LedgerEvent, originalTransactionId: OriginalTransactionID, environment: AppStoreEnvironment
    ) -> (UnixMillis, Fact.Kind)? {
        switch event.fact {
        case .transaction(let t):
            guard t.environment == environment, t.originalTransactionId == originalTransactionId else { return nil }
            return (t.statedDate ?? event.metadata.observedAt, .transaction)
        case .renewal(let r):
            guard r.environment == environment, r.originalTransactionId == originalTransactionId else { return nil }
            return (r.signedDate ?? event.metadata.observedAt, .renewal)
        case .notification(let n):
            guard n.environment == environment, n.originalTransactionId == originalTransactionId else { return nil }
            return (n.signedDate ?? event.metadata.observedAt, .notification)
        case .binding(let b):
            guard b.applies(to: environment), b.originalTransactionId == originalTransactionId else { return nil }
            return (b.claimedAt, .binding)
        case .reconciliation:
            // A check of the subscription, never a step of its fold (`Fact.originalTransactionId`).
            return nil
        case .rules, .grant, .erasure: return nil
        }
    }

    func concerns(_ fact: Fact) -> Bool {
        if case .binding(let b) = fact {
            return b.applies(to: environment) && b.originalTransactionId == originalTransactionId
        }
        if case .reconciliation = fact { return false }
        if case .grant = fact { return false }
        if case .erasure = fact { return false }
        return fact.environment == environment && fact.originalTransactionId == originalTransactionId
    }

    // MARK: - The step function

    /// `format` is what the event's source can state of a transaction (`TransactionFormat`).
    mutating func step(_ fact: Fact, seq: UInt64, at instant: UnixMillis, rules: FoldRules, format: TransactionFormat) {
        switch fact {
        case .transaction(let t): stepTransaction(t, at: instant, seq: seq, rules: rules, format: format)
        case .renewal(let r): stepRenewal(r, at: instant, seq: seq, format: format)
        case .notification(let n): stepNotification(n, at: instant, seq: seq)
        case .binding(let b): stepClaim(b, seq: seq, policy: rules.bindingPolicy)
        case .reconciliation: break
        case .rules, .grant, .erasure: break  // On no timeline (`concerns` is false for them).
        }
    }

    /// A binding claim. A token claim (a transaction's `appAccountToken`) claims only when the token is new on the
    /// subscription or names another user than when it last claimed: Apple repeats the token on every renewal, and
    /// a repetition must not take the subscription back from a user it was bound to since (docs/domain.md).
    ///
    /// A token belongs to the user it was first claimed for. A later claim naming another user for it (a restore:
    /// another account's backend posts the transaction that still carries the purchaser's token) maps nothing and
    /// claims nothing as a token claim: that user's claim is the one the decoder states beside it, at the restore.
    mutating func stepClaim(_ b: BindingClaim, seq: UInt64, policy: BindingPolicy) {
        guard let token = b.claimedToken, !token.isEmpty else {
            claim(b.appUserId, at: b.claimedAt, cause: b.cause, seq: seq, policy: policy)
            return
        }
        let named = b.appUserId.rawValue != token
        if named && tokenUsers[token] == nil { tokenUsers[token] = b.appUserId }
        guard b.cause == .appAccountToken else {
            claim(b.appUserId, at: b.claimedAt, cause: b.cause, seq: seq, policy: policy)
            return
        }
        let user = tokenUsers[token] ?? b.appUserId
        if named && user != b.appUserId { return }
        if let last = accountToken, last.token == token, last.appUserId == user { return }
        accountToken = AccountTokenClaim(token: token, appUserId: user)
        claim(user, at: b.claimedAt, cause: .appAccountToken, seq: seq, policy: policy)
    }

    /// One revision of one transaction: creates or updates its period, joins restored copies to the period they copy,
    /// opens or reverses a revocation. A revision in a format that cannot state some fields (`format`) leaves what
    /// another revision stated of them. (Its `appAccountToken` claims through the binding claim the decoder states
    /// beside it: see `stepClaim`.)
    /// - Complexity: O(1) for a transaction after every known one (a renewal: id, line item and start above all the
    ///   periods'), O(periods) otherwise (a revision, a restored copy, a refund).
    mutating func stepTransaction(
        _ t: borrowing TransactionFact, at instant: UnixMillis, seq: UInt64, rules: FoldRules, format: TransactionFormat
    ) {
        let id = t.transactionId
        if !idBounds.built { idBounds = IDBounds(periods: periods) }
        defer {
            // Every id and line item a period takes is noted, so the bounds stay above all of them.
            idBounds.noteId(id)
            if let w = t.webOrderLineItem { idBounds.noteLineItem(w) }
        }
        let oneTime = isOneTimePurchase(t, rules: rules)
        if !isSurelyNew(t, oneTime: oneTime) {
            if let i = periods.lastIndex(where: { $0.contains(id) }) {
                var p = periods[i]
                if p.transactionId == id { p.take(t, rules: rules, format: format) }
                p.applyRevocation(of: t, at: instant, seq: seq)
                place(consume p, from: i)
                return
            }
            if let i = periods.lastIndex(where: { $0.isCopied(by: t, oneTime: oneTime) }) {
                var p = periods[i]
                if id < p.transactionId {
                    // The smaller id is the original: it becomes the period's transaction and states its fields.
                    p.observedAs.insertSorted(p.transactionId)
                    p.transactionId = id
                    p.take(t, rules: rules, format: format)
                } else {
                    p.observedAs.insertSorted(id)
                }
                p.applyRevocation(of: t, at: instant, seq: seq)
                place(p, from: i)
                return
            }
        }
        // A new period: neither one of the periods' transactions nor a copy of one.
        // The previous terms read in place (`periods.last` would copy the whole period).
        let previousTerms = periods.isEmpty ? nil : periods[periods.count - 1].terms
        let p = Period(bought: t, seq: seq, rules: rules, previousTerms: previousTerms)
        if periods.isEmpty || !sortsBefore(p, periodAt: periods.count - 1) {
            periods.append(consume p)  // The common case; `place` would take its period as an argument, a copy.
            endUpgradedPeriod(at: periods.count - 2)
        } else {
            place(consume p, from: nil)
        }
    }

    /// True for a one-time purchase (a non-consumable without an expiry): a restore of it may carry any dates.
    private func isOneTimePurchase(_ t: borrowing TransactionFact, rules: FoldRules) -> Bool {
        t.expiresDate == nil && Period.typeAndEnd(of: t, rules: rules).type == .nonConsumable
    }

    /// True when `t` is surely a transaction no period has seen (neither one of the periods' transactions nor a
    /// restored copy of one): its id and line item are above every one the periods have had (`idBounds`), and it
    /// starts after the latest period. False means "maybe known": the periods are looked through.
    private func isSurelyNew(_ t: borrowing TransactionFact, oneTime: Bool) -> Bool {
        idBounds.surelyUnknownId(t.transactionId)
            && (periods.isEmpty || (!oneTime && periods[periods.count - 1].start < t.purchaseDate))
            && (t.webOrderLineItem.map { idBounds.surelyUnknownLineItem($0) } ?? true)
    }

    /// True when `p` sorts before the period at `i`: periods are ordered by start, then transaction id.
    private func sortsBefore(_ p: borrowing Period, periodAt i: Int) -> Bool {
        p.start != periods[i].start ? p.start < periods[i].start : p.transactionId < periods[i].transactionId
    }

    /// Puts a period at its place in start order (usually the end), replacing the one at `old`. Takes the period
    /// (`consuming`), so that it moves into the array rather than being copied there.
    /// - Complexity: O(1) when it stays last or in place, O(periods) otherwise.
    mutating func place(_ p: consuming Period, from old: Int?) {
        var i: Int
        if let old, old == 0 || !sortsBefore(p, periodAt: old - 1),
            old == periods.count - 1 || sortsBefore(p, periodAt: old + 1)
        {
            periods[old] = p
            i = old
        } else {
            if let old { periods.remove(at: old) }
            i = periods.count
            while i > 0 && sortsBefore(p, periodAt: i - 1) { i -= 1 }
            if i == periods.count {
                periods.append(p)  // The common case; `insert` goes through a generic replaceSubrange.
            } else {
                periods.insert(p, at: i)
            }
        }
        endUpgradedPeriod(at: i - 1)
        endUpgradedPeriod(at: i)
    }

    /// Ends the period at `i` where the next one begins, when the next is another product of the subscription that
    /// begins before it ends: an upgrade (or an immediate crossgrade). Apple marks the old side (`isUpgraded`, a
    /// revocation date) in V1 and in a revision of the old transaction, but a V2 notification of the upgrade carries
    /// only the new transaction; either way periods never overlap (docs/domain.md, "Plan changes").
    /// The old side's own revocation at that instant, when Apple stated one without `isUpgraded`, is the upgrade's,
    /// not a refund.
    mutating func endUpgradedPeriod(at i: Int) {
        guard i >= 0, i + 1 < periods.count,
            periods[i].type == .autoRenewable, periods[i + 1].type == .autoRenewable,
            periods[i].start < periods[i + 1].start, let end = periods[i].end, periods[i + 1].start < end,
            periods[i].productId != periods[i + 1].productId
        else { return }
        let upgradedAt = periods[i + 1].start
        periods[i].end = upgradedAt
        periods[i].upgraded = true
        if let r = periods[i].revocations.last, r.date == upgradedAt, r.reversedAt == nil, !r.isFamilyRevoke {
            periods[i].revocations.removeLast()
            periods[i].revokingTransactions = []
        }
    }

    /// The renewal info replaces the renewal state; what changed becomes stated changes.
    mutating func stepRenewal(_ r: RenewalInfoFact, at instant: UnixMillis, seq: UInt64, format: TransactionFormat) {
        // What the renewal state said before, read from its info (which shares its box: one retain, released at the
        // end of this block, so that `restate` below finds the box its own and writes in place).
        let wasAutoRenewing: Bool?, wasRetrying: Bool, oldGraceEnd: UnixMillis?, current: String?
        var oldPending: String?
        do {
            let old = renewal?.info
            wasAutoRenewing = old?.autoRenewStatus
            wasRetrying = old?.isInBillingRetryPeriod == true
            oldGraceEnd = old?.gracePeriodExpiresDate
            current = r.productId ?? (periods.isEmpty ? nil : periods[periods.count - 1].productId)
            if let target = old?.autoRenewProductId, target != (old?.productId ?? current) { oldPending = target }
        }
        if let was = wasAutoRenewing, let now = r.autoRenewStatus, was != now {
            record(TimelineChange(at: instant, kind: now ? .autoRenewOn : .autoRenewOff, seq: seq))
        }
        // Apple keeps retrying during a grace period too; while the grace period lasts, that is the state to tell.
        let graceUntil = r.gracePeriodExpiresDate.flatMap { $0 > instant ? $0 : nil }
        if let g = graceUntil, g != oldGraceEnd {
            record(TimelineChange(at: retryBegan(statedAt: instant), kind: .gracePeriod, seq: seq, until: g))
        } else if graceUntil == nil, r.isInBillingRetryPeriod == true, !wasRetrying {
            record(TimelineChange(at: retryBegan(statedAt: instant), kind: .billingRetry, seq: seq))
        }
        // Apple stops retrying: the subscription expired (an expiration intent says why) or the billing recovered.
        // V1 receipts have no notification for either; the renewal info is all they state.
        if wasRetrying, r.isInBillingRetryPeriod == false {
            if let reason = RenewalState.expirationReason(intent: r.expirationIntent) {
                record(TimelineChange(at: instant, kind: .expired, seq: seq, detail: reason))
            } else {
                record(TimelineChange(at: instant, kind: .recovered, seq: seq))
            }
        }
        if let target = r.autoRenewProductId, target != current {
            if target != oldPending { record(TimelineChange(at: instant, kind: .pendingChange, seq: seq, detail: target)) }
        } else if let oldPending, oldPending != current {
            // Back to the current product before the change took effect: the pending change was cancelled.
            record(TimelineChange(at: instant, kind: .pendingChangeCancelled, seq: seq, detail: oldPending))
        }
        if renewal == nil {
            renewal = RenewalState(r, at: instant, seq: seq)
        } else {
            renewal!.restate(r, at: instant, seq: seq, format: format)
        }
    }

    /// What a notification states. Its transaction and renewal info are separate facts; only what they cannot say
    /// is taken from the notification itself.
    mutating func stepNotification(_ n: NotificationFact, at instant: UnixMillis, seq: UInt64) {
        let subtype = n.subtype.flatMap { $0.isEmpty ? nil : $0 }
        func note(_ kind: ChangeKind, _ detail: String? = nil) {
            record(TimelineChange(at: instant, kind: kind, seq: seq, detail: detail))
        }
        switch n.notificationType {
        case "REFUND_REVERSED":
            let target =
                n.transactionId.flatMap { id in periods.lastIndex { $0.contains(id) } }
                ?? periods.lastIndex { $0.openRevocation != nil }
            if let i = target { periods[i].reverseRevocation(at: instant, seq: seq) }
        case "REFUND_DECLINED": note(.refundDeclined)
        case "DID_CHANGE_RENEWAL_STATUS":
            switch subtype {
            case "AUTO_RENEW_DISABLED": note(.autoRenewOff)
            case "AUTO_RENEW_ENABLED": note(.autoRenewOn)
            default: if let on = n.autoRenewStatus { note(on ? .autoRenewOn : .autoRenewOff) }
            }
        case "DID_CHANGE_RENEWAL_PREF":
            switch subtype {
            case "UPGRADE": break  // The new period states it.
            case "DOWNGRADE": note(.pendingChange, n.autoRenewProductId)
            default:
                if let target = n.autoRenewProductId, target != periods.last?.productId {
                    note(.pendingChange, target)  // V1: no subtype, the target product says it.
                } else {
                    note(.pendingChangeCancelled)
                }
            }
        case "DID_FAIL_TO_RENEW":
            record(
                TimelineChange(
                    at: retryBegan(statedAt: instant), kind: subtype == "GRACE_PERIOD" ? .gracePeriod : .billingRetry,
                    seq: seq))
        case "GRACE_PERIOD_EXPIRED": note(.gracePeriodExpired)
        case "EXPIRED": note(.expired, subtype)
        case "DID_RENEW":  // Its transaction states the renewal; a recovery from billing retry is noted as well.
            if subtype == "BILLING_RECOVERY" { note(.recovered) }
        case "DID_RECOVER": note(.recovered)
        case "PRICE_INCREASE", "PRICE_INCREASE_CONSENT": note(.priceIncrease, subtype)
        case "OFFER_REDEEMED": note(.offerRedeemed, subtype)
        case "RENEWAL_EXTENDED": note(.renewalExtended)
        case "CONSUMPTION_REQUEST": note(.refundRequested, n.statedString("data.consumptionRequestReason"))
        // The transaction each of these carries states what happened (a purchase, a renewal, a refund, a revoke, an
        // upgrade): the timeline shows it as that.
        case "SUBSCRIBED", "ONE_TIME_CHARGE", "REFUND", "REVOKE", "INITIAL_BUY", "RENEWAL",
            "INTERACTIVE_RENEWAL", "CANCEL":
            break
        default: note(.notification, subtype.map { n.notificationType + "/" + $0 } ?? n.notificationType)
        }
    }

    /// When a billing retry or grace period stated at `instant` began in valid time. Apple retries billing from the
    /// expiry (a grace period "occurs at the start of a billing retry state") but states it when it notifies, and a
    /// status fetched by reconciliation is signed when fetched: hours later. Stated after the latest period ended,
    /// it began at that end (docs/domain.md, "Late statements"); stated before, at the statement.
    func retryBegan(statedAt instant: UnixMillis) -> UnixMillis {
        guard !periods.isEmpty else { return instant }
        let last = periods.count - 1
        guard periods[last].type == .autoRenewable, periods[last].start <= instant, let end = periods[last].end,
            end < instant
        else { return instant }
        return max(end, periods[last].start)
    }

    /// Records a stated change at its place in instant order (the end, but for a change that began before it was
    /// stated), merging it into one of the same kind within `sameChangeWindow` before it.
    mutating func record(_ change: TimelineChange) {
        var place = statedChanges.count
        while place > 0 && statedChanges[place - 1].at > change.at { place -= 1 }
        var i = place - 1
        while i >= 0 && change.at.saturatingSubtract(statedChanges[i].at) <= sameChangeWindow {
            if statedChanges[i].kind == change.kind && (change.kind != .notification || statedChanges[i].detail == change.detail) {
                if statedChanges[i].detail == nil { statedChanges[i].detail = change.detail }
                if let u = change.until { statedChanges[i].until = max(statedChanges[i].until ?? u, u) }
                return
            }
            i -= 1
        }
        if place == statedChanges.count {
            statedChanges.append(change)  // The common case; `insert` goes through a generic replaceSubrange.
        } else {
            statedChanges.insert(change, at: place)
        }
    }

    /// A user claims the subscription at `instant` (DOMAIN §5).
    mutating func claim(
        _ user: AppUserID, at instant: UnixMillis, cause: BindingClaim.Cause, seq: UInt64, policy: BindingPolicy
    ) {
        let firstCause: OwnerCause = cause == .appAccountToken ? .appAccountToken : .claim
        guard !owners.isEmpty else {
            owners.append(OwnerInterval(appUserId: user, from: instant, seq: seq, cause: firstCause))
            return
        }
        if owners.contains(where: { $0.to == nil && $0.appUserId == user }) { return }
        switch policy {
        case .transfer:
            for i in owners.indices where owners[i].to == nil { owners[i].to = instant }
            owners.append(OwnerInterval(appUserId: user, from: instant, seq: seq, cause: .transfer))
        case .keep:
            // One refusal per user and instant: a restore states the caller's claim and its token's at once.
            if refusedClaims.contains(where: { $0.appUserId == user && $0.at == instant }) { return }
            refusedClaims.append(RefusedClaim(appUserId: user, at: instant, seq: seq, cause: cause))
        case .share:
            owners.append(OwnerInterval(appUserId: user, from: instant, seq: seq, cause: firstCause))
        }
    }
}

extension Period {
    /// True when the transaction is a restored copy of this period: the same `webOrderLineItemId`, or (when either
    /// lacks one, as V1 restores may) the same product and purchase date.
    /// A one-time purchase (`oneTime`: the transaction is a non-consumable) is restored with a new id and the
    /// restore's date as its purchase date: within one OTID every transaction of the product is that purchase.
    func isCopied(by t: TransactionFact, oneTime: Bool) -> Bool {
        if oneTime && type == .nonConsumable { return productId == t.productId }
        if let a = lineItem, let b = t.webOrderLineItem { return a == b }
        return productId == t.productId && start == t.purchaseDate
    }

    /// Takes the period's fields from a revision of its own transaction. A revision in the receipt format states no
    /// terms (price, currency, reason, billing plan) and only part of an offer: it keeps what a signed revision stated
    /// of those (docs/domain.md, "What each format states"), so that the order in which the copies come changes
    /// nothing.
    mutating func take(_ t: TransactionFact, rules: FoldRules, format: TransactionFormat) {
        productId = t.productId
        if let w = t.webOrderLineItem { lineItem = w }
        expiresDate = t.expiresDate
        originalPurchaseDate = t.originalPurchaseDate
        quantity = t.quantity ?? 1
        upgraded = t.isUpgraded == true
        (type, end) = Period.typeAndEnd(of: t, rules: rules)
        start = Period.start(of: t, type: type)
        switch format {
        case .signed:
            offer = Offer(t)
            terms = PeriodTerms.stated(by: t, sharing: terms)
        case .receipt:
            offer = Offer(receiptStated: Offer(t), keeping: offer)
            terms = PeriodTerms.receiptStated(by: t, keeping: terms)
        }
    }

    /// The product type a revision states (catalog first, then Apple's `type`, then inferred: an expiry means a
    /// subscription) and when access ends without a refund.
    static func typeAndEnd(of t: borrowing TransactionFact, rules: FoldRules) -> (type: ProductType, end: UnixMillis?) {
        let config = rules.catalog.configuration(for: t.productId)
        let type = config?.type ?? t.type ?? (t.expiresDate != nil ? .autoRenewable : .nonConsumable)
        var end: UnixMillis?
        switch type {
        case .autoRenewable: end = t.expiresDate ?? t.purchaseDate
        case .nonRenewing: end = config?.duration?.added(to: t.originalPurchaseDate ?? t.purchaseDate) ?? t.expiresDate
        case .nonConsumable, .consumable: end = nil
        }
        if t.isUpgraded == true, let d = t.revocationDate { end = min(end ?? d, d) }
        return (type, end)
    }

    /// Opens a revocation (refund, Family Sharing revoke) the revision `t` states, or reverses the open one when a
    /// transaction that stated it now states none (DOMAIN §4.3).
    mutating func applyRevocation(of t: borrowing TransactionFact, at instant: UnixMillis, seq: UInt64) {
        if t.isRefundLike, let date = t.revocationDate {
            if openRevocation != nil {
                if !revokingTransactions.contains(t.transactionId) { revokingTransactions.append(t.transactionId) }
                return
            }
            // Stated again after a reversal: revoked anew, not before the reversal.
            let from = revocations.last?.reversedAt.map { max($0, date) } ?? date
            revocations.append(
                Revocation(
                    date: from, reason: t.revocationReason, type: t.revocationType,
                    percentage: t.revocationPercentage, seq: seq))
            revokingTransactions = [t.transactionId]
        } else if t.revocationDate == nil, openRevocation != nil,
            let k = revokingTransactions.firstIndex(of: t.transactionId)
        {
            revokingTransactions.remove(at: k)
            if revokingTransactions.isEmpty { closeRevocation(at: instant, seq: seq) }
        }
    }

    /// REFUND_REVERSED: access comes back at `instant`.
    mutating func reverseRevocation(at instant: UnixMillis, seq: UInt64) {
        guard openRevocation != nil else { return }
        revokingTransactions = []
        closeRevocation(at: instant, seq: seq)
    }

    private mutating func closeRevocation(at instant: UnixMillis, seq: UInt64) {
        let i = revocations.count - 1
        revocations[i].reversedAt = max(instant, revocations[i].date)
        revocations[i].reversedSeq = seq
    }
}

extension Array where Element == TransactionID {
    /// Inserts keeping id order, without duplicates.
    mutating func insertSorted(_ id: TransactionID) {
        var i = count
        while i > 0 && id < self[i - 1] { i -= 1 }
        if i > 0 && self[i - 1] == id { return }
        insert(id, at: i)
    }
}
