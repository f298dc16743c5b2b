/// How one customer's entitlement would differ under other rules (a what-if replay: another catalog or binding
/// policy folded over the same log).
public struct EntitlementDifference: Hashable, Sendable {
    public var appUserId: String
    public var environment: String
    public var entitlement: String
    /// The entitlement under the ledger's rules, and under the other rules; nil where it is not listed at all.
    public var before: EntitlementState?
    public var after: EntitlementState?
}

/// What an answer says of one entitlement, as far as a difference is concerned.
public struct EntitlementState: Hashable, Sendable {
    public var active: Bool
    public var expiresAt: UnixMillis?
    public var productId: String
    public var originalTransactionId: String

    public init(_ view: EntitlementView) {
        active = view.active
        expiresAt = view.expiresAt
        productId = view.productId
        originalTransactionId = view.originalTransactionId
    }
}

extension Entitlements {
    /// The entitlements whose answer differs between two evaluations of one customer (`before` under the ledger's
    /// rules, `after` under others), in entitlement order: listed on one side only, active on one side only, or
    /// active on both with another expiry. The grantor alone changing (the same access, from another period) is
    /// not a difference a customer would notice, and is not reported.
    /// - Complexity: O(e log e) for e entitlements.
    public static func differences(before: CustomerView, after: CustomerView) -> [EntitlementDifference] {
        let names = Set(before.entitlements.keys).union(after.entitlements.keys).sorted()
        var out: [EntitlementDifference] = []
        for name in names {
            let a = before.entitlements[name].map(EntitlementState.init)
            let b = after.entitlements[name].map(EntitlementState.init)
            let same: Bool
            switch (a, b) {
            case (nil, nil): same = true
            case (let a?, let b?):
                same = a.active == b.active && (!a.active || a.expiresAt == b.expiresAt)
            default: same = false
            }
            if !same {
                out.append(
                    EntitlementDifference(
                        appUserId: before.appUserId, environment: before.environment, entitlement: name, before: a,
                        after: b))
            }
        }
        return out
    }
}
