/// Folds a user's subscriptions into their entitlements (DOMAIN §6).
public enum Entitlements {
    /// The customer `user` at instant `at`, from the timelines of every OTID the user was ever bound to (others are
    /// ignored, as are timelines of another environment). Entitlement E is active when some OTID the user owns at
    /// `at` has a period granting access then whose product grants E; with several grantors the latest expiry wins,
    /// and losing one never revokes what another still grants. The operator's `grants` to the user (`OperatorGrants`)
    /// grant their entitlement over their span like a period would, and compete with the periods on expiry the same
    /// way. `asOf` is echoed: the caller folded the timelines and grants from the events with seq ≤ asOf.
    /// - Complexity: O(total size of the timelines + grants).
    public static func customer(
        user: AppUserID, environment: AppStoreEnvironment, timelines: [Timeline], grants: [GrantRecord] = [],
        at: UnixMillis, asOf: UInt64?, rules: FoldRules
    ) -> CustomerView {
        var entitlements: [String: EntitlementView] = [:]
        var subscriptions: [String] = []
        var credits: [String: Int64] = [:]
        var bindings: [BindingView] = []
        var refused: [BindingView] = []
        // Each entitlement's grantor (the timeline's index in `sorted`, and the period), described at the end.
        var grantors: [String: (timeline: Int, period: Period)] = [:]
        // Or the operator's grant that decides it.
        var operatorGrantors: [String: GrantRecord] = [:]
        var activeProducts: Set<String> = []
        var purchasedProducts: Set<String> = []
        var managed = false
        let sorted = timelines.filter { $0.environment == environment }.sorted {
            $0.originalTransactionId < $1.originalTransactionId
        }
        for (index, timeline) in sorted.enumerated() {
            let otid = timeline.originalTransactionId.rawValue
            let intervals = timeline.ownerIntervals.filter { $0.appUserId == user }
            for r in timeline.refusedClaims where r.appUserId == user {
                refused.append(BindingView(originalTransactionId: otid, from: r.at, to: nil, cause: r.cause.rawValue, seq: r.seq))
            }
            guard !intervals.isEmpty else { continue }
            if !subscriptions.contains(otid) { subscriptions.append(otid) }
            for o in intervals {
                bindings.append(
                    BindingView(originalTransactionId: otid, from: o.from, to: o.to, cause: o.cause.rawValue, seq: o.seq))
            }
            let ownsNow = intervals.contains { $0.covers(at) }

            // Entitlements granted now.
            if ownsNow {
                for g in timeline.grants(at: at) {
                    activeProducts.insert(g.period.productId)
                    if g.period.type == .autoRenewable { managed = true }
                    let grant = GrantView(
                        originalTransactionId: otid, transactionId: g.period.transactionId.rawValue,
                        productId: g.period.productId, expiresAt: g.expiresAt)
                    for e in rules.catalog.entitlements(for: g.period.productId, type: g.period.type) {
                        var view = entitlements[e]
                        if view == nil || view?.active == false {
                            view = EntitlementView(
                                active: true, expiresAt: g.expiresAt, productId: g.period.productId,
                                originalTransactionId: otid, grantedBy: [])
                            grantors[e] = (index, g.period)
                        } else if later(g.expiresAt, than: view!.expiresAt) {
                            view!.expiresAt = g.expiresAt
                            view!.productId = g.period.productId
                            view!.originalTransactionId = otid
                            grantors[e] = (index, g.period)
                        }
                        view!.grantedBy.append(grant)
                        entitlements[e] = view
                    }
                }
            }

            // Entitlements once had: any period begun by `at` while the user owned the subscription.
            for p in timeline.periods where p.start <= at {
                let owned = intervals.contains { o in o.from <= at && o.from < (p.end ?? .max) && (o.to.map { p.start < $0 } ?? true) }
                guard owned else { continue }
                purchasedProducts.insert(p.productId)
                guard p.type != .consumable else { continue }
                let ended = min(p.end ?? .max, p.revocations.first.map(\.date) ?? .max)
                for e in rules.catalog.entitlements(for: p.productId, type: p.type) {
                    if let existing = entitlements[e], existing.active || !later(ended, than: existing.expiresAt ?? .min) {
                        continue
                    }
                    entitlements[e] = EntitlementView(
                        active: false, expiresAt: ended == .max ? nil : ended, productId: p.productId,
                        originalTransactionId: otid,
                        grantedBy: [
                            GrantView(
                                originalTransactionId: otid, transactionId: p.transactionId.rawValue,
                                productId: p.productId, expiresAt: ended == .max ? nil : ended)
                        ])
                    grantors[e] = (index, p)
                }
            }

            // Credits of the consumables the user owns now. A refund takes them back: all of them, or the share a
            // prorated refund states (`revocationPercentage`, milliunits of 100%).
            if ownsNow {
                for p in timeline.periods where p.type == .consumable && p.start <= at {
                    let kept = Self.keptShare(of: p.revocation(at: at))
                    guard kept > 0 else { continue }
                    for (name, amount) in rules.catalog.credits(for: p.productId) {
                        let granted = amount.saturatingMultiply(p.quantity)
                        let left = kept == 100_000 ? granted : granted / 100_000 * kept + granted % 100_000 * kept / 100_000
                        credits[name, default: 0] = credits[name, default: 0].saturatingAdd(left)
                    }
                }
            }
        }
        // The operator's grants begun by `at`: granting while in force, else once had.
        let mine = grants.filter { $0.environment == environment }
        for g in mine where g.from <= at {
            let e = g.entitlement
            let ends = g.end
            let grant = GrantView(
                originalTransactionId: "", transactionId: "", productId: "", expiresAt: ends, grantId: g.grantId,
                reason: g.reason)
            if g.grants(at: at) {
                var view = entitlements[e]
                if view == nil || view?.active == false {
                    view = EntitlementView(active: true, expiresAt: ends, productId: "", originalTransactionId: "", grantedBy: [])
                    grantors[e] = nil
                    operatorGrantors[e] = g
                } else if later(ends, than: view!.expiresAt) {
                    view!.expiresAt = ends
                    view!.productId = ""
                    view!.originalTransactionId = ""
                    grantors[e] = nil
                    operatorGrantors[e] = g
                }
                view!.grantedBy.append(grant)
                entitlements[e] = view
            } else if let ended = ends {
                if let existing = entitlements[e], existing.active || !later(ended, than: existing.expiresAt ?? .min) {
                    continue
                }
                entitlements[e] = EntitlementView(
                    active: false, expiresAt: ended, productId: "", originalTransactionId: "", grantedBy: [grant])
                grantors[e] = nil
                operatorGrantors[e] = g
            }
        }
        for e in entitlements.keys {
            entitlements[e]!.grantedBy.sort {
                ($0.originalTransactionId, $0.transactionId, $0.grantId ?? "")
                    < ($1.originalTransactionId, $1.transactionId, $1.grantId ?? "")
            }
            if let grantor = grantors[e] {
                entitlements[e]!.describe(grantor: grantor.period, of: sorted[grantor.timeline], at: at)
            } else if let grant = operatorGrantors[e] {
                entitlements[e]!.describe(operatorGrant: grant, environment: environment)
            }
        }
        bindings.sort { ($0.from, $0.originalTransactionId) < ($1.from, $1.originalTransactionId) }
        return CustomerView(
            appUserId: user.rawValue, environment: environment.rawValue, at: at, asOf: asOf,
            entitlements: entitlements, subscriptions: subscriptions, credits: credits, bindings: bindings,
            refusedClaims: refused, activeProductIds: activeProducts.sorted(),
            allPurchasedProductIds: purchasedProducts.sorted(),
            managementURL: managed ? EntitlementView.appStoreManagementURL : nil,
            grants: mine.map { GrantState(record: $0, active: $0.grants(at: at)) })
    }

    /// The share of a consumable's credits a revocation leaves, in milliunits of 100%: all (100,000) without one,
    /// none after a full refund or revoke, the rest after a prorated refund.
    static func keptShare(of revocation: Revocation?) -> Int64 {
        guard let revocation else { return 100_000 }
        guard revocation.type == "REFUND_PRORATED", let taken = revocation.percentage, taken >= 0, taken < 100_000
        else { return 0 }
        return 100_000 - taken
    }

    /// Nil is "no end": later than any instant.
    static func later(_ a: UnixMillis?, than b: UnixMillis?) -> Bool {
        switch (a, b) {
        case (nil, nil): false
        case (nil, _): true
        case (_, nil): false
        case (let a?, let b?): a > b
        }
    }
}
