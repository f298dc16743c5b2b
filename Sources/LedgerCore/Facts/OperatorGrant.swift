/// The operator grants an app user an entitlement for a time, or ends grants early (`POST /v1/customers/{id}/grants`,
/// `storeledger grant`): a fact in the same log as Apple's, about a customer rather than a subscription. It is on no
/// timeline; a customer's answer reads the user's grants (their revisions under `grant:<appUserId>`) as known at its
/// `asOf` and folds them with `OperatorGrants.fold` (docs/domain.md, "Operator grants").
public struct OperatorGrant: Hashable, Codable, Sendable {
    public enum Action: String, Hashable, Codable, Sendable, CaseIterable {
        /// Grants `entitlement` over `[from, until)`.
        case grant
        /// Ends, from `from` on, the grant named `grantId`, or (no id) every grant of `entitlement` known before it.
        case revoke
    }

    public var action: Action
    public var appUserId: AppUserID
    /// The environment whose answers the grant shows in (a customer's answer is per environment).
    public var environment: AppStoreEnvironment
    /// A grant's id: the operator's, or derived from the grant's own fields by the decoder, so the same request sent
    /// again is the same fact (a duplicate). A revoke's: the grant it ends; nil ends every grant of `entitlement`.
    public var grantId: String?
    /// The entitlement granted; for a revoke without `grantId`, the entitlement whose grants end.
    public var entitlement: String?
    /// A grant: when it starts. A revoke: when the grants end.
    public var from: UnixMillis
    /// A grant's end (exclusive); nil: no end. A revoke has none.
    public var until: UnixMillis?
    /// Why, in the operator's words (shown with the grant, in `why`).
    public var reason: String?
    public var unknownFields: UnknownFields

    public init(
        action: Action, appUserId: AppUserID, environment: AppStoreEnvironment = .production, grantId: String?,
        entitlement: String?, from: UnixMillis, until: UnixMillis? = nil, reason: String? = nil
    ) {
        self.action = action
        self.appUserId = appUserId
        self.environment = environment
        self.grantId = grantId
        self.entitlement = entitlement
        self.from = from
        self.until = until
        self.reason = reason
        self.unknownFields = UnknownFields()
    }

    /// The event key of a user's grants and revokes: all of them are revisions of this one key, in log order.
    public static func eventKey(_ user: AppUserID) -> String { keyPrefix + user.rawValue }
    /// What every grant's event key starts with.
    public static let keyPrefix = "grant:"
}

/// One grant as known at a log position: what the operator granted, and when (if ever) a revoke ended it early.
public struct GrantRecord: Hashable, Sendable {
    public var grantId: String
    public var entitlement: String
    public var environment: AppStoreEnvironment
    public var from: UnixMillis
    /// The end the grant was given with (nil: no end).
    public var grantedUntil: UnixMillis?
    public var reason: String?
    /// The event that granted it.
    public var seq: UInt64
    /// The revoke that ended it early, if one did: its instant, event and reason.
    public var revokedAt: UnixMillis?
    public var revokeSeq: UInt64?
    public var revokeReason: String?

    /// When the grant stops granting: its end or its revoke, whichever is first (nil: never).
    public var end: UnixMillis? {
        switch (grantedUntil, revokedAt) {
        case (nil, nil): nil
        case (let u?, nil): u
        case (nil, let r?): r
        case (let u?, let r?): min(u, r)
        }
    }

    /// True when the grant grants at `at`: `from <= at < end`.
    public func grants(at: UnixMillis) -> Bool { from <= at && end.map { at < $0 } ?? true }
}

/// Folds a user's grant facts into grants: what `Entitlements.customer` adds to the answer.
public enum OperatorGrants {
    /// The grants `facts` (one user's, in log order, `seq` ascending) state: each grant, cut short by the revokes
    /// that come after it in the log and name it (or, without an id, its entitlement). A revoke never reaches a
    /// grant appended after it, and a grant id stated twice keeps its first grant (a later grant with the same id changes
    /// nothing: to extend a grant, grant again).
    /// Sorted by start, then id.
    /// - Complexity: O(grants · revokes).
    public static func fold(_ facts: [(seq: UInt64, grant: OperatorGrant)]) -> [GrantRecord] {
        var records: [GrantRecord] = []
        for (seq, g) in facts {
            switch g.action {
            case .grant:
                guard let id = g.grantId, let entitlement = g.entitlement,
                    !records.contains(where: { $0.grantId == id && $0.environment == g.environment })
                else { continue }
                records.append(
                    GrantRecord(
                        grantId: id, entitlement: entitlement, environment: g.environment, from: g.from,
                        grantedUntil: g.until, reason: g.reason, seq: seq))
            case .revoke:
                for i in records.indices where records[i].environment == g.environment {
                    let named = g.grantId.map { records[i].grantId == $0 } ?? (records[i].entitlement == g.entitlement)
                    // An earlier revoke that ended it sooner stands.
                    guard named, records[i].revokedAt.map({ g.from < $0 }) ?? true else { continue }
                    records[i].revokedAt = g.from
                    records[i].revokeSeq = seq
                    records[i].revokeReason = g.reason
                }
            }
        }
        return records.sorted { ($0.from, $0.grantId) < ($1.from, $1.grantId) }
    }
}
