// MARK: - What an entitlement's answer says beyond active and until when (RevenueCat's EntitlementInfo)

extension Timeline {
    /// Whether the subscription is set to renew, as known at `at`: what was stated last by then, the latest renewal
    /// info (its `autoRenewStatus`) or a later auto-renew change a notification stated (DID_CHANGE_RENEWAL_STATUS
    /// without a renewal info). The timeline keeps only the latest renewal info: at an instant before it spoke, the
    /// state is the last change stated by then, else the one the first later change turned from, else (nothing
    /// changed it) what the info says. Nil when nothing says, and before the first period.
    /// - Complexity: O(stated changes).
    public func autoRenewStatus(at: UnixMillis) -> Bool? {
        let info = renewal.flatMap { $0.at <= at ? $0 : nil }
        if let change = lastAutoRenewChange(at: at),
            info.map({ change.at > $0.at || $0.info.autoRenewStatus == nil }) ?? true
        {
            return change.kind == .autoRenewOn
        }
        if let info { return info.info.autoRenewStatus }
        // Before the first period nothing was bought, so nothing renews.
        guard let later = renewal, periods.contains(where: { $0.start <= at }) else { return nil }
        if let next = statedChanges.first(where: { $0.at > at && ($0.kind == .autoRenewOn || $0.kind == .autoRenewOff) }) {
            return next.kind == .autoRenewOff
        }
        return later.info.autoRenewStatus
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
    /// Sets what the answer says when the operator's grant `g` decides it: no transaction, bought at the grant's
    /// start, never renewing.
    mutating func describe(operatorGrant g: GrantRecord, environment: AppStoreEnvironment) {
        grantId = g.grantId
        transactionId = ""
        periodType = .normal
        latestPurchaseDate = g.from
        originalPurchaseDate = g.from
        ownershipType = nil
        isSandbox = environment != .production
        willRenew = false
        unsubscribeDetectedAt = nil
        billingIssueDetectedAt = nil
    }

    /// Apple's page where a customer manages their App Store subscriptions (RevenueCat's `managementURL`).
    public static let appStoreManagementURL = "https://apps.apple.com/account/subscriptions"

    /// Sets what the answer says about its grantor, the period `p` of `timeline`, at `at`: its transaction, dates,
    /// period type, ownership and environment, and for an auto-renewable subscription whether it will renew and
    /// when a cancellation or a billing problem was seen. Every value depends on `at` only through comparisons with
    /// the timeline's own instants, so `Timeline.unchangedSpan(around:)` bounds them as it bounds the rest.
    mutating func describe(grantor p: Period, of timeline: Timeline, at: UnixMillis) {
        transactionId = p.transactionId.rawValue
        periodType = LifecyclePeriodType(p.offer)
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
