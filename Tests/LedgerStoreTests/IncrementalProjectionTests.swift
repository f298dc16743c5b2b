import Foundation
import LMDB
import LedgerAPI
import LedgerCore
import LedgerStore
import Logging
import LedgerTestSupport
import Testing

/// A view's JSON without provenance (seq numbers depend on delivery order; the content must not).
func content(_ view: some JSONDocument) throws -> NSDictionary {
    func strip(_ v: Any) -> Any {
        if let d = v as? [String: Any] {
            var out: [String: Any] = [:]
            for (k, x) in d where k != "asOf" && !k.lowercased().hasSuffix("seq") { out[k] = strip(x) }
            return out
        }
        if let a = v as? [Any] { return a.map(strip) }
        return v
    }
    let object = try JSONSerialization.jsonObject(with: Data(JSONWriter.bytes(of: view)))
    return strip(object) as! NSDictionary
}

/// The incremental engine inside the store, against replays: whatever the delivery order, batching and
/// redelivery, the stored projections equal a replay byte for byte, and their content equals in-order delivery.
@Suite(.blocking) struct IncrementalProjectionTests {
    static let day: Int64 = 86_400_000
    static let start: Int64 = 1_672_531_200_000  // 2023-01-01

    /// Facts of several subscriptions: renewals, restores, refunds (some of earlier periods), reversals by a later
    /// revision, renewal infos and claims by several users.
    static func history(seed: UInt64) -> [Fact] {
        var rng = SplitMix64(seed: seed)
        var facts: [Fact] = []
        var nextId = 1_000
        for s in 0..<(2 + rng.below(4)) {
            let otid = OriginalTransactionID("\(700_000 + s)")
            var t = start + Int64(rng.below(30)) * day
            var periods: [TransactionFact] = []
            for _ in 0..<(1 + rng.below(6)) {
                var tx = TransactionFact(
                    transactionId: TransactionID("\(nextId)"), originalTransactionId: otid, productId: "monthly",
                    purchaseDate: t)
                nextId += 1
                tx.expiresDate = t + 30 * day
                tx.webOrderLineItemId = "w\(tx.transactionId)"
                tx.signedDate = t
                tx.type = .autoRenewable
                facts.append(.transaction(tx))
                periods.append(tx)
                t += 30 * day
            }
            for p in periods where rng.chance(30) {
                var restored = p
                restored.transactionId = TransactionID("\(nextId)")
                nextId += 1
                restored.signedDate = p.signedDate! + Int64(1 + rng.below(20)) * day
                facts.append(.transaction(restored))
            }
            if rng.chance(50), let victim = periods.randomElement(using: &rng) {
                var refunded = victim
                refunded.signedDate = victim.purchaseDate + 5 * day
                refunded.revocationDate = victim.purchaseDate + 4 * day
                refunded.revocationReason = 1
                facts.append(.transaction(refunded))
                if rng.chance(40) {
                    var reversed = victim
                    reversed.signedDate = victim.purchaseDate + 9 * day
                    facts.append(.transaction(reversed))
                }
            }
            var renewal = RenewalInfoFact(originalTransactionId: otid)
            renewal.autoRenewStatus = rng.chance(50)
            renewal.autoRenewProductId = rng.chance(30) ? "yearly" : "monthly"
            renewal.signedDate = t - day
            facts.append(.renewal(renewal))
            // The same subscription seen in the sandbox too, sometimes.
            if rng.chance(30), let first = periods.first {
                var sandbox = first
                sandbox.environment = .sandbox
                facts.append(.transaction(sandbox))
            }
            // Claims; some name no environment (they apply wherever the subscription is known or appears).
            for c in 0..<rng.below(3) {
                facts.append(
                    .binding(
                        BindingClaim(
                            appUserId: AppUserID("user\(rng.below(4))"), originalTransactionId: otid,
                            claimedAt: start + Int64(c * 40 + rng.below(30)) * day, everyEnvironment: rng.chance(40))))
            }
        }
        return facts
    }

    static func inputs(_ facts: [Fact]) -> [LedgerInput] {
        facts.enumerated().map { i, f in
            .facts([f], metadata: FactMetadata(source: .decodedJSON, receivedAt: start + Int64(i)), raw: Array("\(i)-\(f.eventKey)".utf8))
        }
    }

    /// `facts` as delivered: some sent again, shuffled, in appends of 1 to 6.
    static func deliveries(of facts: [Fact], _ rng: inout SplitMix64) -> [[Fact]] {
        var delivered = facts
        for _ in 0..<rng.below(8) { delivered.append(facts[rng.below(facts.count)]) }
        delivered.shuffle(using: &rng)
        var parts: [[Fact]] = []
        var offset = 0
        while offset < delivered.count {
            let n = 1 + rng.below(6)
            parts.append(Array(delivered[offset..<min(offset + n, delivered.count)]))
            offset += n
        }
        return parts
    }

    @Test func shuffledBatchedRedeliveredHistoriesMatchReplayAndInOrderDelivery() throws {
        for seed in UInt64(1)...25 {
            let facts = Self.history(seed: seed)
            var rng = SplitMix64(seed: seed ^ 0x5EED)

            let ordered = try TemporaryLedger()
            _ = try ordered.ledger.appendAndWait(Self.inputs(facts))

            let shuffled = try TemporaryLedger()
            for part in Self.deliveries(of: facts, &rng) { _ = try shuffled.ledger.appendAndWait(Self.inputs(part)) }

            let check = try shuffled.ledger.audit.replay(check: true)
            #expect(check.differences.isEmpty, "seed \(seed): incremental projections differ from replay: \(check.differences)")
            #expect(try shuffled.ledger.audit.verify().ok, "seed \(seed)")
            #expect(try shuffled.ledger.lastSeq() == ordered.ledger.lastSeq(), "seed \(seed): redeliveries must be duplicates")

            let otids = Set(facts.compactMap(\.originalTransactionId))
            for otid in otids {
                for at in [Self.start + 10 * Self.day, Self.start + 95 * Self.day, Self.start + 400 * Self.day] {
                    let a = try #require(try shuffled.ledger.timeline(otid, at: at))
                    let b = try #require(try ordered.ledger.timeline(otid, at: at))
                    let (ca, cb) = (try content(a), try content(b))
                    #expect(ca == cb, "seed \(seed): \(otid) at \(at) depends on delivery order:\n\(ca)\n\(cb)")
                }
            }
            for user in (0..<4).map({ AppUserID("user\($0)") }) {
                let at = Self.start + 95 * Self.day
                for environment in [AppStoreEnvironment.production, .sandbox] {
                    #expect(
                        try content(shuffled.ledger.customer(user, environment: environment, at: at))
                            == content(ordered.ledger.customer(user, environment: environment, at: at)),
                        "seed \(seed): \(user)'s \(environment) entitlements depend on delivery order")
                }
            }
        }
    }

    /// `history(seed:)` with what the metrics tell apart: prices in two currencies, free trials on first periods,
    /// a later plan on another product, periods shared through Family Sharing, and renewal infos stating why an
    /// expiry happened, billing retry and grace periods. Decided per subscription, so every copy of a transaction
    /// gets the same.
    static func metricsHistory(seed: UInt64) -> [Fact] {
        let facts = history(seed: seed)
        var first: [OriginalTransactionID: Int64] = [:]
        for case .transaction(let tx) in facts {
            first[tx.originalTransactionId] = min(first[tx.originalTransactionId] ?? .max, tx.purchaseDate)
        }
        func choice(_ otid: OriginalTransactionID, _ salt: UInt64) -> Int {
            var rng = SplitMix64(seed: seed &* 31 &+ salt &+ UInt64(otid.rawValue.utf8.reduce(0) { $0 &* 131 &+ Int($1) }))
            return rng.below(12)
        }
        return facts.map { fact in
            switch fact {
            case .transaction(var tx):
                let otid = tx.originalTransactionId
                if choice(otid, 1) < 9 {
                    tx.price = 9_990
                    tx.currency = choice(otid, 2) < 6 ? "USD" : "EUR"
                }
                if tx.purchaseDate == first[otid], choice(otid, 3) < 5 {
                    tx.offerType = 1
                    tx.offerDiscountType = "FREE_TRIAL"
                    tx.isTrialPeriod = true
                    tx.price = 0
                }
                if choice(otid, 4) < 3, tx.purchaseDate >= first[otid]! + 60 * day { tx.productId = "yearly" }
                if choice(otid, 5) < 1 { tx.inAppOwnershipType = "FAMILY_SHARED" }
                return .transaction(tx)
            case .renewal(var renewal):
                let otid = renewal.originalTransactionId
                renewal.expirationIntent = Int64(1 + choice(otid, 6) % 3)
                if choice(otid, 7) < 4 { renewal.isInBillingRetryPeriod = true }
                if choice(otid, 8) < 3 { renewal.gracePeriodExpiresDate = renewal.signedDate! + 7 * day }
                return .renewal(renewal)
            default:
                return fact
            }
        }
    }

    /// The subscription metrics after any delivery order, batching and redelivery: those the write path maintains by
    /// day (`metric_days`) equal those folded from scratch from every stored timeline, by day and by 30 days, and
    /// in-order delivery's; after a replay rewrote every projection from the log they are unchanged and a replay's
    /// check finds the table equal to what the timelines sum to; as known at a past seq (folded on demand), equal to
    /// what a ledger that stopped there answers now.
    @Test func metricsAfterAnyArrivalOrderEqualTheFiguresFoldedFromScratch() throws {
        let months = (0...14).map { Self.start + Int64($0) * 30 * Self.day }
        let days = (0...420).map { Self.start + Int64($0) * Self.day }
        var seen = (trials: 0, billingRetry: 0, churned: 0, mrr: 0, refunds: 0)
        for seed in UInt64(1)...25 {
            let facts = Self.metricsHistory(seed: seed)
            var rng = SplitMix64(seed: seed ^ 0xD1A1)
            let ordered = try TemporaryLedger()
            _ = try ordered.ledger.appendAndWait(Self.inputs(facts))

            let shuffled = try TemporaryLedger()
            let prefix = try TemporaryLedger()
            let parts = Self.deliveries(of: facts, &rng)
            var prefixSeq: UInt64?
            for (index, part) in parts.enumerated() {
                _ = try shuffled.ledger.appendAndWait(Self.inputs(part))
                if index < parts.count / 2 {
                    _ = try prefix.ledger.appendAndWait(Self.inputs(part))
                    prefixSeq = try prefix.ledger.lastSeq()
                }
            }
            // Before the follower summed everything in (reads correct for what it has not), and after.
            for caughtUp in [false, true] {
                if caughtUp { try shuffled.ledger.catchUpMetrics() }
                for environment in [AppStoreEnvironment.production, .sandbox] {
                for boundaries in [months, days] {
                    let maintained = try shuffled.ledger.metrics(environment: environment, boundaries: boundaries)
                    #expect(maintained.maintained, "whole UTC days as known now are read from the maintained figures")
                    let folded = try shuffled.ledger.metrics(environment: environment, boundaries: boundaries, folding: true)
                    #expect(!folded.maintained)
                    #expect(
                        maintained.buckets == folded.buckets,
                        "seed \(seed): \(environment) maintained figures differ from those folded from scratch")
                    #expect(
                        maintained.buckets
                            == (try ordered.ledger.metrics(environment: environment, boundaries: boundaries).buckets),
                        "seed \(seed): \(environment) metrics depend on the arrival order")
                    for product in ["monthly", "yearly"] {
                        #expect(
                            (try shuffled.ledger.metrics(environment: environment, boundaries: boundaries, product: product).buckets)
                                == (try shuffled.ledger.metrics(
                                    environment: environment, boundaries: boundaries, product: product, folding: true
                                ).buckets),
                            "seed \(seed): \(environment) \(product) maintained figures differ from those folded")
                    }
                    for b in maintained.buckets {
                        seen.trials += b.trialsEnded
                        seen.billingRetry += b.inBillingRetry + b.inGracePeriod
                        seen.churned += b.churnedTotal
                        seen.mrr += b.mrr.count
                        seen.refunds += b.refunds
                    }
                }
                }
            }
            for environment in [AppStoreEnvironment.production, .sandbox] {
                let now = try shuffled.ledger.metrics(environment: environment, boundaries: months).buckets
                if let prefixSeq {
                    let past = try shuffled.ledger.metrics(environment: environment, boundaries: months, asOf: prefixSeq)
                    #expect(!past.maintained, "a past log position is folded on demand")
                    #expect(
                        past.buckets == (try prefix.ledger.metrics(environment: environment, boundaries: months).buckets),
                        "seed \(seed): \(environment) metrics as known at seq \(prefixSeq)")
                }
                _ = try shuffled.ledger.audit.replay(check: false)
                #expect(
                    now == (try shuffled.ledger.metrics(environment: environment, boundaries: months).buckets),
                    "seed \(seed): \(environment) metrics differ from those of projections rewritten from the log")
            }
            #expect(try shuffled.ledger.audit.replay(check: true).differences == [], "seed \(seed)")
            #expect(
                try shuffled.ledger.metrics(boundaries: months).buckets.contains { $0.live > 0 },
                "seed \(seed): the story has live subscriptions")
        }
        // The stories reach what the figures tell apart.
        #expect(seen.trials > 0 && seen.billingRetry > 0 && seen.churned > 0 && seen.mrr > 0 && seen.refunds > 0, "\(seen)")
    }

    /// `entitlement` keeps the products that grant it in the catalog: premium is two products, pro one, gold the
    /// unconfigured product of that name; with a product too, that product if it grants the entitlement; maintained
    /// and folded alike.
    @Test func anEntitlementKeepsTheProductsThatGrantIt() throws {
        let catalog = Catalog(products: [
            "monthly": ProductConfiguration(type: .autoRenewable, entitlements: ["premium"]),
            "yearly": ProductConfiguration(type: .autoRenewable, entitlements: ["premium"]),
            "pro": ProductConfiguration(type: .autoRenewable, entitlements: ["pro"]),
        ])
        let t = try TemporaryLedger(rules: FoldRules(catalog: catalog))
        var facts: [Fact] = []
        for (i, product) in ["monthly", "monthly", "yearly", "pro", "gold"].enumerated() {
            var tx = TransactionFact(
                transactionId: TransactionID("\(9_000 + i)"), originalTransactionId: OriginalTransactionID("\(9_000 + i)"),
                productId: product, purchaseDate: Self.start + Int64(i) * Self.day)
            tx.expiresDate = Self.start + 40 * Self.day
            tx.type = .autoRenewable
            facts.append(.transaction(tx))
        }
        _ = try t.ledger.appendAndWait(Self.inputs(facts))
        let month = [Self.start, Self.start + 30 * Self.day]
        func live(product: String? = nil, entitlement: String?, folding: Bool = false) throws -> Int {
            let figures = try t.ledger.metrics(boundaries: month, product: product, entitlement: entitlement, folding: folding)
            return figures.buckets[0].live
        }
        for folding in [false, true] {
            #expect(try live(entitlement: nil, folding: folding) == 5)
            #expect(try live(entitlement: "premium", folding: folding) == 3, "monthly and yearly")
            #expect(try live(entitlement: "pro", folding: folding) == 1)
            #expect(try live(entitlement: "gold", folding: folding) == 1, "the unconfigured product grants its own name")
            #expect(try live(entitlement: "silver", folding: folding) == 0, "no product grants it")
            #expect(try live(product: "yearly", entitlement: "premium", folding: folding) == 1)
            #expect(try live(product: "pro", entitlement: "premium", folding: folding) == 0)
        }
    }

    /// A replay's check (and so `verify`) names a maintained day that differs from what the timelines sum to.
    @Test func aReplaysCheckFindsMaintainedMetricsThatDifferFromTheTimelines() throws {
        let t = try TemporaryLedger()
        _ = try t.ledger.appendAndWait(Self.inputs(Self.metricsHistory(seed: 3)))
        #expect(try t.ledger.audit.replay(check: true).differences == [])
        try t.ledger.catchUpMetrics()
        let copy = NSTemporaryDirectory() + "ledger-metrics-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        try t.ledger.copy(to: copy)
        do {
            let env = try Environment(path: copy)
            let days = try env.openDatabase("metric_days")
            try env.write { txn in
                // The last counter's sum of the first day, off by one (its zigzag varint's low bit flipped).
                let cursor = try txn.cursor(days)
                let first = try #require(try cursor.first())
                let key = Array(first.key)
                var value = Array(first.value)
                value[value.count - 1] ^= 0x02
                try txn.put(days, key: key, value: value)
            }
        }
        let tampered = try Ledger(directory: copy, logger: Logger(label: "t"))
        let differences = try tampered.audit.replay(check: true).differences
        #expect(differences.count == 1 && differences[0].hasPrefix("metric_days differs"), "\(differences)")
        #expect(try tampered.audit.verify().ok == false)
    }

    /// A Sandbox subscription whose claim names no environment, read as of a past seq: the timeline folded then is
    /// the Sandbox one (the events alone, a claim among them, once made it a Production timeline).
    @Test func aSandboxTimelineReadAsOfAPastSeqStaysInTheSandbox() throws {
        let t = try TemporaryLedger()
        let otid: OriginalTransactionID = "777"
        let claim = BindingClaim(
            appUserId: "u", originalTransactionId: otid, claimedAt: Self.start, everyEnvironment: true)
        var purchase = TransactionFact(
            transactionId: "777", originalTransactionId: otid, productId: "monthly", purchaseDate: Self.start,
            environment: .sandbox)
        purchase.expiresDate = Self.start + 30 * Self.day
        purchase.type = .autoRenewable
        var renewal = purchase
        renewal.transactionId = "778"
        renewal.purchaseDate = purchase.expiresDate!
        renewal.expiresDate = Self.start + 60 * Self.day
        _ = try t.ledger.appendAndWait(Self.inputs([.binding(claim), .transaction(purchase), .transaction(renewal)]))
        let at = Self.start + Self.day
        let then = try #require(try t.ledger.timeline(otid, environment: .sandbox, at: at, asOf: 2))
        let now = try #require(try t.ledger.timeline(otid, environment: .sandbox, at: at))
        #expect(then.environment == "Sandbox" && now.environment == "Sandbox")
        #expect(then.status == "active" && then.periods.count == 1 && now.periods.count == 2)
        let month = [Self.start, Self.start + 30 * Self.day]
        #expect(try t.ledger.metrics(environment: .sandbox, boundaries: month, asOf: 2).buckets.map(\.active) == [1])
    }

    @Test func asOfFoldsOnlyWhatWasKnownThen() throws {
        let t = try TemporaryLedger()
        let otid: OriginalTransactionID = "555"
        var first = TransactionFact(transactionId: "555", originalTransactionId: otid, productId: "monthly", purchaseDate: Self.start)
        first.expiresDate = Self.start + 30 * Self.day
        var renewal = first
        renewal.transactionId = "556"
        renewal.purchaseDate = Self.start + 30 * Self.day
        renewal.expiresDate = Self.start + 60 * Self.day
        var refund = first
        refund.revocationDate = Self.start + 3 * Self.day
        refund.signedDate = Self.start + 40 * Self.day
        _ = try t.ledger.appendAndWait(Self.inputs([.transaction(first), .transaction(renewal), .transaction(refund)]))

        let at = Self.start + 10 * Self.day
        // Seq 1: only the purchase was known: active on day 10.
        #expect(try t.ledger.timeline(otid, at: at, asOf: 1)?.status == "active")
        #expect(try t.ledger.timeline(otid, at: at, asOf: 1)?.periods.count == 1)
        // Seq 2: the renewal too, still active on day 10.
        #expect(try t.ledger.timeline(otid, at: at, asOf: 2)?.periods.count == 2)
        #expect(try t.ledger.timeline(otid, at: at, asOf: 2)?.status == "active")
        // Seq 3 (latest): the first period was refunded on day 3: revoked on day 10.
        #expect(try t.ledger.timeline(otid, at: at)?.status == "revoked")
        #expect(try t.ledger.timeline(otid, at: at, asOf: 3)?.status == "revoked")
        #expect(try t.ledger.timeline(otid, at: at, asOf: 2)?.asOf == 2)
        // Before anything was known there is no timeline.
        #expect(try t.ledger.timeline(otid, at: at, asOf: 0) == nil)
    }

    @Test func replayUntilAnEarlierSeqReportsWithoutRewriting() throws {
        let t = try TemporaryLedger()
        _ = try t.ledger.appendAndWait(Self.inputs(Self.history(seed: 7)))
        let full = try t.ledger.audit.replay(check: true)
        let early = try t.ledger.audit.replay(until: 3, check: false)
        #expect(!early.rewrote)
        #expect(early.untilSeq == 3)
        #expect(early.projectionsDigest != full.projectionsDigest)
        #expect(try t.ledger.audit.replay(check: true).differences.isEmpty, "the stored projections were left alone")
        // Rewriting from the whole log gives the same bytes, so the digest is stable.
        let rewritten = try t.ledger.audit.replay(check: false)
        #expect(rewritten.rewrote)
        #expect(rewritten.projectionsDigest == full.projectionsDigest)
        #expect(try t.ledger.audit.replay(until: 3, check: false).projectionsDigest == early.projectionsDigest)
    }
}

@Suite(.blocking) struct ReplayChunkingTests {
    /// `replay --check` finds the stored projections by walking them in key order (the next entry first, a search
    /// when it is not the one): a projection changed, one missing, one at a chunk's edge and one of no subscription
    /// must each be reported, and nothing else; a rewriting replay repairs the first three.
    @Test func aCheckNamesEveryTamperedProjectionAndARewriteRepairsThem() throws {
        let t = try TemporaryLedger()
        // 1,200 subscriptions (three chunks), three renewals each, appended renewal by renewal as they happen.
        var inputs: [LedgerInput] = []
        for renewal in 0..<3 {
            for s in 0..<1_200 {
                let purchase = 1_605_243_570_000 + Int64(renewal) * 30 * 86_400_000
                inputs.append(input([.transaction(transaction("\(100_000 + renewal * 10_000 + s)", otid: "\(60_000 + s)", purchase: purchase))]))
            }
        }
        _ = try t.ledger.appendAndWait(inputs)
        #expect(try t.ledger.audit.replay(check: true).differences.isEmpty)

        let copy = NSTemporaryDirectory() + "ledger-tampered-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        try t.ledger.copy(to: copy)
        let key = { (otid: Int) in [AppStoreEnvironment.production.code] + Array(String(otid).utf8) }
        do {
            let env = try Environment(path: copy)
            let timelines = try env.openDatabase("timelines")
            try env.write { txn in
                // One byte of a projection changed (its last), one projection gone, the last of a chunk changed.
                for otid in [60_010, 60_499] {
                    var value = try #require(try txn.value(timelines, key: key(otid)))
                    value[value.count - 1] ^= 0x01
                    try txn.put(timelines, key: key(otid), value: value)
                }
                #expect(try txn.delete(timelines, key: key(60_700)))
                // And a projection of a subscription the log knows nothing of.
                let orphan = try #require(try txn.value(timelines, key: key(60_001)))
                try txn.put(timelines, key: key(99_999), value: orphan)
            }
        }
        let tampered = try Ledger(directory: copy, logger: Logger(label: "t"))
        let check = try tampered.audit.replay(check: true)
        #expect(check.subscriptions == 1_200)
        #expect(check.events == 3_600)
        #expect(
            check.differences == [
                "Production/60010", "Production/60499", "Production/60700", "1 stored timelines have no events",
            ])
        #expect(try tampered.audit.replay(check: true, projections: .timelines).differences == check.differences)
        // The lifecycle stream alone was not touched.
        #expect(try tampered.audit.replay(check: true, projections: .lifecycle).differences.isEmpty)
        // A rewriting replay rebuilds every projection from the log (the orphan stays: no event names it).
        #expect(try tampered.audit.replay(check: false).rewrote)
        #expect(try tampered.audit.replay(check: true).differences == ["1 stored timelines have no events"])
    }

    /// More subscriptions than one replay chunk: the parallel reading replay and the sequential rewriting one visit
    /// every subscription once and agree on the digest.
    @Test func replaysAcrossManyChunksAgree() throws {
        let t = try TemporaryLedger()
        let inputs: [LedgerInput] = (0..<4_500).map { i in
            input([.transaction(transaction("\(80_000 + i)", otid: "\(60_000 + i)"))])
        }
        _ = try t.ledger.appendAndWait(inputs)
        let check = try t.ledger.audit.replay(check: true)
        #expect(check.subscriptions == 4_500)
        #expect(check.events == 4_500)
        #expect(check.differences.isEmpty)
        let rewrite = try t.ledger.audit.replay(check: false)
        #expect(rewrite.rewrote)
        #expect(rewrite.subscriptions == 4_500)
        #expect(rewrite.projectionsDigest == check.projectionsDigest)
        #expect(try t.ledger.audit.replay(until: 4_400, check: false).subscriptions == 4_500)
        #expect(try t.ledger.audit.replay(until: 4_400, check: false).events == 4_400)
    }
}
