import Foundation
import LMDB
import LedgerCore
import LedgerStore
import LedgerErrors
import Logging
import LedgerTestSupport
import Testing

/// A ledger in a fresh temporary directory.
final class TemporaryLedger {
    let directory: String
    private(set) var ledger: Ledger

    init(options: Ledger.Options = Ledger.Options(), rules: FoldRules = FoldRules()) throws {
        directory = NSTemporaryDirectory() + "ledger-test-" + UUID().uuidString
        ledger = try Ledger(directory: directory, rules: rules, options: options, logger: Logger(label: "test"))
    }

    /// Closes and reopens the same directory (what a restart does).
    func reopen(options: Ledger.Options = Ledger.Options()) throws {
        ledger.close()
        ledger = try Ledger(directory: directory, rules: ledger.rules, options: options, logger: Logger(label: "test"))
    }

    deinit {
        ledger.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

func transaction(
    _ tid: String, otid: String = "1000000741475761", purchase: Int64 = 1_605_243_570_000, expires: Int64? = nil,
    environment: AppStoreEnvironment = .production
) -> TransactionFact {
    var t = TransactionFact(
        transactionId: TransactionID(tid), originalTransactionId: OriginalTransactionID(otid),
        productId: "com.example.premium.monthly", purchaseDate: purchase, environment: environment)
    t.expiresDate = expires ?? purchase + 30 * 86_400_000
    t.webOrderLineItemId = "wol-\(purchase)"
    t.type = .autoRenewable
    return t
}

/// `value` as the ledger stores its numbers (seqs, counts, numbered keys): eight big-endian bytes.
func bigEndian(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }

func input(_ facts: [Fact], raw: String? = nil, receivedAt: Int64 = 1_605_243_600_000) -> LedgerInput {
    let bytes = Array((raw ?? "raw-\(facts.map(\.eventKey).joined(separator: ","))-\(facts.hashValue)").utf8)
    return .facts(facts, metadata: FactMetadata(source: .decodedJSON, receivedAt: receivedAt), raw: bytes)
}

@Suite(.blocking) struct EventStoreTests {
    @Test func appendWritesEventUnderItsTransactionID() throws {
        let t = try TemporaryLedger()
        let results = try t.ledger.appendAndWait([input([.transaction(transaction("1000000741475761"))])])
        #expect(results.map(\.status) == [.appended])
        #expect(results[0].seq == 1)
        #expect(results[0].events.map(\.transactionId) == ["1000000741475761"])
        let stored = try t.ledger.log.events(key: "1000000741475761")
        #expect(stored.count == 1)
        #expect(stored[0].event.fact == .transaction(transaction("1000000741475761")))
        #expect(try t.ledger.lastSeq() == 1)
        #expect(try t.ledger.log.raw(of: stored[0]) == Array("raw-1000000741475761-\(([Fact.transaction(transaction("1000000741475761"))]).hashValue)".utf8))
    }

    @Test func theSameFactAgainIsADuplicateAndWritesNothing() throws {
        let t = try TemporaryLedger()
        let fact = Fact.transaction(transaction("1000000750000001"))
        _ = try t.ledger.appendAndWait([input([fact], raw: "first delivery")])
        let before = try t.ledger.statistics()
        // Same fact, different envelope bytes and arrival time: still the same fact.
        let again = try t.ledger.appendAndWait([input([fact], raw: "second delivery", receivedAt: 1_700_000_000_000)])
        #expect(again[0].status == .duplicate)
        #expect(again[0].seq == nil)
        #expect(again[0].events.isEmpty)
        let after = try t.ledger.statistics()
        #expect(after.lastSeq == before.lastSeq)
        #expect(after.chainHead == before.chainHead)
        #expect(after.rawInputs == before.rawInputs, "a duplicate input's bytes are not stored")
    }

    @Test func changedContentUnderTheSameTransactionIDIsANewRevision() throws {
        let t = try TemporaryLedger()
        var revision = transaction("1000000750000001")
        _ = try t.ledger.appendAndWait([input([.transaction(revision)])])
        revision.revocationDate = revision.purchaseDate + 86_400_000
        revision.revocationReason = 1
        let r = try t.ledger.appendAndWait([input([.transaction(revision)])])
        #expect(r[0].status == .appended)
        let revisions = try t.ledger.log.events(key: "1000000750000001")
        #expect(revisions.map(\.event.seq) == [1, 2])
        guard case .transaction(let latest) = revisions[1].event.fact else {
            Issue.record("expected a transaction")
            return
        }
        #expect(latest.revocationDate == revision.revocationDate)
    }

    @Test func anInputWithSomeNewFactsAppendsOnlyThose() throws {
        let t = try TemporaryLedger()
        let a = Fact.transaction(transaction("1"))
        let b = Fact.transaction(transaction("2", purchase: 1_607_835_570_000))
        _ = try t.ledger.appendAndWait([input([a])])
        let r = try t.ledger.appendAndWait([input([a, b])])
        #expect(r[0].status == .appended)
        #expect(r[0].events.map(\.transactionId) == ["2"])
        #expect(try t.ledger.lastSeq() == 2)
    }

    @Test func refusedInputsLandInRejectedAndLeaveTheLogAlone() throws {
        let t = try TemporaryLedger()
        _ = try t.ledger.appendAndWait([input([.transaction(transaction("1"))])])
        let before = try t.ledger.statistics()
        let refused = RejectedInput(
            raw: Array("{not json".utf8), code: "invalid_json", message: "unexpected end", receivedAt: 1)
        var empty = transaction("")
        empty.transactionId = ""
        let results = try t.ledger.appendAndWait([.rejected(refused), input([.transaction(empty)])])
        #expect(results.map(\.status) == [.rejected, .rejected])
        #expect(results.map { $0.error?.code } == ["invalid_json", "invalid_id"])
        let after = try t.ledger.statistics()
        #expect(after.lastSeq == before.lastSeq)
        #expect(after.chainHead == before.chainHead)
        let kept = try t.ledger.log.rejectedInputs()
        #expect(kept.map(\.code) == ["invalid_json", "invalid_id"])
        #expect(kept[0].raw == Array("{not json".utf8))
        #expect(try t.ledger.audit.verify().ok)
    }

    @Test func aHugeRejectedInputKeepsItsFirstMebibyteAndItsSize() throws {
        let t = try TemporaryLedger()
        let huge = [UInt8](repeating: UInt8(ascii: "["), count: 3 << 20)
        _ = try t.ledger.appendAndWait([.rejected(RejectedInput(raw: huge, code: "too_large", message: "x", receivedAt: 0))])
        let kept = try #require(try t.ledger.log.rejectedInputs().first)
        #expect(kept.size == 3 << 20)
        #expect(kept.raw.count == RejectedInput.keptBytesLimit)
    }

    @Test func concurrentAppendsShareCommitsAndAllLand() async throws {
        let t = try TemporaryLedger()
        let ledger = t.ledger
        let committedInputs = Box(0)
        ledger.observeCommits { inputs, _, _ in committedInputs.add(inputs) }
        let results = try await withThrowingTaskGroup(of: AppendResult.self) { group in
            for i in 0..<200 {
                group.addTask {
                    let fact = Fact.transaction(transaction("\(2_000_000 + i)", otid: "\(3_000_000 + i % 20)"))
                    return try await ledger.append([input([fact])])[0]
                }
            }
            var all: [AppendResult] = []
            for try await r in group { all.append(r) }
            return all
        }
        #expect(results.allSatisfy { $0.status == .appended })
        #expect(Set(results.compactMap(\.seq)) == Set(1...200))
        #expect(try ledger.lastSeq() == 200)
        #expect(committedInputs.value == 200, "every input is reported by exactly one commit")
        #expect(try ledger.audit.verify().ok)
    }

    @Test func theMapGrowsFromATinyStartWithoutLosingAppends() throws {
        var options = Ledger.Options()
        options.initialMapSize = 256 * 1024
        let t = try TemporaryLedger(options: options)
        var inputs: [LedgerInput] = []
        for i in 0..<3_000 {
            inputs.append(input([.transaction(transaction("\(10_000 + i)", otid: "\(20_000 + i % 300)"))]))
        }
        let results = try t.ledger.appendAndWait(inputs)
        #expect(results.allSatisfy { $0.status == .appended })
        #expect(try t.ledger.lastSeq() == 3_000)
        #expect(try t.ledger.log.events(key: "12999").count == 1)
        try t.reopen()
        #expect(try t.ledger.lastSeq() == 3_000)
        #expect(try t.ledger.audit.verify().ok)
    }

    @Test func eventsSurviveAReopenWithTheirChain() throws {
        let t = try TemporaryLedger()
        _ = try t.ledger.appendAndWait((0..<50).map { input([.transaction(transaction("\(100 + $0)"))]) })
        let head = try t.ledger.statistics().chainHead
        try t.reopen()
        #expect(try t.ledger.statistics().chainHead == head)
        let page = try t.ledger.log.events(after: 10, limit: 5)
        #expect(page.map(\.event.seq) == [11, 12, 13, 14, 15])
    }
}

/// A tiny lock-protected counter for callbacks.
final class Box: @unchecked Sendable {
    private let lock = NSLock()
    private var v: Int
    init(_ v: Int) { self.v = v }
    func add(_ n: Int) {
        lock.lock()
        v += n
        lock.unlock()
    }
    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return v
    }
}

@Suite(.blocking) struct LiveVerificationTests {
    /// Auditors run `verify` and `replay --check` against a ledger a server keeps appending to: no false faults.
    @Test func verifyAndReplayCheckPassWhileAppendsContinue() async throws {
        let t = try TemporaryLedger()
        let ledger = t.ledger
        _ = try ledger.appendAndWait((0..<3_000).map { input([.transaction(transaction("\(1_000_000 + $0)", otid: "\(7_000 + $0 % 500)"))]) })
        let writer = Task.detached {
            for round in 0..<40 {
                let base = 2_000_000 + round * 100
                _ = try ledger.appendAndWait((0..<100).map {
                    input([.transaction(transaction("\(base + $0)", otid: "\(9_000 + round * 100 + $0)"))])
                })
            }
        }
        for _ in 0..<3 {
            let report = try ledger.audit.verify()
            #expect(report.ok, "\(report.fault ?? "")")
            let replay = try ledger.audit.replay(check: true)
            #expect(replay.differences.isEmpty, "\(replay.differences.prefix(3))")
        }
        try await writer.value
        #expect(try ledger.audit.verify().ok)
        #expect(try ledger.lastSeq() == 7_000)
    }
}
