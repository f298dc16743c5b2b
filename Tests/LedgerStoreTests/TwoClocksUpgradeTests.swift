import Foundation
import LMDB
import LedgerCore
import LedgerStore
import Logging
import Testing

/// A ledger written before the fold of two clocks (schema 5) holds the claims its decoder stated then: a token claim
/// that names the caller's user dated at the transaction's purchase, even when the caller restored it ten days later.
/// Events are never rewritten: opened for writing, the ledger is upgraded by refolding that log, and the new rules
/// give the true owners and the late grace period from the facts it already holds; `verify` passes.
@Suite struct TwoClocksUpgradeTests {
    static let day: Int64 = 86_400_000
    static let t0: Int64 = 1_709_283_600_000
    static let token = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
    static let rules = FoldRules(
        catalog: Catalog(products: [
            "com.example.premium.monthly": ProductConfiguration(type: .autoRenewable, entitlements: ["premium"])
        ]))

    /// The facts a schema-5 decoder stated for Zoe's purchase and Adam's restore of it, and for a grace period
    /// Apple stated two hours after Alice's month ended.
    static func schemaFiveInputs() -> [LedgerInput] {
        var bought = transaction("900", otid: "900", purchase: t0)
        bought.signedDate = t0 + 1_000
        bought.appAccountToken = token
        var restored = bought
        restored.signedDate = t0 + 10 * day
        func claims(_ user: String, at: Int64) -> [Fact] {
            [
                .binding(BindingClaim(appUserId: AppUserID(user), originalTransactionId: "900", claimedAt: at)),
                // Dated at the purchase, whoever posted it and when.
                .binding(
                    BindingClaim(
                        appUserId: AppUserID(user), originalTransactionId: "900", claimedAt: t0, cause: .appAccountToken,
                        appAccountToken: token)),
            ]
        }
        var alices = transaction("901", otid: "901", purchase: t0)
        alices.signedDate = t0
        let end = alices.expiresDate!
        var grace = RenewalInfoFact(originalTransactionId: "901")
        grace.signedDate = end + 2 * 3_600_000
        grace.productId = alices.productId
        grace.autoRenewStatus = true
        grace.isInBillingRetryPeriod = true
        grace.gracePeriodExpiresDate = end + 16 * day
        return [
            input([.transaction(bought)] + claims("zoe", at: t0 + 1_000), receivedAt: t0 + 2_000),
            input([.transaction(restored)] + claims("adam", at: t0 + 10 * day), receivedAt: t0 + 10 * day),
            input(
                [.transaction(alices), .binding(BindingClaim(appUserId: "alice", originalTransactionId: "901", claimedAt: t0))],
                receivedAt: t0),
            input([.renewal(grace)], receivedAt: end + 2 * 3_600_000),
        ]
    }

    @Test func aSchemaFiveLedgerRefoldsToTheTrueOwnersAndTheLateGracePeriod() throws {
        let t = try TemporaryLedger(rules: Self.rules)
        _ = try t.ledger.appendAndWait(Self.schemaFiveInputs())
        let copy = NSTemporaryDirectory() + "ledger-schema5-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        try t.ledger.copy(to: copy)

        // Make the copy a schema-5 ledger whose projections are not this build's: schema 5 in `meta`, and each
        // stored timeline replaced by the other subscription's (what an older fold left is rebuilt, not trusted).
        do {
            let env = try Environment(path: copy)
            let meta = try env.openDatabase("meta")
            let timelines = try env.openDatabase("timelines")
            try env.write { txn in
                try txn.put(meta, key: Array("schema".utf8), value: bigEndian(5))
                let stored = try entries(of: timelines, txn)
                #expect(stored.count == 2)
                try txn.put(timelines, key: stored[0].0, value: stored[1].1)
                try txn.put(timelines, key: stored[1].0, value: stored[0].1)
            }
        }

        let upgraded = try Ledger(directory: copy, rules: Self.rules, logger: Logger(label: "t"))
        defer { upgraded.close() }
        let report = try upgraded.audit.verify()
        #expect(report.ok, "\(report.fault ?? "")")
        #expect(try upgraded.audit.replay(check: true).differences.isEmpty)

        // Zoe owns it from her purchase until Adam's restore; Adam from then on (the token stays Zoe's).
        let before = Self.t0 + 5 * Self.day, after = Self.t0 + 12 * Self.day
        #expect(try upgraded.customer("zoe", at: before).entitlements["premium"]?.active == true)
        #expect(try upgraded.customer("adam", at: before).entitlements["premium"]?.active != true)
        #expect(try upgraded.customer("zoe", at: after).entitlements["premium"]?.active == false)
        #expect(try upgraded.customer("adam", at: after).entitlements["premium"]?.active == true)
        let owners = try #require(try upgraded.timeline("900", at: after)).owners
        #expect(owners.map(\.appUserId) == ["zoe", "adam"], "\(owners)")
        #expect(owners.map(\.from) == [Self.t0, Self.t0 + 10 * Self.day])

        // The grace period Apple stated two hours late began at the expiry.
        let end = Self.t0 + 30 * Self.day
        #expect(try upgraded.timeline("901", at: end + 3_600_000)?.status == "in_grace_period")
        #expect(try upgraded.customer("alice", at: end + 3_600_000).entitlements["premium"]?.active == true)
    }
}
