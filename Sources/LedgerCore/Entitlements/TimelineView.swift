/// A timeline evaluated at one instant, in the socket API's Timeline shape (`timeline --json`,
/// `GET /v1/subscriptions/{otid}`), with a few extra fields. Its JSON is written by LedgerAPI.
public struct TimelineView: Hashable, Sendable {
    public var originalTransactionId: String
    public var environment: String
    public var at: UnixMillis
    public var asOf: UInt64?
    /// `active | in_grace_period | in_billing_retry | expired | revoked`.
    public var status: String
    public var productId: String?
    public var expiresAt: UnixMillis?
    public var autoRenew: Bool?
    public var pendingProductId: String?
    public var periods: [PeriodView]
    public var changes: [ChangeView]
    public var owners: [OwnerView]
    // Extras.
    public var expirationReason: String?
    public var gracePeriodExpiresAt: UnixMillis?
    public var productType: String?
    public var inBillingRetry: Bool?
    public var priceIncreaseStatus: Int64?
    public var refusedClaims: [RefusedClaimView]
    public var lastSeq: UInt64
    /// The next renewal's price (milliunits of `renewalCurrency`), from the latest renewal info when it spoke by `at`.
    public var renewalPrice: Int64?
    public var renewalCurrency: String?
    /// Win-back offers the customer may redeem, per the latest renewal info.
    public var eligibleWinBackOfferIds: [String]?
    /// The latest check of this subscription against Apple (`storeledger reconcile`) as known at `asOf`, and its
    /// seq; nil when it was never checked. Set by the store, which finds it by its key: it is not part of the fold.
    public var reconciliation: ReconciliationView?
}

/// A recorded reconciliation: the check and where it stands in the log.
public struct ReconciliationView: Hashable, Sendable {
    public var seq: UInt64
    public var check: ReconciliationFact
    public init(seq: UInt64, check: ReconciliationFact) {
        self.seq = seq
        self.check = check
    }
}

/// One period in a `TimelineView`.
public struct PeriodView: Hashable, Sendable {
    public var transactionId: String
    public var webOrderLineItemId: String?
    public var productId: String
    public var start: UnixMillis
    public var end: UnixMillis?
    public var offer: Offer?
    /// The latest revocation's instant (also when it was later reversed: see `reinstatedAt`).
    public var revokedAt: UnixMillis?
    public var revocation: RevocationView?
    public var upgraded: Bool
    public var observedAs: [String]
    /// When a reversed refund gave access back.
    public var reinstatedAt: UnixMillis?
    public var expiresDate: UnixMillis?
    public var quantity: Int64
    public var productType: String
    /// Milliunits of `currency`.
    public var price: Int64?
    public var currency: String?
    /// `PURCHASE` or `RENEWAL`.
    public var transactionReason: String?
    public var billingPlanType: String?
    public var commitmentExpiresDate: UnixMillis?
    /// The app's own purchase: the version the customer first got.
    public var originalApplicationVersion: String?
}

/// A revocation in a `PeriodView`.
public struct RevocationView: Hashable, Sendable {
    public var date: UnixMillis
    public var reason: Int64?
    public var type: String?
    public var percentage: Int64?
    public var reversedAt: UnixMillis?
}

/// One change in a `TimelineView`.
public struct ChangeView: Hashable, Sendable {
    public var at: UnixMillis
    public var kind: String
    public var seq: UInt64
    public var detail: String?
    public var until: UnixMillis?
}

/// One ownership interval in a `TimelineView` or a `CustomerView`.
public struct OwnerView: Hashable, Sendable {
    public var appUserId: String
    public var from: UnixMillis
    public var to: UnixMillis?
    public var seq: UInt64
    /// `claim | appAccountToken | transfer`.
    public var cause: String
}

/// A claim refused under `keep`.
public struct RefusedClaimView: Hashable, Sendable {
    public var appUserId: String
    public var at: UnixMillis
    public var seq: UInt64
    public var cause: String
}

extension Timeline {
    /// All changes, stated and derived (purchase, renewal, resubscribe, plan changes, refunds and reversals, owner
    /// changes, refused claims), in time order.
    /// - Complexity: O(k log k) for k changes.
    public func changes(rules: FoldRules = FoldRules()) -> [TimelineChange] {
        var all = statedChanges
        for (i, p) in periods.enumerated() {
            all.append(TimelineChange(at: p.start, kind: planChange(i, rules: rules), seq: p.seq, detail: p.productId))
            for r in p.revocations {
                all.append(
                    TimelineChange(
                        at: r.date, kind: r.isFamilyRevoke ? .revoked : .refund, seq: r.seq,
                        detail: p.transactionId.rawValue))
                if let back = r.reversedAt {
                    all.append(
                        TimelineChange(
                            at: back, kind: .refundReversed, seq: r.reversedSeq ?? r.seq,
                            detail: p.transactionId.rawValue))
                }
            }
        }
        for o in ownerIntervals {
            all.append(TimelineChange(at: o.from, kind: .ownerChanged, seq: o.seq, detail: o.appUserId.rawValue))
        }
        for r in refusedClaims {
            all.append(TimelineChange(at: r.at, kind: .claimRefused, seq: r.seq, detail: r.appUserId.rawValue))
        }
        all.sort(by: TimelineChange.precedes)
        return all
    }

    /// What the period at `index` was to the one before: a purchase, renewal, resubscription or plan change.
    func planChange(_ index: Int, rules: FoldRules) -> ChangeKind {
        guard index > 0 else { return .purchase }
        let p = periods[index], prev = periods[index - 1]
        let gap = prev.end.map { p.start > $0 } ?? false
        // A renewal that came late because billing was retried is still a renewal: Apple says so
        // (`transactionReason` RENEWAL), or the retry was stated in between.
        let renewed =
            p.terms?.transactionReason == "RENEWAL"
            || (gap
                && statedChanges.contains {
                    $0.at >= prev.start && $0.at <= p.start
                        && ($0.kind == .billingRetry || $0.kind == .gracePeriod || $0.kind == .recovered)
                })
        if p.productId == prev.productId { return gap && !renewed ? .resubscribe : .renewal }
        // The old side of an upgrade ends where the new product starts (Apple's instants may differ by a moment):
        // a plan change, never a resubscription.
        if gap && !renewed && !prev.upgraded { return .resubscribe }
        if let a = rules.catalog.configuration(for: prev.productId)?.level,
            let b = rules.catalog.configuration(for: p.productId)?.level
        {
            return b > a ? .upgrade : b < a ? .downgrade : .crossgrade
        }
        let immediate = prev.upgraded || (prev.end.map { p.start < $0 } ?? false)
        return immediate ? .upgrade : .downgrade
    }

    /// The timeline at instant `at`, in the socket API's shape. `asOf` is echoed: the caller folds only the events with
    /// seq ≤ asOf.
    /// - Complexity: O(size of the timeline).
    public func view(at: UnixMillis, asOf: UInt64?, rules: FoldRules = FoldRules()) -> TimelineView {
        let s = status(at: at)
        let next = renewal(at: at, current: s.period?.productId ?? periods.last?.productId, status: s.status)
        return TimelineView(
            originalTransactionId: originalTransactionId.rawValue, environment: environment.rawValue, at: at,
            asOf: asOf, status: s.status.rawValue, productId: s.period?.productId, expiresAt: s.expiresAt,
            autoRenew: next.autoRenew, pendingProductId: next.pendingProductId,
            periods: periods.map(PeriodView.init),
            changes: changes(rules: rules).map {
                ChangeView(at: $0.at, kind: $0.kind.rawValue, seq: $0.seq, detail: $0.detail, until: $0.until)
            },
            owners: ownerIntervals.map(OwnerView.init),
            expirationReason: s.status == .expired ? s.expirationReason : nil,
            gracePeriodExpiresAt: s.gracePeriodExpiresAt, productType: productType?.catalogName,
            inBillingRetry: next.inBillingRetry, priceIncreaseStatus: next.priceIncreaseStatus,
            refusedClaims: refusedClaims.map {
                RefusedClaimView(appUserId: $0.appUserId.rawValue, at: $0.at, seq: $0.seq, cause: $0.cause.rawValue)
            },
            lastSeq: lastSeq, renewalPrice: next.renewalPrice, renewalCurrency: next.renewalCurrency,
            eligibleWinBackOfferIds: next.eligibleWinBackOfferIds)
    }
}

extension PeriodView {
    init(_ p: Period) {
        let last = p.revocations.last
        self.init(
            transactionId: p.transactionId.rawValue, webOrderLineItemId: p.webOrderLineItemId, productId: p.productId,
            start: p.start, end: p.end, offer: p.offer, revokedAt: last?.date,
            revocation: last.map {
                RevocationView(
                    date: $0.date, reason: $0.reason, type: $0.type, percentage: $0.percentage, reversedAt: $0.reversedAt)
            },
            upgraded: p.upgraded, observedAs: p.observedAs.map(\.rawValue), reinstatedAt: last?.reversedAt,
            expiresDate: p.expiresDate, quantity: p.quantity, productType: p.type.catalogName,
            price: p.terms?.price, currency: p.terms?.currency, transactionReason: p.terms?.transactionReason,
            billingPlanType: p.terms?.billingPlanType, commitmentExpiresDate: p.terms?.commitmentExpiresDate,
            originalApplicationVersion: p.terms?.originalApplicationVersion)
    }
}

extension OwnerView {
    init(_ o: OwnerInterval) {
        self.init(appUserId: o.appUserId.rawValue, from: o.from, to: o.to, seq: o.seq, cause: o.cause.rawValue)
    }
}
