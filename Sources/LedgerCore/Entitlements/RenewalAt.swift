// MARK: - What was known of the next renewal at one instant

/// The renewal state of a subscription at one instant: what `view(at:asOf:rules:)` says of the next renewal.
///
/// The timeline keeps only the latest renewal info. At an instant before that info spoke, its values are not yet
/// true, but what changed before then is on the timeline as stated changes (auto-renew turned off or on, a pending
/// plan change and its cancellation, billing retry and grace periods, price increase notices), each at its instant.
/// So the state at an earlier instant is replayed from those changes; what only a renewal info carries (the renewal
/// price and currency, win-back offers) is unknown there, and nil.
public struct RenewalAt: Hashable, Sendable {
    public var autoRenew: Bool?
    /// The product the subscription renews into when it is not the current one.
    public var pendingProductId: String?
    public var inBillingRetry: Bool?
    /// Apple's `priceIncreaseStatus`: 0 not yet consented, 1 consented (or notified, for increases that need none).
    public var priceIncreaseStatus: Int64?
    public var renewalPrice: Int64?
    public var renewalCurrency: String?
    public var eligibleWinBackOfferIds: [String]?

    public init(
        autoRenew: Bool?, pendingProductId: String? = nil, inBillingRetry: Bool? = nil,
        priceIncreaseStatus: Int64? = nil, renewalPrice: Int64? = nil, renewalCurrency: String? = nil,
        eligibleWinBackOfferIds: [String]? = nil
    ) {
        self.autoRenew = autoRenew
        self.pendingProductId = pendingProductId
        self.inBillingRetry = inBillingRetry
        self.priceIncreaseStatus = priceIncreaseStatus
        self.renewalPrice = renewalPrice
        self.renewalCurrency = renewalCurrency
        self.eligibleWinBackOfferIds = eligibleWinBackOfferIds
    }
}

extension Timeline {
    /// The renewal state at `at`, for a subscription whose product at `at` is `current`: the latest renewal info
    /// when it spoke by `at`, otherwise the stated changes up to `at` (see `RenewalAt`). A subscription no renewal
    /// info was ever seen for says only what notifications said of auto-renew.
    /// - Complexity: O(stated changes).
    public func renewal(at: UnixMillis, current: String?, status: SubscriptionStatus) -> RenewalAt {
        let autoRenew = autoRenewStatus(at: at)
        guard let r = renewal, periods.contains(where: { $0.start <= at }) else {
            return RenewalAt(autoRenew: autoRenew)
        }
        if r.at <= at {
            let info = r.info
            return RenewalAt(
                autoRenew: autoRenew, pendingProductId: info.autoRenewProductId.flatMap { $0 != current ? $0 : nil },
                inBillingRetry: info.isInBillingRetryPeriod, priceIncreaseStatus: info.priceIncreaseStatus,
                renewalPrice: info.renewalPrice, renewalCurrency: info.currency,
                eligibleWinBackOfferIds: info.eligibleWinBackOfferIds)
        }
        var pending: (product: String, since: UnixMillis)?
        var priceIncrease: Int64?
        for c in statedChanges where c.at <= at {
            switch c.kind {
            case .pendingChange: pending = c.detail.map { ($0, c.at) }
            case .pendingChangeCancelled: pending = nil
            // The PRICE_INCREASE notification's subtypes: PENDING until the customer consents, then ACCEPTED.
            case .priceIncrease where c.detail == "PENDING": priceIncrease = 0
            case .priceIncrease where c.detail == "ACCEPTED": priceIncrease = 1
            default: break
            }
        }
        // A pending change is done once a period of its product began: the subscription renewed into it.
        if let p = pending, p.product == current || periods.contains(where: {
            $0.productId == p.product && $0.start >= p.since && $0.start <= at
        }) {
            pending = nil
        }
        // Billing retry is the status's own state, which the stated changes tell at every instant.
        return RenewalAt(
            autoRenew: autoRenew, pendingProductId: pending?.product,
            inBillingRetry: status == .inBillingRetry || status == .inGracePeriod, priceIncreaseStatus: priceIncrease)
    }
}
