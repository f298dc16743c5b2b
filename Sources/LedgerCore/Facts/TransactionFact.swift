/// The product types Apple sells (V2 `type`).
public enum ProductType: String, Hashable, Codable, Sendable, CaseIterable {
    case autoRenewable = "Auto-Renewable Subscription"
    case nonRenewing = "Non-Renewing Subscription"
    case nonConsumable = "Non-Consumable"
    case consumable = "Consumable"

    /// Accepts Apple's V2 names and the catalog's short names (`autoRenewable`, `nonConsumable`, …).
    public init?(name: String) {
        if let t = ProductType(rawValue: name) {
            self = t
            return
        }
        switch name.lowercased() {
        case "autorenewable", "auto_renewable", "subscription": self = .autoRenewable
        case "nonrenewing", "non_renewing": self = .nonRenewing
        case "nonconsumable", "non_consumable": self = .nonConsumable
        case "consumable": self = .consumable
        default: return nil
        }
    }
}

/// One transaction as Apple stated it at one moment (a "revision"): from a receipt, a notification, or a signed
/// transaction. Its fields (`Fields`: Apple's V2 names, instants in milliseconds since epoch) are read and written as
/// its own properties: `t.productId`, `t.expiresDate = …`.
///
/// The fields sit in one heap box that copies share until one of them is changed (copy on write). A fact goes from
/// decoder to fold to store by value, and the fold takes one out of its event at every step: a copy is then one
/// reference, where a copy of the fields themselves retains (and later releases) each of the dozen they hold.
@dynamicMemberLookup
public struct TransactionFact: Hashable, Codable, Sendable {
    /// The fields of a transaction.
    public struct Fields: Hashable, Codable, Sendable {
        public var transactionId: TransactionID
        public var originalTransactionId: OriginalTransactionID
        /// Apple's `webOrderLineItemId`, kept as a number when decimal (the fold compares them); the fact's
        /// `webOrderLineItemId` is its text.
        @usableFromInline package var webOrderLineItemId: CompactID?
        public var bundleId: String?
        public var productId: String
        public var subscriptionGroupIdentifier: String?
        public var purchaseDate: UnixMillis
        public var originalPurchaseDate: UnixMillis?
        public var expiresDate: UnixMillis?
        public var quantity: Int64?
        public var type: ProductType?
        public var appAccountToken: String?
        /// `PURCHASED` or `FAMILY_SHARED`.
        public var inAppOwnershipType: String?
        /// When Apple signed this revision (V2). Nil for V1 facts: they speak from `FactMetadata.observedAt`.
        public var signedDate: UnixMillis?
        /// V1: the receipt's `receipt_creation_date`, on a transaction read from the receipt's `in_app` alone. That
        /// array is the receipt file as the device got it, however long ago: the copy speaks from when the receipt was
        /// made, not from the request (`latest_receipt_info` is Apple's view at the request), so an old receipt
        /// never reads as a later revision (docs/domain.md, "Refunds and revocations").
        public var receiptCreationDate: UnixMillis?
        /// Refund or revocation instant (V1 `cancellation_date_ms`).
        public var revocationDate: UnixMillis?
        /// 0 other, 1 app issue (V1 `cancellation_reason`).
        public var revocationReason: Int64?
        /// `REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`.
        public var revocationType: String?
        /// Milliunits (50000 = 50%).
        public var revocationPercentage: Int64?
        /// The old side of an upgrade: ends at `revocationDate` without being a refund.
        public var isUpgraded: Bool?
        /// 1 introductory, 2 promotional, 3 offer code, 4 win-back.
        public var offerType: Int64?
        public var offerIdentifier: String?
        /// `FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`, `ONE_TIME`.
        public var offerDiscountType: String?
        /// V1 `is_trial_period`.
        public var isTrialPeriod: Bool?
        /// V1 `is_in_intro_offer_period`.
        public var isInIntroOfferPeriod: Bool?
        public var environment: AppStoreEnvironment
        public var storefront: String?
        /// `PURCHASE` or `RENEWAL`.
        public var transactionReason: String?
        /// Milliunits of `currency`.
        public var price: Int64?
        public var currency: String?
        /// The App Store's id of the app download (links the purchase to its `AppTransaction`).
        public var appTransactionId: String?
        /// The offer's length as an ISO-8601 duration (`P1M`), for offers that last several periods.
        public var offerPeriod: String?
        /// `MONTHLY` for a commitment billed monthly; nil for the usual upfront billing.
        public var billingPlanType: String?
        /// V2 `commitmentInfo`.
        public var commitment: Commitment?
        /// For an AppTransaction (the app's own purchase): the app version the customer first got.
        public var originalApplicationVersion: String?
        /// Fields Apple sent that this version does not model, by their Apple name, as compact JSON text.
        public var extra: [String: String]
        /// Binary fields written by a newer version of the ledger: kept and written back unchanged.
        public var unknownFields: UnknownFields

        /// The required fields; every other is absent. Inlinable: LedgerCodec's decoder makes one per stored
        /// transaction and fills it field by field.
        @inlinable
        public init(
            transactionId: TransactionID, originalTransactionId: OriginalTransactionID, productId: String,
            purchaseDate: UnixMillis, environment: AppStoreEnvironment = .production
        ) {
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.productId = productId
            self.purchaseDate = purchaseDate
            self.environment = environment
            self.extra = [:]
            self.unknownFields = UnknownFields()
        }
    }

    /// A subscription billed in installments over a longer commitment (V2 `commitmentInfo`, with `billingPlanType`
    /// `MONTHLY`): a monthly-billed annual plan is one commitment of twelve billing periods.
    public struct Commitment: Hashable, Codable, Sendable {
        /// Which billing period of the commitment this transaction pays (1-based).
        public var billingPeriodNumber: Int64?
        public var totalBillingPeriods: Int64?
        /// When the commitment ends (the last billing period's end).
        public var expiresDate: UnixMillis?
        /// The whole commitment's price, in milliunits of the transaction's currency.
        public var price: Int64?

        public init(
            billingPeriodNumber: Int64? = nil, totalBillingPeriods: Int64? = nil, expiresDate: UnixMillis? = nil,
            price: Int64? = nil
        ) {
            self.billingPeriodNumber = billingPeriodNumber
            self.totalBillingPeriods = totalBillingPeriods
            self.expiresDate = expiresDate
            self.price = price
        }
    }

    @usableFromInline var box: CopyOnWriteBox<Fields>

    /// A fact of these fields.
    public init(_ fields: Fields) { box = CopyOnWriteBox(fields) }

    /// A fact of the fields `fill` writes over `initial`, in place in the fact's box: one allocation, and the fields
    /// are never copied (a struct built in a local and then boxed is). Inlinable, for LedgerCodec's decoder, which
    /// reads every stored transaction this way.
    @inlinable
    package init<Failure: Error>(_ initial: Fields, filling fill: (inout Fields) throws(Failure) -> Void)
        throws(Failure)
    {
        box = CopyOnWriteBox(initial)
        try fill(&box.value)
    }

    public init(
        transactionId: TransactionID, originalTransactionId: OriginalTransactionID, productId: String,
        purchaseDate: UnixMillis, environment: AppStoreEnvironment = .production
    ) {
        self.init(
            Fields(
                transactionId: transactionId, originalTransactionId: originalTransactionId, productId: productId,
                purchaseDate: purchaseDate, environment: environment))
    }

    /// A field, read where it lies; written after copying the box when another fact shares it. Inlinable, so that
    /// `t.productId` in another module (the codec, the decoders of Apple's formats) is a load, not a key-path walk.
    @inlinable
    public subscript<Value>(dynamicMember field: WritableKeyPath<Fields, Value>) -> Value {
        _read { yield box.value[keyPath: field] }
        _modify {
            if !isKnownUniquelyReferenced(&box) { box = CopyOnWriteBox(box.value) }
            yield &box.value[keyPath: field]
        }
    }

    /// Apple's `webOrderLineItemId` (a decimal id, kept as its number: see `webOrderLineItem`).
    public var webOrderLineItemId: String? {
        get { box.value.webOrderLineItemId?.text }
        set { self.webOrderLineItem = newValue.map(CompactID.init) }
    }

    /// `webOrderLineItemId` as the fold and the stored form read it.
    @inlinable
    package var webOrderLineItem: CompactID? {
        get { box.value.webOrderLineItemId }
        set { self[dynamicMember: \.webOrderLineItemId] = newValue }
    }

    /// The instant this revision states from, when the transaction itself says: Apple's `signedDate`, else (a
    /// receipt's `in_app` copy) the receipt's creation. Nil: the input's `observedAt`.
    @inlinable
    public var statedDate: UnixMillis? { box.value.signedDate ?? box.value.receiptCreationDate }

    /// True when the revocation is a refund or Family Sharing revoke, not the old side of an upgrade.
    public var isRefundLike: Bool { box.value.revocationDate != nil && box.value.isUpgraded != true }

    public static func == (a: TransactionFact, b: TransactionFact) -> Bool { a.box === b.box || a.box.value == b.box.value }
    public func hash(into hasher: inout Hasher) { box.value.hash(into: &hasher) }
    public init(from decoder: any Decoder) throws { box = CopyOnWriteBox(try Fields(from: decoder)) }
    public func encode(to encoder: any Encoder) throws { try box.value.encode(to: encoder) }
}
