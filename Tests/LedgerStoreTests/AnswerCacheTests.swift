import Foundation
import LedgerAPI
import LedgerCore
import LedgerStore
import LedgerTestSupport
import Testing

/// The answer cache against the uncached read, byte for byte: over random stories (renewals, restores, refunds and
/// reversals, grace periods and billing retry, claims by several users, some without an environment), delivered in
/// small commits in random order, every customer and subscription is read through the cache at instants around
/// every instant the story holds (each expiry, grace end, revocation, owner change, one millisecond either side),
/// in random order, with and without `asOf`, after every commit; each answer, written with its clocks, must be
/// the JSON the store's uncached read gives at that instant.
@Suite(.blocking) struct AnswerCacheTests {
    typealias History = IncrementalProjectionTests

    /// The incremental engine's random stories, with a grace period or a billing retry after some subscriptions'
    /// last period.
    static func story(seed: UInt64) -> [Fact] {
        var facts = History.history(seed: seed)
        var rng = SplitMix64(seed: seed ^ 0xCAC4E)
        var lastEnd: [OriginalTransactionID: UnixMillis] = [:]
        for case .transaction(let t) in facts {
            if let end = t.expiresDate { lastEnd[t.originalTransactionId] = max(lastEnd[t.originalTransactionId] ?? end, end) }
        }
        for (otid, end) in lastEnd.sorted(by: { $0.key < $1.key }) where rng.chance(60) {
            var r = RenewalInfoFact(originalTransactionId: otid)
            r.autoRenewStatus = true
            r.autoRenewProductId = "monthly"
            r.signedDate = end + 3_600_000
            if rng.chance(60) {
                r.gracePeriodExpiresDate = end + Int64(1 + rng.below(16)) * History.day
            } else {
                r.isInBillingRetryPeriod = true
            }
            facts.append(.renewal(r))
        }
        return facts
    }

    /// Every instant the ledger's timelines show (starts, ends, revocations and reversals, stated changes and their
    /// ends, owners), one millisecond either side, and a few others.
    static func instants(_ ledger: Ledger, _ otids: [OriginalTransactionID], rng: inout SplitMix64) throws -> [UnixMillis] {
        var seen: Set<UnixMillis> = [History.start - 1, History.start + 400 * History.day]
        for otid in otids {
            for environment in [AppStoreEnvironment.production, .sandbox] {
                guard let view = try ledger.timeline(otid, environment: environment, at: History.start) else { continue }
                for p in view.periods {
                    seen.insert(p.start)
                    if let end = p.end { seen.insert(end) }
                    if let r = p.revocation {
                        seen.insert(r.date)
                        if let back = r.reversedAt { seen.insert(back) }
                    }
                }
                for c in view.changes {
                    seen.insert(c.at)
                    if let until = c.until { seen.insert(until) }
                }
                for o in view.owners {
                    seen.insert(o.from)
                    if let to = o.to { seen.insert(to) }
                }
            }
        }
        var all: [UnixMillis] = seen.flatMap { [$0 - 1, $0, $0 + 1] }
        for _ in 0..<8 { all.append(History.start + Int64(rng.below(400)) * History.day + Int64(rng.below(86_400_000))) }
        rng.shuffle(&all)
        return all
    }

    /// With and without pseudonyms (docs/privacy.md): a ledger with them tells the cache whose answers a commit
    /// changed by the ids readers ask with, not by the pseudonyms its log holds.
    @Test(arguments: [false, true])
    func keptAnswersAreTheUncachedAnswersByteForByte(pseudonyms: Bool) throws {
        var hits = 0
        var reads = 0
        for seed in UInt64(1)...6 {
            var rng = SplitMix64(seed: seed &* 7919)
            var facts = Self.story(seed: seed)
            rng.shuffle(&facts)
            var options = Ledger.Options()
            options.pseudonyms = pseudonyms
            let t = try TemporaryLedger(options: options)
            // A small cache, so that the oldest answers are dropped too.
            let cache = AnswerCache<ClockedAnswer>(ledger: t.ledger, capacity: 24)
            let otids = Array(Set(facts.compactMap(\.originalTransactionId))).sorted()
            let users = (0..<4).map { AppUserID("user\($0)") }
            var offset = 0
            while offset < facts.count {
                let n = 1 + rng.below(4)
                _ = try t.ledger.appendAndSettle(History.inputs(Array(facts[offset..<min(offset + n, facts.count)])))
                offset += n
                let last = try t.ledger.lastSeq()
                let instants = try Self.instants(t.ledger, otids, rng: &rng)
                for at in instants.prefix(12) {
                    // Mostly the latest knowledge (kept), sometimes an asOf before it (not kept) or past it (kept).
                    let asOf: UInt64? = rng.chance(80) ? nil : UInt64(rng.below(Int(last) + 3))
                    for environment in [AppStoreEnvironment.production, .sandbox] {
                        for user in users {
                            let kept = try cache.customer(user, environment: environment, at: at, asOf: asOf, answer: ClockedAnswer.init)
                            let uncached = try t.ledger.customer(user, environment: environment, at: at, asOf: asOf)
                            #expect(
                                kept.answer.bytes(at: at, asOf: kept.asOf) == JSONWriter.bytes(of: uncached) + [0x0A],
                                "seed \(seed), \(user) \(environment) at \(at) asOf \(asOf.map(String.init) ?? "-") after seq \(last)")
                        }
                        for otid in otids {
                            let kept = try cache.timeline(otid, environment: environment, at: at, asOf: asOf, answer: ClockedAnswer.init)
                            let uncached = try t.ledger.timeline(otid, environment: environment, at: at, asOf: asOf)
                            #expect((kept == nil) == (uncached == nil), "seed \(seed), \(otid) \(environment)")
                            if let kept, let uncached {
                                #expect(
                                    kept.answer.bytes(at: at, asOf: kept.asOf) == JSONWriter.bytes(of: uncached) + [0x0A],
                                    "seed \(seed), \(otid) \(environment) at \(at) asOf \(asOf.map(String.init) ?? "-") after seq \(last)")
                            }
                        }
                        reads += users.count + otids.count
                    }
                }
                hits += cache.count
            }
        }
        // The cache kept answers all along (else this compared the uncached path with itself).
        #expect(hits > 0 && reads > 1_000)
    }

    /// The metrics follower writes transactions of its own between the writer's: they change no answer, so a kept
    /// answer of a customer they do not touch survives them, and the writer's next commit after them (which would
    /// otherwise look like a gap in the transactions the cache has seen) drops only what it changed.
    @Test func theMetricsFollowersTransactionsLeaveKeptAnswers() throws {
        let t = try TemporaryLedger()
        let cache = AnswerCache<ClockedAnswer>(ledger: t.ledger)
        let start = History.start
        func purchase(_ id: String, _ user: String) -> [Fact] {
            var p = TransactionFact(
                transactionId: TransactionID(id), originalTransactionId: OriginalTransactionID(id), productId: "monthly",
                purchaseDate: start)
            p.expiresDate = start + 30 * History.day
            p.type = .autoRenewable
            let claim = BindingClaim(
                appUserId: AppUserID(user), originalTransactionId: OriginalTransactionID(id), claimedAt: start,
                everyEnvironment: false)
            return [.transaction(p), .binding(claim)]
        }
        _ = try t.ledger.appendAndSettle(History.inputs(purchase("9100", "alice")))
        _ = try cache.customer(AppUserID("alice"), environment: .production, at: start + 1, asOf: nil, answer: ClockedAnswer.init)
        #expect(cache.count == 1)
        for (i, id) in ["9200", "9300"].enumerated() {
            // The writer's commit of bob's purchase, then a transaction summing it in (the follower's, or this one's
            // when it got there first).
            _ = try t.ledger.appendAndSettle(History.inputs(purchase(id, "bob\(i)")))
            #expect(cache.count == 1, "alice's kept answer survives bob's commit \(i) and the follower's transaction")
        }
    }

    /// The kept answer of now is given again until the instant it changes, and no longer: at the end of a period it
    /// is made again (the entitlement no longer active), and a commit that refunds the period drops it at once.
    @Test func anExpiryAndARefundEndAKeptAnswer() throws {
        let t = try TemporaryLedger()
        let cache = AnswerCache<ClockedAnswer>(ledger: t.ledger)
        let start = History.start
        var purchase = TransactionFact(transactionId: "9001", originalTransactionId: "9000", productId: "monthly", purchaseDate: start)
        purchase.expiresDate = start + 30 * History.day
        purchase.type = .autoRenewable
        let claim = BindingClaim(appUserId: AppUserID("alice"), originalTransactionId: "9000", claimedAt: start, everyEnvironment: false)
        _ = try t.ledger.appendAndSettle(History.inputs([.transaction(purchase), .binding(claim)]))

        func read(_ at: UnixMillis) throws -> (text: String, kept: Int) {
            let (answer, asOf) = try cache.customer(AppUserID("alice"), environment: .production, at: at, asOf: nil, answer: ClockedAnswer.init)
            let text = String(decoding: answer.bytes(at: at, asOf: asOf), as: UTF8.self)
            #expect(text == String(decoding: JSONWriter.bytes(of: try t.ledger.customer(AppUserID("alice"), at: at)) + [0x0A], as: UTF8.self))
            return (text, cache.count)
        }
        let day1 = try read(start + History.day)
        #expect(day1.text.contains(#""active":true"#) && day1.kept == 1)
        // Within the period: the kept answer, with the new instant.
        let beforeEnd = try read(purchase.expiresDate! - 1)
        #expect(beforeEnd.text.contains(#""at":\#(purchase.expiresDate! - 1)"#) && beforeEnd.text.contains(#""active":true"#))
        // At the expiry the answer changes: inactive, made again.
        let atEnd = try read(purchase.expiresDate!)
        #expect(atEnd.text.contains(#""active":false"#))

        // A refund of the period, committed: the kept answer for day 1 is gone, and the next read shows it revoked.
        _ = try read(start + History.day)
        var refund = purchase
        refund.revocationDate = start + 2 * History.day
        refund.revocationReason = 0
        refund.signedDate = start + 2 * History.day
        _ = try t.ledger.appendAndSettle(History.inputs([.transaction(refund)]))
        let afterRefund = try read(start + 3 * History.day)
        #expect(afterRefund.text.contains(#""active":false"#))
        #expect(afterRefund.text.contains(#""asOf":3"#))
    }

    /// The operator's grant is on no timeline: its commit drops the kept answer of the customer it names (and only
    /// theirs), and the answer made again holds until the grant's end, not past it.
    @Test(arguments: [false, true])
    func aGrantDropsTheKeptAnswerOfItsCustomerAndBoundsTheNext(pseudonyms: Bool) throws {
        var options = Ledger.Options()
        options.pseudonyms = pseudonyms
        let t = try TemporaryLedger(options: options)
        let cache = AnswerCache<ClockedAnswer>(ledger: t.ledger)
        let start = History.start
        let claim = BindingClaim(appUserId: AppUserID("bob"), originalTransactionId: "9100", claimedAt: start, everyEnvironment: false)
        _ = try t.ledger.appendAndSettle(History.inputs([.binding(claim)]))
        func read(_ user: AppUserID, _ at: UnixMillis) throws -> String {
            let (answer, asOf) = try cache.customer(user, environment: .production, at: at, asOf: nil, answer: ClockedAnswer.init)
            let text = String(decoding: answer.bytes(at: at, asOf: asOf), as: UTF8.self)
            #expect(text == String(decoding: JSONWriter.bytes(of: try t.ledger.customer(user, at: at)) + [0x0A], as: UTF8.self))
            return text
        }
        let at = start + History.day
        #expect(!(try read("alice", at)).contains("premium"))
        _ = try read("bob", at)
        #expect(cache.count == 2)

        let grant = OperatorGrant(
            action: .grant, appUserId: "alice", grantId: "g1", entitlement: "premium", from: start,
            until: start + 2 * History.day)
        _ = try t.ledger.appendAndSettle(History.inputs([.grant(grant)]))
        #expect(cache.count == 1, "alice's kept answer dropped, bob's kept")
        #expect(try read("alice", at).contains(#""premium":{"active":true"#))
        #expect(try read("alice", start + 2 * History.day - 1).contains(#""premium":{"active":true"#))
        #expect(try read("alice", start + 2 * History.day).contains(#""premium":{"active":false"#))
    }
}

extension Ledger {
    /// `appendAndWait`, then the maintained metrics summed in: the metrics follower's transactions, which the cache
    /// passes over, then come before the test's reads rather than among them (a read from a snapshot newer than the
    /// cache has heard of is answered but not kept). For the tests that count kept answers.
    func appendAndSettle(_ inputs: [LedgerInput]) throws -> [AppendResult] {
        let results = try appendAndWait(inputs)
        try catchUpMetrics()
        return results
    }
}
