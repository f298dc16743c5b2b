/// What the latest renewal info (by the instant it speaks from) says about the next renewal (DOMAIN §4.5): the info
/// itself, as far as it is about the next renewal, and when and by which event it was stated.
public struct RenewalState: Hashable, Sendable {
    /// The renewal info, with what it says about the next renewal: its product and auto-renew product, auto-renew
    /// status, expiration intent, billing retry, grace period end, price increase status, renewal date, renewal price
    /// and currency, eligible win-back offers and billing plan. Its offer, signing instant, subscription start, app
    /// account token, app transaction id and the fields this version does not model are not kept
    /// (`init(_:at:seq:)`).
    public var info: RenewalInfoFact
    /// The instant the renewal info speaks from (`signedDate`, or when a V1 one was observed).
    public var at: UnixMillis
    /// Provenance.
    public var seq: UInt64

    /// Inlinable: LedgerCodec's decoder makes one per stored timeline.
    @inlinable
    public init(info: RenewalInfoFact, at: UnixMillis, seq: UInt64) {
        self.info = info
        self.at = at
        self.seq = seq
    }

    /// The state the renewal info `r` states, at `at`, by the event `seq`: the info without what is not about the
    /// next renewal.
    init(_ r: RenewalInfoFact, at: UnixMillis, seq: UInt64) {
        self.init(info: r, at: at, seq: seq)
        info.offerType = nil
        info.offerIdentifier = nil
        info.signedDate = nil
        info.recentSubscriptionStartDate = nil
        info.offerDiscountType = nil
        info.offerPeriod = nil
        info.appAccountToken = nil
        info.appTransactionId = nil
        if !info.extra.isEmpty { info.extra = [:] }
        if !info.unknownFields.isEmpty { info.unknownFields = UnknownFields() }
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
