/// One thing that happened to a subscription, for the timeline's `changes` list.
public struct TimelineChange: Hashable, Sendable {
    /// Valid time of the change.
    public var at: UnixMillis
    public var kind: ChangeKind
    /// Provenance: the (first) event that stated it.
    public var seq: UInt64
    /// What it is about: a notification subtype or expiry reason, the product of a plan change, a user id.
    public var detail: String?
    /// The end of a state that has one (a grace period's `gracePeriodExpiresDate`).
    public var until: UnixMillis?

    /// Inlinable: LedgerCodec's decoder makes one per stored change.
    @inlinable
    public init(at: UnixMillis, kind: ChangeKind, seq: UInt64, detail: String? = nil, until: UnixMillis? = nil) {
        self.at = at
        self.kind = kind
        self.seq = seq
        self.detail = detail
        self.until = until
    }

    /// The order changes are listed in: time, then kind (in declaration order), then the log's order, then detail.
    static func precedes(_ a: TimelineChange, _ b: TimelineChange) -> Bool {
        if a.at != b.at { return a.at < b.at }
        if a.kind != b.kind { return a.kind.position < b.kind.position }
        // The log's order before the detail: a detail may name a person, and a person's name is not the same
        // in every answer (a forgotten one reads as a pseudonym), while the order of what happened is.
        if a.seq != b.seq { return a.seq < b.seq }
        return (a.detail ?? "") < (b.detail ?? "")
    }
}

/// The kinds of change on a timeline (the documents name them in snake case).
public enum ChangeKind: String, Hashable, Sendable, Codable, CaseIterable {
    // Derived from the periods.
    case purchase, renewal, resubscribe, upgrade, downgrade, crossgrade
    case refund, revoked, refundReversed = "refund_reversed"
    // Stated by notifications and renewal infos.
    case refundDeclined = "refund_declined"
    case autoRenewOff = "auto_renew_off", autoRenewOn = "auto_renew_on"
    case pendingChange = "pending_change", pendingChangeCancelled = "pending_change_cancelled"
    case billingRetry = "billing_retry", gracePeriod = "grace_period", gracePeriodExpired = "grace_period_expired"
    case recovered, expired
    case priceIncrease = "price_increase", offerRedeemed = "offer_redeemed", renewalExtended = "renewal_extended"
    // Derived from the owners.
    case ownerChanged = "owner_changed", claimRefused = "claim_refused"
    // Stated by notifications. New kinds go last: changes of one instant are listed in this order, and a kind's
    // position is its code in stored timelines (LedgerCodec).
    /// A customer asked Apple for a refund; Apple asks the app for consumption data (CONSUMPTION_REQUEST).
    case refundRequested = "refund_requested"
    /// Any other notification about the subscription, by `TYPE` or `TYPE/SUBTYPE` in `detail` (METADATA_UPDATE,
    /// MIGRATION, PRICE_CHANGE, RENEWAL_EXTENSION/FAILURE, and types Apple adds later): kept on the timeline, never
    /// dropped.
    case notification
}

extension ChangeKind {
    /// The kind's position among the kinds as declared: the order the changes of one instant are listed in.
    var position: Int { ChangeKind.allCases.firstIndex(of: self)! }
}
