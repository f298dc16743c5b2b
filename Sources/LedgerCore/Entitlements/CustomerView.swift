/// One app user's entitlements, subscriptions, credits and binding history at one instant, in the API.md Customer
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
}

/// Why an entitlement is granted: which subscription, transaction and product.
public struct GrantView: Hashable, Sendable {
    public var originalTransactionId: String
    public var transactionId: String
    public var productId: String
    public var expiresAt: UnixMillis?
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
