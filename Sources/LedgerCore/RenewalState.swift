/// What the latest renewal info (by the instant it speaks from) says about the next renewal (DOMAIN §4.5).
public struct RenewalState: Hashable, Sendable {
    /// The instant the renewal info speaks from (`signedDate`, or when a V1 one was observed).
    public var at: UnixMillis
    public var productId: String?
    public var autoRenewProductId: String?
    public var autoRenewStatus: Bool?
    /// 1 cancelled, 2 billing error, 3 declined price increase, 4 product unavailable, 5 other.
    public var expirationIntent: Int64?
    public var isInBillingRetryPeriod: Bool?
    public var gracePeriodExpiresDate: UnixMillis?
    /// 0 not yet consented, 1 consented.
    public var priceIncreaseStatus: Int64?
    public var renewalDate: UnixMillis?
    /// The next renewal's price, in milliunits of `currency`.
    public var renewalPrice: Int64?
    public var currency: String?
    /// Win-back offers the customer may redeem (nil: Apple did not say).
    public var eligibleWinBackOfferIds: [String]?
    /// `MONTHLY` when the next renewal is billed in installments.
    public var renewalBillingPlanType: String?
    /// Provenance.
    public var seq: UInt64

    public init(at: UnixMillis, seq: UInt64) {
        self.at = at
        self.seq = seq
    }

    @inline(__always)
    init(_ r: borrowing RenewalInfoFact, at: UnixMillis, seq: UInt64) {
        self.at = at
        self.seq = seq
        productId = r.productId
        autoRenewProductId = r.autoRenewProductId
        autoRenewStatus = r.autoRenewStatus
        expirationIntent = r.expirationIntent
        isInBillingRetryPeriod = r.isInBillingRetryPeriod
        gracePeriodExpiresDate = r.gracePeriodExpiresDate
        priceIncreaseStatus = r.priceIncreaseStatus
        renewalDate = r.renewalDate
        renewalPrice = r.renewalPrice
        currency = r.currency
        eligibleWinBackOfferIds = r.eligibleWinBackOfferIds
        renewalBillingPlanType = r.renewalBillingPlanType
    }

    /// Apple's expiry reason names for `expirationIntent`: the EXPIRED notification's subtypes, so that one reason
    /// has one spelling whichever way Apple stated it (V1 intent 2 and V2 EXPIRED/BILLING_RETRY are the same).
    public static func expirationReason(intent: Int64?) -> String? {
        switch intent {
        case 1: "VOLUNTARY"
        case 2: "BILLING_RETRY"
        case 3: "PRICE_INCREASE"
        case 4: "PRODUCT_NOT_FOR_SALE"
        case 5: "OTHER"
        default: nil
        }
    }
}
