import LedgerCore
import LedgerTestSupport
import Testing

/// One story per lifecycle event type and per period type: what downstream systems hear when a subscription is
/// bought, renewed, cancelled, billed late, changed, refunded, transferred, and when Apple's news arrives late.
@Suite struct LifecycleStoryTests {
    static let basic = "com.example.basic.monthly"
    static let premium = "com.example.premium.monthly"
    static let t0 = Scenario.utc(2024, 1, 10, 12)
    static let month = 30 * Scenario.day
    static let otid = "1000000741475761"
    /// Levels so plan changes are named; `premium` grants the entitlement `pro` too.
    static let rules = FoldRules(
        catalog: Catalog(products: [
            basic: ProductConfiguration(type: .autoRenewable, entitlements: ["premium"], group: "g", level: 1),
            premium: ProductConfiguration(type: .autoRenewable, entitlements: ["premium", "pro"], group: "g", level: 2),
            "com.example.lifetime": ProductConfiguration(type: .nonConsumable, entitlements: ["premium"]),
            "com.example.gems": ProductConfiguration(type: .consumable, credits: ["gems": 60]),
        ]))

    static func id(_ type: String, _ cause: String) -> String { "Production/\(otid)/\(type)/\(cause)" }

    @Test func aPurchaseAndItsRenewalsWithTheirPricesAndOwner() throws {
        var s = Scenario(rules: Self.rules)
        // The app's backend binds the user as the purchase starts; Apple's transaction arrives after.
        s.claim("alice", at: Self.t0 - Scenario.minute)
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month) {
            $0.price = 9_990
            $0.currency = "USD"
        }
        s.purchase("2", product: Self.basic, at: Self.t0 + Self.month, expires: Self.t0 + 2 * Self.month) {
            $0.price = 10_990
            $0.currency = "USD"
        }
        let stream = s.lifecycleStream()
        #expect(stream.map(\.type) == [.initialPurchase, .renewal])
        let (first, second) = (stream[0], stream[1])
        #expect(first.id == Self.id("INITIAL_PURCHASE", "1"))
        #expect(first.seq == 2 && first.statement.at == Self.t0)
        #expect(first.statement.price == 9_990 && first.statement.currency == "USD")
        #expect(first.statement.periodType == .normal)
        #expect(first.statement.expiresAt == Self.t0 + Self.month)
        #expect(first.appUserId == "alice")
        #expect(first.entitlements == ["premium"])
        #expect(!first.late)
        #expect(second.id == Self.id("RENEWAL", "2") && second.seq == 3)
        #expect(second.statement.price == 10_990 && second.statement.transactionId == "2")
        // Deriving again (a replay, a retry) says the same, ids included; a redelivery says nothing new.
        #expect(s.lifecycleStream() == stream)
        s.redeliver(2)
        #expect(s.lifecycleStream() == stream)
    }

    @Test(arguments: [
        (Int64?.none, String?.none, LifecyclePeriodType.normal),
        (1, "FREE_TRIAL", .trial), (1, "PAY_AS_YOU_GO", .intro), (2, "PAY_UP_FRONT", .promotional),
        (3, "FREE_TRIAL" as String?, .trial), (3, "PAY_AS_YOU_GO", .offerCode), (4, "PAY_AS_YOU_GO", .winBack),
    ])
    func everyPeriodTypeIsNamed(offerType: Int64?, discount: String?, expected: LifecyclePeriodType) throws {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month) {
            $0.offerType = offerType
            $0.offerDiscountType = discount
        }
        let event = try #require(s.lifecycleStream().first)
        #expect(event.statement.periodType == expected)
        #expect(event.type == (expected == .trial ? .trialStarted : .initialPurchase))
    }

    @Test func aTrialStartsAndConverts() throws {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + 7 * Scenario.day) {
            $0.offerType = 1
            $0.offerDiscountType = "FREE_TRIAL"
            $0.price = 0
        }
        s.purchase("2", product: Self.basic, at: Self.t0 + 7 * Scenario.day, expires: Self.t0 + 37 * Scenario.day) {
            $0.price = 9_990
            $0.currency = "EUR"
        }
        s.purchase("3", product: Self.basic, at: Self.t0 + 37 * Scenario.day, expires: Self.t0 + 67 * Scenario.day)
        let stream = s.lifecycleStream()
        #expect(stream.map(\.type) == [.trialStarted, .trialConverted, .renewal])
        #expect(stream[0].statement.periodType == .trial && stream[0].statement.price == 0)
        #expect(stream[1].id == Self.id("TRIAL_CONVERTED", "2") && stream[1].statement.currency == "EUR")
        #expect(stream[1].statement.periodType == .normal)
    }

    @Test func cancellationAndUncancellation() throws {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        s.renewalInfo(signed: Self.t0 + Scenario.hour, product: Self.basic, autoRenew: true)
        s.renewalInfo(signed: Self.t0 + 3 * Scenario.day, product: Self.basic, autoRenew: false)
        s.renewalInfo(signed: Self.t0 + 5 * Scenario.day, product: Self.basic, autoRenew: true)
        let stream = s.lifecycleStream()
        #expect(stream.map(\.type) == [.initialPurchase, .cancellation, .uncancellation])
        #expect(stream[1].statement.at == Self.t0 + 3 * Scenario.day && stream[1].seq == 3)
        #expect(stream[1].statement.productId == Self.basic)
        #expect(stream[2].id == Self.id("UNCANCELLATION", "auto_renew_on@\(Self.t0 + 5 * Scenario.day)"))
    }

    @Test func aBillingIssueAndItsRecovery() throws {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        let failed = Self.t0 + Self.month + Scenario.hour
        s.notification("DID_FAIL_TO_RENEW", signed: failed)
        s.notification("DID_RECOVER", signed: failed + 2 * Scenario.day)
        s.purchase("2", product: Self.basic, at: failed + 2 * Scenario.day, expires: Self.t0 + 2 * Self.month)
        let stream = s.lifecycleStream()
        #expect(stream.map(\.type) == [.initialPurchase, .billingIssue, .billingRecovered, .renewal])
        #expect(stream[1].statement.at == Self.t0 + Self.month, "billing retry began at the expiry, stated an hour later")
        #expect(stream[3].statement.reason == nil, "a renewal after a billing retry is a renewal, not a resubscription")
    }

    @Test func aGracePeriodStartsWithItsEnd() throws {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        let failed = Self.t0 + Self.month
        let graceEnd = failed + 16 * Scenario.day
        s.renewalInfo(signed: failed, product: Self.basic) {
            $0.isInBillingRetryPeriod = true
            $0.gracePeriodExpiresDate = graceEnd
        }
        let stream = s.lifecycleStream()
        #expect(stream.map(\.type) == [.initialPurchase, .gracePeriodStarted])
        #expect(stream[1].statement.expiresAt == graceEnd)
        #expect(stream[1].entitlements == ["premium"])
    }

    @Test func productChangesPendingAndEffective() throws {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.premium, at: Self.t0, expires: Self.t0 + Self.month)
        // A downgrade chosen for the next renewal: pending.
        s.renewalInfo(signed: Self.t0 + 2 * Scenario.day, product: Self.premium, autoRenewProduct: Self.basic)
        s.purchase("2", product: Self.basic, at: Self.t0 + Self.month, expires: Self.t0 + 2 * Self.month)
        // An upgrade in the middle of the period: effective at once.
        let upgradedAt = Self.t0 + Self.month + 10 * Scenario.day
        s.purchase("3", product: Self.premium, at: upgradedAt, expires: upgradedAt + Self.month) { $0.price = 14_990 }
        let stream = s.lifecycleStream()
        #expect(stream.map(\.type) == [.initialPurchase, .productChange, .productChange, .productChange])
        let pending = stream[1].statement
        #expect(pending.pending && pending.newProductId == Self.basic && pending.productId == Self.premium)
        let downgrade = stream[2].statement
        #expect(!downgrade.pending && downgrade.reason == "downgrade" && downgrade.fromProductId == Self.premium)
        #expect(downgrade.productId == Self.basic && downgrade.at == Self.t0 + Self.month)
        let upgrade = stream[3]
        #expect(upgrade.statement.reason == "upgrade" && upgrade.statement.fromProductId == Self.basic)
        #expect(upgrade.statement.at == upgradedAt && upgrade.statement.price == 14_990)
        #expect(upgrade.entitlements == ["premium", "pro"])
        // The old period ends at the upgrade: said by the PRODUCT_CHANGE, no correction of the downgrade.
        #expect(!stream.contains { $0.type == .correction })
    }

    @Test(arguments: ["VOLUNTARY", "BILLING_RETRY", "PRICE_INCREASE", "PRODUCT_NOT_FOR_SALE"])
    func anExpirationSaysWhy(subtype: String) throws {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        s.notification("EXPIRED", subtype: subtype, signed: Self.t0 + Self.month + Scenario.minute)
        let stream = s.lifecycleStream()
        #expect(stream.map(\.type) == [.initialPurchase, .expiration])
        #expect(stream[1].statement.reason == subtype)
        #expect(stream[1].id == Self.id("EXPIRATION", "expired@\(Self.t0 + Self.month + Scenario.minute)"))
    }

    @Test func fullAndProratedRefundsWithTheirAmountsAndAReversal() throws {
        var s = Scenario(rules: Self.rules)
        let p1 = s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month) {
            $0.price = 9_990
            $0.currency = "USD"
        }
        let p2 = s.purchase("2", product: Self.basic, at: Self.t0 + Self.month, expires: Self.t0 + 2 * Self.month) {
            $0.price = 9_990
            $0.currency = "USD"
        }
        s.refund(p1, at: Self.t0 + 5 * Scenario.day)
        let prorated = Self.t0 + Self.month + 12 * Scenario.day
        s.refund(p2, at: prorated, type: "REFUND_PRORATED", percentage: 60_000)
        let reversed = prorated + 3 * Scenario.day
        s.notification("REFUND_REVERSED", signed: reversed, transaction: "2")
        let stream = s.lifecycleStream()
        #expect(stream.map(\.type) == [.initialPurchase, .renewal, .refund, .refund, .refundReversed])
        let full = stream[2].statement
        #expect(full.reason == "REFUND_FULL" && full.refundAmount == 9_990 && full.transactionId == "1")
        #expect(stream[2].late, "the refund of the first month arrived after the second had begun")
        let partial = stream[3].statement
        #expect(partial.reason == "REFUND_PRORATED" && partial.refundAmount == 5_994 && partial.at == prorated)
        #expect(stream[4].statement.at == reversed && stream[4].statement.transactionId == "2")
        #expect(stream[4].id == Self.id("REFUND_REVERSED", "2@\(prorated)"))
    }

    @Test func aTransferNamesBothUsers() throws {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        s.claim("alice", at: Self.t0)
        s.claim("bob", at: Self.t0 + 3 * Scenario.day)
        let stream = s.lifecycleStream()
        #expect(stream.map(\.type) == [.initialPurchase, .transfer])
        let transfer = stream[1]
        #expect(transfer.statement.fromAppUserIds == ["alice"] && transfer.statement.toAppUserId == "bob")
        #expect(transfer.appUserId == "bob" && transfer.statement.at == Self.t0 + 3 * Scenario.day)
        #expect(stream[0].appUserId == nil, "said before anyone claimed it")
    }

    @Test func oneTimePurchasesAndConsumables() throws {
        var life = Scenario(otid: "2000", rules: Self.rules)
        life.purchase("20", product: "com.example.lifetime", at: Self.t0, expires: nil) { $0.price = 49_990 }
        let lifetime = try #require(life.lifecycleStream().first)
        #expect(lifetime.type == .nonRenewingPurchase && lifetime.statement.price == 49_990)
        #expect(lifetime.entitlements == ["premium"])

        var gems = Scenario(otid: "3000", rules: Self.rules)
        gems.purchase("30", product: "com.example.gems", at: Self.t0, expires: nil) { $0.price = 990 }
        let consumable = try #require(gems.lifecycleStream().first)
        #expect(consumable.type == .consumablePurchase && consumable.entitlements.isEmpty)
    }

    /// Apple's news out of order: the refund of the first month arrives after the renewal was said. The stream says
    /// REFUND after the RENEWAL it follows in valid time, marked late, with the same id in-order delivery gives it.
    @Test func aLateRefundIsSaidAfterTheRenewalMarkedLate() throws {
        var inOrder = Scenario(rules: Self.rules)
        var late = Scenario(rules: Self.rules)
        let refundedAt = Self.t0 + 10 * Scenario.day
        for s in [0, 1] {
            var story = s == 0 ? inOrder : late
            let p1 = story.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
            if s == 0 { story.refund(p1, at: refundedAt) }
            story.purchase("2", product: Self.basic, at: Self.t0 + Self.month, expires: Self.t0 + 2 * Self.month)
            if s == 1 { story.refund(p1, at: refundedAt) }
            if s == 0 { inOrder = story } else { late = story }
        }
        let a = inOrder.lifecycleStream(), b = late.lifecycleStream()
        #expect(a.map(\.type) == [.initialPurchase, .refund, .renewal])
        #expect(b.map(\.type) == [.initialPurchase, .renewal, .refund])
        #expect(Set(a.map(\.id)) == Set(b.map(\.id)), "the same causes, the same ids, whatever the delivery order")
        #expect(!a[1].late && b[2].late)
        #expect(b[2].seq == 3 && b[2].statement.at == refundedAt && b[2].statement.at < b[1].statement.at)
    }

    /// A late input that changes what was said: the purchase Apple made first arrives after its renewal. What was
    /// said as the initial purchase was a renewal: a CORRECTION retracts it; the new statements are marked late.
    @Test func aLatePurchaseCorrectsWhatWasSaid() throws {
        var s = Scenario(rules: Self.rules)
        s.purchase("2", product: Self.basic, at: Self.t0 + Self.month, expires: Self.t0 + 2 * Self.month)
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        let stream = s.lifecycleStream()
        #expect(stream[0].type == .initialPurchase && stream[0].statement.transactionId == "2")
        let second = stream.filter { $0.seq == 2 }
        #expect(second.map(\.type) == [.initialPurchase, .correction, .renewal])
        let correction = second[1]
        #expect(correction.corrects == Self.id("INITIAL_PURCHASE", "2") && correction.retracted)
        #expect(correction.id == Self.id("INITIAL_PURCHASE", "2") + "/corrected@2")
        #expect(correction.statement.type == .initialPurchase, "it repeats what no longer holds")
        #expect(second[0].late && second[0].statement.transactionId == "1")
        // What was said of the same period, told again as what it is now: at the instant already folded, not late.
        #expect(!second[2].late && second[2].id == Self.id("RENEWAL", "2"))
    }

    /// A statement that stands with other content (a grace period Apple extends) is corrected, not rewritten.
    @Test func anExtendedGracePeriodIsACorrection() throws {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.basic, at: Self.t0, expires: Self.t0 + Self.month)
        let failed = Self.t0 + Self.month
        s.renewalInfo(signed: failed, product: Self.basic) {
            $0.isInBillingRetryPeriod = true
            $0.gracePeriodExpiresDate = failed + 6 * Scenario.day
        }
        s.renewalInfo(signed: failed + Scenario.second, product: Self.basic) {
            $0.isInBillingRetryPeriod = true
            $0.gracePeriodExpiresDate = failed + 16 * Scenario.day
        }
        let stream = s.lifecycleStream()
        #expect(stream.map(\.type) == [.initialPurchase, .gracePeriodStarted, .correction])
        #expect(stream[2].corrects == stream[1].id && !stream[2].retracted)
        #expect(stream[2].statement.expiresAt == failed + 16 * Scenario.day)
    }
}
