import Foundation
import LMDB
import LedgerCore
@testable import LedgerStore
import LedgerTestSupport
import Synchronization
import Testing

/// The readers' cache learns what a commit changed from the write path's one report (`WriteReport`). Around every
/// commit of random stories — renewals, restores, refunds, claims with and without an environment, operator grants,
/// checks against Apple, a change of rules — every `timelines` and `by_user` entry that changed must be among the
/// subscriptions and customers the commit told its observers, and so must the subscription of each check and the
/// customer of each grant it logged. A stage that writes either table without the report fails here.
@Suite(.blocking) struct WriteReportTests {
    typealias History = IncrementalProjectionTests

    /// A table's entries: key → its values, in order.
    static func contents(_ ledger: Ledger, _ database: KeyPath<StoreLayout, Database>) throws -> [[UInt8]: [[UInt8]]] {
        try ledger.environment.read { txn in
            var out: [[UInt8]: [[UInt8]]] = [:]
            let cursor = try txn.cursor(ledger.layout[keyPath: database])
            var entry = try cursor.first()
            while let e = entry {
                out[Array(e.key), default: []].append(Array(e.value))
                entry = try cursor.next()
            }
            return out
        }
    }

    /// The keys whose values differ between two snapshots.
    static func changed(_ a: [[UInt8]: [[UInt8]]], _ b: [[UInt8]: [[UInt8]]]) -> Set<[UInt8]> {
        Set(a.keys).union(b.keys).filter { a[$0] != b[$0] }
    }

    /// A `by_user` key as readers ask: the user the log names there (a pseudonym, with them) shown by its value.
    static func shown(_ key: [UInt8], _ ledger: Ledger) throws -> [UInt8] {
        for environment in AppStoreEnvironment.known {
            let prefix = StoreLayout.environmentPrefix(environment)
            guard key.starts(with: prefix) else { continue }
            let named = String(decoding: key.dropFirst(prefix.count), as: UTF8.self)
            let value = try ledger.environment.read { txn in try ledger.identities.shown(named, ledger.layout, txn) }
            return StoreLayout.userKey(environment, AppUserID(value))
        }
        return key
    }

    /// The story's facts, with operator grants to some users, checks of some subscriptions and, half-way, a change
    /// of rules.
    static func story(seed: UInt64, rng: inout SplitMix64) -> [Fact] {
        var facts = AnswerCacheTests.story(seed: seed)
        rng.shuffle(&facts)
        let otids = Array(Set(facts.compactMap(\.originalTransactionId))).sorted()
        for (i, otid) in otids.enumerated() where rng.chance(50) {
            let check = ReconciliationFact(
                originalTransactionId: otid, environment: i % 3 == 0 ? .sandbox : .production,
                checkedAt: History.start + Int64(i) * History.day)
            facts.insert(.reconciliation(check), at: rng.below(facts.count + 1))
        }
        for u in 0..<4 where rng.chance(60) {
            let grant = OperatorGrant(
                action: .grant, appUserId: AppUserID("user\(u)"), grantId: "g\(seed)-\(u)", entitlement: "premium",
                from: History.start, until: History.start + 90 * History.day)
            facts.insert(.grant(grant), at: rng.below(facts.count + 1))
        }
        let rules = RulesChange(rules: FoldRules(bindingPolicy: .share), appliedAt: History.start)
        facts.insert(.rules(rules), at: facts.count / 2)
        return facts
    }

    @Test(arguments: [false, true])
    func everyTimelineAndByUserEntryACommitWritesIsReported(pseudonyms: Bool) throws {
        var checked = 0
        for seed in UInt64(1)...5 {
            var rng = SplitMix64(seed: seed &* 104_729)
            let facts = Self.story(seed: seed, rng: &rng)
            var options = Ledger.Options()
            options.pseudonyms = pseudonyms
            let t = try TemporaryLedger(options: options)
            let told = Mutex<[Writer.CommitInfo]>([])
            t.ledger.observers.add { info in told.withLock { $0.append(info) } }
            var timelines = try Self.contents(t.ledger, \.timelines)
            var byUser = try Self.contents(t.ledger, \.byUser)
            var offset = 0
            while offset < facts.count {
                let batch = Array(facts[offset..<min(offset + 1 + rng.below(4), facts.count)])
                offset += batch.count
                _ = try t.ledger.appendAndSettle(History.inputs(batch))
                let infos = told.withLock { infos in
                    defer { infos.removeAll() }
                    return infos
                }
                let everything = infos.contains { $0.changes.everything }
                let subscriptions = infos.reduce(into: Set<[UInt8]>()) { $0.formUnion($1.changes.subscriptions) }
                let customers = infos.reduce(into: Set<[UInt8]>()) { $0.formUnion($1.changes.customers) }
                let context = "seed \(seed), pseudonyms \(pseudonyms), facts \(offset - batch.count)..<\(offset)"

                let nowTimelines = try Self.contents(t.ledger, \.timelines)
                let nowByUser = try Self.contents(t.ledger, \.byUser)
                if batch.contains(where: { $0.kind == .rules }) {
                    #expect(everything, "a change of rules refolds every subscription: \(context)")
                } else {
                    for key in Self.changed(timelines, nowTimelines) {
                        #expect(subscriptions.contains(key), "timeline \(key) written but not told: \(context)")
                        checked += 1
                    }
                    for key in Self.changed(byUser, nowByUser) {
                        #expect(try customers.contains(Self.shown(key, t.ledger)), "by_user \(key) not told: \(context)")
                        checked += 1
                    }
                    for fact in batch {
                        if case .reconciliation(let c) = fact {
                            let key = StoreLayout.subscriptionKey(c.environment, c.originalTransactionId)
                            #expect(subscriptions.contains(key), "check of \(c.originalTransactionId) not told: \(context)")
                            checked += 1
                        }
                        if case .grant(let g) = fact {
                            let key = StoreLayout.userKey(g.environment, g.appUserId)
                            #expect(customers.contains(key), "grant to \(g.appUserId) not told: \(context)")
                            checked += 1
                        }
                    }
                }
                timelines = nowTimelines
                byUser = nowByUser
            }
        }
        // The stories wrote entries of both tables (else this compared nothing).
        #expect(checked > 100, "\(checked)")
    }
}
