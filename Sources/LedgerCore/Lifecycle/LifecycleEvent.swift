/// What a downstream system hears about a subscription: RevenueCat's event names, derived from the timeline by
/// `Lifecycle.events(before:after:seq:rules:)`.
public enum LifecycleEventType: String, Hashable, Sendable, CaseIterable {
    /// The subscription's first period (not a trial).
    case initialPurchase = "INITIAL_PURCHASE"
    /// A period after the one before, same product; `reason` "resubscribe" after a lapse.
    case renewal = "RENEWAL"
    /// A period bought with a free trial.
    case trialStarted = "TRIAL_STARTED"
    /// The first paid period after a trial.
    case trialConverted = "TRIAL_CONVERTED"
    /// Auto-renew turned off.
    case cancellation = "CANCELLATION"
    /// Auto-renew turned back on.
    case uncancellation = "UNCANCELLATION"
    /// Apple failed to bill and retries (no grace period).
    case billingIssue = "BILLING_ISSUE"
    /// Billing succeeded after a billing issue or in a grace period.
    case billingRecovered = "BILLING_RECOVERED"
    /// Apple failed to bill and access continues until `expiresAt`.
    case gracePeriodStarted = "GRACE_PERIOD_STARTED"
    /// Another product: `pending` when the customer chose it for the next renewal, else effective (`reason`
    /// upgrade, downgrade or crossgrade, from `fromProductId`).
    case productChange = "PRODUCT_CHANGE"
    /// Apple said the subscription expired; `reason` is Apple's EXPIRED subtype.
    case expiration = "EXPIRATION"
    /// A period refunded or revoked (Family Sharing): `reason` is Apple's revocation type, `refundAmount` what was
    /// given back.
    case refund = "REFUND"
    /// A refund reversed: access is back.
    case refundReversed = "REFUND_REVERSED"
    /// The subscription moved to another app user (`fromAppUserIds` → `appUserId`).
    case transfer = "TRANSFER"
    /// A non-consumable or a non-renewing subscription.
    case nonRenewingPurchase = "NON_RENEWING_PURCHASE"
    case consumablePurchase = "CONSUMABLE_PURCHASE"
    /// Something said before no longer stands as said: `corrects` names it; the event states what stands now, or
    /// (`retracted`) what was said and no longer holds.
    case correction = "CORRECTION"
}

/// How a period was bought (RevenueCat's `period_type`, with Apple's offer types told apart).
public enum LifecyclePeriodType: String, Hashable, Sendable, CaseIterable {
    case normal, trial, intro, promotional
    case offerCode = "offer_code"
    case winBack = "win_back"

    /// The period type of a period bought with `offer` (nil: normal). Apple's offer types: 1 introductory (a free
    /// trial when its discount is `FREE_TRIAL` or V1 says `is_trial_period`), 2 promotional, 3 offer code, 4 win-back.
    public init(_ offer: Offer?) {
        guard let offer else {
            self = .normal
            return
        }
        if offer.isTrial {
            self = .trial
            return
        }
        switch offer.type {
        case 2: self = .promotional
        case 3: self = .offerCode
        case 4: self = .winBack
        default: self = .intro
        }
    }
}

/// One thing a timeline says happened, with the cause that identifies it. `Lifecycle.statements(of:rules:)` lists
/// them; two timelines are compared statement by statement (by `id`). Optional fields spelled `Optional<…>`, and set
/// by the initializer rather than after it: see `Period`.
public struct LifecycleStatement: Hashable, Sendable {
    public var type: LifecycleEventType
    /// What within the subscription caused it: a period's transaction id, a revocation (`transactionId@date`), a
    /// stated change's instant, an owner's claim (`appUserId@from`). With the type, subscription and environment it
    /// makes the id, so the same cause always gets the same id.
    public var cause: String
    /// Valid time: when it happened (a period's start, a refund's date, a change's instant).
    public var at: UnixMillis
    public var productId: Optional<String>
    public var transactionId: Optional<String>
    public var periodType: Optional<LifecyclePeriodType>
    /// Milliunits of `currency`, as Apple states them (a period's price).
    public var price: Optional<Int64>
    public var currency: Optional<String>
    /// Apple's `expiresDate` of the period; a grace period's end.
    public var expiresAt: Optional<UnixMillis>
    /// RENEWAL: "resubscribe"; PRODUCT_CHANGE: upgrade, downgrade or crossgrade; EXPIRATION: Apple's subtype;
    /// REFUND: `REFUND_FULL`, `REFUND_PRORATED` or `FAMILY_REVOKE`.
    public var reason: Optional<String>
    /// PRODUCT_CHANGE: the product before.
    public var fromProductId: Optional<String>
    /// PRODUCT_CHANGE pending: the product chosen for the next renewal.
    public var newProductId: Optional<String>
    public var pending: Bool
    /// REFUND: milliunits given back (the price, or its `revocationPercentage` share when prorated).
    public var refundAmount: Optional<Int64>
    /// TRANSFER: the owners before.
    public var fromAppUserIds: [String]
    /// TRANSFER: the new owner.
    public var toAppUserId: Optional<String>

    public init(
        type: LifecycleEventType, cause: String, at: UnixMillis, productId: String? = nil, transactionId: String? = nil,
        periodType: LifecyclePeriodType? = nil, price: Int64? = nil, currency: String? = nil,
        expiresAt: UnixMillis? = nil, reason: String? = nil, fromProductId: String? = nil,
        newProductId: String? = nil, pending: Bool = false, refundAmount: Int64? = nil, fromAppUserIds: [String] = [],
        toAppUserId: String? = nil
    ) {
        self.type = type
        self.cause = cause
        self.at = at
        self.productId = productId
        self.transactionId = transactionId
        self.periodType = periodType
        self.price = price
        self.currency = currency
        self.expiresAt = expiresAt
        self.reason = reason
        self.fromProductId = fromProductId
        self.newProductId = newProductId
        self.pending = pending
        self.refundAmount = refundAmount
        self.fromAppUserIds = fromAppUserIds
        self.toAppUserId = toAppUserId
    }

    /// The id of this statement about `otid` in `environment`: `environment/otid/TYPE/cause`.
    public func id(_ otid: OriginalTransactionID, _ environment: AppStoreEnvironment) -> String {
        "\(environment.rawValue)/\(otid.rawValue)/\(type.rawValue)/\(cause)"
    }

    /// The order statements (and events) are listed in: valid time, then type, then cause.
    static func precedes(_ a: LifecycleStatement, _ b: LifecycleStatement) -> Bool {
        if a.at != b.at { return a.at < b.at }
        if a.type != b.type { return a.type.position < b.type.position }
        return a.cause < b.cause
    }
}

/// One event of the lifecycle stream: a statement first said, or a correction of one said before, at the log
/// position of the input that caused it. Optional fields spelled `Optional<…>`: see `Period`.
public struct LifecycleEvent: Hashable, Sendable {
    /// `environment/otid/TYPE/cause`; a correction: the corrected id, then `/corrected@seq`.
    public var id: String
    /// The log seq of the input that caused it (its last event about the subscription): the stream's position.
    public var seq: UInt64
    public var originalTransactionId: OriginalTransactionID
    public var environment: AppStoreEnvironment
    /// The owner at `statement.at`, as known when the event was derived (the first owner owns from the start).
    public var appUserId: Optional<String>
    /// The entitlements the statement's product grants (the catalog's).
    public var entitlements: [String]
    /// Said after something later in valid time was already folded: delivered out of order.
    public var late: Bool
    /// CORRECTION: the id of the event it corrects.
    public var corrects: Optional<String>
    /// CORRECTION: the corrected statement no longer holds (the event repeats what was said).
    public var retracted: Bool
    public var statement: LifecycleStatement

    public init(
        id: String, seq: UInt64, originalTransactionId: OriginalTransactionID, environment: AppStoreEnvironment,
        appUserId: String?, entitlements: [String], late: Bool, corrects: String?, retracted: Bool,
        statement: LifecycleStatement
    ) {
        self.id = id
        self.seq = seq
        self.originalTransactionId = originalTransactionId
        self.environment = environment
        self.appUserId = appUserId
        self.entitlements = entitlements
        self.late = late
        self.corrects = corrects
        self.retracted = retracted
        self.statement = statement
    }

    /// `CORRECTION` for a correction, else the statement's type.
    public var type: LifecycleEventType { corrects == nil ? statement.type : .correction }
}

extension LifecycleEventType {
    /// The type's position among the types as declared: the order statements of one instant are listed in.
    var position: Int { Self.declared.firstIndex(of: self)! }

    /// `allCases`, made once (each read of `allCases` makes the array anew).
    private static let declared = allCases
}
