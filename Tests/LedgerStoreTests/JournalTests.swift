import Foundation
@testable import LMDB
import LedgerCore
import LedgerErrors
@testable import LedgerStore
import Logging
import LedgerTestSupport
import Testing

/// The write-ahead journal in process: its records and checkpoint read back as written, a journaled ledger seen by
/// readers as soon as an append returns, the other writers kept out, and a clean close that leaves LMDB holding
/// everything. Crashes are tested with real processes (StoreLedgerCLITests' JournalProcessTests).
@Suite(.blocking) struct JournalTests {
    func journaled(bootID: String = "boot-test") -> Ledger.Options {
        var options = Ledger.Options()
        options.journal = true
        options.bootID = bootID
        options.journalSegmentBytes = 64 << 10
        return options
    }

    @Test func aRecordReadsBackAsTheSameInputsAndPositions() throws {
        var metadata = FactMetadata(source: .signedTransaction, signature: .verified, receivedAt: 1_605_243_600_000)
        metadata.appUserId = AppUserID("u1")
        let facts: [Fact] = [
            .transaction(transaction("t1")), .transaction(transaction("t2", otid: "2000000000000001")),
        ]
        var refused = RejectedInput(raw: Array("{not json".utf8), code: "invalid_json", message: "no", receivedAt: 5)
        refused.request = "POST /v1/events"
        // The writer gave the first input a seed (it named someone new): the record keeps it for the recovery.
        let seed: [UInt8] = Array(0..<16)
        let record = JournalRecord(
            before: LogPosition(seq: 7, rejected: 2), after: LogPosition(seq: 9, rejected: 3),
            inputs: [.facts(facts, metadata: metadata, raw: Array("raw bytes".utf8)), .rejected(refused)], seeds: [0: seed])
        let decoded = try record.encoded().withUnsafeBytes { try JournalRecord(decoding: $0) }
        #expect(decoded.before == record.before && decoded.after == record.after)
        #expect(decoded.inputs.count == 2)
        guard case .facts(let f, let m, let raw, let given) = decoded.inputs[0], case .rejected(let r) = decoded.inputs[1]
        else {
            Issue.record("inputs of the wrong kinds: \(decoded.inputs)")
            return
        }
        #expect(f == facts)
        #expect(m == metadata)
        #expect(raw == Array("raw bytes".utf8))
        #expect(given == seed)
        #expect(r == refused)
    }

    @Test func aCheckpointReadsBackAndADamagedOneIsCorrupted() throws {
        var page = [UInt8](repeating: 0, count: 4096)
        page[10] = 0x08  // P_META
        withUnsafeBytes(of: UInt32(0xBEEF_C0DE).littleEndian) { page.replaceSubrange(16..<20, with: $0) }
        withUnsafeBytes(of: UInt32(1).littleEndian) { page.replaceSubrange(20..<24, with: $0) }
        withUnsafeBytes(of: UInt64(41).littleEndian) { page.replaceSubrange(MetaPage.lastPageOffset..<(MetaPage.lastPageOffset + 8), with: $0) }
        withUnsafeBytes(of: UInt64(1234).littleEndian) {
            page.replaceSubrange(MetaPage.transactionIDOffset..<(MetaPage.transactionIDOffset + 8), with: $0)
        }
        let meta = try #require(MetaPage(page))
        #expect(meta.transactionID == 1234 && meta.lastPage == 41)
        let checkpoint = JournalCheckpoint(
            clean: false, bootID: "b-1", dataInode: 99, position: Journal.Position(segment: 3, offset: 4_000), meta: meta)
        #expect(JournalCheckpoint(checkpoint.encoded()) == checkpoint)
        var damaged = checkpoint.encoded()
        damaged[20] ^= 1
        #expect(JournalCheckpoint(damaged) == nil)

        let directory = NSTemporaryDirectory() + "journal-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try checkpoint.write(directory)
        #expect(try JournalCheckpoint.read(directory) == checkpoint)
        try Data(damaged).write(to: URL(fileURLWithPath: directory + "/checkpoint"))
        #expect(throws: LedgerError(code: .corrupted, message: "")) { try JournalCheckpoint.read(directory) }
    }

    @Test func aJournaledLedgerIsReadAsSoonAsAnAppendReturnsAndClosesClean() throws {
        let t = try TemporaryLedger(options: journaled())
        var seqs: [UInt64] = []
        // Enough groups to fill several 64 KiB segments.
        for n in 0..<300 {
            let raw = String(repeating: "x", count: 400) + "\(n)"
            let results = try t.ledger.appendAndWait([input([.transaction(transaction("j\(n)", otid: "o\(n % 7)"))], raw: raw)])
            seqs += results.compactMap(\.seq)
            // Read-your-writes: the group committed (without LMDB's own sync) before the answer.
            #expect(try t.ledger.log.events(key: "j\(n)").count == 1)
        }
        #expect(seqs == Array(1...300))
        let journal = t.directory + "/journal"
        #expect(Journal.segments(in: journal).count >= 1)

        // Another writer is kept out (readers are not: JournalProcessTests reads with `stats` while `serve` runs).
        #expect(throws: LedgerError(code: .ledgerInUse, message: "")) {
            _ = try Ledger(directory: t.directory, logger: Logger(label: "test"))
        }

        // Closed, it is clean: no segment left, and LMDB alone holds all of it.
        t.ledger.close()
        let checkpoint = try #require(try JournalCheckpoint.read(journal))
        #expect(checkpoint.clean)
        #expect(Journal.segments(in: journal).isEmpty)
        try t.reopen()
        #expect(try t.ledger.statistics().lastSeq == 300)
        #expect(try t.ledger.audit.verify().fault == nil)
        // Reopened journaled in "another boot": a clean checkpoint needs no recovery.
        try t.reopen(options: journaled(bootID: "another"))
        #expect(try t.ledger.appendAndWait([input([.transaction(transaction("after"))])]).first?.seq == 301)
    }
}
