import LedgerCore
import LedgerTestSupport
import Testing

/// What an entitlement's answer says beyond active and until when (RevenueCat's EntitlementInfo): the
/// period type from Apple's offer fields, when a cancellation or a billing problem was seen, the grantor's dates,
/// ownership and environment, and the customer's active and all-time products. Each as of a log position too.
@Suite struct RichEntitlementTests {
    static let monthly = "com.example.premium.monthly"
    static let lifetime = "com.example.lifetime"
    static let gems = "com.example.gems60"
    static let t0 = Scenario.utc(2024, 3, 1, 9)
    static let month = 31 * Scenario.day
    static let rules = FoldRules(
        catalog: Catalog(products: [
            monthly: ProductConfiguration(type: .autoRenewable, entitlements: ["premium"], group: "g1"),
            lifetime: ProductConfiguration(type: .nonConsumable, entitlements: ["extras"]),
            gems: ProductConfiguration(type: .consumable, credits: ["gems": 60]),
        ]))

    static func customer(
        _ timelines: [Timeline], at: UnixMillis, user: AppUserID = "alice", environment: AppStoreEnvironment = .production
    ) -> CustomerView {
        Entitlements.customer(
            user: user, environment: environment, timelines: timelines, at: at, asOf: nil, rules: rules)
    }

    /// A monthly subscription bought at t0 by alice, the transaction adjusted by `adjust`.
    static func bought(_ adjust: @escaping (inout TransactionFact) -> Void = { _ in }) -> Scenario {
        var s = Scenario(rules: rules)
        s.purchase("1", product: monthly, at: t0, expires: t0 + month, adjust)
        s.claim("alice", at: t0)
        return s
    }

    // MARK: periodType, from Apple's values

    struct OfferCase: Sendable, CustomTestStringConvertible {
        let name: String
        let offerType: Int64?
        let discount: String?
        let v1Trial: Bool?
        let v1Intro: Bool?
        let expected: LifecyclePeriodType
        var testDescription: String { name }
    }

    static let offerCases: [OfferCase] = [
        OfferCase(name: "no offer", offerType: nil, discount: nil, v1Trial: nil, v1Intro: nil, expected: .normal),
        OfferCase(name: "V1 with no offer", offerType: nil, discount: nil, v1Trial: false, v1Intro: false, expected: .normal),
        OfferCase(name: "introductory free trial", offerType: 1, discount: "FREE_TRIAL", v1Trial: nil, v1Intro: nil, expected: .trial),
        OfferCase(name: "V1 is_trial_period", offerType: nil, discount: nil, v1Trial: true, v1Intro: false, expected: .trial),
        OfferCase(name: "introductory pay as you go", offerType: 1, discount: "PAY_AS_YOU_GO", v1Trial: nil, v1Intro: nil, expected: .intro),
        OfferCase(name: "introductory pay up front", offerType: 1, discount: "PAY_UP_FRONT", v1Trial: nil, v1Intro: nil, expected: .intro),
        OfferCase(name: "V1 is_in_intro_offer_period", offerType: nil, discount: nil, v1Trial: false, v1Intro: true, expected: .intro),
        OfferCase(name: "promotional offer", offerType: 2, discount: "PAY_AS_YOU_GO", v1Trial: nil, v1Intro: nil, expected: .promotional),
        OfferCase(name: "offer code", offerType: 3, discount: "PAY_UP_FRONT", v1Trial: nil, v1Intro: nil, expected: .offerCode),
        OfferCase(name: "win-back offer", offerType: 4, discount: "PAY_AS_YOU_GO", v1Trial: nil, v1Intro: nil, expected: .winBack),
        OfferCase(name: "free trial by offer code", offerType: 3, discount: "FREE_TRIAL", v1Trial: nil, v1Intro: nil, expected: .trial),
    ]

    @Test(arguments: offerCases) func periodTypeFollowsApplesOfferFields(_ c: OfferCase) {
        let s = Self.bought {
            $0.offerType = c.offerType
            $0.offerDiscountType = c.discount
            $0.isTrialPeriod = c.v1Trial
            $0.isInIntroOfferPeriod = c.v1Intro
        }
        let premium = Self.customer([s.timeline()], at: Self.t0 + Scenario.day).entitlements["premium"]
        #expect(premium?.active == true)
        #expect(premium?.periodType == c.expected)
    }

    @Test func theGrantorIsTheLatestPeriodAfterATrialConverts() {
        var s = Self.bought {
            $0.offerType = 1
            $0.offerDiscountType = "FREE_TRIAL"
        }
        s.purchase("2", product: Self.monthly, at: Self.t0 + Self.month, expires: Self.t0 + 2 * Self.month) {
            $0.originalPurchaseDate = Self.t0
        }
        let t = s.timeline()
        let inTrial = Self.customer([t], at: Self.t0 + Scenario.day).entitlements["premium"]!
        let paid = Self.customer([t], at: Self.t0 + Self.month + Scenario.day).entitlements["premium"]!
        #expect(inTrial.periodType == .trial)
        #expect(inTrial.transactionId == "1")
        #expect(inTrial.latestPurchaseDate == Self.t0)
        #expect(paid.periodType == .normal)
        #expect(paid.transactionId == "2")
        #expect(paid.latestPurchaseDate == Self.t0 + Self.month)
        #expect(paid.originalPurchaseDate == Self.t0)
        #expect(paid.expiresAt == Self.t0 + 2 * Self.month)
        #expect(paid.ownershipType == nil, "Apple did not state it")
        #expect(!paid.isSandbox)
    }

    // MARK: unsubscribeDetectedAt and willRenew

    @Test func unsubscribeDetectedAtIsWhenAutoRenewWasSeenOffAndNotBefore() {
        var s = Self.bought()
        s.renewalInfo(signed: Self.t0 + Scenario.hour, product: Self.monthly, autoRenew: true)
        let beforeCancelling = s.nextSeq - 1
        let off = Self.t0 + 5 * Scenario.day
        s.notification("DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", signed: off)
        let t = s.timeline()

        let before = Self.customer([t], at: off - 1).entitlements["premium"]!
        #expect(before.willRenew)
        #expect(before.unsubscribeDetectedAt == nil)
        let after = Self.customer([t], at: off + Scenario.day).entitlements["premium"]!
        #expect(after.active, "cancelling keeps access to the end of the period")
        #expect(!after.willRenew)
        #expect(after.unsubscribeDetectedAt == off)
        // As known before the cancellation arrived: no cancellation, at the same instant.
        let asOf = Self.customer([s.timeline(asOf: beforeCancelling)], at: off + Scenario.day).entitlements["premium"]!
        #expect(asOf.unsubscribeDetectedAt == nil)
        #expect(asOf.willRenew)
    }

    @Test func turningAutoRenewBackOnClearsTheCancellation() {
        var s = Self.bought()
        s.renewalInfo(signed: Self.t0 + Scenario.hour, product: Self.monthly, autoRenew: true)
        s.renewalInfo(signed: Self.t0 + 3 * Scenario.day, product: Self.monthly, autoRenew: false)
        s.renewalInfo(signed: Self.t0 + 7 * Scenario.day, product: Self.monthly, autoRenew: true)
        let t = s.timeline()
        #expect(Self.customer([t], at: Self.t0 + 4 * Scenario.day).entitlements["premium"]?.unsubscribeDetectedAt
            == Self.t0 + 3 * Scenario.day)
        let later = Self.customer([t], at: Self.t0 + 8 * Scenario.day).entitlements["premium"]!
        #expect(later.unsubscribeDetectedAt == nil)
        #expect(later.willRenew)
    }

    @Test func aFirstRenewalInfoThatSaysOffIsTheDetection() {
        var s = Self.bought()
        let seen = Self.t0 + 2 * Scenario.day
        s.renewalInfo(signed: seen, product: Self.monthly, autoRenew: false)
        let premium = Self.customer([s.timeline()], at: seen + 1).entitlements["premium"]!
        #expect(premium.unsubscribeDetectedAt == seen)
        #expect(!premium.willRenew)
        #expect(Self.customer([s.timeline()], at: seen - 1).entitlements["premium"]?.unsubscribeDetectedAt == nil)
    }

    // MARK: billingIssueDetectedAt

    @Test func billingIssueDetectedAtIsTheFirstFailureUntilBillingRecovers() {
        var s = Self.bought()
        s.renewalInfo(signed: Self.t0 + Scenario.hour, product: Self.monthly, autoRenew: true)
        let beforeFailure = s.nextSeq - 1
        let failed = Self.t0 + Self.month
        let graceEnd = failed + 16 * Scenario.day
        s.renewalInfo(signed: failed, product: Self.monthly, autoRenew: true) {
            $0.isInBillingRetryPeriod = true
            $0.gracePeriodExpiresDate = graceEnd
        }
        let t = s.timeline()

        let inGrace = Self.customer([t], at: failed + Scenario.day).entitlements["premium"]!
        #expect(inGrace.active, "the grace period grants access")
        #expect(inGrace.expiresAt == graceEnd)
        #expect(inGrace.billingIssueDetectedAt == failed)
        #expect(!inGrace.willRenew)
        #expect(Self.customer([t], at: failed - 1).entitlements["premium"]?.billingIssueDetectedAt == nil)
        // As known before the failure arrived.
        let asOf = Self.customer([s.timeline(asOf: beforeFailure)], at: failed + Scenario.day).entitlements["premium"]!
        #expect(asOf.billingIssueDetectedAt == nil)
        #expect(!asOf.active)

        // Billing recovers: a renewal begins a period of its own, with no billing issue.
        let recovered = failed + 3 * Scenario.day
        s.purchase("2", product: Self.monthly, at: recovered, expires: recovered + Self.month)
        s.notification("DID_RENEW", subtype: "BILLING_RECOVERY", signed: recovered, transaction: "2")
        let after = Self.customer([s.timeline()], at: recovered + Scenario.day).entitlements["premium"]!
        #expect(after.transactionId == "2")
        #expect(after.billingIssueDetectedAt == nil)
        #expect(after.willRenew)
    }

    @Test func billingRetryWithoutGraceIsABillingIssueOfTheLapsedEntitlement() {
        var s = Self.bought()
        let failed = Self.t0 + Self.month
        s.notification("DID_FAIL_TO_RENEW", signed: failed)
        let premium = Self.customer([s.timeline()], at: failed + Scenario.day).entitlements["premium"]!
        #expect(!premium.active)
        #expect(premium.billingIssueDetectedAt == failed)
        #expect(!premium.willRenew)
    }

    // MARK: ownership, environment, products

    @Test func familySharingAndSandboxAreSaid() {
        var s = Scenario(environment: .sandbox, rules: Self.rules)
        s.purchase("1", product: Self.monthly, at: Self.t0, expires: Self.t0 + Self.month) {
            $0.inAppOwnershipType = "FAMILY_SHARED"
        }
        s.claim("alice", at: Self.t0)
        let c = Self.customer([s.timeline()], at: Self.t0 + 1, environment: .sandbox)
        #expect(c.entitlements["premium"]?.ownershipType == "FAMILY_SHARED")
        #expect(c.entitlements["premium"]?.isSandbox == true)

        let purchased = Self.bought { $0.inAppOwnershipType = "PURCHASED" }
        #expect(Self.customer([purchased.timeline()], at: Self.t0 + 1).entitlements["premium"]?.ownershipType == "PURCHASED")
    }

    @Test func activeAndAllTimeProductsAndTheManagementURL() {
        var sub = Self.bought()
        sub.renewalInfo(signed: Self.t0 + Scenario.hour, product: Self.monthly, autoRenew: true)
        var life = Scenario(otid: "2000", rules: Self.rules)
        life.purchase("20", product: Self.lifetime, at: Self.t0 + Scenario.day, expires: nil)
        life.claim("alice", at: Self.t0 + Scenario.day)
        var gem = Scenario(otid: "3000", rules: Self.rules)
        gem.purchase("30", product: Self.gems, at: Self.t0 + 2 * Scenario.day, expires: nil)
        gem.claim("alice", at: Self.t0 + 2 * Scenario.day)
        let timelines = [sub.timeline(), life.timeline(), gem.timeline()]

        let during = Self.customer(timelines, at: Self.t0 + 3 * Scenario.day)
        #expect(during.activeProductIds == [Self.lifetime, Self.monthly])
        #expect(during.allPurchasedProductIds == [Self.gems, Self.lifetime, Self.monthly])
        #expect(during.managementURL == EntitlementView.appStoreManagementURL)

        let lapsed = Self.customer(timelines, at: Self.t0 + 2 * Self.month)
        #expect(lapsed.activeProductIds == [Self.lifetime])
        #expect(lapsed.allPurchasedProductIds == [Self.gems, Self.lifetime, Self.monthly])
        #expect(lapsed.managementURL == nil, "no auto-renewable subscription to manage")
        #expect(lapsed.entitlements["premium"]?.willRenew == false)
        #expect(lapsed.entitlements["extras"]?.willRenew == false, "a one-time purchase never renews")

        let first = Self.customer(timelines, at: Self.t0 + 1)
        #expect(first.allPurchasedProductIds == [Self.monthly], "nothing bought yet of the others")
    }
}
