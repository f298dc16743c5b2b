/// One app user's entitlements, subscriptions, credits and binding history at one instant, in the API.md Customer
/// JSON shape (`customer --json`, `GET /v1/customers/{id}`). Built by `Entitlements.customer`.
public struct CustomerView: Hashable, Sendable, Codable {
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

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(appUserId, forKey: .appUserId)
        try c.encode(environment, forKey: .environment)
        try c.encode(at, forKey: .at)
        try c.encode(asOf, forKey: .asOf)
        try c.encode(entitlements, forKey: .entitlements)
        try c.encode(subscriptions, forKey: .subscriptions)
        try c.encode(credits, forKey: .credits)
        try c.encode(bindings, forKey: .bindings)
        try c.encode(refusedClaims, forKey: .refusedClaims)
    }
}

/// One entitlement of a `CustomerView`.
public struct EntitlementView: Hashable, Sendable, Codable {
    public var active: Bool
    /// The latest expiry among the grantors (nil: no end, e.g. a non-consumable).
    public var expiresAt: UnixMillis?
    /// The grantor with the latest expiry.
    public var productId: String
    public var originalTransactionId: String
    /// Every period granting it at the instant (active), or the last one that did (inactive).
    public var grantedBy: [GrantView]

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(active, forKey: .active)
        try c.encode(expiresAt, forKey: .expiresAt)
        try c.encode(productId, forKey: .productId)
        try c.encode(originalTransactionId, forKey: .originalTransactionId)
        try c.encode(grantedBy, forKey: .grantedBy)
    }
}

/// Why an entitlement is granted: which subscription, transaction and product.
public struct GrantView: Hashable, Sendable, Codable {
    public var originalTransactionId: String
    public var transactionId: String
    public var productId: String
    public var expiresAt: UnixMillis?
}

/// One ownership interval (or refused claim) in a `CustomerView`.
public struct BindingView: Hashable, Sendable, Codable {
    public var originalTransactionId: String
    public var from: UnixMillis
    public var to: UnixMillis?
    /// `claim | appAccountToken | transfer` (a refused claim: `claim | appAccountToken`).
    public var cause: String
    public var seq: UInt64

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(originalTransactionId, forKey: .originalTransactionId)
        try c.encode(from, forKey: .from)
        try c.encode(to, forKey: .to)
        try c.encode(cause, forKey: .cause)
        try c.encode(seq, forKey: .seq)
    }
}
