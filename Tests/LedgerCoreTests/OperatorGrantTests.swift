import LedgerCore
import LedgerTestSupport
import Testing

/// The operator's grants: an entitlement granted to an app user for a span, in the same log as
/// Apple's facts, shown in the customer's answer with its cause and expiry, ended early by a revoke, and explained.
@Suite struct OperatorGrantTests {
    static let monthly = "com.example.premium.monthly"
    static let t0 = Scenario.utc(2024, 3, 1, 9)
    static let day = Scenario.day
    static let rules = FoldRules(
        catalog: Catalog(products: [
            monthly: ProductConfiguration(type: .autoRenewable, entitlements: ["premium"], group: "g1")
        ]))

    static func grant(
        _ id: String, _ entitlement: String = "premium", from: UnixMillis, until: UnixMillis?, reason: String? = nil,
        environment: AppStoreEnvironment = .production
    ) -> OperatorGrant {
        OperatorGrant(
            action: .grant, appUserId: "alice", environment: environment, grantId: id, entitlement: entitlement,
            from: from, until: until, reason: reason)
    }

    static func revoke(_ id: String?, entitlement: String? = nil, at: UnixMillis, reason: String? = nil) -> OperatorGrant {
        OperatorGrant(
            action: .revoke, appUserId: "alice", grantId: id, entitlement: entitlement, from: at, reason: reason)
    }

    static func customer(
        _ facts: [(UInt64, OperatorGrant)], timelines: [Timeline] = [], at: UnixMillis,
        environment: AppStoreEnvironment = .production
    ) -> CustomerView {
        Entitlements.customer(
            user: "alice", environment: environment, timelines: timelines,
            grants: OperatorGrants.fold(facts.map { (seq: $0.0, grant: $0.1) }), at: at, asOf: nil, rules: rules)
    }

    @Test func aGrantGrantsOverItsSpanAndShowsItsCauseAndExpiry() {
        let facts: [(UInt64, OperatorGrant)] = [
            (1, Self.grant("g1", from: Self.t0, until: Self.t0 + 7 * Self.day, reason: "support ticket 4411"))
        ]
        let before = Self.customer(facts, at: Self.t0 - 1)
        #expect(before.entitlements["premium"] == nil, "nothing before the grant starts")
        #expect(before.grants.map(\.active) == [false], "the grant is listed, not yet granting")

        let during = Self.customer(facts, at: Self.t0 + 3 * Self.day)
        let premium = try! #require(during.entitlements["premium"])
        #expect(premium.active)
        #expect(premium.expiresAt == Self.t0 + 7 * Self.day)
        #expect(premium.grantId == "g1")
        #expect(premium.willRenew == false)
        #expect(premium.latestPurchaseDate == Self.t0)
        #expect(premium.grantedBy.map(\.grantId) == ["g1"])
        #expect(premium.grantedBy.first?.reason == "support ticket 4411")
        #expect(during.activeProductIds.isEmpty, "a grant is no product")

        let after = Self.customer(facts, at: Self.t0 + 7 * Self.day)
        #expect(after.entitlements["premium"]?.active == false, "the grant's end is excluded")
        #expect(after.entitlements["premium"]?.expiresAt == Self.t0 + 7 * Self.day)
        #expect(after.entitlements["premium"]?.grantId == "g1")
    }

    @Test func aRevokeEndsTheNamedGrantOrEveryGrantOfItsEntitlementKnownBeforeIt() {
        let g1 = Self.grant("g1", from: Self.t0, until: Self.t0 + 30 * Self.day)
        let g2 = Self.grant("g2", from: Self.t0 + Self.day, until: nil)
        let g3 = Self.grant("g3", "extras", from: Self.t0, until: nil)

        // By id: g1 ends at t0 + 10 days; g2 (no end) goes on.
        let byId: [(UInt64, OperatorGrant)] = [(1, g1), (2, g2), (3, Self.revoke("g1", at: Self.t0 + 10 * Self.day))]
        let records = OperatorGrants.fold(byId.map { (seq: $0.0, grant: $0.1) })
        #expect(records.map(\.grantId) == ["g1", "g2"])
        #expect(records[0].end == Self.t0 + 10 * Self.day)
        #expect(records[0].revokeSeq == 3)
        #expect(records[1].end == nil)
        let at = Self.t0 + 20 * Self.day
        #expect(Self.customer(byId, at: at).entitlements["premium"]?.grantedBy.map(\.grantId) == ["g2"])

        // By entitlement: every premium grant known before the revoke ends; the extras grant and a premium grant
        // appended after the revoke do not.
        let g4 = Self.grant("g4", from: Self.t0 + 15 * Self.day, until: nil)
        let byEntitlement: [(UInt64, OperatorGrant)] = [
            (1, g1), (2, g2), (3, g3), (4, Self.revoke(nil, entitlement: "premium", at: Self.t0 + 10 * Self.day)), (5, g4),
        ]
        let view = Self.customer(byEntitlement, at: at)
        #expect(view.entitlements["premium"]?.active == true)
        #expect(view.entitlements["premium"]?.grantedBy.map(\.grantId) == ["g4"], "only the grant made after the revoke")
        #expect(view.entitlements["extras"]?.active == true)
        let atFive = Self.customer(byEntitlement, at: Self.t0 + 5 * Self.day)
        #expect(atFive.entitlements["premium"]?.grantedBy.map(\.grantId) == ["g1", "g2"], "before the revoke's instant")

        // An earlier revoke stands against a later one that would end the grant later.
        let twice: [(UInt64, OperatorGrant)] = [
            (1, g1), (2, Self.revoke("g1", at: Self.t0 + 5 * Self.day)), (3, Self.revoke("g1", at: Self.t0 + 9 * Self.day)),
        ]
        #expect(OperatorGrants.fold(twice.map { (seq: $0.0, grant: $0.1) }).first?.end == Self.t0 + 5 * Self.day)
    }

    @Test func aGrantAndAPurchaseCompeteOnExpiryAndLosingOneKeepsTheOther() {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.monthly, at: Self.t0, expires: Self.t0 + 30 * Self.day)
        s.claim("alice", at: Self.t0)
        let timeline = s.timeline()
        // The grant runs past the subscription's expiry: it decides the answer while both grant.
        let facts: [(UInt64, OperatorGrant)] = [(10, Self.grant("g1", from: Self.t0 + Self.day, until: Self.t0 + 40 * Self.day))]
        let both = Self.customer(facts, timelines: [timeline], at: Self.t0 + 2 * Self.day)
        let premium = try! #require(both.entitlements["premium"])
        #expect(premium.active)
        #expect(premium.expiresAt == Self.t0 + 40 * Self.day)
        #expect(premium.grantId == "g1")
        #expect(Set(premium.grantedBy.map { $0.grantId ?? $0.transactionId }) == ["g1", "1"])

        // A grant that ends first leaves the purchase deciding.
        let short: [(UInt64, OperatorGrant)] = [(10, Self.grant("g1", from: Self.t0 + Self.day, until: Self.t0 + 3 * Self.day))]
        let bought = try! #require(Self.customer(short, timelines: [timeline], at: Self.t0 + 2 * Self.day).entitlements["premium"])
        #expect(bought.grantId == nil)
        #expect(bought.transactionId == "1")
        #expect(bought.expiresAt == Self.t0 + 30 * Self.day)

        // After the subscription expired, the grant alone keeps the entitlement.
        let later = Self.customer(facts, timelines: [timeline], at: Self.t0 + 35 * Self.day)
        #expect(later.entitlements["premium"]?.active == true)
        #expect(later.entitlements["premium"]?.grantedBy.map(\.grantId) == ["g1"])
    }

    @Test func aGrantShowsOnlyInItsEnvironmentAndAnIdStatedTwiceKeepsTheFirstGrant() {
        let facts: [(UInt64, OperatorGrant)] = [
            (1, Self.grant("g1", from: Self.t0, until: nil, environment: .sandbox)),
            (2, Self.grant("g1", from: Self.t0, until: nil, environment: .production)),
            (3, Self.grant("g1", "extras", from: Self.t0, until: Self.t0 + Self.day, environment: .production)),
        ]
        let at = Self.t0 + 2 * Self.day
        #expect(Self.customer(facts, at: at, environment: .sandbox).entitlements.keys.sorted() == ["premium"])
        let production = Self.customer(facts, at: at)
        #expect(production.entitlements.keys.sorted() == ["premium"], "the second g1 of Production changes nothing")
        #expect(production.grants.count == 1)
    }

    @Test func whyNamesTheGrantItsReasonAndTheRevoke() {
        let facts: [(UInt64, OperatorGrant)] = [
            (1, Self.grant("g1", from: Self.t0, until: Self.t0 + 30 * Self.day, reason: "beta tester")),
            (2, Self.revoke("g1", at: Self.t0 + 10 * Self.day, reason: "left the beta")),
        ]
        let grants = OperatorGrants.fold(facts.map { (seq: $0.0, grant: $0.1) })
        func why(at: UnixMillis) -> EntitlementExplanation {
            Entitlements.explain(
                entitlement: "premium", user: "alice", environment: .production, timelines: [], grants: grants,
                events: [:], at: at, asOf: nil, rules: Self.rules)
        }
        let granting = why(at: Self.t0 + Self.day)
        #expect(granting.active)
        #expect(granting.reason == .operatorGrant)
        #expect(granting.grantId == "g1")
        #expect(granting.productId == nil)
        #expect(granting.grantors.first?.facts.map(\.role) == [.operatorGrant])
        #expect(granting.grantors.first?.facts.first?.detail.contains("beta tester") == true)

        let revoked = why(at: Self.t0 + 20 * Self.day)
        #expect(!revoked.active)
        #expect(revoked.reason == .grantRevoked)
        #expect(revoked.expiresAt == Self.t0 + 10 * Self.day)
        #expect(revoked.grantors.first?.facts.map(\.role) == [.operatorGrant, .grantRevoked])
        #expect(revoked.grantors.first?.facts.last?.seq == 2)
        #expect(revoked.grantors.first?.facts.last?.detail.contains("left the beta") == true)

        let ended = Entitlements.explain(
            entitlement: "premium", user: "alice", environment: .production, timelines: [],
            grants: OperatorGrants.fold([(seq: 1, grant: Self.grant("g2", from: Self.t0, until: Self.t0 + Self.day))]),
            events: [:], at: Self.t0 + 2 * Self.day, asOf: nil, rules: Self.rules)
        #expect(ended.reason == .grantEnded)
        #expect(ended.grantors.first?.facts.map(\.role) == [.operatorGrant, .expiry])
    }

    @Test func theAnswerHoldsBetweenTheGrantsInstantsAndNoFurther() {
        let grants = OperatorGrants.fold([(seq: 1, grant: Self.grant("g1", from: Self.t0, until: Self.t0 + Self.day))])
        let inside = Entitlements.unchangedSpan(of: [], grants: grants, around: Self.t0 + 5)
        #expect(inside == (Self.t0 + 1)..<(Self.t0 + Self.day))
        let after = Entitlements.unchangedSpan(of: [], grants: grants, around: Self.t0 + 2 * Self.day)
        #expect(after.lowerBound == Self.t0 + Self.day + 1)
        #expect(after.upperBound == .max)
    }
}
