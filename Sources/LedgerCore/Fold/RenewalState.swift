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
    /// next renewal. Built from the fields it keeps rather than copied and cleared: the clearing would copy the box
    /// the info shares with its event, and then release what it clears.
    @inline(__always)
    init(_ r: borrowing RenewalInfoFact, at: UnixMillis, seq: UInt64) {
        let initial = RenewalInfoFact.Fields(
            originalTransactionId: r.box.value.originalTransactionId, environment: r.box.value.environment)
        self.init(info: RenewalInfoFact(initial) { Self.keep(r, in: &$0) }, at: at, seq: seq)
    }

    /// Becomes the state `r` states, in place: the fold replaces its renewal state at every renewal info, and the
    /// state's box is its own, so the fields are written where they are (no box made, none freed).
    ///
    /// A renewal info in the receipt format (`pending_renewal_info`) cannot state the next renewal's price and
    /// currency, win-back offers, billing plan or renewal date: those are unknown in it, not absent, so the values an
    /// earlier signed renewal info stated stay (a renewal date only while it is still ahead).
    @inline(__always)
    mutating func restate(_ r: borrowing RenewalInfoFact, at: UnixMillis, seq: UInt64, format: TransactionFormat) {
        self.at = at
        self.seq = seq
        if !isKnownUniquelyReferenced(&info.box) { info.box = CopyOnWriteBox(info.box.value) }
        let kept = format == .receipt ? Unstated(info.box.value, at: at) : nil
        // Read from `r`'s box, not through its dynamic-member subscript (see `keep`).
        info.box.value.originalTransactionId = r.box.value.originalTransactionId
        info.box.value.environment = r.box.value.environment
        Self.keep(r, in: &info.box.value)
        kept?.restore(into: &info.box.value)
    }

    /// What a signed renewal info states and `pending_renewal_info` cannot.
    private struct Unstated {
        var renewalPrice: Int64?
        var currency: String?
        var eligibleWinBackOfferIds: [String]?
        var renewalBillingPlanType: String?
        var renewalDate: UnixMillis?

        init(_ k: RenewalInfoFact.Fields, at: UnixMillis) {
            renewalPrice = k.renewalPrice
            currency = k.currency
            eligibleWinBackOfferIds = k.eligibleWinBackOfferIds
            renewalBillingPlanType = k.renewalBillingPlanType
            renewalDate = k.renewalDate.flatMap { $0 > at ? $0 : nil }
        }

        /// Fills what the receipt-format info left unstated.
        func restore(into k: inout RenewalInfoFact.Fields) {
            if k.renewalPrice == nil { k.renewalPrice = renewalPrice }
            if k.currency == nil { k.currency = currency }
            if k.eligibleWinBackOfferIds == nil { k.eligibleWinBackOfferIds = eligibleWinBackOfferIds }
            if k.renewalBillingPlanType == nil { k.renewalBillingPlanType = renewalBillingPlanType }
            if k.renewalDate == nil { k.renewalDate = renewalDate }
        }
    }

    /// Writes the fields of `r` that are about the next renewal into `k` (every field `init(_:at:seq:)` keeps but
    /// the subscription and environment). Read from `r`'s box field by field, not through the dynamic-member
    /// subscript, which makes the compiler copy all of `r`'s fields (retaining and releasing each reference) to read
    /// one of them, once per renewal info the fold takes (`benchmarks/instructions.sh --ops fold` counts it).
    @inline(__always)
    private static func keep(_ r: borrowing RenewalInfoFact, in k: inout RenewalInfoFact.Fields) {
        let box = r.box
        k.productId = box.value.productId
        k.autoRenewProductId = box.value.autoRenewProductId
        k.autoRenewStatus = box.value.autoRenewStatus
        k.expirationIntent = box.value.expirationIntent
        k.isInBillingRetryPeriod = box.value.isInBillingRetryPeriod
        k.gracePeriodExpiresDate = box.value.gracePeriodExpiresDate
        k.priceIncreaseStatus = box.value.priceIncreaseStatus
        k.renewalDate = box.value.renewalDate
        k.renewalPrice = box.value.renewalPrice
        k.currency = box.value.currency
        k.eligibleWinBackOfferIds = box.value.eligibleWinBackOfferIds
        k.renewalBillingPlanType = box.value.renewalBillingPlanType
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
