import LedgerCodec
import LedgerCore
import LedgerTestSupport
import Testing

/// "Why" (DOMAIN §6): each story asks why a user has, or has not, an entitlement, and checks the answer, the reason
/// and the chain of facts: which period, which claim, which refund or transfer, with the seqs that stated them.
@Suite(.blocking) struct ExplanationTests {
    static let monthly = "com.example.premium.monthly"
    static let yearly = "com.example.premium.yearly"
    static let t0 = Scenario.utc(2024, 3, 1, 9)
    static let month = 31 * Scenario.day
    static let rules = FoldRules(
        catalog: Catalog(products: [
            monthly: ProductConfiguration(type: .autoRenewable, entitlements: ["premium"], group: "g1"),
            yearly: ProductConfiguration(type: .autoRenewable, entitlements: ["premium", "extras"], group: "g2"),
        ]))

    static func why(
        _ user: AppUserID, _ scenarios: [Scenario], entitlement: String = "premium", at: UnixMillis,
        rules: FoldRules = rules
    ) -> EntitlementExplanation {
        var events: [UInt64: LedgerEvent] = [:]
        for s in scenarios { for e in s.events { events[e.seq] = e } }
        return Entitlements.explain(
            entitlement: entitlement, user: user, environment: .production, timelines: scenarios.map { $0.timeline() },
            events: events, at: at, asOf: nil, rules: rules)
    }

    /// Each fact as "role@seq" (the catalog rule has no seq).
    static func chain(_ g: GrantorExplanation) -> [String] {
        g.facts.map { "\($0.role.rawValue)@\($0.seq.map { "\($0)" } ?? "-")" }
    }

    @Test func activeByPurchase() throws {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.monthly, at: Self.t0, expires: Self.t0 + Self.month)  // seq 1
        s.claim("alice", at: Self.t0 + Scenario.hour)  // seq 2
        let why = Self.why("alice", [s], at: Self.t0 + 5 * Scenario.day)

        #expect(why.active)
        #expect(why.expiresAt == Self.t0 + Self.month)
        #expect(why.reason == .purchase)
        let g = try #require(why.grantors.first)
        #expect(why.grantors.count == 1)
        #expect(g.transactionId == "1" && g.grants && g.until == Self.t0 + Self.month)
        #expect(Self.chain(g) == ["purchase@1", "catalog_rule@-", "owner@2"])
        #expect(g.facts[0].receivedAt == Self.t0 && g.facts[0].source == .decodedJSON)
        #expect(g.facts[1].detail == "the catalog: \(Self.monthly) grants premium")
        // The first owner owns from the first purchase; the claim's own event is the provenance.
        #expect(g.facts[2].at == Self.t0 && g.facts[2].receivedAt == Self.t0 + Scenario.hour)
    }

    @Test func activeByFamilySharing() throws {
        // A family member's shared copy: its own OTID, FAMILY_SHARED, claimed by the member's app user.
        var s = Scenario(otid: "2000", rules: Self.rules)
        let shared = s.purchase("2001", product: Self.monthly, at: Self.t0, expires: Self.t0 + Self.month) {
            $0.inAppOwnershipType = "FAMILY_SHARED"
        }
        s.claim("kid", at: Self.t0 + Scenario.minute)
        let why = Self.why("kid", [s], at: Self.t0 + Scenario.day)
        #expect(why.active && why.reason == .familySharing)
        #expect(why.grantors.map(\.reason) == [.familySharing])
        #expect(why.grantors[0].facts[0].detail.contains("FAMILY_SHARED"))

        // Then the organiser stops sharing: Family Sharing revokes it, and the answer says so.
        var revoked = s
        let revokeAt = Self.t0 + 3 * Scenario.day
        revoked.refund(shared, at: revokeAt, reason: 0, type: "FAMILY_REVOKE")  // seq 3
        let after = Self.why("kid", [revoked], at: revokeAt + 1)
        #expect(!after.active && after.reason == .revoked)
        #expect(after.grantors[0].until == revokeAt)
        #expect(Self.chain(after.grantors[0]).last == "revoke@3")
    }

    @Test func lostByTransfer() throws {
        var s = Scenario(rules: Self.rules)
        s.purchase("1", product: Self.monthly, at: Self.t0, expires: Self.t0 + Self.month)  // seq 1
        s.claim("alice", at: Self.t0 + Scenario.hour)  // seq 2
        let handover = Self.t0 + 10 * Scenario.day
        s.claim("bob", at: handover)  // seq 3: a restore on bob's account
        let alice = Self.why("alice", [s], at: handover + 1)
        #expect(!alice.active && alice.reason == .transferred)
        #expect(alice.originalTransactionId == "1000000741475761")
        let g = try #require(alice.grantors.first)
        #expect(g.until == handover)
        #expect(Self.chain(g) == ["purchase@1", "catalog_rule@-", "owner@2", "transferred_away@3"])
        #expect(g.facts[3].detail.contains("bob"))

        // Bob has it now, by the transfer.
        let bob = Self.why("bob", [s], at: handover + 1)
        #expect(bob.active && bob.reason == .purchase)
        #expect(Self.chain(bob.grantors[0]) == ["purchase@1", "catalog_rule@-", "owner@3"])
        #expect(bob.grantors[0].facts[2].detail.contains("transfer"))
        // Before the handover, alice had it.
        #expect(Self.why("alice", [s], at: handover - 1).active)
    }

    @Test func lostByRefund() throws {
        var s = Scenario(rules: Self.rules)
        let t = s.purchase("1", product: Self.monthly, at: Self.t0, expires: Self.t0 + Self.month)  // seq 1
        s.claim("alice", at: Self.t0)  // seq 2
        let refundAt = Self.t0 + 4 * Scenario.day
        s.refund(t, at: refundAt)  // seq 3
        let why = Self.why("alice", [s], at: refundAt + Scenario.hour)
        #expect(!why.active && why.reason == .refunded)
        #expect(why.expiresAt == refundAt, "the customer's answer: access ended at the refund")
        let g = try #require(why.grantors.first)
        #expect(g.until == refundAt && !g.grants)
        #expect(Self.chain(g) == ["purchase@1", "catalog_rule@-", "owner@2", "refund@3"])
        #expect(g.facts[3].detail.contains("REFUND_FULL"))
        // As of the instant before the refund, it was active.
        #expect(Self.why("alice", [s], at: refundAt - 1).reason == .purchase)
    }

    @Test func inGracePeriod() throws {
        var s = Scenario(rules: Self.rules)
        let end = Self.t0 + Self.month
        s.purchase("1", product: Self.monthly, at: Self.t0, expires: end)  // seq 1
        s.claim("alice", at: Self.t0)  // seq 2
        let graceEnd = end + 16 * Scenario.day
        s.notification("DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", signed: end + Scenario.minute)  // seq 3
        s.renewalInfo(signed: end + Scenario.minute + 1, product: Self.monthly) {  // seq 4
            $0.isInBillingRetryPeriod = true
            $0.gracePeriodExpiresDate = graceEnd
        }
        let why = Self.why("alice", [s], at: end + 2 * Scenario.day)
        #expect(why.active && why.reason == .gracePeriod)
        #expect(why.expiresAt == graceEnd)
        let g = try #require(why.grantors.first)
        #expect(g.until == graceEnd)
        #expect(Self.chain(g) == ["purchase@1", "catalog_rule@-", "owner@2", "expiry@1", "grace_period@3"])

        // After the grace period, without a renewal: expired.
        let later = Self.why("alice", [s], at: graceEnd + 1)
        #expect(!later.active)
        #expect(later.reason == .billingRetry, "Apple still retries: no expiry was stated")
    }

    @Test func twoGrantorsOfOneEntitlement() throws {
        // Alice holds a monthly and a yearly plan (two subscriptions, each granting premium); the later expiry wins,
        // and the refund of one leaves the other granting.
        var monthly = Scenario(otid: "100", rules: Self.rules)
        let m = monthly.purchase("101", product: Self.monthly, at: Self.t0, expires: Self.t0 + Self.month)  // seq 1
        monthly.claim("alice", at: Self.t0)  // seq 2
        var yearly = Scenario(otid: "200", rules: Self.rules)
        yearly.nextSeq = 10
        yearly.purchase("201", product: Self.yearly, at: Self.t0 + Scenario.day, expires: Self.t0 + 366 * Scenario.day)
        yearly.claim("alice", at: Self.t0 + Scenario.day)  // seq 11

        let both = Self.why("alice", [monthly, yearly], at: Self.t0 + 2 * Scenario.day)
        #expect(both.active && both.reason == .purchase)
        #expect(both.expiresAt == Self.t0 + 366 * Scenario.day && both.originalTransactionId == "200")
        #expect(both.grantors.map(\.transactionId) == ["101", "201"])
        #expect(both.grantors.allSatisfy { $0.grants })
        #expect(Self.chain(both.grantors[1]) == ["purchase@10", "catalog_rule@-", "owner@11"])

        monthly.refund(m, at: Self.t0 + 3 * Scenario.day)  // seq 3
        let one = Self.why("alice", [monthly, yearly], at: Self.t0 + 4 * Scenario.day)
        #expect(one.active, "losing one grantor never revokes what another grants")
        #expect(one.grantors.map(\.transactionId) == ["201"])
        // `extras` only the yearly plan grants.
        #expect(Self.why("alice", [monthly, yearly], entitlement: "extras", at: Self.t0 + 4 * Scenario.day).grantors.count == 1)
    }

    @Test func aClaimRefusedUnderKeepAndAUserWithNothing() throws {
        var rules = Self.rules
        rules.bindingPolicy = .keep
        var s = Scenario(rules: rules)
        s.purchase("1", product: Self.monthly, at: Self.t0, expires: Self.t0 + Self.month)
        s.claim("alice", at: Self.t0)
        s.claim("mallory", at: Self.t0 + Scenario.day)  // seq 3, refused
        let why = Self.why("mallory", [s], at: Self.t0 + 2 * Scenario.day, rules: rules)
        #expect(!why.active && why.reason == .claimRefused && why.expiresAt == nil)
        #expect(Self.chain(why.grantors[0]).contains("claim_refused@3"))
        #expect(why.grantors[0].facts.first { $0.role == .claimRefused }?.detail.contains("alice") == true)

        let nobody = Self.why("nobody", [s], at: Self.t0, rules: rules)
        #expect(!nobody.active && nobody.reason == .noGrantor && nobody.grantors.isEmpty)
    }

    /// Over the fold property test's random histories, at many instants and for every user: the explanation's
    /// grantors agree with the customer's answer (a granting grantor exactly when active, the same periods, the
    /// latest `until` being the answer's expiry) and each ending reason is backed by a fact at or before the instant.
    @Test func theExplanationAgreesWithTheAnswerOverRandomHistories() throws {
        var checked = 0, active = 0, inactive = 0
        for seed in UInt64(1)...300 {
            let (facts, rules) = FoldPropertyTests.history(seed: seed)
            let events = FoldPropertyTests.events(facts)
            let timeline = FoldPropertyTests.fold(events, rules)
            guard let first = timeline.periods.first else { continue }
            var bySeq: [UInt64: LedgerEvent] = [:]
            for e in events { bySeq[e.seq] = e }
            let last = timeline.periods.last!.end ?? first.start
            for k in 0..<12 {
                let at = first.start - Scenario.day + (last + 45 * Scenario.day - first.start) * Int64(k) / 11
                for user in ["u1", "u2", "u3", "t1", "t2", "t3"] {
                    let c = Entitlements.customer(
                        user: AppUserID(user), environment: .production, timelines: [timeline], at: at, asOf: nil,
                        rules: rules)
                    for entitlement in FoldPropertyTests.products {
                        let why = Entitlements.explain(
                            entitlement: entitlement, user: AppUserID(user), environment: .production,
                            timelines: [timeline], events: bySeq, at: at, asOf: nil, rules: rules)
                        let answer = c.entitlements[entitlement]
                        let context = "seed \(seed) at \(at) \(user) \(entitlement)"
                        #expect(why.active == (answer?.active ?? false), "\(context)")
                        #expect(why.reason.grants == why.active, "\(context): \(why.reason)")
                        #expect(why.grantors.contains { $0.grants } == why.active, "\(context)")
                        if let answer, answer.active {
                            active += 1
                            #expect(
                                why.grantors.map(\.transactionId) == answer.grantedBy.map(\.transactionId), "\(context)")
                            // Nil (no end) is the latest.
                            let ends = why.grantors.map(\.until)
                            let latest = ends.contains(nil) ? nil : ends.compactMap { $0 }.max()
                            #expect(latest == answer.expiresAt, "\(context)")
                        } else if answer != nil {
                            inactive += 1
                            let g = try #require(why.grantors.first, "\(context)")
                            #expect(!g.grants && g.until.map { $0 <= at } ?? false, "\(context): \(g.reason)")
                            // The reason is one of the facts listed, at the instant it ended.
                            let backing: [ExplanationReason: [ExplainedFactRole]] = [
                                .refunded: [.refund], .revoked: [.revoke], .transferred: [.transferredAway],
                                .expired: [.expiry], .billingRetry: [.expiry], .upgraded: [.upgrade],
                            ]
                            let roles = try #require(backing[g.reason], "\(context): \(g.reason)")
                            #expect(
                                g.facts.contains { roles.contains($0.role) && $0.at == g.until }, "\(context): \(g.reason)")
                        } else {
                            #expect(why.grantors.allSatisfy { $0.reason == .claimRefused }, "\(context)")
                        }
                        checked += 1
                    }
                }
            }
        }
        #expect(active > 500 && inactive > 500, "the histories reach both answers: \(active) active, \(inactive) inactive")
        #expect(checked > 10_000)
    }
}
