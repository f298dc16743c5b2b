/// One app user's entitlements, subscriptions, credits and binding history at one instant, in the socket API's Customer
/// shape (`customer --json`, `GET /v1/customers/{id}`). Built by `Entitlements.customer`; its JSON is written by
/// LedgerAPI.
public struct CustomerView: Hashable, Sendable {
    public var appUserId: String
    public var environment: String
    public var at: UnixMillis
    public var asOf: UInt64?
    /// Entitlement id → state. Entitlements the user once had stay listed, inactive.
    public var entitlements: [String: EntitlementView]
    /// Every OTID the user was ever bound to, in id order.
    public var subscriptions: [String]
    /// Credit name → amount granted by consumables the user owns, refunds taken back.
    public var credits: [String: Int64]
    /// The user's ownership intervals across subscriptions: gained and lost.
    public var bindings: [BindingView]
    /// Claims of this user refused under `keep`.
    public var refusedClaims: [BindingView]
    /// The products granting the user access at `at` (RevenueCat's `activeSubscriptions`, one-time purchases
    /// included), in id order.
    public var activeProductIds: [String] = []
    /// Every product the user bought by `at` while owning its subscription, consumables included, refunded or not
    /// (RevenueCat's `allPurchasedProductIdentifiers`), in id order.
    public var allPurchasedProductIds: [String] = []
    /// Where the customer manages their subscriptions: Apple's page while an auto-renewable subscription grants
    /// them access at `at`, nil otherwise (RevenueCat's `managementURL`).
    public var managementURL: String?
    /// The operator's grants to the user known at `asOf` (`OperatorGrants`), begun or not, by start; each says
    /// whether it grants at `at`.
    public var grants: [GrantState] = []
}

/// One of the operator's grants in a `CustomerView`.
public struct GrantState: Hashable, Sendable {
    public var record: GrantRecord
    /// True when it grants at the answer's instant.
    public var active: Bool

    public init(record: GrantRecord, active: Bool) {
        self.record = record
        self.active = active
    }
}

/// One entitlement of a `CustomerView`.
public struct EntitlementView: Hashable, Sendable {
    public var active: Bool
    /// The latest expiry among the grantors (nil: no end, e.g. a non-consumable).
    public var expiresAt: UnixMillis?
    /// The grantor with the latest expiry.
    public var productId: String
    public var originalTransactionId: String
    /// Every period granting it at the instant (active), or the last one that did (inactive).
    public var grantedBy: [GrantView]
    // What the answer says about the grantor (RevenueCat's EntitlementInfo; `describe(grantor:of:at:)`): the period
    // of `productId` in `originalTransactionId` that runs until `expiresAt`.
    /// The grantor period's transaction.
    public var transactionId = ""
    /// Active, auto-renewable, auto-renew not turned off, no billing problem, not the old side of an upgrade.
    public var willRenew = false
    /// How the grantor period was bought (`normal`, `trial`, `intro`, `promotional`, `offer_code`, `win_back`): the
    /// classification the lifecycle events carry, from Apple's offer fields (`LifecyclePeriodType`).
    public var periodType = LifecyclePeriodType.normal
    /// When the grantor period was bought (its purchase or renewal).
    public var latestPurchaseDate: UnixMillis = 0
    /// Apple's `originalPurchaseDate`: the subscription's first purchase.
    public var originalPurchaseDate: UnixMillis?
    /// When auto-renew was seen turned off (nil while it is on; `Timeline.unsubscribeDetectedAt(at:)`).
    public var unsubscribeDetectedAt: UnixMillis?
    /// When the grantor period's billing problem was first stated (`Timeline.billingIssueDetectedAt(since:at:)`).
    public var billingIssueDetectedAt: UnixMillis?
    /// Apple's `inAppOwnershipType`: `PURCHASED` or `FAMILY_SHARED`; nil when Apple did not state it.
    public var ownershipType: String?
    /// The subscription's environment is not `Production`.
    public var isSandbox = false
    /// The operator's grant that decides the answer (`OperatorGrants`), when no purchase does: then the answer names
    /// no product, subscription or transaction.
    public var grantId: String?
}

/// Why an entitlement is granted: which subscription, transaction and product; or which of the operator's grants
/// (`grantId`, and no subscription, transaction or product).
public struct GrantView: Hashable, Sendable {
    public var originalTransactionId: String
    public var transactionId: String
    public var productId: String
    public var expiresAt: UnixMillis?
    public var grantId: String? = nil
    /// The operator's reason for the grant.
    public var reason: String? = nil
}

/// One ownership interval (or refused claim) in a `CustomerView`.
public struct BindingView: Hashable, Sendable {
    public var originalTransactionId: String
    public var from: UnixMillis
    public var to: UnixMillis?
    /// `claim | appAccountToken | transfer` (a refused claim: `claim | appAccountToken`).
    public var cause: String
    public var seq: UInt64
}
