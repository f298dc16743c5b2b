import LedgerCodec
import LedgerCore
import LedgerTestSupport
import Testing

/// Situations Apple produces today in which the ledger once answered wrong about access (the story "The fold against
/// Apple as it is today"). Each story states what happened, then who may use what, and when.
@Suite struct AppleTodayStoryTests {
    static let basic = "com.example.basic.monthly"
    static let premium = "com.example.premium.monthly"
    static let lifetime = "com.example.lifetime"
    static let gems = "com.example.gems60"
    static let t0 = Scenario.utc(2025, 3, 1, 9)
    static let day = Scenario.day
    static let month = 30 * Scenario.day
    static let token = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
    static let otherToken = "0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f"

    static let rules = FoldRules(
        catalog: Catalog(products: [
            basic: ProductConfiguration(type: .autoRenewable, entitlements: ["basic"], group: "g", level: 1),
            premium: ProductConfiguration(type: .autoRenewable, entitlements: ["premium"], group: "g", level: 2),
            lifetime: ProductConfiguration(type: .nonConsumable, entitlements: ["premium"]),
            gems: ProductConfiguration(type: .consumable, credits: ["gems": 60]),
        ]))

    static func customer(_ user: AppUserID, _ s: Scenario, at: UnixMillis) -> CustomerView {
        Entitlements.customer(
            user: user, environment: s.environment, timelines: [s.timeline()], at: at, asOf: nil, rules: s.rules)
    }

    // MARK: 1. appAccountToken

    /// Alice subscribes in the app (the app posts the transaction with her id; it carries her token). Bob restores
    /// on his account: the app binds the subscription to him. Apple's DID_RENEW repeats Alice's token: it claims
    /// nothing, and Bob keeps the subscription.
    @Test func aRenewalRepeatingTheTokenDoesNotTakeTheSubscriptionBack() {
        var s = Scenario(rules: Self.rules)
        let first = s.transactionFact(
            "1000000741475761", product: Self.basic, purchased: Self.t0, expires: Self.t0 + Self.month,
            signed: Self.t0, webOrderLineItemId: "w1")
        var tx1 = first
        tx1.appAccountToken = Self.token
        s.tell(.transaction(tx1), observedAt: Self.t0)
        s.tellTokenClaim(of: tx1, user: "alice")
        s.claim("alice", at: Self.t0)

        let restoredAt = Self.t0 + 10 * Self.day
        s.claim("bob", at: restoredAt)

        let renewedAt = Self.t0 + Self.month
        s.purchase(
            "1000000741475999", product: Self.basic, at: renewedAt, expires: renewedAt + Self.month,
            webOrderLineItemId: "w2"
        ) { $0.appAccountToken = Self.token }
        s.notification("DID_RENEW", signed: renewedAt, transaction: "1000000741475999")

        let t = s.timeline()
        #expect(t.owner(at: restoredAt - 1) == ["alice"])
        #expect(t.owner(at: restoredAt + 1) == ["bob"])
        #expect(t.owner(at: renewedAt + Self.day) == ["bob"], "the repeated token claimed the subscription back")
        #expect(t.owners.map(\.appUserId) == ["alice", "bob"])
        #expect(Self.customer("bob", s, at: renewedAt + Self.day).entitlements["basic"]?.active == true)
        #expect(Self.customer("alice", s, at: renewedAt + Self.day).entitlements["basic"]?.active == false)
        #expect(Self.customer("alice", s, at: restoredAt - 1).entitlements["basic"]?.active == true)
        #expect(s.incrementalTimeline().timeline == t)
    }

    /// A token Apple sends alone names the user a claim mapped it to; a token that changes (Set App Account Token)
    /// claims again, for the user it maps to; a repeated one never does.
    @Test func aChangedTokenClaimsForTheUserABindingNamedForIt() {
        var s = Scenario(rules: Self.rules)
        // Bought through Apple's notification only: the token itself owns it until a user is named.
        s.purchase("500", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month, webOrderLineItemId: "w1") {
            $0.appAccountToken = Self.token
        }
        #expect(s.timeline().owner(at: Self.t0 + 1) == [AppUserID(Self.token)])
        // The app binds Carol and names her new token.
        s.claim("carol", at: Self.t0 + 2 * Self.day, token: Self.otherToken)
        // The app sets the new token at Apple; the renewal carries it: it maps to Carol, who owns it already.
        let renewedAt = Self.t0 + Self.month
        s.purchase("501", product: Self.basic, at: renewedAt, expires: renewedAt + Self.month, webOrderLineItemId: "w2") {
            $0.appAccountToken = Self.otherToken
        }
        // Dave restores it on his account; the next renewal repeats Carol's token and changes nothing.
        s.claim("dave", at: renewedAt + 5 * Self.day)
        s.purchase(
            "502", product: Self.basic, at: renewedAt + Self.month, expires: renewedAt + 2 * Self.month,
            webOrderLineItemId: "w3"
        ) { $0.appAccountToken = Self.otherToken }

        let t = s.timeline()
        #expect(t.owners.map(\.appUserId) == [AppUserID(Self.token), "carol", "dave"])
        #expect(t.owner(at: renewedAt + 1) == ["carol"])
        #expect(t.owner(at: renewedAt + Self.month + 1) == ["dave"])
        #expect(t.accountToken == AccountTokenClaim(token: Self.otherToken, appUserId: "carol"))
        #expect(t.tokenUsers == [Self.otherToken: "carol"])
        #expect(s.incrementalTimeline().timeline == t)
    }

    // MARK: 2. Restored non-consumables

    /// The lifetime unlock is bought once and restored twice on new devices (V1 restores mint new transaction ids,
    /// with the restore's date as purchase date). Then the original purchase is refunded: access ends.
    @Test func restoredNonConsumablesAreOnePurchaseThatTheRefundEnds() throws {
        var s = Scenario(otid: "2000000000000100", rules: Self.rules)
        let boughtAt = Self.t0
        s.v1Transaction("2000000000000100", product: Self.lifetime, purchased: boughtAt, expires: nil, observed: boughtAt)
        s.claim("alice", at: boughtAt)
        for (i, id) in ["2000000000000105", "2000000000000109"].enumerated() {
            let restoredAt = boughtAt + Int64(40 + 30 * i) * Self.day
            s.v1Transaction(id, product: Self.lifetime, purchased: restoredAt, expires: nil, observed: restoredAt) {
                $0.originalPurchaseDate = boughtAt
            }
        }
        let refundedAt = boughtAt + 120 * Self.day
        s.v1Transaction("2000000000000100", product: Self.lifetime, purchased: boughtAt, expires: nil, observed: refundedAt) {
            $0.revocationDate = refundedAt
            $0.revocationReason = 0
        }

        let t = s.timeline()
        #expect(t.periods.count == 1, "each restore became a period of its own")
        let period = try #require(t.periods.first)
        #expect(period.transactionId == "2000000000000100")
        #expect(period.observedAs == ["2000000000000105", "2000000000000109"])
        #expect(period.start == boughtAt)
        #expect(t.status(at: refundedAt - 1).status == .active)
        #expect(t.status(at: refundedAt + 1).status == .revoked)
        #expect(Self.customer("alice", s, at: refundedAt - 1).entitlements["premium"]?.active == true)
        #expect(Self.customer("alice", s, at: refundedAt + 1).entitlements["premium"]?.active == false)
        #expect(s.incrementalTimeline().timeline == t)
    }

    /// Known only by its restore first (the original arrives later): still one purchase, from the original date.
    @Test func aRestoreKnownBeforeItsOriginalStartsAtTheOriginalPurchase() throws {
        var s = Scenario(otid: "2000000000000100", rules: Self.rules)
        let boughtAt = Self.t0
        let restoredAt = boughtAt + 40 * Self.day
        s.v1Transaction("2000000000000105", product: Self.lifetime, purchased: restoredAt, expires: nil, observed: restoredAt) {
            $0.originalPurchaseDate = boughtAt
        }
        #expect(s.timeline().periods.map(\.start) == [boughtAt])
        s.v1Transaction(
            "2000000000000100", product: Self.lifetime, purchased: boughtAt, expires: nil, observed: restoredAt + Self.day)
        let t = s.timeline()
        #expect(t.periods.map(\.transactionId) == ["2000000000000100"])
        #expect(t.periods.first?.observedAs == ["2000000000000105"])
        #expect(s.incrementalTimeline().timeline == t)
    }

    // MARK: 3. One document, two copies

    /// One receipt states the transaction twice: `in_app` with its refund, `latest_receipt_info` without. Both speak
    /// from the receipt's request date; the copy without the refund must not reverse it, whatever the order.
    @Test(arguments: [false, true])
    func aCopyWithoutTheRefundInTheSameReceiptNeverReversesIt(refundFirst: Bool) {
        var s = Scenario(rules: Self.rules)
        let requestedAt = Self.t0 + 20 * Self.day
        let refundedAt = Self.t0 + 12 * Self.day
        s.v1Transaction("1", product: Self.basic, purchased: Self.t0, expires: Self.t0 + Self.month, observed: Self.t0)
        let tell: (inout Scenario, Bool) -> Void = { s, refunded in
            s.v1Transaction(
                "1", product: Self.basic, purchased: Self.t0, expires: Self.t0 + Self.month, observed: requestedAt
            ) { if refunded { $0.revocationDate = refundedAt; $0.revocationReason = 1 } }
        }
        tell(&s, refundFirst)
        tell(&s, !refundFirst)
        let t = s.timeline()
        #expect(t.status(at: refundedAt - 1).status == .active)
        #expect(t.status(at: refundedAt + 1).status == .revoked)
        #expect(t.status(at: requestedAt + 1).status == .revoked, "the stale copy reversed the refund")
        #expect(t.periods[0].revocations.map(\.reversedAt) == [nil])
        #expect(s.incrementalTimeline().timeline == t)
    }

    // MARK: 4. Billing retry that ends

    /// V1 only: a receipt says Apple is retrying the charge; a later one says it stopped (intent 2) with no new
    /// transaction. The subscription expired for a billing reason then; it is not retrying forever.
    @Test func billingRetryEndsWhenAReceiptSaysApplesStoppedRetrying() {
        var s = Scenario(rules: Self.rules)
        let end = Self.t0 + Self.month
        s.v1Transaction("1", product: Self.basic, purchased: Self.t0, expires: end, observed: Self.t0)
        let retryingAt = end + 2 * Self.day
        let stoppedAt = end + 40 * Self.day
        for (at, retrying, intent) in [(retryingAt, true, Int64?.none), (stoppedAt, false, 2)] {
            var r = RenewalInfoFact(originalTransactionId: s.originalTransactionId)
            r.productId = Self.basic
            r.autoRenewProductId = Self.basic
            r.autoRenewStatus = retrying
            r.isInBillingRetryPeriod = retrying
            r.expirationIntent = intent
            s.tell(.renewal(r), observedAt: at, source: .receipt)
        }
        let t = s.timeline()
        #expect(t.status(at: retryingAt + 1).status == .inBillingRetry)
        let after = t.status(at: stoppedAt + 1)
        #expect(after.status == .expired)
        #expect(after.expirationReason == "BILLING_RETRY")
        #expect(t.view(at: stoppedAt + 1, asOf: nil).expirationReason == "BILLING_RETRY")
        // Billing retry began at the expiry (Apple retries from then), though the receipt said so two days later.
        #expect(t.changes().filter { $0.kind == .billingRetry || $0.kind == .expired }.map(\.at) == [end, stoppedAt])
        #expect(t.status(at: end + 1).status == .inBillingRetry)
        #expect(s.timeline(asOf: 1).status(at: end + 1).status == .expired, "as known before the receipt")
        #expect(s.incrementalTimeline().timeline == t)
    }

    /// One reason, one spelling: V1's intent 2 and V2's EXPIRED/BILLING_RETRY read the same.
    @Test func anExpiryReasonHasOneSpellingWhicheverWayAppleSaidIt() {
        var v1 = Scenario(rules: Self.rules)
        v1.v1Transaction("1", product: Self.basic, purchased: Self.t0, expires: Self.t0 + Self.month, observed: Self.t0)
        v1.renewalInfo(signed: Self.t0 + Self.month + Self.day, product: Self.basic, autoRenew: false) {
            $0.expirationIntent = 2
        }
        var v2 = Scenario(rules: Self.rules)
        v2.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        v2.notification("EXPIRED", subtype: "BILLING_RETRY", signed: Self.t0 + Self.month + Self.day)
        let at = Self.t0 + Self.month + 2 * Self.day
        #expect(v1.timeline().status(at: at).expirationReason == "BILLING_RETRY")
        #expect(v2.timeline().status(at: at).expirationReason == "BILLING_RETRY")
    }

    // MARK: 5. V2 upgrades

    /// Ten days into a basic month the customer upgrades to premium. Apple's V2 notification carries only the new
    /// transaction: the basic period ends at the upgrade all the same, and so does the basic entitlement.
    @Test(arguments: [("DID_CHANGE_RENEWAL_PREF", "UPGRADE"), ("SUBSCRIBED", "RESUBSCRIBE")])
    func aV2UpgradeEndsTheOldPeriodAtTheNewPurchase(type: String, subtype: String) throws {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        s.claim("alice", at: Self.t0)
        let upgradedAt = Self.t0 + 10 * Self.day
        s.purchase("2", product: Self.premium, at: upgradedAt, expires: upgradedAt + Self.month) {
            $0.transactionReason = "PURCHASE"
        }
        s.notification(type, subtype: subtype, signed: upgradedAt, transaction: "2")

        let t = s.timeline()
        let old = try #require(t.periods.first)
        #expect(old.end == upgradedAt)
        #expect(old.upgraded)
        #expect(old.revocations.isEmpty, "an upgrade is no refund")
        #expect(zip(t.periods, t.periods.dropFirst()).allSatisfy { a, b in a.end.map { $0 <= b.start } ?? false })
        #expect(t.status(at: upgradedAt + 1).period?.productId == Self.premium)
        #expect(t.changes(rules: Self.rules).map(\.kind).contains(.upgrade))
        let after = Self.customer("alice", s, at: upgradedAt + 1)
        #expect(after.entitlements["basic"]?.active == false)
        #expect(after.entitlements["basic"]?.expiresAt == upgradedAt)
        #expect(after.entitlements["premium"]?.active == true)
        #expect(Self.customer("alice", s, at: upgradedAt - 1).entitlements["basic"]?.active == true)
        #expect(t.view(at: upgradedAt + 1, asOf: nil).periods.first?.upgraded == true)
        #expect(s.incrementalTimeline().timeline == t)
    }

    /// V1 states the old side of the upgrade (is_upgraded, cancellation date); the new purchase starts two seconds
    /// later. That is an upgrade, not a resubscription after a lapse.
    @Test func anUpgradeStartingJustAfterTheOldSidesRevocationIsAnUpgrade() {
        var s = Scenario(rules: FoldRules())
        let upgradedAt = Self.t0 + 10 * Self.day
        let old = s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        s.revise(old, signed: upgradedAt) {
            $0.isUpgraded = true
            $0.revocationDate = upgradedAt
        }
        s.purchase("2", product: Self.premium, at: upgradedAt + 2_000, expires: upgradedAt + Self.month)
        #expect(s.timeline().changes().map(\.kind) == [.purchase, .upgrade])
    }

    // MARK: Also

    /// A renewal Apple charged late after a billing problem (nothing stated the retry) is a renewal: Apple says so.
    @Test func aLateRenewalThatAppleCallsARenewalIsNoResubscription() {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        let recoveredAt = Self.t0 + Self.month + 6 * Self.day
        s.purchase("2", product: Self.basic, at: recoveredAt, expires: recoveredAt + Self.month) {
            $0.transactionReason = "RENEWAL"
        }
        s.purchase("3", product: Self.basic, at: recoveredAt + 90 * Self.day, expires: recoveredAt + 120 * Self.day) {
            $0.transactionReason = "PURCHASE"
        }
        #expect(s.timeline().changes().map(\.kind) == [.purchase, .renewal, .resubscribe])
    }

    /// A refund of 25% of a pack of 60 gems takes 15 back, not all 60.
    @Test func aProratedRefundOfAConsumableTakesBackItsShare() {
        var s = Scenario(otid: "3000000000000001", rules: Self.rules)
        let bought = s.purchase("3000000000000001", product: Self.gems, at: Self.t0, expires: nil)
        s.claim("alice", at: Self.t0)
        let refundedAt = Self.t0 + 3 * Self.day
        s.refund(bought, at: refundedAt, type: "REFUND_PRORATED", percentage: 25_000)
        #expect(Self.customer("alice", s, at: refundedAt - 1).credits["gems"] == 60)
        #expect(Self.customer("alice", s, at: refundedAt + 1).credits["gems"] == 45)
        var full = Scenario(otid: "3000000000000002", rules: Self.rules)
        let other = full.purchase("3000000000000002", product: Self.gems, at: Self.t0, expires: nil)
        full.claim("alice", at: Self.t0)
        full.refund(other, at: refundedAt)
        #expect(Self.customer("alice", full, at: refundedAt + 1).credits["gems", default: 0] == 0)
    }

    /// Every notification about the subscription shows on its timeline: a refund request as one, the types the fold
    /// has no rule for by their name.
    @Test func noNotificationIsDroppedFromTheTimeline() {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        s.notification("CONSUMPTION_REQUEST", signed: Self.t0 + Self.day, transaction: "1") {
            $0.extra["data.consumptionRequestReason"] = "\"UNINTENDED_PURCHASE\""
        }
        s.notification("METADATA_UPDATE", signed: Self.t0 + 2 * Self.day)
        s.notification("MIGRATION", signed: Self.t0 + 2 * Self.day + 1_000)
        s.notification("PRICE_CHANGE", signed: Self.t0 + 3 * Self.day)
        s.notification("RENEWAL_EXTENSION", subtype: "FAILURE", signed: Self.t0 + 4 * Self.day)
        s.notification("SOMETHING_APPLE_ADDS_NEXT_YEAR", signed: Self.t0 + 5 * Self.day)
        let changes = s.timeline().view(at: Self.t0 + 6 * Self.day, asOf: nil).changes
        #expect(changes.map(\.kind) == ["purchase", "refund_requested"] + Array(repeating: "notification", count: 5))
        #expect(changes[1].detail == "UNINTENDED_PURCHASE")
        #expect(changes.dropFirst(2).map(\.detail) == [
            "METADATA_UPDATE", "MIGRATION", "PRICE_CHANGE", "RENEWAL_EXTENSION/FAILURE", "SOMETHING_APPLE_ADDS_NEXT_YEAR",
        ])
    }

    /// Apple's price, currency, offer length and commitment reach the period and the view.
    @Test func pricesOffersAndCommitmentsReachThePeriod() throws {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month) {
            $0.price = 9_990
            $0.currency = "EUR"
            $0.offerType = 1
            $0.offerDiscountType = "PAY_AS_YOU_GO"
            $0.offerPeriod = "P3M"
            $0.billingPlanType = "MONTHLY"
            $0.commitment = TransactionFact.Commitment(
                billingPeriodNumber: 1, totalBillingPeriods: 12, expiresDate: Self.t0 + 365 * Self.day, price: 119_880)
            $0.transactionReason = "PURCHASE"
        }
        s.renewalInfo(signed: Self.t0 + Self.day, product: Self.basic) {
            $0.renewalPrice = 10_990
            $0.currency = "EUR"
            $0.eligibleWinBackOfferIds = ["wb1"]
        }
        let view = s.timeline().view(at: Self.t0 + 2 * Self.day, asOf: nil)
        let period = try #require(view.periods.first)
        #expect(period.price == 9_990)
        #expect(period.currency == "EUR")
        #expect(period.offer?.period == "P3M")
        #expect(period.billingPlanType == "MONTHLY")
        #expect(period.commitmentExpiresDate == Self.t0 + 365 * Self.day)
        #expect(period.transactionReason == "PURCHASE")
        #expect(view.renewalPrice == 10_990)
        #expect(view.renewalCurrency == "EUR")
        #expect(view.eligibleWinBackOfferIds == ["wb1"])
        let t = s.timeline()
        #expect(try Timeline(decoding: t.encoded()) == t)
    }
}
