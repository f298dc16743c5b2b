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
/// transaction. Field names are Apple's V2 names; instants are milliseconds since epoch.
public struct TransactionFact: Hashable, Codable, Sendable {
    /// Every field, in one heap box that copies share until one of them is changed (copy on write). A fact holds a
    /// dozen references and goes from decoder to fold to store by value: copying the box is one retain, where
    /// copying the fields retained (and later released) each of them.
    struct Fields: Hashable, Codable, Sendable {
        var transactionId: TransactionID
        var originalTransactionId: OriginalTransactionID
        var webOrderLineItemId: CompactID?
        var bundleId: String?
        var productId: String
        var subscriptionGroupIdentifier: String?
        var purchaseDate: UnixMillis
        var originalPurchaseDate: UnixMillis?
        var expiresDate: UnixMillis?
        var quantity: Int64?
        var type: ProductType?
        var appAccountToken: String?
        var inAppOwnershipType: String?
        var signedDate: UnixMillis?
        var revocationDate: UnixMillis?
        var revocationReason: Int64?
        var revocationType: String?
        var revocationPercentage: Int64?
        var isUpgraded: Bool?
        var offerType: Int64?
        var offerIdentifier: String?
        var offerDiscountType: String?
        var isTrialPeriod: Bool?
        var isInIntroOfferPeriod: Bool?
        var environment: AppStoreEnvironment
        var storefront: String?
        var transactionReason: String?
        var price: Int64?
        var currency: String?
        var appTransactionId: String?
        var offerPeriod: String?
        var billingPlanType: String?
        var commitment: Commitment?
        var originalApplicationVersion: String?
        var extra: [String: String]
        var unknownFields: UnknownFields
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

    private var box: CopyOnWriteBox<Fields>

    init(box: CopyOnWriteBox<Fields>) { self.box = box }

    /// The fields; writing them first copies the box when another fact shares it.
    var fields: Fields {
        _read { yield box.value }
        _modify {
            if !isKnownUniquelyReferenced(&box) { box = CopyOnWriteBox(box.value) }
            yield &box.value
        }
    }

    public var transactionId: TransactionID {
        get { box.value.transactionId }
        set { fields.transactionId = newValue }
    }
    public var originalTransactionId: OriginalTransactionID {
        get { box.value.originalTransactionId }
        set { fields.originalTransactionId = newValue }
    }
    public var webOrderLineItemId: String? {
        get { box.value.webOrderLineItemId?.text }
        set { fields.webOrderLineItemId = newValue.map(CompactID.init) }
    }
    /// `webOrderLineItemId` as the fold reads it (a number, for Apple's decimal ids).
    var webOrderLineItem: CompactID? { box.value.webOrderLineItemId }
    public var bundleId: String? {
        get { box.value.bundleId }
        set { fields.bundleId = newValue }
    }
    public var productId: String {
        get { box.value.productId }
        set { fields.productId = newValue }
    }
    public var subscriptionGroupIdentifier: String? {
        get { box.value.subscriptionGroupIdentifier }
        set { fields.subscriptionGroupIdentifier = newValue }
    }
    public var purchaseDate: UnixMillis {
        get { box.value.purchaseDate }
        set { fields.purchaseDate = newValue }
    }
    public var originalPurchaseDate: UnixMillis? {
        get { box.value.originalPurchaseDate }
        set { fields.originalPurchaseDate = newValue }
    }
    public var expiresDate: UnixMillis? {
        get { box.value.expiresDate }
        set { fields.expiresDate = newValue }
    }
    public var quantity: Int64? {
        get { box.value.quantity }
        set { fields.quantity = newValue }
    }
    public var type: ProductType? {
        get { box.value.type }
        set { fields.type = newValue }
    }
    public var appAccountToken: String? {
        get { box.value.appAccountToken }
        set { fields.appAccountToken = newValue }
    }
    /// `PURCHASED` or `FAMILY_SHARED`.
    public var inAppOwnershipType: String? {
        get { box.value.inAppOwnershipType }
        set { fields.inAppOwnershipType = newValue }
    }
    /// When Apple signed this revision (V2). Nil for V1 facts: they speak from `FactMetadata.observedAt`.
    public var signedDate: UnixMillis? {
        get { box.value.signedDate }
        set { fields.signedDate = newValue }
    }
    /// Refund or revocation instant (V1 `cancellation_date_ms`).
    public var revocationDate: UnixMillis? {
        get { box.value.revocationDate }
        set { fields.revocationDate = newValue }
    }
    /// 0 other, 1 app issue (V1 `cancellation_reason`).
    public var revocationReason: Int64? {
        get { box.value.revocationReason }
        set { fields.revocationReason = newValue }
    }
    /// `REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`.
    public var revocationType: String? {
        get { box.value.revocationType }
        set { fields.revocationType = newValue }
    }
    /// Milliunits (50000 = 50%).
    public var revocationPercentage: Int64? {
        get { box.value.revocationPercentage }
        set { fields.revocationPercentage = newValue }
    }
    /// The old side of an upgrade: ends at `revocationDate` without being a refund.
    public var isUpgraded: Bool? {
        get { box.value.isUpgraded }
        set { fields.isUpgraded = newValue }
    }
    /// 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    public var offerType: Int64? {
        get { box.value.offerType }
        set { fields.offerType = newValue }
    }
    public var offerIdentifier: String? {
        get { box.value.offerIdentifier }
        set { fields.offerIdentifier = newValue }
    }
    /// `FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`, `ONE_TIME`.
    public var offerDiscountType: String? {
        get { box.value.offerDiscountType }
        set { fields.offerDiscountType = newValue }
    }
    /// V1 `is_trial_period`.
    public var isTrialPeriod: Bool? {
        get { box.value.isTrialPeriod }
        set { fields.isTrialPeriod = newValue }
    }
    /// V1 `is_in_intro_offer_period`.
    public var isInIntroOfferPeriod: Bool? {
        get { box.value.isInIntroOfferPeriod }
        set { fields.isInIntroOfferPeriod = newValue }
    }
    public var environment: AppStoreEnvironment {
        get { box.value.environment }
        set { fields.environment = newValue }
    }
    public var storefront: String? {
        get { box.value.storefront }
        set { fields.storefront = newValue }
    }
    /// `PURCHASE` or `RENEWAL`.
    public var transactionReason: String? {
        get { box.value.transactionReason }
        set { fields.transactionReason = newValue }
    }
    /// Milliunits of `currency`.
    public var price: Int64? {
        get { box.value.price }
        set { fields.price = newValue }
    }
    public var currency: String? {
        get { box.value.currency }
        set { fields.currency = newValue }
    }
    /// The App Store's id of the app download (links the purchase to its `AppTransaction`).
    public var appTransactionId: String? {
        get { box.value.appTransactionId }
        set { fields.appTransactionId = newValue }
    }
    /// The offer's length as an ISO-8601 duration (`P1M`), for offers that last several periods.
    public var offerPeriod: String? {
        get { box.value.offerPeriod }
        set { fields.offerPeriod = newValue }
    }
    /// `MONTHLY` for a commitment billed monthly; nil for the usual upfront billing.
    public var billingPlanType: String? {
        get { box.value.billingPlanType }
        set { fields.billingPlanType = newValue }
    }
    /// V2 `commitmentInfo`.
    public var commitment: Commitment? {
        get { box.value.commitment }
        set { fields.commitment = newValue }
    }
    /// For an AppTransaction (the app's own purchase): the app version the customer first got.
    public var originalApplicationVersion: String? {
        get { box.value.originalApplicationVersion }
        set { fields.originalApplicationVersion = newValue }
    }
    /// Fields Apple sent that this version does not model, by their Apple name, as compact JSON text.
    public var extra: [String: String] {
        get { box.value.extra }
        set { fields.extra = newValue }
    }
    /// Binary fields written by a newer version of the ledger: kept and written back unchanged.
    public var unknownFields: UnknownFields {
        get { box.value.unknownFields }
        set { fields.unknownFields = newValue }
    }

    public init(
        transactionId: TransactionID, originalTransactionId: OriginalTransactionID, productId: String,
        purchaseDate: UnixMillis, environment: AppStoreEnvironment = .production
    ) {
        box = CopyOnWriteBox(
            Fields(
                transactionId: transactionId, originalTransactionId: originalTransactionId,
                webOrderLineItemId: nil, bundleId: nil, productId: productId, subscriptionGroupIdentifier: nil,
                purchaseDate: purchaseDate, originalPurchaseDate: nil, expiresDate: nil, quantity: nil, type: nil,
                appAccountToken: nil, inAppOwnershipType: nil, signedDate: nil, revocationDate: nil,
                revocationReason: nil, revocationType: nil, revocationPercentage: nil, isUpgraded: nil, offerType: nil,
                offerIdentifier: nil, offerDiscountType: nil, isTrialPeriod: nil, isInIntroOfferPeriod: nil,
                environment: environment, storefront: nil, transactionReason: nil, price: nil, currency: nil,
                appTransactionId: nil, offerPeriod: nil, billingPlanType: nil, commitment: nil,
                originalApplicationVersion: nil, extra: [:], unknownFields: UnknownFields()))
    }

    /// True when the revocation is a refund or Family Sharing revoke, not the old side of an upgrade.
    public var isRefundLike: Bool { revocationDate != nil && isUpgraded != true }

    public static func == (a: TransactionFact, b: TransactionFact) -> Bool { a.box === b.box || a.box.value == b.box.value }
    public func hash(into hasher: inout Hasher) { box.value.hash(into: &hasher) }
    public init(from decoder: any Decoder) throws { box = CopyOnWriteBox(try Fields(from: decoder)) }
    public func encode(to encoder: any Encoder) throws { try box.value.encode(to: encoder) }
}

/// The state of a subscription's next renewal (V2 `JWSRenewalInfoDecodedPayload`, V1 `pending_renewal_info`).
public struct RenewalInfoFact: Hashable, Codable, Sendable {
    public var originalTransactionId: OriginalTransactionID
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
    public var offerType: Int64?
    public var offerIdentifier: String?
    public var signedDate: UnixMillis?
    public var recentSubscriptionStartDate: UnixMillis?
    public var environment: AppStoreEnvironment
    /// The price of the next renewal, in milliunits of `currency`.
    public var renewalPrice: Int64?
    public var currency: String?
    /// The discount of the offer applied at the next renewal (`FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`,
    /// `ONE_TIME`) and its length (ISO-8601).
    public var offerDiscountType: String?
    public var offerPeriod: String?
    /// Win-back offers the customer may redeem now.
    public var eligibleWinBackOfferIds: [String]?
    public var appAccountToken: String?
    public var appTransactionId: String?
    /// `MONTHLY` when the next renewal is billed in installments.
    public var renewalBillingPlanType: String?
    public var extra: [String: String]
    public var unknownFields: UnknownFields

    public init(originalTransactionId: OriginalTransactionID, environment: AppStoreEnvironment = .production) {
        self.originalTransactionId = originalTransactionId
        self.environment = environment
        self.extra = [:]
        self.unknownFields = UnknownFields()
    }
}

/// A server notification itself (V1 or V2): its type and what it is about. The transaction and renewal info it
/// carries are separate facts.
public struct NotificationFact: Hashable, Codable, Sendable {
    /// V2 `notificationUUID`; for V1 (which has no id) the hex SHA-256 of the body's canonical JSON, so bodies that
    /// parse to the same value coincide, whatever their whitespace.
    public var notificationUUID: String
    public var notificationType: String
    public var subtype: String?
    public var signedDate: UnixMillis?
    /// `"1"` for V1, `"2.0"` for V2.
    public var version: String?
    public var environment: AppStoreEnvironment
    public var bundleId: String?
    public var appAppleId: Int64?
    /// The subscription it is about, when it names one (absent for TEST and summaries).
    public var originalTransactionId: OriginalTransactionID?
    public var transactionId: TransactionID?
    /// V2 `data.status` (1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked).
    public var status: Int64?
    /// V1 `auto_renew_status` / `auto_renew_product_id`.
    public var autoRenewStatus: Bool?
    public var autoRenewProductId: String?
    public var extra: [String: String]
    public var unknownFields: UnknownFields

    public init(notificationUUID: String, notificationType: String, environment: AppStoreEnvironment = .production) {
        self.notificationUUID = notificationUUID
        self.notificationType = notificationType
        self.environment = environment
        self.extra = [:]
        self.unknownFields = UnknownFields()
    }
}

extension NotificationFact {
    /// A string field the notification carried in `extra` (kept there as compact JSON text), or nil when absent or
    /// not a plain string.
    public func statedString(_ key: String) -> String? {
        guard let text = extra[key], text.utf8.count >= 2, text.first == "\"", text.last == "\"",
            !text.contains("\\")
        else { return nil }
        return String(text.dropFirst().dropLast())
    }
}

/// An app user presents an OTID as theirs (after a purchase or a restore), or a transaction names the user by its
/// `appAccountToken`.
public struct BindingClaim: Hashable, Codable, Sendable {
    /// Where a claim comes from.
    public enum Cause: String, Hashable, Codable, Sendable {
        /// The app's backend said so (`POST /v1/bindings`, or `appUserId` on an input).
        case claim
        /// A transaction carried the user's `appAccountToken`.
        case appAccountToken
    }

    public var appUserId: AppUserID
    public var originalTransactionId: OriginalTransactionID
    /// The claim's instant (valid time).
    public var claimedAt: UnixMillis
    public var cause: Cause
    /// The environment the claim is about; ignored when `everyEnvironment`.
    public var environment: AppStoreEnvironment
    /// The `appAccountToken` the claim is about: the token a transaction carried (cause `appAccountToken`), or one
    /// the app's backend names as this user's. Either way, where `appUserId` is not the token itself, the claim maps
    /// the token to that user on this subscription (docs/domain.md, "Owners"). Nil on claims stored before tokens
    /// were kept: a token claim's user id then is the token.
    public var appAccountToken: String?
    /// A claim that named no environment: it applies in every environment where the subscription is known, and in
    /// one where it appears later.
    public var everyEnvironment: Bool
    public var unknownFields: UnknownFields

    public init(
        appUserId: AppUserID, originalTransactionId: OriginalTransactionID, claimedAt: UnixMillis,
        cause: Cause = .claim, environment: AppStoreEnvironment = .production, appAccountToken: String? = nil,
        everyEnvironment: Bool = false
    ) {
        self.appUserId = appUserId
        self.originalTransactionId = originalTransactionId
        self.claimedAt = claimedAt
        self.cause = cause
        self.environment = environment
        self.appAccountToken = appAccountToken
        self.everyEnvironment = everyEnvironment
        self.unknownFields = UnknownFields()
    }

    /// The token a claim of cause `appAccountToken` is about (claims stored before tokens were kept name it as
    /// their user).
    public var claimedToken: String? {
        appAccountToken ?? (cause == .appAccountToken ? appUserId.rawValue : nil)
    }

    /// True when the claim applies to a subscription of `environment`.
    @inline(__always)
    public func applies(to environment: AppStoreEnvironment) -> Bool {
        everyEnvironment || self.environment == environment
    }
}

/// One canonical fact: what the ledger stores as an immutable event. One reference in size: a transaction is its
/// copy-on-write box, the other kinds (large structs, rarer) are boxed by the enum (`indirect`), so copying a fact
/// never copies its fields and a decoded transaction costs one allocation, not two.
public enum Fact: Hashable, Sendable {
    case transaction(TransactionFact)
    indirect case renewal(RenewalInfoFact)
    indirect case notification(NotificationFact)
    indirect case binding(BindingClaim)

    /// The kind, as named on the wire and in `events`.
    public var kind: Kind {
        switch self {
        case .transaction: .transaction
        case .renewal: .renewal
        case .notification: .notification
        case .binding: .binding
        }
    }

    /// The kinds of fact, with their stable binary codes.
    public enum Kind: String, Hashable, Codable, Sendable, CaseIterable {
        case transaction, renewal, notification, binding
        public var code: UInt8 {
            switch self {
            case .transaction: 1
            case .renewal: 2
            case .notification: 3
            case .binding: 4
            }
        }
        public init?(code: UInt8) {
            switch code {
            case 1: self = .transaction
            case 2: self = .renewal
            case 3: self = .notification
            case 4: self = .binding
            default: return nil
            }
        }
    }

    /// The key events are stored under: the `transaction_id`, or a synthetic id for facts that have none
    /// (`renewal:<otid>`, `notification:<uuid>`, `binding:<otid>`).
    public var eventKey: String {
        switch self {
        case .transaction(let t): t.transactionId.rawValue
        case .renewal(let r): "renewal:" + r.originalTransactionId.rawValue
        case .notification(let n): "notification:" + n.notificationUUID
        case .binding(let b): "binding:" + b.originalTransactionId.rawValue
        }
    }

    /// The subscription this fact belongs to, if any.
    public var originalTransactionId: OriginalTransactionID? {
        switch self {
        case .transaction(let t): t.originalTransactionId
        case .renewal(let r): r.originalTransactionId
        case .notification(let n): n.originalTransactionId
        case .binding(let b): b.originalTransactionId
        }
    }

    /// The transaction id, for transaction facts (and notifications that name one).
    public var transactionId: TransactionID? {
        switch self {
        case .transaction(let t): t.transactionId
        case .notification(let n): n.transactionId
        default: nil
        }
    }

    public var environment: AppStoreEnvironment {
        switch self {
        case .transaction(let t): t.environment
        case .renewal(let r): r.environment
        case .notification(let n): n.environment
        case .binding(let b): b.environment
        }
    }

    /// Apple's signing instant when the fact has one.
    public var signedDate: UnixMillis? {
        switch self {
        case .transaction(let t): t.signedDate
        case .renewal(let r): r.signedDate
        case .notification(let n): n.signedDate
        case .binding: nil
        }
    }
}

/// Where a fact came from.
public enum FactSource: String, Hashable, Codable, Sendable, CaseIterable, ByteCoded {
    /// A verifyReceipt response.
    case receipt
    /// A V1 server notification (JSON).
    case notificationV1
    /// A V2 server notification (`signedPayload`).
    case notificationV2
    /// A StoreKit 2 / App Store Server API signed transaction or renewal info (JWS).
    case signedTransaction
    /// Decoded (unsigned) V2 JSON from a trusted local caller.
    case decodedJSON
    /// A binding claim from the app's backend.
    case binding

    nonisolated(unsafe) static let byCode = makeCodeTable()
}

/// Whether a fact's signature was checked.
public enum SignatureStatus: String, Hashable, Codable, Sendable, CaseIterable, ByteCoded {
    /// The input carried no signature (V1, receipts, decoded JSON, bindings).
    case unsigned
    /// A JWS whose x5c chain and signature verified against a configured trusted root.
    case verified
    /// A JWS accepted without verification (no trusted roots configured).
    case unverified

    nonisolated(unsafe) static let byCode = makeCodeTable()
}

/// How and when the ledger received a fact. Not part of the fact's identity (the same fact via a receipt and via a
/// notification is one fact).
public struct FactMetadata: Hashable, Codable, Sendable {
    public var source: FactSource
    public var signature: SignatureStatus
    /// When the ledger received the input.
    public var receivedAt: UnixMillis
    /// The instant an unsigned fact speaks from: the receipt's `request_date_ms`, else `receivedAt`.
    public var observedAt: UnixMillis
    /// SHA-256 of the raw input this fact was decoded from (key into the raw store).
    public var rawDigest: [UInt8]
    /// The app user named by the input's envelope (`appUserId`), if any.
    public var appUserId: AppUserID?
    public var unknownFields: UnknownFields

    public init(
        source: FactSource, signature: SignatureStatus = .unsigned, receivedAt: UnixMillis, observedAt: UnixMillis? = nil,
        rawDigest: [UInt8] = [], appUserId: AppUserID? = nil
    ) {
        self.source = source
        self.signature = signature
        self.receivedAt = receivedAt
        self.observedAt = observedAt ?? receivedAt
        self.rawDigest = rawDigest
        self.appUserId = appUserId
        self.unknownFields = UnknownFields()
    }
}

/// An immutable event of the log: a fact, how it arrived, and its sequence number.
public struct LedgerEvent: Hashable, Sendable {
    /// Position in the global log (1-based, gapless).
    public var seq: UInt64
    public var fact: Fact
    public var metadata: FactMetadata

    public init(seq: UInt64, fact: Fact, metadata: FactMetadata) {
        self.seq = seq
        self.fact = fact
        self.metadata = metadata
    }

    /// The instant this revision speaks from: Apple's `signedDate`, or when it was observed (DOMAIN §4.3).
    public var effectiveDate: UnixMillis { fact.signedDate ?? metadata.observedAt }
}
