import Foundation
import LedgerAPI
import LedgerCodec
import LedgerCore
import LedgerStore
import Testing

/// The catalog a ledger folds with is versioned in its log (`RulesChange`): a change applies from its log position
/// on, answers as of an earlier position use the rules of their time, and every check (verify, replay) agrees.
@Suite struct RulesVersionTests {
    static let day: Int64 = 86_400_000
    static let start: Int64 = 1_740_819_600_000  // 2025-03-01T09:00:00Z
    static let monthly = WhatIfAndWhyTests.monthly
    static let premiumOnly = FoldRules(catalog: WhatIfAndWhyTests.catalog)
    static var premiumAndExtras: FoldRules {
        var rules = premiumOnly
        rules.catalog.products[monthly]?.entitlements = ["premium", "extras"]
        return rules
    }

    static func sound(_ ledger: Ledger) throws {
        #expect(try ledger.audit.verify().fault == nil)
        #expect(try ledger.audit.replay(check: true).differences.isEmpty)
    }

    /// A kept answer never outlives a change of rules: the change refolds every subscription, so the cache drops
    /// every answer, and the next read is the new catalog's, byte for byte the uncached read's.
    @Test func aChangeOfRulesEndsEveryKeptAnswer() throws {
        let t = try TemporaryLedger(rules: Self.premiumOnly)
        let cache = AnswerCache<ClockedAnswer>(ledger: t.ledger)
        _ = try t.ledger.appendAndSettle([
            WhatIfAndWhyTests.purchase("1001", at: Self.start), WhatIfAndWhyTests.claim("alice", "1001", at: Self.start),
        ])
        let at = Self.start + Self.day
        func read() throws -> String {
            let (answer, asOf) = try cache.customer("alice", environment: .production, at: at, asOf: nil, answer: ClockedAnswer.init)
            let text = String(decoding: answer.bytes(at: at, asOf: asOf), as: UTF8.self)
            #expect(text == String(decoding: JSONWriter.bytes(of: try t.ledger.customer("alice", at: at)) + [0x0A], as: UTF8.self))
            return text
        }
        let before = try read()
        #expect(!before.contains(#""extras""#) && cache.count == 1)
        _ = try #require(try t.ledger.rulesInLog.apply(Self.premiumAndExtras, raw: [], at: at))
        #expect(cache.count == 0)
        #expect(try read().contains(#""extras""#))
    }

    @Test func aCatalogVersionAppliesFromItsLogPositionOnAndAsOfBeforeItTheOldOne() throws {
        let t = try TemporaryLedger(rules: Self.premiumOnly)
        _ = try t.ledger.appendAndWait([
            WhatIfAndWhyTests.purchase("1001", at: Self.start), WhatIfAndWhyTests.claim("alice", "1001", at: Self.start),
        ])
        let at = Self.start + Self.day
        #expect(try t.ledger.customer("alice", at: at).entitlements.keys.sorted() == ["premium"])

        let seq = try #require(try t.ledger.rulesInLog.apply(Self.premiumAndExtras, raw: Array("{…}".utf8), at: at))
        #expect(seq == 3)
        #expect(try t.ledger.rulesInLog.inForce() == Self.premiumAndExtras)
        #expect(try t.ledger.rulesInLog.inForce(asOf: 2) == Self.premiumOnly)
        // From its position on, the new catalog; as of before it, the old one.
        #expect(try t.ledger.customer("alice", at: at).entitlements.keys.sorted() == ["extras", "premium"])
        #expect(try t.ledger.customer("alice", at: at, asOf: 3).entitlements["extras"]?.active == true)
        #expect(try t.ledger.customer("alice", at: at, asOf: 2).entitlements.keys.sorted() == ["premium"])
        #expect(try t.ledger.explain("alice", entitlement: "extras", at: at, asOf: 2).reason == .noGrantor)
        #expect(try t.ledger.explain("alice", entitlement: "extras", at: at).reason == .purchase)
        try Self.sound(t.ledger)

        // Applying the rules in force again writes nothing.
        #expect(try t.ledger.rulesInLog.apply(Self.premiumAndExtras, raw: [], at: at + 1) == nil)
        #expect(try t.ledger.lastSeq() == 3)

        // A restart with the old configuration file keeps the log's rules.
        try t.reopen()
        #expect(t.ledger.rules == Self.premiumOnly, "the configuration file's rules")
        #expect(try t.ledger.customer("alice", at: at).entitlements["extras"]?.active == true)
        try Self.sound(t.ledger)
    }

    @Test func aBindingPolicyChangeRefoldsTheOwnersAndAnEarlierPositionKeepsTheOldOnes() throws {
        let t = try TemporaryLedger(rules: Self.premiumOnly)  // transfer
        _ = try t.ledger.appendAndWait([
            WhatIfAndWhyTests.purchase("1001", at: Self.start), WhatIfAndWhyTests.claim("alice", "1001", at: Self.start),
            WhatIfAndWhyTests.claim("bob", "1001", at: Self.start + 5 * Self.day),
        ])
        let at = Self.start + 10 * Self.day
        #expect(try t.ledger.customer("bob", at: at).entitlements["premium"]?.active == true)

        var keep = Self.premiumOnly
        keep.bindingPolicy = .keep
        // The what-if replay predicts what the change will do; the change then does exactly that.
        let predicted = try t.ledger.audit.whatIf(keep, at: at).differences.map { "\($0.appUserId):\($0.entitlement)" }
        #expect(predicted == ["alice:premium", "bob:premium"])
        let seq = try #require(try t.ledger.rulesInLog.apply(keep, raw: [], at: at))
        #expect(try t.ledger.customer("bob", at: at).entitlements["premium"] == nil)
        #expect(try t.ledger.customer("alice", at: at).entitlements["premium"]?.active == true)
        #expect(try t.ledger.timeline("1001", at: at)?.refusedClaims.map(\.appUserId) == ["bob"])
        // As of before the change: the transfer stands.
        #expect(try t.ledger.customer("bob", at: at, asOf: seq - 1).entitlements["premium"]?.active == true)
        #expect(try t.ledger.timeline("1001", at: at, asOf: seq - 1)?.owners.map(\.appUserId) == ["alice", "bob"])
        // A what-if replay as of before the change compares with the rules of that time.
        #expect(try t.ledger.audit.whatIf(keep, at: at, asOf: seq - 1).differences.count == 2)
        #expect(try t.ledger.audit.whatIf(keep, at: at).differences.isEmpty)
        // Later claims fold under the new policy incrementally, and agree with a replay.
        _ = try t.ledger.appendAndWait([WhatIfAndWhyTests.claim("carol", "1001", at: Self.start + 12 * Self.day)])
        #expect(try t.ledger.timeline("1001", at: at)?.refusedClaims.map(\.appUserId) == ["bob", "carol"])
        try Self.sound(t.ledger)
        #expect(try t.ledger.rulesInLog.changes().map(\.seq) == [seq])
    }

    @Test func aRulesChangeRoundTripsThroughItsCanonicalBytes() throws {
        var rules = Self.premiumAndExtras
        rules.bindingPolicy = .share
        rules.catalog.products["gems"] = ProductConfiguration(type: .consumable, credits: ["gems": 60, "coins": -1])
        rules.catalog.products["pass"] = ProductConfiguration(
            type: .nonRenewing, entitlements: [], group: "g", duration: CalendarDuration(iso8601: "P1M"), level: -2)
        let fact = Fact.rules(RulesChange(rules: rules, appliedAt: Self.start))
        let bytes = fact.encoded()
        #expect(try Fact(decoding: bytes) == fact)
        #expect(fact.kind == .rules && fact.kind.code == 6 && fact.originalTransactionId == nil)
        // The same rules in another dictionary order are the same bytes.
        var reordered = FoldRules(bindingPolicy: .share)
        for id in rules.catalog.products.keys.sorted().reversed() { reordered.catalog.products[id] = rules.catalog.products[id] }
        #expect(Fact.rules(RulesChange(rules: reordered, appliedAt: Self.start)).encoded() == bytes)
    }
}
