/// Why one app user has, or has not, one entitlement at one instant (DOMAIN §6: "every answer can say why"), in
/// the shape of `GET /v1/customers/{id}/entitlements/{entitlement}/why` and `storeledger why`. Built by
/// `Entitlements.explain`; its JSON is written by LedgerAPI.
public struct EntitlementExplanation: Hashable, Sendable {
    public var appUserId: String
    public var entitlement: String
    public var environment: String
    public var at: UnixMillis
    public var asOf: UInt64?
    /// The answer, exactly as the customer's entitlement states it (`Entitlements.customer`): active or not, until
    /// when (nil: no end, or never granted), and the grantor with the latest expiry.
    public var active: Bool
    public var expiresAt: UnixMillis?
    public var productId: String?
    public var originalTransactionId: String?
    /// The deciding reason: the first granting grantor's while active, else the reason the named grantor stopped.
    public var reason: ExplanationReason
    /// The periods the answer rests on: every one granting at `at` (active), or the one the answer names
    /// (inactive), or, for a user whose claim was refused under `keep`, the subscription they could not own.
    public var grantors: [GrantorExplanation]
    /// The operator's grant the answer names instead of a product and subscription (then both are nil).
    public var grantId: String? = nil
}

/// One period the answer rests on, or one of the operator's grants (`grantId`; then no subscription, transaction or
/// product), and the chain of facts that makes it grant, or stop granting, at the instant.
public struct GrantorExplanation: Hashable, Sendable {
    public var originalTransactionId: String
    public var transactionId: String
    public var productId: String
    public var grantId: String? = nil
    /// True when the period grants the entitlement to the user at the instant.
    public var grants: Bool
    /// While granting: until when (nil: no end). Otherwise: when it stopped granting to this user.
    public var until: UnixMillis?
    public var reason: ExplanationReason
    /// The facts, in the order they happened: the purchase, the catalog rule, the owner's claim, and what ended it.
    public var facts: [ExplainedFact]
}

/// One fact of an explanation: what it established, when, and where it came from.
public struct ExplainedFact: Hashable, Sendable {
    public var role: ExplainedFactRole
    /// The valid instant it speaks of (nil for the catalog rule).
    public var at: UnixMillis?
    /// The event that stated it (nil for the catalog rule, which is configuration).
    public var seq: UInt64?
    /// How that event arrived: when, from which source, and the SHA-256 of the raw input it was decoded from.
    public var receivedAt: UnixMillis?
    public var source: FactSource?
    public var rawDigest: [UInt8]?
    /// What it says, in words.
    public var detail: String
}

/// What a fact does in an explanation.
public enum ExplainedFactRole: String, Hashable, Sendable, CaseIterable {
    /// The period's transaction: a purchase, a renewal, a family member's shared copy.
    case purchase
    /// The catalog's rule that the period's product grants the entitlement.
    case catalogRule = "catalog_rule"
    /// The claim (a binding, an `appAccountToken`, a transfer) that made the user the owner.
    case owner
    /// Another user's claim that moved the subscription away (`transfer`).
    case transferredAway = "transferred_away"
    /// This user's claim, refused under `keep`, and the owner who kept it.
    case claimRefused = "claim_refused"
    case refund, revoke
    case refundReversed = "refund_reversed"
    /// Where the period ends without a refund: Apple's expiry, or the upgrade that ended it early.
    case expiry
    case upgrade
    /// Stated changes past the period's end: grace period, billing retry, their end, recovery, expiry.
    case gracePeriod = "grace_period"
    case billingRetry = "billing_retry"
    case gracePeriodExpired = "grace_period_expired"
    case recovered
    case expired
    /// The operator's grant, and the revoke that ended it early.
    case operatorGrant = "operator_grant"
    case grantRevoked = "grant_revoked"
}

/// Why a period grants, or does not grant, the entitlement to the user at the instant.
public enum ExplanationReason: String, Hashable, Sendable, CaseIterable {
    /// Granting: bought (or renewed) by the owner.
    case purchase
    /// Granting: a family member's purchase shared with the user (`inAppOwnershipType` FAMILY_SHARED).
    case familySharing = "family_sharing"
    /// Granting: past its expiry, Apple is retrying the charge within the grace period.
    case gracePeriod = "grace_period"
    /// Not granting: refunded.
    case refunded
    /// Not granting: revoked (Family Sharing stopped).
    case revoked
    /// Not granting: another user's claim moved the subscription away.
    case transferred
    /// Not granting: the period ended (Apple's expiry, or a grace period that ran out).
    case expired
    /// Not granting: the period ended, Apple is retrying the charge without a grace period.
    case billingRetry = "billing_retry"
    /// Not granting: an upgrade ended the period (the new product does not grant the entitlement).
    case upgraded
    /// Not granting: the user's claim was refused under `keep`: another user owns the subscription.
    case claimRefused = "claim_refused"
    /// No period of any subscription the user owned grants the entitlement.
    case noGrantor = "no_grantor"
    /// Granting: the operator granted it (`POST /v1/customers/{id}/grants`).
    case operatorGrant = "operator_grant"
    /// Not granting: the operator's grant ran to its end.
    case grantEnded = "grant_ended"
    /// Not granting: the operator revoked the grant.
    case grantRevoked = "grant_revoked"

    /// True for the reasons of a granting period or grant.
    public var grants: Bool {
        self == .purchase || self == .familySharing || self == .gracePeriod || self == .operatorGrant
    }
}

extension Entitlements {
    /// Explains the answer `customer(user:environment:timelines:at:asOf:rules:)` gives for `entitlement`: the
    /// answer itself is taken from that evaluation (so the two cannot disagree), and each period it names is
    /// explained from its timeline: its transaction, the catalog rule, the owner's claim, and the refund, transfer,
    /// expiry or grace period that decides it at `at`. `events` are the events of the timelines (by seq), read for
    /// each fact's provenance and the transaction's ownership type; a seq missing there is explained without them.
    /// - Complexity: O(total size of the timelines).
    /// The operator's `grants` the answer names are explained from the grant and its revoke (their events in `events`).
    public static func explain(
        entitlement: String, user: AppUserID, environment: AppStoreEnvironment, timelines: [Timeline],
        grants: [GrantRecord] = [], events: [UInt64: LedgerEvent], at: UnixMillis, asOf: UInt64?, rules: FoldRules
    ) -> EntitlementExplanation {
        let answer = customer(
            user: user, environment: environment, timelines: timelines, grants: grants, at: at, asOf: asOf, rules: rules
        ).entitlements[entitlement]
        let mine = timelines.filter { $0.environment == environment }
        let context = ExplanationContext(user: user, entitlement: entitlement, events: events, at: at, rules: rules)
        var grantors: [GrantorExplanation] = []
        for named in answer?.grantedBy ?? [] {
            if let id = named.grantId {
                if let grant = grants.first(where: { $0.grantId == id && $0.environment == environment }) {
                    grantors.append(context.explain(grant))
                }
                continue
            }
            guard let timeline = mine.first(where: { $0.originalTransactionId.rawValue == named.originalTransactionId }),
                let period = timeline.periods.first(where: { $0.transactionId.rawValue == named.transactionId })
            else { continue }
            grantors.append(context.explain(period, of: timeline))
        }
        if answer == nil {
            // Never granted: a claim refused under `keep` is the one thing there is to show.
            for timeline in mine.sorted(by: { $0.originalTransactionId < $1.originalTransactionId })
            where timeline.refusedClaims.contains(where: { $0.appUserId == user && $0.at <= at }) {
                if let period = timeline.periods.last(where: { context.grantsEntitlement($0) && $0.start <= at }) {
                    grantors.append(context.explain(period, of: timeline))
                }
            }
        }
        let reason =
            grantors.first(where: { $0.grants })?.reason ?? grantors.first?.reason ?? .noGrantor
        return EntitlementExplanation(
            appUserId: user.rawValue, entitlement: entitlement, environment: environment.rawValue, at: at, asOf: asOf,
            active: answer?.active ?? false, expiresAt: answer?.expiresAt,
            productId: answer?.grantId == nil ? answer?.productId : nil,
            originalTransactionId: answer?.grantId == nil ? answer?.originalTransactionId : nil, reason: reason,
            grantors: grantors, grantId: answer?.grantId)
    }
}

/// What explaining one period needs besides the period: whose, which entitlement, when, the provenance.
struct ExplanationContext {
    let user: AppUserID
    let entitlement: String
    let events: [UInt64: LedgerEvent]
    let at: UnixMillis
    let rules: FoldRules

    func grantsEntitlement(_ p: Period) -> Bool {
        p.type != .consumable && rules.catalog.entitlements(for: p.productId, type: p.type).contains(entitlement)
    }

    /// A fact with the provenance of event `seq`.
    func fact(_ role: ExplainedFactRole, at instant: UnixMillis?, seq: UInt64?, _ detail: String) -> ExplainedFact {
        let metadata = seq.flatMap { events[$0]?.metadata }
        return ExplainedFact(
            role: role, at: instant, seq: seq, receivedAt: metadata?.receivedAt, source: metadata?.source,
            rawDigest: metadata.map(\.rawDigest), detail: detail)
    }

    /// The period `p` of `timeline`, for the user at the instant: whether it grants, until when, why, and the facts.
    func explain(_ p: Period, of timeline: Timeline) -> GrantorExplanation {
        var facts: [ExplainedFact] = []
        let otid = timeline.originalTransactionId.rawValue

        // The period's transaction.
        var bought = "transaction \(p.transactionId.rawValue) bought \(p.productId)"
        if let offer = p.offer { bought += offer.isTrial ? " with a free trial" : " with an offer" }
        if !p.observedAs.isEmpty { bought += ", restored \(p.observedAs.count) times since" }
        var shared = false
        if case .transaction(let t)? = events[p.seq]?.fact, t.inAppOwnershipType == "FAMILY_SHARED" {
            shared = true
            bought += ", shared by a family member (FAMILY_SHARED)"
        }
        facts.append(fact(.purchase, at: p.start, seq: p.seq, bought))

        // The catalog rule.
        let granted = rules.catalog.entitlements(for: p.productId, type: p.type)
        let rule: String
        if let configured = rules.catalog.configuration(for: p.productId), configured.entitlements != nil {
            rule = "the catalog: \(p.productId) grants \(granted.joined(separator: ", "))"
        } else {
            rule = "\(p.productId) is not in the catalog: it grants the entitlement named after itself"
        }
        let catalogRule = fact(.catalogRule, at: nil, seq: nil, rule)

        // The owner: the user's interval over the period that began last by the instant.
        let intervals = timeline.ownerIntervals
        let mineOver = intervals.filter {
            $0.appUserId == user && $0.from <= at && $0.from < (p.end ?? .max) && ($0.to.map { p.start < $0 } ?? true)
        }
        // Owning it at the instant is what counts (a claim during a grace period owns a period begun before it);
        // otherwise the last ownership over the period.
        let owned = intervals.last { $0.appUserId == user && $0.covers(at) } ?? mineOver.last
        var lostAt: UnixMillis?
        if let o = owned {
            let claimed: String
            switch o.cause {
            case .claim: claimed = "\(user.rawValue) claimed the subscription"
            case .appAccountToken: claimed = "a transaction carried \(user.rawValue)'s appAccountToken"
            case .transfer: claimed = "\(user.rawValue)'s claim moved the subscription to them (transfer)"
            }
            facts.append(fact(.owner, at: o.from, seq: o.seq, claimed))
            if let to = o.to, to <= at {
                lostAt = to
                if let next = intervals.first(where: { $0.from == to && $0.appUserId != user && $0.cause == .transfer }) {
                    facts.append(
                        fact(
                            .transferredAway, at: to, seq: next.seq,
                            "\(next.appUserId.rawValue) claimed the subscription: it moved to them (transfer)"))
                } else {
                    facts.append(fact(.transferredAway, at: to, seq: nil, "another claim moved the subscription away"))
                }
            }
        } else if let refused = timeline.refusedClaims.last(where: { $0.appUserId == user && $0.at <= at }) {
            let keeper = timeline.ownerIntervals.last { $0.covers(refused.at) }
            var detail = "\(user.rawValue)'s claim was refused: the binding policy keeps the first owner"
            if let keeper { detail += " (\(keeper.appUserId.rawValue))" }
            facts.append(fact(.claimRefused, at: refused.at, seq: refused.seq, detail))
        }

        // Refunds and revokes, and their reversals, by the instant.
        for r in p.revocations where r.date <= at {
            let what = r.isFamilyRevoke ? "Family Sharing revoked it" : "refunded"
            var detail = "transaction \(p.transactionId.rawValue) \(what)"
            if let type = r.type, !r.isFamilyRevoke { detail += " (\(type))" }
            facts.append(fact(r.isFamilyRevoke ? .revoke : .refund, at: r.date, seq: r.seq, detail))
            if let back = r.reversedAt, back <= at {
                facts.append(fact(.refundReversed, at: back, seq: r.reversedSeq ?? r.seq, "the refund was reversed"))
            }
        }

        // The period's end, and what was stated past it.
        var expiredAt: UnixMillis?
        if let end = p.end, end <= at {
            expiredAt = end
            if p.upgraded, let next = timeline.periods.first(where: { $0.start >= end && $0.transactionId != p.transactionId }) {
                facts.append(fact(.upgrade, at: end, seq: next.seq, "an upgrade to \(next.productId) ended the period"))
            } else {
                facts.append(fact(.expiry, at: end, seq: p.seq, "the period ended (expiresDate)"))
            }
            for c in timeline.statedChanges where c.at >= p.start && c.at <= at {
                let role: ExplainedFactRole
                switch c.kind {
                case .gracePeriod: role = .gracePeriod
                case .billingRetry: role = .billingRetry
                case .gracePeriodExpired: role = .gracePeriodExpired
                case .recovered: role = .recovered
                case .expired: role = .expired
                default: continue
                }
                var detail = c.kind.rawValue.replacingUnderscores()
                if let d = c.detail { detail += " (\(d))" }
                facts.append(fact(role, at: c.at, seq: c.seq, detail))
            }
        }
        // In the order they happened (those of one instant as listed above), the catalog rule beside the purchase.
        facts = facts.enumerated().sorted { ($0.element.at ?? p.start, $0.offset) < ($1.element.at ?? p.start, $1.offset) }
            .map(\.element)
        facts.insert(catalogRule, at: (facts.firstIndex { $0.role == .purchase } ?? -1) + 1)

        // The verdict for this period, from the same rules as `Entitlements.customer`.
        let ownsNow = owned?.covers(at) ?? false
        var reason: ExplanationReason
        var until: UnixMillis?
        if ownsNow, let grant = timeline.grants(at: at).first(where: { $0.period.transactionId == p.transactionId }) {
            until = grant.expiresAt
            reason = shared ? .familySharing : .purchase
            if !p.grantsAccess(at: at) { reason = .gracePeriod }
        } else if owned == nil, let refused = timeline.refusedClaims.first(where: { $0.appUserId == user && $0.at <= at })
        {
            // Never the user's: the claim was refused.
            reason = .claimRefused
            until = refused.at
        } else {
            // The earliest of what ended it: the refund, the transfer, the expiry.
            var ends: [(UnixMillis, ExplanationReason)] = []
            if let r = p.revocation(at: at) { ends.append((r.date, r.isFamilyRevoke ? .revoked : .refunded)) }
            if let lostAt { ends.append((lostAt, .transferred)) }
            if let expiredAt {
                let status = timeline.status(at: at)
                let ending: ExplanationReason =
                    p.upgraded ? .upgraded : (status.status == .inBillingRetry && status.period == p ? .billingRetry : .expired)
                ends.append((expiredAt, ending))
            }
            let first = ends.min { $0.0 < $1.0 }
            reason = first?.1 ?? .expired
            until = first?.0
        }
        return GrantorExplanation(
            originalTransactionId: otid, transactionId: p.transactionId.rawValue, productId: p.productId,
            grants: reason.grants, until: until, reason: reason, facts: facts)
    }
}

extension ExplanationContext {
    /// The operator's grant `g`, for the user at the instant: granting while in force, else ended or revoked.
    func explain(_ g: GrantRecord) -> GrantorExplanation {
        var granted = "the operator granted \(g.entitlement) (grant \(g.grantId))"
        if g.grantedUntil == nil { granted += " with no end" }
        if let reason = g.reason { granted += ": \(reason)" }
        var facts = [fact(.operatorGrant, at: g.from, seq: g.seq, granted)]
        var reason = ExplanationReason.operatorGrant
        var until = g.end
        if let revokedAt = g.revokedAt, revokedAt <= at {
            var detail = "the operator revoked grant \(g.grantId)"
            if let why = g.revokeReason { detail += ": \(why)" }
            facts.append(fact(.grantRevoked, at: revokedAt, seq: g.revokeSeq, detail))
        }
        if !g.grants(at: at) {
            let revoked = g.revokedAt.map { r in g.grantedUntil.map { r < $0 } ?? true } ?? false
            reason = revoked ? .grantRevoked : .grantEnded
            if !revoked, let end = g.grantedUntil { facts.append(fact(.expiry, at: end, seq: g.seq, "the grant ended")) }
            until = g.end
        }
        return GrantorExplanation(
            originalTransactionId: "", transactionId: "", productId: "", grantId: g.grantId, grants: reason.grants,
            until: until, reason: reason, facts: facts)
    }
}

extension String {
    /// `grace_period` → `grace period`.
    fileprivate func replacingUnderscores() -> String { String(map { $0 == "_" ? " " : $0 }) }
}
