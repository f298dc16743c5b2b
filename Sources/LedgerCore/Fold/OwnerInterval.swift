/// One app user's ownership of an OTID over `[from, to)` (DOMAIN §5).
public struct OwnerInterval: Hashable, Sendable {
    public var appUserId: AppUserID
    /// The claim's instant. For the first owner, `Timeline.ownerIntervals` reports the subscription's first purchase
    /// instead when that is earlier (nobody owned it before).
    public var from: UnixMillis
    /// When the user lost it (another user's claim under `transfer`); nil while owned.
    public var to: UnixMillis?
    /// Provenance: the claim's event.
    public var seq: UInt64
    public var cause: OwnerCause

    public init(appUserId: AppUserID, from: UnixMillis, to: UnixMillis? = nil, seq: UInt64, cause: OwnerCause) {
        self.appUserId = appUserId
        self.from = from
        self.to = to
        self.seq = seq
        self.cause = cause
    }

    public func covers(_ instant: UnixMillis) -> Bool { from <= instant && (to.map { instant < $0 } ?? true) }
}

/// Why a user owns (or stopped owning) an OTID.
public enum OwnerCause: String, Hashable, Sendable, Codable, CaseIterable {
    /// The app's backend bound the user (the first claim, or an added owner under `share`).
    case claim
    /// A transaction carried the user's `appAccountToken`.
    case appAccountToken
    /// Moved from a previous owner by a later claim under `transfer`.
    case transfer
}

/// A claim that did not move ownership because the `keep` policy kept the first owner.
public struct RefusedClaim: Hashable, Sendable {
    public var appUserId: AppUserID
    public var at: UnixMillis
    public var seq: UInt64
    public var cause: BindingClaim.Cause

    public init(appUserId: AppUserID, at: UnixMillis, seq: UInt64, cause: BindingClaim.Cause) {
        self.appUserId = appUserId
        self.at = at
        self.seq = seq
        self.cause = cause
    }
}
