import LedgerCore
import LedgerTestSupport
import Testing

/// Owners (DOMAIN §5) and entitlements (DOMAIN §6).
@Suite struct OwnersAndEntitlementsTests {
    static let monthly = "com.example.premium.monthly"
    static let lifetime = "com.example.lifetime"
    static let pass = "com.example.pass.month"
    static let gems = "com.example.gems60"
    static let t0 = Scenario.utc(2024, 3, 1, 9)
    static let month = 31 * Scenario.day
    static let rules = FoldRules(
        catalog: Catalog(products: [
            monthly: ProductConfiguration(type: .autoRenewable, entitlements: ["premium"], group: "g1"),
            lifetime: ProductConfiguration(type: .nonConsumable, entitlements: ["premium", "extras"]),
            pass: ProductConfiguration(type: .nonRenewing, entitlements: ["premium"], duration: CalendarDuration(months: 1)),
            gems: ProductConfiguration(type: .consumable, credits: ["gems": 60]),
        ]))

    static func customer(_ user: AppUserID, _ timelines: [Timeline], at: UnixMillis, policy: BindingPolicy = .transfer)
        -> CustomerView
    {
        var rules = Self.rules
        rules.bindingPolicy = policy
        return Entitlements.customer(
            user: user, environment: .production, timelines: timelines, at: at, asOf: nil, rules: rules)
    }

    @Test func aTransferMovesAccessAtTheClaimInstant() throws {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.monthly, at: Self.t0, expires: Self.t0 + Self.month)
        s.claim("alice", at: Self.t0 + Scenario.hour)
        let handover = Self.t0 + 10 * Scenario.day
        s.claim("bob", at: handover)
        let t = s.timeline()

        #expect(t.owner(at: Self.t0) == ["alice"], "the first owner owns from the first purchase")
        #expect(t.owner(at: handover - 1) == ["alice"])
        #expect(t.owner(at: handover) == ["bob"])
        #expect(
            t.ownerIntervals.map { [$0.appUserId.rawValue, "\($0.from)", "\($0.to ?? -1)", $0.cause.rawValue] } == [
                ["alice", "\(Self.t0)", "\(handover)", "claim"], ["bob", "\(handover)", "-1", "transfer"],
            ])
        // As known before bob's claim (asOf 2), alice still owned it after the handover instant.
        #expect(s.timeline(asOf: 2).owner(at: handover + 1) == ["alice"])

        let aliceBefore = Self.customer("alice", [t], at: handover - 1)
        let aliceAfter = Self.customer("alice", [t], at: handover + 1)
        let bobAfter = Self.customer("bob", [t], at: handover + 1)
        #expect(aliceBefore.entitlements["premium"]?.active == true)
        #expect(aliceAfter.entitlements["premium"]?.active == false, "the old owner keeps the entitlement listed, inactive")
        #expect(bobAfter.entitlements["premium"]?.active == true)
        #expect(bobAfter.entitlements["premium"]?.grantedBy.map(\.transactionId) == ["1"])
        // Both histories show the move.
        #expect(aliceAfter.bindings.map(\.to) == [handover])
        #expect(bobAfter.bindings.map(\.cause) == ["transfer"])
        #expect(t.changes(rules: Self.rules).filter { $0.kind == .ownerChanged }.map(\.detail) == ["alice", "bob"])
    }

    @Test func keepRefusesLaterClaims() {
        var rules = Self.rules
        rules.bindingPolicy = .keep
        var s = Scenario(rules: rules)
        s.purchase("1", product: Self.monthly, at: Self.t0, expires: Self.t0 + Self.month)
        s.claim("alice", at: Self.t0)
        s.claim("bob", at: Self.t0 + Scenario.day)
        s.claim("alice", at: Self.t0 + 2 * Scenario.day)
        let t = s.timeline()
        #expect(t.owner(at: Self.t0 + 3 * Scenario.day) == ["alice"])
        #expect(t.owners.count == 1)
        #expect(t.refusedClaims.map(\.appUserId) == ["bob"])
        let bob = Self.customer("bob", [t], at: Self.t0 + 3 * Scenario.day, policy: .keep)
        #expect(bob.entitlements.isEmpty)
        #expect(bob.refusedClaims.map(\.originalTransactionId) == [s.originalTransactionId.rawValue])
    }

    @Test func shareAddsOwners() {
        var rules = Self.rules
        rules.bindingPolicy = .share
        var s = Scenario(rules: rules)
        s.purchase("1", product: Self.monthly, at: Self.t0, expires: Self.t0 + Self.month)
        s.claim("alice", at: Self.t0)
        s.claim("bob", at: Self.t0 + Scenario.day)
        let t = s.timeline()
        #expect(t.owner(at: Self.t0 + 1) == ["alice"])
        #expect(t.owner(at: Self.t0 + 2 * Scenario.day) == ["alice", "bob"])
        for user: AppUserID in ["alice", "bob"] {
            #expect(Self.customer(user, [t], at: Self.t0 + 2 * Scenario.day).entitlements["premium"]?.active == true)
        }
    }

    @Test func anAppAccountTokenClaimsForItsUser() {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.monthly, at: Self.t0, expires: Self.t0 + Self.month) {
            $0.appAccountToken = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        }
        s.purchase("2", product: Self.monthly, at: Self.t0 + Self.month, expires: Self.t0 + 2 * Self.month) {
            $0.appAccountToken = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        }
        let t = s.timeline()
        #expect(t.owners.count == 1, "the renewal's token names the same owner: no move")
        #expect(t.owners[0].cause == .appAccountToken)
        #expect(t.owner(at: Self.t0) == ["7e3fb20b-4cdb-47cc-936d-99d65f608138"])
    }

    @Test func severalGrantorsLatestExpiryWinsAndLosingOneKeepsTheOther() {
        var sub = Scenario(otid: "100", rules: Self.rules)
        sub.purchase("100", product: Self.monthly, at: Self.t0, expires: Self.t0 + Self.month)
        sub.claim("alice", at: Self.t0)
        var life = Scenario(otid: "200", rules: Self.rules)
        let bought = life.purchase("200", product: Self.lifetime, at: Self.t0 + Scenario.day, expires: nil)
        life.claim("alice", at: Self.t0 + Scenario.day)

        let both = Self.customer("alice", [sub.timeline(), life.timeline()], at: Self.t0 + 2 * Scenario.day)
        let premium = both.entitlements["premium"]
        #expect(premium?.active == true)
        #expect(premium?.expiresAt == nil, "a lifetime grant outlasts any expiry")
        #expect(premium?.productId == Self.lifetime)
        #expect(premium?.grantedBy.map(\.originalTransactionId) == ["100", "200"])
        #expect(both.entitlements["extras"]?.active == true)
        #expect(both.subscriptions == ["100", "200"])

        let refundAt = Self.t0 + 3 * Scenario.day
        life.refund(bought, at: refundAt)
        let afterRefund = Self.customer("alice", [sub.timeline(), life.timeline()], at: refundAt + 1)
        #expect(afterRefund.entitlements["premium"]?.active == true, "the subscription still grants it")
        #expect(afterRefund.entitlements["premium"]?.expiresAt == Self.t0 + Self.month)
        #expect(afterRefund.entitlements["extras"]?.active == false)
    }

    @Test func aNonRenewingPassLastsItsCatalogDuration() {
        var s = Scenario(otid: "300", rules: Self.rules)
        let bought = Scenario.utc(2024, 1, 31, 10)
        s.purchase("300", product: Self.pass, at: bought, expires: nil)
        s.claim("alice", at: bought)
        let t = s.timeline()
        #expect(t.periods[0].end == Scenario.utc(2024, 2, 29, 10), "January 31 + P1M is the last day of February")
        #expect(Self.customer("alice", [t], at: Scenario.utc(2024, 2, 29, 9)).entitlements["premium"]?.active == true)
        let after = Self.customer("alice", [t], at: Scenario.utc(2024, 2, 29, 10))
        #expect(after.entitlements["premium"]?.active == false)
        #expect(after.entitlements["premium"]?.expiresAt == Scenario.utc(2024, 2, 29, 10))
    }

    @Test func consumableCreditsAndTheirRefund() {
        var s = Scenario(otid: "400", rules: Self.rules)
        let bought = s.purchase("400", product: Self.gems, at: Self.t0, expires: nil) { $0.quantity = 2 }
        s.claim("alice", at: Self.t0)
        var other = Scenario(otid: "401", rules: Self.rules)
        other.purchase("401", product: Self.gems, at: Self.t0 + Scenario.hour, expires: nil)
        other.claim("alice", at: Self.t0 + Scenario.hour)
        let before = Self.customer("alice", [s.timeline(), other.timeline()], at: Self.t0 + 2 * Scenario.hour)
        #expect(before.credits == ["gems": 180])
        #expect(before.entitlements.isEmpty, "consumables grant credits, not entitlements")

        s.refund(bought, at: Self.t0 + Scenario.day)
        let after = Self.customer("alice", [s.timeline(), other.timeline()], at: Self.t0 + 2 * Scenario.day)
        #expect(after.credits == ["gems": 60])
    }

    @Test func anUnknownProductGrantsItsOwnName() {
        var s = Scenario(otid: "500")
        s.purchase("500", product: "com.example.surprise", at: Self.t0, expires: Self.t0 + Self.month)
        s.claim("alice", at: Self.t0)
        let c = Entitlements.customer(
            user: "alice", environment: .production, timelines: [s.timeline()], at: Self.t0 + 1, asOf: 7,
            rules: FoldRules())
        #expect(c.entitlements["com.example.surprise"]?.active == true)
        #expect(c.asOf == 7)
    }
}
