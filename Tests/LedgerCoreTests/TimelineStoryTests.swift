import LedgerCodec
import LedgerCore
import LedgerTestSupport
import Testing

/// One story per fold rule (DOMAIN §4): refunds, reversals, plan changes, grace and billing retry, duplicates,
/// environments.
@Suite struct TimelineStoryTests {
    static let basic = "com.example.basic.monthly"
    static let premium = "com.example.premium.monthly"
    static let t0 = Scenario.utc(2024, 1, 10, 12)
    static let month = 30 * Scenario.day

    /// Three monthly periods of `basic`: ids 1, 2, 3.
    static func threeMonths(_ s: inout Scenario) -> [TransactionFact] {
        (0..<3).map { i in
            s.purchase("\(i + 1)", product: basic, at: t0 + Int64(i) * month, expires: t0 + Int64(i + 1) * month)
        }
    }

    @Test func aRefundCanHitAnEarlierPeriod() throws {
        var s = Scenario()
        let periods = Self.threeMonths(&s)
        let refundedAt = Self.t0 + 10 * Scenario.day
        // Learned in the third month, about the first.
        s.revise(periods[0], signed: Self.t0 + 65 * Scenario.day) {
            $0.revocationDate = refundedAt
            $0.revocationReason = 1
            $0.revocationType = "REFUND_PRORATED"
            $0.revocationPercentage = 66_000
        }
        let t = s.timeline()
        let first = try #require(t.periods.first)
        #expect(first.revocations.count == 1)
        #expect(first.revocations[0].date == refundedAt)
        #expect(first.revocations[0].reason == 1)
        #expect(first.revocations[0].type == "REFUND_PRORATED")
        #expect(first.revocations[0].percentage == 66_000)
        #expect(t.periods[1].revocations.isEmpty && t.periods[2].revocations.isEmpty)

        #expect(t.status(at: refundedAt - 1).status == .active)
        #expect(t.status(at: refundedAt + 1).status == .revoked)
        #expect(t.status(at: Self.t0 + Self.month + 1).status == .active, "the next period is untouched")
        let view = t.view(at: refundedAt + 1, asOf: nil)
        #expect(view.periods[0].revokedAt == refundedAt)
        #expect(view.periods[0].revocation?.percentage == 66_000)
        #expect(view.changes.contains { $0.kind == "refund" && $0.at == refundedAt })
        // Known before the refund arrived (asOf), the first month was fine.
        #expect(s.timeline(asOf: 3).status(at: refundedAt + 1).status == .active)
        #expect(s.incrementalTimeline().timeline == t)
    }

    @Test func aReversedRefundGivesAccessBackFromTheReversal() throws {
        var s = Scenario()
        let p = s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        let refundedAt = Self.t0 + 5 * Scenario.day
        let reversedAt = Self.t0 + 8 * Scenario.day
        s.refund(p, at: refundedAt)
        s.notification("REFUND", signed: refundedAt, transaction: "1")
        s.notification("REFUND_REVERSED", signed: reversedAt, transaction: "1")
        s.revise(p, signed: reversedAt) { _ in }
        let t = s.timeline()

        #expect(t.status(at: refundedAt - 1).status == .active)
        #expect(t.status(at: refundedAt + 1).status == .revoked)
        #expect(t.status(at: reversedAt + 1).status == .active)
        let period = try #require(t.periods.first)
        #expect(period.revocations == [Revocation(date: refundedAt, reason: 1, type: "REFUND_FULL", reversedAt: reversedAt, seq: 2, reversedSeq: 5)])
        // (seq 5, the revision without a revocation date, folds before the REFUND_REVERSED notification signed at
        // the same instant: transactions come first in the fold order.)
        let kinds = t.changes().map(\.kind)
        #expect(kinds == [.purchase, .refund, .refundReversed])
        let view = t.view(at: reversedAt + 1, asOf: nil)
        #expect(view.periods[0].revokedAt == refundedAt)
        #expect(view.periods[0].reinstatedAt == reversedAt)
        #expect(s.incrementalTimeline().timeline == t)
    }

    @Test func aDeclinedRefundIsRecordedAndChangesNothing() {
        var s = Scenario()
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        s.notification("REFUND_DECLINED", signed: Self.t0 + Scenario.day, transaction: "1")
        let t = s.timeline()
        #expect(t.status(at: Self.t0 + 2 * Scenario.day).status == .active)
        #expect(t.changes().map(\.kind) == [.purchase, .refundDeclined])
    }

    @Test func anUpgradeIsImmediateAndAPendingDowngradeWaitsForTheRenewal() throws {
        var s = Scenario()
        let basicPeriod = s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        let upgradeAt = Self.t0 + 10 * Scenario.day
        s.revise(basicPeriod, signed: upgradeAt) {
            $0.isUpgraded = true
            $0.revocationDate = upgradeAt
            $0.revocationReason = 0
        }
        s.purchase("2", product: Self.premium, at: upgradeAt, expires: upgradeAt + Self.month)
        s.notification("DID_CHANGE_RENEWAL_PREF", subtype: "UPGRADE", signed: upgradeAt)
        // Ten days later the user picks basic again: it applies at the next renewal.
        let downgradeAt = upgradeAt + 10 * Scenario.day
        s.renewalInfo(signed: downgradeAt, product: Self.premium, autoRenewProduct: Self.basic)
        s.notification("DID_CHANGE_RENEWAL_PREF", subtype: "DOWNGRADE", signed: downgradeAt) {
            $0.autoRenewProductId = Self.basic
        }

        let beforeRenewal = s.timeline()
        let pending = beforeRenewal.view(at: downgradeAt + 1, asOf: nil)
        #expect(pending.status == "active")
        #expect(pending.productId == Self.premium)
        #expect(pending.pendingProductId == Self.basic)
        let old = beforeRenewal.periods[0]
        #expect(old.upgraded && old.end == upgradeAt && old.revocations.isEmpty, "an upgrade is not a refund")
        #expect(beforeRenewal.status(at: upgradeAt - 1).period?.productId == Self.basic)
        #expect(beforeRenewal.status(at: upgradeAt + 1).period?.productId == Self.premium)

        let renewalAt = upgradeAt + Self.month
        s.purchase("3", product: Self.basic, at: renewalAt, expires: renewalAt + Self.month)
        s.renewalInfo(signed: renewalAt, product: Self.basic, autoRenewProduct: Self.basic)
        let t = s.timeline()
        let after = t.view(at: renewalAt + 1, asOf: nil)
        #expect(after.productId == Self.basic)
        #expect(after.pendingProductId == nil)
        let kinds = t.changes().map(\.kind)
        #expect(kinds == [.purchase, .upgrade, .pendingChange, .downgrade])
        let (incremental, refolds) = s.incrementalTimeline()
        #expect(incremental == t)
        #expect(refolds == 0)
    }

    @Test func catalogLevelsNameACrossgrade() {
        var s = Scenario()
        s.rules.catalog = Catalog(products: [
            Self.basic: ProductConfiguration(type: .autoRenewable, group: "g", level: 1),
            "com.example.basic.yearly": ProductConfiguration(type: .autoRenewable, group: "g", level: 1),
        ])
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        s.purchase("2", product: "com.example.basic.yearly", at: Self.t0 + Self.month, expires: Self.t0 + 13 * Self.month)
        #expect(s.timeline().changes(rules: s.rules).map(\.kind) == [.purchase, .crossgrade])
    }

    @Test func cancellingAPendingDowngrade() {
        var s = Scenario()
        s.purchase("1", product: Self.premium, at: Self.t0, expires: Self.t0 + Self.month)
        s.renewalInfo(signed: Self.t0 + Scenario.day, product: Self.premium, autoRenewProduct: Self.basic)
        s.notification("DID_CHANGE_RENEWAL_PREF", signed: Self.t0 + 2 * Scenario.day)
        s.renewalInfo(signed: Self.t0 + 2 * Scenario.day, product: Self.premium, autoRenewProduct: Self.premium)
        let t = s.timeline()
        // The latest renewal info says no change is pending; a day before it spoke, the downgrade was.
        #expect(t.view(at: Self.t0 + Scenario.day + 1, asOf: nil).pendingProductId == Self.basic, "the state then")
        #expect(t.view(at: Self.t0 + 3 * Scenario.day, asOf: nil).pendingProductId == nil)
        #expect(t.changes().map(\.kind) == [.purchase, .pendingChange, .pendingChangeCancelled])
        #expect(s.timeline(asOf: 2).view(at: Self.t0 + Scenario.day + 1, asOf: 2).pendingProductId == Self.basic)
    }

    @Test func aGracePeriodKeepsAccessUntilBillingRecovers() {
        var s = Scenario()
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        let expiry = Self.t0 + Self.month
        let graceEnd = expiry + 16 * Scenario.day
        s.notification("DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", signed: expiry + Scenario.second)
        s.renewalInfo(signed: expiry + Scenario.second + 3, product: Self.basic) {
            $0.isInBillingRetryPeriod = true
            $0.gracePeriodExpiresDate = graceEnd
        }
        let inGrace = s.timeline().view(at: expiry + Scenario.day, asOf: nil)
        #expect(inGrace.status == "in_grace_period")
        #expect(inGrace.gracePeriodExpiresAt == graceEnd)
        #expect(s.timeline().grants(at: expiry + Scenario.day).first?.expiresAt == graceEnd, "grace keeps access")

        let recovery = expiry + 3 * Scenario.day
        s.purchase("2", product: Self.basic, at: recovery, expires: recovery + Self.month)
        s.notification("DID_RENEW", subtype: "BILLING_RECOVERY", signed: recovery, transaction: "2")
        s.renewalInfo(signed: recovery, product: Self.basic) { $0.isInBillingRetryPeriod = false }
        let t = s.timeline()
        #expect(t.status(at: recovery + 1).status == .active)
        // The notification and its renewal info told the grace period once.
        #expect(t.changes().map(\.kind) == [.purchase, .gracePeriod, .renewal, .recovered])
        #expect(s.incrementalTimeline().timeline == t)
    }

    @Test func billingRetryWithoutGraceThenExpiry() {
        var s = Scenario()
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        let expiry = Self.t0 + Self.month
        s.notification("DID_FAIL_TO_RENEW", signed: expiry + Scenario.second)
        s.renewalInfo(signed: expiry + Scenario.second, product: Self.basic) { $0.isInBillingRetryPeriod = true }
        let retrying = s.timeline().view(at: expiry + Scenario.day, asOf: nil)
        #expect(retrying.status == "in_billing_retry")
        #expect(s.timeline().grants(at: expiry + Scenario.day).isEmpty, "billing retry gives no access")

        let gaveUp = expiry + 60 * Scenario.day
        s.notification("EXPIRED", subtype: "BILLING_RETRY", signed: gaveUp)
        s.renewalInfo(signed: gaveUp, product: Self.basic, autoRenew: false) {
            $0.isInBillingRetryPeriod = false
            $0.expirationIntent = 2
        }
        let t = s.timeline()
        let expired = t.view(at: gaveUp + 1, asOf: nil)
        #expect(expired.status == "expired")
        #expect(expired.expirationReason == "BILLING_RETRY")
        #expect(expired.autoRenew == false)
        #expect(t.view(at: expiry + Scenario.day, asOf: nil).status == "in_billing_retry", "the past stays as it was")
    }

    @Test func expiryReasonFromTheRenewalInfoAlone() {
        var s = Scenario()
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        s.renewalInfo(signed: Self.t0 + Scenario.day, product: Self.basic, autoRenew: false) { $0.expirationIntent = 1 }
        let v = s.timeline().view(at: Self.t0 + Self.month + 1, asOf: nil)
        #expect(v.status == "expired")
        #expect(v.expirationReason == "VOLUNTARY")
        #expect(v.autoRenew == false)
    }

    @Test func familySharingRevokeRevokes() {
        var s = Scenario()
        let p = s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month) {
            $0.inAppOwnershipType = "FAMILY_SHARED"
        }
        let revokedAt = Self.t0 + 3 * Scenario.day
        s.refund(p, at: revokedAt, reason: 0, type: "FAMILY_REVOKE")
        s.notification("REVOKE", signed: revokedAt, transaction: "1")
        let t = s.timeline()
        #expect(t.status(at: revokedAt + 1).status == .revoked)
        #expect(t.changes().map(\.kind) == [.purchase, .revoked])
        #expect(t.grants(at: revokedAt + 1).isEmpty)
    }

    @Test func aDuplicateNotificationIsOneChange() {
        var s = Scenario()
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        s.notification("DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", signed: Self.t0 + Scenario.day)
        let once = s.timeline()
        s.redeliver(1)
        let twice = s.timeline()
        #expect(twice.changes() == once.changes())
        #expect(twice.changes().map(\.kind) == [.purchase, .autoRenewOff])
        #expect(twice.lastSeq == 3 && once.lastSeq == 2)
        var same = twice
        same = Timeline.fold(
            s.events.reversed(), originalTransactionId: s.originalTransactionId, environment: .production,
            rules: s.rules, ties: .canonical)
        #expect(same == twice, "the first copy (smallest seq) is the one folded, whatever the order")
        #expect(s.incrementalTimeline().timeline == twice)
    }

    @Test func sandboxFactsNeverReachAProductionTimeline() {
        var s = Scenario(otid: "42", environment: .sandbox)
        s.purchase("42", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        s.claim("alice", at: Self.t0)
        let production = Timeline.fold(
            s.events, originalTransactionId: "42", environment: .production, rules: s.rules, ties: .canonical)
        #expect(production.periods.isEmpty && production.owners.isEmpty)
        var applied = Timeline(originalTransactionId: "42", environment: .production)
        for e in s.events {
            let handled = applied.apply(e, rules: s.rules)
            #expect(handled, "another environment's fact is ignored, never a reason to refold")
        }
        #expect(applied == production)
        let sandbox = s.timeline()
        #expect(sandbox.status(at: Self.t0 + 1).status == .active)
        let customer = Entitlements.customer(
            user: "alice", environment: .production, timelines: [sandbox], at: Self.t0 + 1, asOf: nil, rules: s.rules)
        #expect(customer.entitlements.isEmpty && customer.subscriptions.isEmpty)
        let inSandbox = Entitlements.customer(
            user: "alice", environment: .sandbox, timelines: [sandbox], at: Self.t0 + 1, asOf: nil, rules: s.rules)
        #expect(inSandbox.entitlements[Self.basic]?.active == true)
    }

    @Test func aV1RestoreWithoutLineItemJoinsByProductAndPurchaseDate() {
        var s = Scenario()
        s.v1Transaction("10", product: Self.basic, purchased: Self.t0, expires: Self.t0 + Self.month, observed: Self.t0 + 1, webOrderLineItemId: "w1")
        s.v1Transaction("17", product: Self.basic, purchased: Self.t0, expires: Self.t0 + Self.month, observed: Self.t0 + Scenario.day)
        let t = s.timeline()
        #expect(t.periods.count == 1)
        #expect(t.periods[0].transactionId == "10" && t.periods[0].observedAs == ["17"])
    }

    @Test func aTrialIsAnActivePeriodWithAnOffer() {
        var s = Scenario()
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + 7 * Scenario.day) {
            $0.offerType = 1
            $0.offerDiscountType = "FREE_TRIAL"
        }
        let v = s.timeline().view(at: Self.t0 + 1, asOf: nil)
        #expect(v.status == "active")
        #expect(v.periods[0].offer == Offer(type: 1, discountType: "FREE_TRIAL", isTrial: true))
    }
}
