import Foundation
import LMDB
import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerTestSupport
import Logging
import Testing

/// An upgrade mid-period, as Apple tells it: a yearly plan bought for 99.99 USD, upgraded after 90 days to the pro
/// plan (149.99 USD a year), and the old transaction's revision that marks it upgraded (a V2 notification of the
/// upgrade carries only the new transaction, so that revision may never come). Apple refunds the unused 275 days of
/// the old year without stating an amount: revenue shows it as an estimated credit, and MRR spreads the old price
/// over the year it bought, whatever the order the inputs arrive in.
@Suite struct UpgradeCreditStoryTests {
    static let day = AppleFixtures.day
    static let epoch = AppleFixtures.epoch
    static let otid = "2000000000000001"
    static let pro = "com.example.premium.pro.yearly"
    static let upgradeAt = epoch + 90 * day

    static func transaction(upgraded: Bool) -> [UInt8] {
        var extra: [String: Any] = [:]
        if upgraded { extra["revocationDate"] = upgradeAt }
        return Array(AppleFixtures.signedTransaction(AppleFixtures.v2Transaction(
            transactionId: otid, originalTransactionId: otid, productId: AppleFixtures.yearly, purchaseDate: epoch,
            expiresDate: epoch + 365 * day, signedDate: upgraded ? upgradeAt : epoch,
            isUpgraded: upgraded ? true : nil, price: 99_990, currency: "USD", extra: extra)).utf8)
    }

    /// A UTC day in the old period, and one after the upgrade (buckets 0 and 2): where MRR is read.
    static let mrrDays: [UnixMillis] = {
        let inOldPeriod = (epoch / day + 10) * day
        let afterUpgrade = (upgradeAt / day + 10) * day
        return [inOldPeriod, inOldPeriod + day, afterUpgrade, afterUpgrade + day]
    }()

    static let inputs: [[UInt8]] = [
        transaction(upgraded: false),
        Array(AppleFixtures.signedTransaction(AppleFixtures.v2Transaction(
            transactionId: "2000000000000002", originalTransactionId: otid, productId: pro, purchaseDate: upgradeAt,
            expiresDate: upgradeAt + 365 * day, signedDate: upgradeAt, webOrderLineItemId: "3000000000000002",
            price: 149_990, currency: "USD")).utf8),
        transaction(upgraded: true),
    ]

    struct Answers: Equatable {
        var entries: [[String]]
        var totals: RevenueTotals?
        /// MRR in USD on a day of the old period and on a day after the upgrade, maintained and folded.
        var mrr: [Int64?]
    }

    static func answers(order: [Int]) async throws -> Answers {
        let story = try StoryLedger("upgrade-credit")
        defer { story.close() }
        let ledger = story.ledger
        for i in order {
            let results = try await story.ingest(inputs[i], claimedBy: "u1", now: upgradeAt + day)
            #expect(results.allSatisfy { $0.status == .appended }, "\(results.map(\.status))")
        }
        #expect(try ledger.audit.verify().ok)
        #expect(try ledger.audit.replay(check: true).differences.isEmpty)

        let revenue = try ledger.revenue(user: AppUserID("u1"))
        var mrr: [Int64?] = []
        for folding in [false, true] {
            let figures = try ledger.metrics(boundaries: mrrDays, folding: folding)
            #expect(figures.maintained == !folding)
            mrr += [figures.buckets[0].mrr["USD"], figures.buckets[2].mrr["USD"]]
        }
        return Answers(
            entries: revenue.entries.map {
                [$0.kind.rawValue, String($0.at - epoch), $0.transactionId, String($0.amount)]
            },
            totals: revenue.totals["USD"], mrr: mrr)
    }

    @Test func anUpgradeCreditsTheUnusedShareAndMRRSpreadsTheYearInEveryOrder() async throws {
        var totals = RevenueTotals()
        totals.purchases = 2
        totals.gross = 249_980
        totals.upgradeCredits = 1
        // 99,990 × 275 ÷ 365 = 75,334.93: the unused 275 days of the year.
        totals.credited = 75_335
        let expected = Answers(
            entries: [
                ["purchase", "0", Self.otid, "99990"],
                ["upgrade_credit", String(90 * Self.day), Self.otid, "-75335"],
                ["purchase", String(90 * Self.day), "2000000000000002", "149990"],
            ],
            totals: totals,
            // 99,990 × 30.436875 ÷ 365 = 8,338.04 and 149,990 × 30.436875 ÷ 365 = 12,507.47, maintained and folded.
            mrr: [8_338, 12_507, 8_338, 12_507])
        #expect(totals.net == 174_645)
        for order in [[0, 1, 2], [2, 1, 0], [1, 0, 2], [0, 1]] {
            let answers = try await Self.answers(order: order)
            #expect(answers == expected, "order \(order)")
        }
    }

    /// A ledger an earlier build wrote holds the metric figures that build summed (the old side of an upgrade over the
    /// days it lasted). Opened for writing by this build, its projections and figures are made again from the log:
    /// the maintained MRR is this build's, and `verify` and `replay --check` pass. (The copy's figures are removed
    /// rather than forged: whatever an earlier build left there, the upgrade sums them anew.)
    @Test func aLedgerOfTheSchemaBeforeSumsItsMetricsAgainWhenOpened() async throws {
        let copy = try TemporaryDirectory(prefix: "upgrade-credit-schema-copy")
        defer { copy.remove() }
        do {
            let story = try StoryLedger("upgrade-credit-schema")
            defer { story.close() }
            for body in Self.inputs { _ = try await story.ingest(body, now: Self.upgradeAt + Self.day) }
            _ = try story.ledger.catchUpMetrics()
            try story.ledger.copy(to: copy.path)
        }
        do {
            let env = try Environment(path: copy.path)
            let meta = try env.openDatabase("meta")
            let days = try env.openDatabase("metric_days")
            let points = try env.openDatabase("metric_points")
            try env.write { txn in
                try txn.put(meta, key: Array("schema".utf8), value: withUnsafeBytes(of: UInt64(9).bigEndian, Array.init))
                try txn.clear(days)
                try txn.clear(points)
            }
        }
        let upgraded = try Ledger(directory: copy.path, logger: Logger(label: "test"))
        defer { upgraded.close() }
        _ = try upgraded.catchUpMetrics()
        let figures = try upgraded.metrics(boundaries: Self.mrrDays)
        #expect(figures.maintained)
        #expect(figures.buckets[0].mrr["USD"] == 8_338)
        #expect(figures.buckets[2].mrr["USD"] == 12_507)
        #expect(try upgraded.audit.verify().ok)
        #expect(try upgraded.audit.replay(check: true).differences.isEmpty)
    }
}
