import LedgerCore
import LedgerTestSupport
import Testing

/// Instants at the ends of Int64 were once accepted and made every later read trap (`endedAt - 1` in
/// `Timeline.status`). The door now refuses them, but a ledger written before that still holds them: folding and
/// evaluating such a timeline must give answers, not traps.
@Suite struct ExtremeInstantTests {
    static let product = "com.example.premium.monthly"
    static let t0 = Scenario.utc(2023, 11, 14, 22, 13, 20)

    @Test(arguments: [Int64.min, Int64.min + 1, -1, 0])
    func aPeriodEndingAtOrBeforeTheEpochIsExpired(expires: Int64) throws {
        var s = Scenario()
        s.purchase("1", product: Self.product, at: Self.t0, expires: expires)
        s.claim("u9", at: Self.t0)
        let t = s.timeline()
        let status = t.status(at: Self.t0 + Scenario.day)
        #expect(status.status == .expired)
        #expect(status.expiresAt == expires)
        let view = t.view(at: Self.t0 + Scenario.day, asOf: nil)
        #expect(view.status == "expired")
        #expect(view.periods.map(\.end) == [expires])
        let customer = Entitlements.customer(
            user: "u9", environment: .production, timelines: [t], at: Self.t0 + Scenario.day, asOf: nil,
            rules: s.rules)
        // A period that ends before it begins never granted anything.
        #expect(customer.entitlements[Self.product] == nil)
        #expect(customer.subscriptions == ["1000000741475761"])
    }

    @Test func aPeriodEndingAtTheLastInstantIsActiveEverAfter() {
        var s = Scenario()
        s.purchase("1", product: Self.product, at: Self.t0, expires: .max)
        s.claim("u9", at: Self.t0)
        let t = s.timeline()
        #expect(t.status(at: .max - 1).status == .active)
        #expect(t.status(at: .max).status == .expired)
        let customer = Entitlements.customer(
            user: "u9", environment: .production, timelines: [t], at: Self.t0 + 400 * Scenario.day, asOf: nil,
            rules: s.rules)
        #expect(customer.entitlements[Self.product]?.active == true)
        #expect(customer.entitlements[Self.product]?.expiresAt == .max)
    }

    @Test func statedChangesAtBothEndsFoldWithoutTrapping() {
        var s = Scenario()
        s.purchase("1", product: Self.product, at: Self.t0, expires: Self.t0 + 30 * Scenario.day)
        s.notification("DID_FAIL_TO_RENEW", signed: .min)
        s.notification("DID_FAIL_TO_RENEW", signed: .max)
        s.renewalInfo(signed: .max - 1) { $0.gracePeriodExpiresDate = .max }
        let t = s.timeline()
        #expect(t.statedChanges.map(\.at).contains(.min))
        // Stated at the last instant, long after the expiry: billing retry and grace began at the expiry.
        #expect(t.statedChanges.filter { $0.at == Self.t0 + 30 * Scenario.day }.map(\.kind).sorted { $0.rawValue < $1.rawValue } == [.billingRetry, .gracePeriod])
        #expect(t.status(at: Self.t0 + Scenario.day).status == .active)
        #expect(t.status(at: .max - 1).status == .inGracePeriod)
        #expect(t.status(at: .max).status == .inBillingRetry, "the grace period ends at its last instant")
        #expect(s.incrementalTimeline().timeline == t)
    }

    @Test func aNonRenewingDurationFromTheLastInstantSaturates() {
        let rules = FoldRules(
            catalog: Catalog(products: ["pass": ProductConfiguration(type: .nonRenewing, duration: CalendarDuration(months: 1))]))
        var s = Scenario(rules: rules)
        s.purchase("1", product: "pass", at: .max - 10, expires: nil) { $0.originalPurchaseDate = .max - 10 }
        var low = Scenario(rules: rules)
        low.purchase("1", product: "pass", at: .min, expires: nil) { $0.originalPurchaseDate = .min }
        #expect(s.timeline().periods.first?.end == .max)
        #expect(low.timeline().periods.first?.end.map { $0 > .min } == true)
    }

    @Test func creditsOfAnAbsurdQuantitySaturate() {
        let rules = FoldRules(
            catalog: Catalog(products: ["gems": ProductConfiguration(type: .consumable, credits: ["gems": 60])]))
        var s = Scenario(otid: "7", rules: rules)
        s.purchase("7", product: "gems", at: Self.t0, expires: nil) { $0.quantity = .max / 2 }
        s.claim("u9", at: Self.t0)
        let customer = Entitlements.customer(
            user: "u9", environment: .production, timelines: [s.timeline()], at: Self.t0 + 1, asOf: nil, rules: rules)
        #expect(customer.credits["gems"] == .max)
    }
}
