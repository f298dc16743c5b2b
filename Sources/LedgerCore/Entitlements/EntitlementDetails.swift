// MARK: - What an entitlement's answer says beyond active and until when (RevenueCat's EntitlementInfo)

/// What kind of price the grantor period was bought at, from Apple's offer fields (API.md "Customer"):
///
/// | Apple states | periodType |
/// |---|---|
/// | no offer | `normal` |
/// | `offerType` 1 (introductory) with `offerDiscountType` `FREE_TRIAL`, or V1 `is_trial_period` true | `trial` |
/// | `offerType` 1 otherwise (`PAY_AS_YOU_GO`, `PAY_UP_FRONT`), or V1 `is_in_intro_offer_period` true | `intro` |
/// | `offerType` 2 (promotional offer) | `promotional` |
/// | `offerType` 3 (offer code) | `offer_code` |
/// | `offerType` 4 (win-back offer) | `win_back` |
///
/// A free trial bought with a promotional offer, an offer code or a win-back offer is named by the offer's kind, as
/// Apple's `offerType` names it; the timeline's period keeps the discount type. An offer type Apple adds later is
/// `promotional` (a price the developer offered) until this mapping names it.
public enum PeriodType: String, Hashable, Sendable, CaseIterable {
    case normal, trial, intro, promotional
    case offerCode = "offer_code"
    case winBack = "win_back"

    /// The period type of a period bought with `offer` (nil: none).
    public init(_ offer: Offer?) {
        guard let offer else {
            self = .normal
            return
        }
        switch offer.type {
        case nil, 1?: self = offer.isTrial ? .trial : .intro
        case 3?: self = .offerCode
        case 4?: self = .winBack
        default: self = .promotional
        }
    }
}

extension Timeline {
    /// Whether the subscription is set to renew, as known at `at`: the latest renewal info stated by then (its
    /// `autoRenewStatus`), else the latest auto-renew change a notification stated by then; nil when neither.
    /// - Complexity: O(stated changes).
    public func autoRenewStatus(at: UnixMillis) -> Bool? {
        if let r = renewal, r.at <= at { return r.info.autoRenewStatus }
        return lastAutoRenewChange(at: at).map { $0.kind == .autoRenewOn }
    }

    /// When the customer was seen turning auto-renew off, as known at `at` (RevenueCat's `unsubscribeDetectedAt`):
    /// nil unless auto-renew is off at `at`; then the instant of the `auto_renew_off` change that turned it off, or,
    /// when no change was stated (the first renewal info the ledger saw already said off), the instant of the renewal
    /// info that says so.
    /// - Complexity: O(stated changes).
    public func unsubscribeDetectedAt(at: UnixMillis) -> UnixMillis? {
        guard autoRenewStatus(at: at) == false else { return nil }
        if let change = lastAutoRenewChange(at: at), change.kind == .autoRenewOff { return change.at }
        return renewal.flatMap { $0.at <= at ? $0.at : nil }
    }

    /// When a billing problem with the period that began at `start` was first stated, as known at `at` (RevenueCat's
    /// `billingIssueDetectedAt`): the first grace period or billing retry stated in `[start, at]` and not followed by
    /// a recovery by `at`. An expiry keeps it (the subscription ended with the problem); a renewal begins another
    /// period, with no problem of its own.
    /// - Complexity: O(stated changes).
    public func billingIssueDetectedAt(since start: UnixMillis, at: UnixMillis) -> UnixMillis? {
        var detected: UnixMillis?
        for c in statedChanges where c.at >= start && c.at <= at {
            switch c.kind {
            case .gracePeriod, .billingRetry: if detected == nil { detected = c.at }
            case .recovered: detected = nil
            default: break
            }
        }
        return detected
    }

    private func lastAutoRenewChange(at: UnixMillis) -> TimelineChange? {
        statedChanges.last { $0.at <= at && ($0.kind == .autoRenewOn || $0.kind == .autoRenewOff) }
    }
}

extension EntitlementView {
    /// Apple's page where a customer manages their App Store subscriptions (RevenueCat's `managementURL`).
    public static let appStoreManagementURL = "https://apps.apple.com/account/subscriptions"

    /// Sets what the answer says about its grantor, the period `p` of `timeline`, at `at`: its transaction, dates,
    /// period type, ownership and environment, and for an auto-renewable subscription whether it will renew and
    /// when a cancellation or a billing problem was seen. Every value depends on `at` only through comparisons with
    /// the timeline's own instants, so `Timeline.unchangedSpan(around:)` bounds them as it bounds the rest.
    mutating func describe(grantor p: Period, of timeline: Timeline, at: UnixMillis) {
        transactionId = p.transactionId.rawValue
        periodType = PeriodType(p.offer)
        latestPurchaseDate = p.start
        originalPurchaseDate = p.originalPurchaseDate ?? timeline.firstPurchaseDate
        ownershipType = p.terms?.ownershipType
        isSandbox = timeline.environment != .production
        guard p.type == .autoRenewable else {
            willRenew = false
            unsubscribeDetectedAt = nil
            billingIssueDetectedAt = nil
            return
        }
        unsubscribeDetectedAt = timeline.unsubscribeDetectedAt(at: at)
        billingIssueDetectedAt = timeline.billingIssueDetectedAt(since: p.start, at: at)
        willRenew =
            active && !p.upgraded && timeline.autoRenewStatus(at: at) != false && billingIssueDetectedAt == nil
    }
}
