import Crypto
import Foundation
import LedgerCore
import LedgerStore
import Testing

/// The store's side of "why" (each fact's provenance read from the log) and of the what-if replay (the same log
/// folded under another binding policy or catalog).
@Suite struct WhatIfAndWhyTests {
    static let day: Int64 = 86_400_000
    static let start: Int64 = 1_740_819_600_000  // 2025-03-01T09:00:00Z
    static let monthly = "com.example.premium.monthly"
    static let catalog = Catalog(products: [
        monthly: ProductConfiguration(type: .autoRenewable, entitlements: ["premium"])
    ])

    static func purchase(_ otid: String, at: Int64, expires: Int64? = nil, product: String = monthly) -> LedgerInput {
        var t = TransactionFact(
            transactionId: TransactionID(otid), originalTransactionId: OriginalTransactionID(otid), productId: product,
            purchaseDate: at, environment: .production)
        t.expiresDate = expires ?? at + 30 * day
        t.signedDate = at
        t.webOrderLineItemId = "w" + otid
        return input(.transaction(t), received: at)
    }

    static func claim(_ user: String, _ otid: String, at: Int64) -> LedgerInput {
        let b = BindingClaim(appUserId: AppUserID(user), originalTransactionId: OriginalTransactionID(otid), claimedAt: at)
        return input(.binding(b), received: at)
    }

    static func input(_ fact: Fact, received: Int64) -> LedgerInput {
        .facts(
            [fact], metadata: FactMetadata(source: .decodedJSON, receivedAt: received),
            raw: Array("raw input of \(fact.eventKey) at \(received)".utf8))
    }

    /// Four stories, one subscription each, under `transfer`:
    /// - 1001: alice buys, bob restores it on his account ten days later (a transfer): under `keep` alice keeps it
    ///   and bob's claim is refused. Both answers change.
    /// - 1002: carol buys and nobody else claims: nothing changes.
    /// - 1003: dave buys; erin claims it after it expired: under either policy neither has access at the instant
    ///   and dave's expired entitlement is listed alike: nothing changes.
    /// - 1004: frank buys, gina claims it, then frank claims it back: under `keep` frank never lost it, gina never
    ///   had it; at the instant (after frank's claim back) frank is active either way, gina inactive (transfer) or
    ///   never listed (keep): only gina changes.
    static func stories(_ ledger: Ledger) throws {
        let inputs = [
            purchase("1001", at: start), claim("alice", "1001", at: start + 1000), claim("bob", "1001", at: start + 10 * day),
            purchase("1002", at: start), claim("carol", "1002", at: start + 1000),
            purchase("1003", at: start - 60 * day), claim("dave", "1003", at: start - 60 * day),
            claim("erin", "1003", at: start - 10 * day),
            purchase("1004", at: start), claim("frank", "1004", at: start), claim("gina", "1004", at: start + 2 * day),
            claim("frank", "1004", at: start + 5 * day),
        ]
        for i in inputs { _ = try ledger.appendAndWait([i]) }
    }

    @Test func switchingTransferToKeepChangesExactlyThePredictedCustomers() throws {
        let t = try TemporaryLedger(rules: FoldRules(catalog: Self.catalog, bindingPolicy: .transfer))
        try Self.stories(t.ledger)
        let at = Self.start + 15 * Self.day
        let report = try t.ledger.audit.whatIf(FoldRules(catalog: Self.catalog, bindingPolicy: .keep), at: at)
        #expect(report.subscriptions == 4)
        #expect(report.customers == 7)
        #expect(report.asOf == 12)
        let changed = report.differences.map { "\($0.appUserId):\($0.entitlement)" }
        #expect(changed == ["alice:premium", "bob:premium", "gina:premium"])
        let alice = try #require(report.differences.first { $0.appUserId == "alice" })
        #expect(alice.before?.active == false && alice.after?.active == true)
        #expect(alice.after?.expiresAt == Self.start + 30 * Self.day)
        let bob = try #require(report.differences.first { $0.appUserId == "bob" })
        #expect(bob.before?.active == true && bob.after == nil, "under keep bob never had it")
        let gina = try #require(report.differences.first { $0.appUserId == "gina" })
        #expect(gina.before?.active == false && gina.after == nil)

        // The same rules: no difference. And as of the log before bob's claim (seq 2), nothing differs either.
        #expect(try t.ledger.audit.whatIf(t.ledger.rules, at: at).differences.isEmpty)
        let early = try t.ledger.audit.whatIf(FoldRules(catalog: Self.catalog, bindingPolicy: .keep), at: at, asOf: 2)
        #expect(early.differences.isEmpty && early.asOf == 2)
        // Nothing was written: the stored projections still match a replay under the ledger's own rules.
        #expect(try t.ledger.audit.replay(check: true).differences.isEmpty)
    }

    @Test func aCatalogChangeShowsWhoWouldGainOrLoseAnEntitlement() throws {
        let t = try TemporaryLedger(rules: FoldRules(catalog: Self.catalog))
        try Self.stories(t.ledger)
        let at = Self.start + 15 * Self.day
        // The monthly product would grant "premium" and "extras": every customer active now gains "extras".
        var more = Self.catalog
        more.products[Self.monthly]?.entitlements = ["premium", "extras"]
        let report = try t.ledger.audit.whatIf(FoldRules(catalog: more), at: at)
        #expect(
            report.differences.map { "\($0.appUserId):\($0.entitlement)" } == [
                "alice:extras", "bob:extras", "carol:extras", "dave:extras", "frank:extras", "gina:extras",
            ])
        #expect(report.differences.filter { $0.after?.active == true }.map(\.appUserId) == ["bob", "carol", "frank"])
    }

    /// The operator's grant names its entitlement, not a product: a catalog that takes "premium" from the monthly
    /// product takes it from every buyer but one whose grant keeps it.
    @Test func aGrantKeepsWhatACatalogChangeWouldTake() throws {
        let t = try TemporaryLedger(rules: FoldRules(catalog: Self.catalog))
        try Self.stories(t.ledger)
        let at = Self.start + 15 * Self.day
        let grant = OperatorGrant(
            action: .grant, appUserId: "carol", grantId: "g1", entitlement: "premium", from: Self.start, until: nil)
        _ = try t.ledger.appendAndWait([Self.input(.grant(grant), received: Self.start + 14 * Self.day)])
        var less = Self.catalog
        less.products[Self.monthly]?.entitlements = []
        let report = try t.ledger.audit.whatIf(FoldRules(catalog: less), at: at)
        let lost = report.differences.filter { $0.before?.active == true && $0.after?.active != true }.map(\.appUserId)
        #expect(lost == ["bob", "frank"], "carol keeps premium by her grant")
        #expect(try t.ledger.customer("carol", at: at).entitlements["premium"]?.grantedBy.count == 2)
    }

    @Test func whyNamesEachFactsSeqReceiptAndRawDigest() throws {
        let t = try TemporaryLedger(rules: FoldRules(catalog: Self.catalog))
        try Self.stories(t.ledger)
        let why = try t.ledger.explain("alice", entitlement: "premium", at: Self.start + 11 * Self.day)
        #expect(!why.active && why.reason == .transferred)
        let g = try #require(why.grantors.first)
        #expect(g.facts.map(\.role) == [.purchase, .catalogRule, .owner, .transferredAway])
        #expect(g.facts.map(\.seq) == [1, nil, 2, 3])
        for f in g.facts where f.seq != nil {
            let stored = try #require(try t.ledger.log.event(seq: f.seq!))
            let raw = try #require(try t.ledger.log.raw(of: stored))
            #expect(f.rawDigest == Array(SHA256.hash(data: raw)), "the digest of the raw input the fact came from")
            #expect(f.receivedAt == stored.event.metadata.receivedAt)
        }
        // As known at seq 2 (before bob's claim), alice still had it.
        let before = try t.ledger.explain("alice", entitlement: "premium", at: Self.start + 11 * Self.day, asOf: 2)
        #expect(before.active && before.reason == .purchase && before.asOf == 2)
    }
}
