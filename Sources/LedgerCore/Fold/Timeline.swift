/// The projection of one subscription (one OTID in one environment): its periods, what was stated about it, its
/// renewal state and its owners. It does not depend on any instant: `view(at:asOf:)`, `status(at:)`,
/// `owner(at:)` and `grants(at:)` evaluate it at one.
///
/// Built by `Timeline.fold` from the OTID's events in any order, or kept up to date one event at a time by
/// `apply(_:rules:)`. Both run the same step function over the events in the *fold order* (see `FoldPosition`), so
/// they agree exactly, provenance included.
///
/// Provenance rule: every `seq` on a timeline is the sequence number of the event whose step produced the item; among
/// identical events (same fact, same instant) the one with the smallest seq is folded and its copies skipped. So the
/// whole value, seqs included, is a function of the set of (fact, instant, smallest seq) — independent of delivery
/// order. Delivering the same facts in another order assigns other seqs; `withoutProvenance()` strips them for
/// comparing such histories.
///
/// Optional fields spelled `Optional<…>`, and set by the initializers, never changed in them: see `Period`.
public struct Timeline: Hashable, Sendable {
    public let originalTransactionId: OriginalTransactionID
    public let environment: AppStoreEnvironment
    /// Billing periods (and one-time purchases), ordered by `start`, then transaction id.
    public package(set) var periods: [Period]
    /// Changes stated by notifications and renewal infos, in the order of their instants. Changes that follow from
    /// the periods and owners (purchase, renewal, plan changes, refunds, owner changes) are derived by `changes`.
    public package(set) var statedChanges: [TimelineChange]
    /// The latest renewal info.
    public package(set) var renewal: Optional<RenewalState>
    /// Ownership intervals in claim order (the first owner's `from` as claimed; see `ownerIntervals`).
    public package(set) var owners: [OwnerInterval]
    /// Claims refused under the `keep` policy.
    public package(set) var refusedClaims: [RefusedClaim]
    /// The `appAccountToken` that last claimed the subscription, and the user it claimed for: a later transaction
    /// repeating it claims nothing (docs/domain.md, "Owners").
    public package(set) var accountToken: Optional<AccountTokenClaim>
    /// App users that claims named for a token on this subscription (token → user), so that a token Apple repeats
    /// alone claims for the app's user, not for the UUID.
    public package(set) var tokenUsers: [String: AppUserID]
    /// The largest seq folded (0 for an empty timeline).
    public package(set) var lastSeq: UInt64
    /// Where the fold stands: the position of the last event it stepped. A timeline is the fold of its events in fold
    /// order, so `apply` can step an event only when it comes after this one; an event before it is folded by a
    /// refold. Part of the value (a timeline that folded more events is another timeline), though never shown.
    package var frontier: Optional<FoldPosition>
    /// What the fold knows of the ids the periods have had (`IDBounds`), so that a renewal is told from a revision
    /// or a restored copy without looking through every period. Derived from the periods: never compared.
    package var idBounds: IDBounds

    /// An empty timeline, to `apply` events to.
    public init(originalTransactionId: OriginalTransactionID, environment: AppStoreEnvironment) {
        self.originalTransactionId = originalTransactionId
        self.environment = environment
        periods = []
        statedChanges = []
        renewal = nil
        owners = []
        refusedClaims = []
        accountToken = nil
        tokenUsers = Dictionary()
        lastSeq = 0
        frontier = nil
        idBounds = IDBounds(ofNoPeriods: ())  // No periods: no ids.
    }

    /// Every field, for the codec's decoder: each stored once. Building an empty timeline and then assigning its
    /// fields copies the timeline and releases the empty values it replaced (the tail path decodes one per update).
    package init(
        originalTransactionId: OriginalTransactionID, environment: AppStoreEnvironment, periods: [Period],
        statedChanges: [TimelineChange], renewal: RenewalState?, owners: [OwnerInterval],
        refusedClaims: [RefusedClaim], accountToken: AccountTokenClaim?, tokenUsers: [String: AppUserID],
        lastSeq: UInt64, frontier: FoldPosition?, idBounds: IDBounds
    ) {
        self.originalTransactionId = originalTransactionId
        self.environment = environment
        self.periods = periods
        self.statedChanges = statedChanges
        self.renewal = renewal
        self.owners = owners
        self.refusedClaims = refusedClaims
        self.accountToken = accountToken
        self.tokenUsers = tokenUsers
        self.lastSeq = lastSeq
        self.frontier = frontier
        self.idBounds = idBounds
    }

    /// The product type of the latest period.
    public var productType: ProductType? { periods.last?.type }

    /// The subscription's first purchase: where the first owner's ownership starts.
    public var firstPurchaseDate: UnixMillis? {
        guard let first = periods.first else { return nil }
        return min(first.start, first.originalPurchaseDate ?? first.start)
    }

    // MARK: Owners

    /// Ownership intervals, the first owner's starting at the subscription's first purchase when that is earlier
    /// than the claim (nobody owned it before).
    /// - Complexity: O(owners).
    public var ownerIntervals: [OwnerInterval] {
        guard !owners.isEmpty else { return [] }
        var result = owners
        if let first = firstPurchaseDate, first < result[0].from, result[0].to.map({ first < $0 }) ?? true {
            result[0].from = first
        }
        return result
    }

    /// Who owns the subscription at `instant` (several users only under `share`).
    /// - Complexity: O(owners).
    public func owner(at instant: UnixMillis) -> [AppUserID] {
        var users: [AppUserID] = []
        for o in ownerIntervals where o.covers(instant) && !users.contains(o.appUserId) { users.append(o.appUserId) }
        return users
    }

    // MARK: Status

    /// The subscription's state at `instant` (DOMAIN §4.6).
    /// - Complexity: O(periods + stated changes).
    public func status(at instant: UnixMillis) -> StatusAt {
        var active: Period?
        var revoked: Period?
        for p in periods where p.covers(instant) {
            if p.revocation(at: instant) == nil {
                if active.map({ p.start >= $0.start }) ?? true { active = p }
            } else if revoked.map({ p.start >= $0.start }) ?? true {
                revoked = p
            }
        }
        if let active {
            return StatusAt(status: .active, period: active, expiresAt: active.end)
        }
        if let revoked {
            return StatusAt(status: .revoked, period: revoked, expiresAt: revoked.revocation(at: instant)?.date)
        }
        guard let last = periods.last(where: { $0.start <= instant }) else {
            return StatusAt(status: .expired, period: nil, expiresAt: nil)
        }
        let endedAt = last.end ?? instant
        if let r = last.revocation(at: max(last.start, min(instant, endedAt.saturatingSubtract(1)))) {
            return StatusAt(status: .revoked, period: last, expiresAt: r.date)
        }
        // Past the end: replay what was stated since the period began to tell grace, billing retry and expiry apart.
        var retrying = false
        var graceUntil: UnixMillis?
        var reason: String?
        for c in statedChanges where c.at >= last.start && c.at <= instant {
            switch c.kind {
            case .gracePeriod:
                retrying = true
                if let u = c.until { graceUntil = max(graceUntil ?? u, u) }
            case .billingRetry: retrying = true
            case .gracePeriodExpired: graceUntil = nil
            case .expired:
                retrying = false
                graceUntil = nil
                reason = c.detail ?? reason
            case .recovered:
                retrying = false
                graceUntil = nil
            default: break
            }
        }
        if retrying, let g = graceUntil, instant < g {
            return StatusAt(status: .inGracePeriod, period: last, expiresAt: last.end, gracePeriodExpiresAt: g)
        }
        if retrying {
            return StatusAt(status: .inBillingRetry, period: last, expiresAt: last.end)
        }
        if reason == nil, let r = renewal, r.at <= instant {
            reason = RenewalState.expirationReason(intent: r.info.expirationIntent)
        }
        return StatusAt(status: .expired, period: last, expiresAt: last.end, expirationReason: reason)
    }

    /// The periods granting access at `instant`, with the instant each grant runs until (nil: no end). A period in
    /// its grace period grants until the grace period ends. Consumables grant credits, not access, and are left out.
    /// - Complexity: O(periods + stated changes).
    public func grants(at instant: UnixMillis) -> [Grant] {
        var result: [Grant] = []
        for p in periods where p.type != .consumable && p.grantsAccess(at: instant) {
            result.append(Grant(period: p, expiresAt: p.end))
        }
        if result.isEmpty {
            let s = status(at: instant)
            if s.status == .inGracePeriod, let p = s.period {
                result.append(Grant(period: p, expiresAt: s.gracePeriodExpiresAt))
            }
        }
        return result
    }

    /// The same timeline with every provenance seq set to 0: for comparing histories whose events were delivered
    /// (and so numbered) in different orders.
    public func withoutProvenance() -> Timeline {
        var t = self
        t.lastSeq = 0
        for i in t.periods.indices {
            t.periods[i].seq = 0
            for j in t.periods[i].revocations.indices {
                t.periods[i].revocations[j].seq = 0
                if t.periods[i].revocations[j].reversedSeq != nil { t.periods[i].revocations[j].reversedSeq = 0 }
            }
        }
        for i in t.statedChanges.indices { t.statedChanges[i].seq = 0 }
        t.renewal?.seq = 0
        for i in t.owners.indices { t.owners[i].seq = 0 }
        for i in t.refusedClaims.indices { t.refusedClaims[i].seq = 0 }
        return t
    }
}

/// A subscription's state at one instant.
public enum SubscriptionStatus: String, Hashable, Sendable, Codable, CaseIterable {
    case active
    case inGracePeriod = "in_grace_period"
    case inBillingRetry = "in_billing_retry"
    case expired
    case revoked
}

/// `Timeline.status(at:)`: the state, the period it is about, and why.
public struct StatusAt: Hashable, Sendable {
    public var status: SubscriptionStatus
    /// The covering period (active, revoked), or the latest one begun before the instant.
    public var period: Period?
    /// When access ends (active), ended (expired, billing retry) or was revoked (revoked).
    public var expiresAt: UnixMillis?
    /// An EXPIRED notification's subtype, else the renewal info's `expirationIntent` by Apple's subtype names.
    public var expirationReason: String?
    public var gracePeriodExpiresAt: UnixMillis?

    public init(
        status: SubscriptionStatus, period: Period?, expiresAt: UnixMillis?, expirationReason: String? = nil,
        gracePeriodExpiresAt: UnixMillis? = nil
    ) {
        self.status = status
        self.period = period
        self.expiresAt = expiresAt
        self.expirationReason = expirationReason
        self.gracePeriodExpiresAt = gracePeriodExpiresAt
    }
}

/// One period granting access at an instant.
public struct Grant: Hashable, Sendable {
    public var period: Period
    /// Until when (nil: no end).
    public var expiresAt: UnixMillis?
}

/// The token that last claimed a subscription, and the user it claimed for.
public struct AccountTokenClaim: Hashable, Sendable {
    public var token: String
    public var appUserId: AppUserID

    public init(token: String, appUserId: AppUserID) {
        self.token = token
        self.appUserId = appUserId
    }
}
