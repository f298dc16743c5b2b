import Foundation
import LedgerAppStore
import LedgerCore
import LedgerStore
import LedgerTestSupport
import LedgerErrors
import Testing

// MARK: - Nothing accepted takes the ledger down

/// Seeded random sequences of inputs as callers send them — documents decoded by `InputDecoder`, with values at the
/// edges of what is accepted (instants at both ends of the window, huge and long ids, long strings, every product
/// type, extreme quantities) — go into a ledger; then every timeline and customer view, at instants across the
/// window, `replay --check` and `verify` must answer (a trap would end the test process). Inputs the decoder refuses
/// go to `rejected`, as the server sends them. Replayable from the seed in the failure message.
@Suite("Accepted inputs never trap")
struct AcceptedInputPropertyTests {
    typealias F = AppleFixtures

    static let earliest = FactBounds.earliestInstant
    static let last = FactBounds.instantLimit - 1
    static let products = [
        "com.example.premium.monthly", "com.example.pass.month", "com.example.lifetime", "com.example.gems60",
        "unknown.product." + String(repeating: "x", count: 300),
    ]
    static let types = ProductType.allCases.map(\.rawValue)
    static let rules = FoldRules(
        catalog: Catalog(products: [
            "com.example.premium.monthly": ProductConfiguration(type: .autoRenewable, entitlements: ["premium"], group: "g1"),
            "com.example.pass.month": ProductConfiguration(
                type: .nonRenewing, entitlements: ["premium"], duration: CalendarDuration(months: 1)),
            "com.example.lifetime": ProductConfiguration(type: .nonConsumable, entitlements: ["premium", "lifetime"]),
            "com.example.gems60": ProductConfiguration(type: .consumable, credits: ["gems": 60]),
        ]))

    /// An instant inside the window, often at or next to one of its ends.
    static func instant(_ rng: inout SplitMix64) -> Int64 {
        switch rng.below(6) {
        case 0: earliest
        case 1: last
        case 2: earliest + Int64(rng.below(3))
        case 3: last - Int64(rng.below(3))
        default: earliest + Int64(rng.next() % UInt64(last - earliest))
        }
    }

    static func id(_ rng: inout SplitMix64, pool: Int) -> String {
        switch rng.below(5) {
        case 0: "9" + String(repeating: "9", count: 18 + rng.below(30))  // beyond UInt64
        case 1: "id-" + String(repeating: "é", count: rng.below(500))
        case 2: String(UInt64.max - UInt64(rng.below(pool)))
        default: String(1_000_000_000_000_000 + rng.below(pool))
        }
    }

    /// One caller's document: a decoded or signed V2 transaction or renewal, a V1 receipt or notification, a V2
    /// notification, a binding or an envelope around one of those.
    static func document(_ rng: inout SplitMix64) -> [UInt8] {
        let otid = id(&rng, pool: 4)
        let tid = rng.chance(30) ? otid : id(&rng, pool: 40)
        let purchase = instant(&rng)
        func transaction() -> [String: Any] {
            var extra: [String: Any] = [:]
            if rng.chance(30) { extra["longString"] = String(repeating: "ü", count: rng.below(5_000)) }
            if rng.chance(20) { extra["nested"] = ["a": [1, [2, ["b": NSNull()]]]] }
            return F.v2Transaction(
                transactionId: tid, originalTransactionId: otid, productId: products[rng.below(products.count)],
                purchaseDate: purchase, originalPurchaseDate: rng.chance(50) ? instant(&rng) : nil,
                expiresDate: rng.chance(80) ? instant(&rng) : nil, signedDate: instant(&rng),
                environment: rng.chance(85) ? "Production" : "Sandbox", type: types[rng.below(types.count)],
                webOrderLineItemId: rng.chance(80) ? id(&rng, pool: 40) : nil,
                appAccountToken: rng.chance(20) ? "7e3fb20b-4cdb-47cc-936d-99d65f60813\(rng.below(3))" : nil,
                revocationDate: rng.chance(25) ? instant(&rng) : nil, revocationReason: rng.chance(50) ? 1 : nil,
                revocationType: rng.chance(50) ? "REFUND_FULL" : nil, revocationPercentage: rng.chance(50) ? 100_000 : nil,
                isUpgraded: rng.chance(15) ? true : nil, offerType: rng.chance(20) ? Int64(1 + rng.below(4)) : nil,
                quantity: [0, 1, 10, 999_999, 1_000_000][rng.below(5)], price: rng.chance(50) ? Int64.max : 9990,
                extra: extra)
        }
        func renewal() -> [String: Any] {
            F.v2Renewal(
                originalTransactionId: otid, productId: products[rng.below(products.count)],
                autoRenewProductId: products[rng.below(products.count)], autoRenewStatus: Int64(rng.below(2)),
                expirationIntent: rng.chance(50) ? Int64(1 + rng.below(5)) : nil,
                isInBillingRetryPeriod: rng.chance(50) ? rng.chance(50) : nil,
                gracePeriodExpiresDate: rng.chance(40) ? instant(&rng) : nil,
                priceIncreaseStatus: rng.chance(30) ? Int64(rng.below(2)) : nil,
                renewalDate: rng.chance(70) ? instant(&rng) : nil, signedDate: instant(&rng),
                extra: ["recentSubscriptionStartDate": instant(&rng)])
        }
        func v1() -> [String: Any] {
            F.v1Transaction(
                transactionId: tid, originalTransactionId: otid, productId: products[rng.below(products.count)],
                purchaseDate: purchase, expiresDate: rng.chance(80) ? instant(&rng) : nil,
                webOrderLineItemId: rng.chance(80) ? id(&rng, pool: 40) : nil,
                cancellationDate: rng.chance(20) ? instant(&rng) : nil, cancellationReason: rng.chance(50) ? "1" : nil,
                isUpgraded: rng.chance(10), isTrialPeriod: rng.chance(20), quantity: [0, 1, 1_000_000][rng.below(3)])
        }
        switch rng.below(9) {
        case 0: return F.json(transaction())
        case 1: return Array(F.signedTransaction(transaction()).utf8)
        case 2: return F.json(renewal())
        case 3: return F.json(["signedTransactionInfo": F.signedTransaction(transaction()), "signedRenewalInfo": F.signedRenewal(renewal())])
        case 4:
            return F.receiptIOS7(
                requestDate: instant(&rng), inApp: [v1()], latest: [v1(), v1()],
                pending: [F.v1PendingRenewal(originalTransactionId: otid, gracePeriodExpiresDate: instant(&rng))])
        case 5:
            return F.v1Notification(type: ["DID_RENEW", "CANCEL", "REFUND", "DID_FAIL_TO_RENEW"][rng.below(4)], latest: [v1()])
        case 6:
            let kinds: [(String, String?)] = [
                ("DID_RENEW", nil), ("DID_FAIL_TO_RENEW", "GRACE_PERIOD"), ("EXPIRED", "BILLING_RETRY"), ("REFUND", nil),
                ("REFUND_REVERSED", nil), ("GRACE_PERIOD_EXPIRED", nil), ("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE"),
            ]
            let (type, subtype) = kinds[rng.below(kinds.count)]
            return F.v2Notification(
                type: type, subtype: subtype, notificationUUID: UUID().uuidString, signedDate: instant(&rng),
                transaction: transaction(), renewal: renewal())
        case 7:
            return F.binding(appUserId: "user\(rng.below(3))", originalTransactionId: otid, claimedAt: instant(&rng))
        default:
            let user = rng.chance(50) ? String(repeating: "u", count: 1 + rng.below(2_000)) : "user\(rng.below(3))"
            return F.envelope(
                type: nil, appUserId: user, receivedAt: instant(&rng),
                payload: rng.chance(50) ? F.json(transaction()) : F.json(renewal()))
        }
    }

    /// What one seeded run found.
    struct Outcome: Sendable {
        var accepted = 0
        var wrongViews: [String] = []
        var replayDifferences: [String] = []
        var fault: String?
    }

    /// Appends a seeded random sequence of caller documents and reads back every view, `replay --check` and `verify`.
    static func run(seed: UInt64) throws -> Outcome {
        var rng = SplitMix64(seed: 0xD00D_0000 + seed)
        let decoder = InputDecoder(configuration: AppStoreConfiguration())
        let t = try TemporaryLedger(rules: Self.rules)
        var outcome = Outcome()
        var otids: Set<OriginalTransactionID> = []
        var users: Set<AppUserID> = ["user0", "user1", "user2"]
        for _ in 0..<12 {
            var batch: [LedgerInput] = []
            for _ in 0..<(1 + rng.below(25)) {
                let raw = Self.document(&rng)
                let receivedAt = Self.instant(&rng)
                do {
                    let decoded = try decoder.decode(raw, receivedAt: receivedAt)
                    batch.append(.facts(decoded.facts, metadata: decoded.metadata, raw: raw))
                    for fact in decoded.facts {
                        if let otid = fact.originalTransactionId { otids.insert(otid) }
                        if case .binding(let claim) = fact { users.insert(claim.appUserId) }
                    }
                    outcome.accepted += 1
                } catch {
                    batch.append(.rejected(RejectedInput(raw: raw, code: error.code, message: error.message, receivedAt: receivedAt)))
                }
            }
            _ = try t.ledger.appendAndWait(batch)
        }

        let instants = [Self.earliest, Self.earliest + 1, Self.last - 1, Self.last, Self.instant(&rng), Self.instant(&rng)]
        let lastSeq = try t.ledger.lastSeq()
        for otid in otids {
            for environment in [AppStoreEnvironment.production, .sandbox] {
                for at in instants {
                    for asOf in [nil, lastSeq / 2] {
                        if let view = try t.ledger.timeline(otid, environment: environment, at: at, asOf: asOf),
                            view.originalTransactionId != otid.rawValue
                        {
                            outcome.wrongViews.append("timeline \(otid) at \(at) names \(view.originalTransactionId)")
                        }
                    }
                }
            }
        }
        for user in users {
            for at in instants where try t.ledger.customer(user, at: at).appUserId != user.rawValue {
                outcome.wrongViews.append("customer \(user) at \(at)")
            }
        }
        outcome.replayDifferences = try t.ledger.audit.replay(check: true).differences
        outcome.fault = try t.ledger.audit.verify().fault
        return outcome
    }

    @Test(
        "Random accepted inputs at the window's edges: views, replay --check and verify all answer",
        .timeLimit(.minutes(5)), arguments: UInt64(1)...6)
    func acceptedInputsNeverTrap(seed: UInt64) async throws {
        // The run blocks on commits (appendAndWait): off the cooperative pool, which in-process servers of other
        // suites need to answer.
        let outcome = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try Self.run(seed: seed) }) }
        }
        #expect(outcome.accepted > 50, "seed \(seed): too few inputs were accepted to test anything")
        #expect(outcome.wrongViews.isEmpty, "seed \(seed): \(outcome.wrongViews.prefix(3))")
        #expect(outcome.replayDifferences.isEmpty, "seed \(seed): \(outcome.replayDifferences.prefix(3))")
        #expect(outcome.fault == nil, "seed \(seed): \(outcome.fault ?? "")")
    }

    @Test("Out-of-window values in the same shapes are refused, never stored")
    func outOfWindowIsRefused() throws {
        let decoder = InputDecoder(configuration: AppStoreConfiguration())
        let poisons: [[UInt8]] = [
            F.json(F.v2Transaction(expiresDate: Int64.min)),
            Array(F.signedTransaction(F.v2Transaction(purchaseDate: Int64.max)).utf8),
            F.json(F.v2Renewal(gracePeriodExpiresDate: Int64.max)),
            F.receiptIOS7(inApp: [F.v1Transaction(expiresDate: Int64.max)]),
            F.binding(appUserId: "u1", originalTransactionId: "1", claimedAt: FactBounds.instantLimit),
            F.json(F.v2Transaction(quantity: -1)),
        ]
        for poison in poisons {
            #expect(throws: InputError.outOfRange("")) { try decoder.decode(poison, receivedAt: F.epoch) }
        }
    }
}
