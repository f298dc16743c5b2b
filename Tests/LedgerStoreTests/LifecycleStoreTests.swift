import Foundation
import LMDB
import LedgerCodec
import LedgerCore
import LedgerStore
import LedgerTestSupport
import Testing

/// The lifecycle projection inside the store: appended in random batches of multi-fact inputs, shuffled and
/// redelivered, the stored stream is the one a full fold per input derives from the log (ids included), a replay
/// checks it byte for byte, a rewrite rebuilds it, and the stream pages resume exactly.
@Suite(.blocking) struct LifecycleStoreTests {
    /// The stream derived from the log alone, by full folds: for each subscription, input by input (an input is the
    /// events sharing a raw key), the events `Lifecycle.events` says between the fold before and after it, in
    /// `lifecycle` key order (seq, environment code, index).
    static func expectedStream(_ log: [StoredEvent], rules: FoldRules) -> [LifecycleEvent] {
        var subscriptions: [(AppStoreEnvironment, OriginalTransactionID)] = []
        for s in log {
            if case .binding(let b) = s.event.fact, b.everyEnvironment { continue }
            guard let otid = s.event.fact.originalTransactionId else { continue }
            let key = (s.event.fact.environment, otid)
            if !subscriptions.contains(where: { $0 == key }) { subscriptions.append(key) }
        }
        var out: [(seq: UInt64, code: UInt8, index: Int, event: LifecycleEvent)] = []
        for (env, otid) in subscriptions {
            func concerns(_ f: Fact) -> Bool {
                if case .binding(let b) = f { return b.originalTransactionId == otid && b.applies(to: env) }
                return f.originalTransactionId == otid && f.environment == env
            }
            let mine = log.filter { concerns($0.event.fact) }
            var before: Timeline?
            var k = 0
            while k < mine.count {
                var end = k
                while end < mine.count && mine[end].rawKey == mine[k].rawKey { end += 1 }
                let run = mine[k..<end]
                k = end
                let onlyClaimsOfEveryEnvironment = run.allSatisfy {
                    if case .binding(let b) = $0.event.fact { return b.everyEnvironment }
                    return false
                }
                if before == nil && onlyClaimsOfEveryEnvironment { continue }
                let after = Timeline.fold(
                    mine[..<end].map(\.event), originalTransactionId: otid, environment: env, rules: rules, ties: .canonical)
                let seq = run.last!.event.seq
                for (i, e) in Lifecycle.events(before: before, after: after, seq: seq, rules: rules).enumerated() {
                    out.append((seq, env.code, i, e))
                }
                before = after
            }
        }
        out.sort { ($0.seq, $0.code, $0.index) < ($1.seq, $1.code, $1.index) }
        return out.map(\.event)
    }

    @Test func shuffledBatchedHistoriesStoreTheStreamAFullFoldDerives() throws {
        var said = 0
        for seed in UInt64(1)...25 {
            let facts = IncrementalProjectionTests.history(seed: seed)
            var rng = SplitMix64(seed: seed ^ 0x11FE)
            var delivered = facts
            for _ in 0..<rng.below(6) { delivered.append(facts[rng.below(facts.count)]) }
            delivered.shuffle(using: &rng)
            let t = try TemporaryLedger()
            var offset = 0
            var number = 0
            while offset < delivered.count {
                // A batch of inputs of one to three facts each.
                var batch: [LedgerInput] = []
                for _ in 0..<(1 + rng.below(4)) where offset < delivered.count {
                    let n = min(1 + rng.below(3), delivered.count - offset)
                    number += 1
                    batch.append(
                        .facts(
                            Array(delivered[offset..<(offset + n)]),
                            metadata: FactMetadata(source: .decodedJSON, receivedAt: IncrementalProjectionTests.start + Int64(number)),
                            raw: Array("input \(number)".utf8)))
                    offset += n
                }
                _ = try t.ledger.appendAndWait(batch)
            }
            let stored = try t.ledger.lifecycleEvents(after: 0, limit: 1 << 30).events
            let log = try t.ledger.log.events(after: 0, limit: 1 << 30)
            let expected = Self.expectedStream(log, rules: t.ledger.rules)
            #expect(stored == expected, "seed \(seed): the stored stream differs from the log's")
            #expect(!stored.isEmpty)
            said += stored.count
            let check = try t.ledger.audit.replay(check: true)
            #expect(check.differences.isEmpty, "seed \(seed): \(check.differences)")

            // Paged, resumed after the last seq read: the same stream, nothing lost, nothing twice.
            var paged: [LifecycleEvent] = []
            var after: UInt64 = 0
            while true {
                let page = try t.ledger.lifecycleEvents(after: after, limit: 1 + rng.below(3))
                paged += page.events
                if page.events.isEmpty { break }
                after = page.next
            }
            #expect(paged == stored, "seed \(seed): pages lost or repeated events")
        }
        #expect(said > 200)
    }

    @Test func aReplayNamesAMissingOrAlteredLifecycleEventAndARewriteRestoresIt() throws {
        let t = try TemporaryLedger()
        var p1 = transaction("1", purchase: 1_700_000_000_000)
        p1.signedDate = p1.purchaseDate
        var p2 = transaction("2", purchase: 1_700_000_000_000 + 30 * 86_400_000)
        p2.signedDate = p2.purchaseDate
        var refund = p1
        refund.signedDate = 1_700_000_000_000 + 40 * 86_400_000
        refund.revocationDate = 1_700_000_000_000 + 5 * 86_400_000
        for (i, f) in [Fact.transaction(p1), .transaction(p2), .transaction(refund)].enumerated() {
            _ = try t.ledger.appendAndWait([
                .facts([f], metadata: FactMetadata(source: .decodedJSON, receivedAt: 1_700_000_000_000 + Int64(i)), raw: [UInt8(i)])
            ])
        }
        let stream = try t.ledger.lifecycleEvents(after: 0, limit: 100).events
        #expect(stream.map(\.type) == [.initialPurchase, .renewal, .refund])
        #expect(stream.map(\.seq) == [1, 2, 3] && stream[2].late)
        let whole = try t.ledger.audit.replay(check: true)
        #expect(whole.differences.isEmpty && whole.projections == ["timelines", "lifecycle"])
        #expect(try t.ledger.audit.verify().ok)
        // Each projection alone is digested alone: the two digests differ from each other and from the whole's.
        let timelinesOnly = try t.ledger.audit.replay(check: true, projections: .timelines)
        let lifecycleOnly = try t.ledger.audit.replay(check: true, projections: .lifecycle)
        #expect(timelinesOnly.projections == ["timelines"] && lifecycleOnly.projections == ["lifecycle"])
        #expect(
            Set([whole.projectionsDigest, timelinesOnly.projectionsDigest, lifecycleOnly.projectionsDigest]).count == 3)
        #expect(try t.ledger.audit.replay(until: 3, check: false, projections: .timelines).projectionsDigest
            == timelinesOnly.projectionsDigest)

        // Remove the REFUND behind the ledger's back: the check names the subscription, a rewrite puts it back.
        let directory = t.directory
        t.ledger.close()
        do {
            let env = try Environment(path: directory, options: Environment.Options())
            let db = try env.openDatabase("lifecycle")
            try env.write { txn in
                let cursor = try txn.cursor(db)
                _ = try cursor.last()
                try cursor.deleteCurrent()
            }
        }
        try t.reopen()
        let check = try t.ledger.audit.replay(check: true)
        #expect(check.differences == ["lifecycle events of Production/1000000741475761"])
        #expect(try t.ledger.audit.replay(check: true, projections: .lifecycle).differences == check.differences)
        // The timelines alone are intact, and digest as before.
        let timelinesAfter = try t.ledger.audit.replay(check: true, projections: .timelines)
        #expect(timelinesAfter.differences.isEmpty && timelinesAfter.projectionsDigest == timelinesOnly.projectionsDigest)
        #expect(try !t.ledger.audit.verify().ok)
        // A rewrite of the timelines alone leaves the stream as it is; of the stream, puts the REFUND back.
        _ = try t.ledger.audit.replay(check: false, projections: .timelines)
        #expect(try t.ledger.lifecycleEvents(after: 0, limit: 100).events.count == 2)
        _ = try t.ledger.audit.replay(check: false, projections: .lifecycle)
        #expect(try t.ledger.lifecycleEvents(after: 0, limit: 100).events == stream)
        #expect(try t.ledger.audit.replay(check: true).differences.isEmpty)
    }
}
