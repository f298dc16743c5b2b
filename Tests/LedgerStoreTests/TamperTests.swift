import Foundation
import LMDB
import LedgerCodec
import LedgerCore
import LedgerStore
import LedgerErrors
import Logging
import Testing

/// `verify` names the first fault when stored bytes were altered behind the ledger's back (in a copy).
@Suite struct TamperTests {
    /// Builds a small ledger, copies its directory, lets `alter` change the copy through raw LMDB, and verifies it.
    func verifyAlteredCopy(_ alter: (Environment) throws -> Void) throws -> VerificationReport {
        let t = try TemporaryLedger()
        _ = try t.ledger.appendAndWait(
            (0..<20).map { i in input([.transaction(transaction("\(500 + i)", otid: "\(900 + i % 4)", purchase: 1_605_243_570_000 + Int64(i) * 86_400_000))]) })
        _ = try t.ledger.appendAndWait(
            (1...3).map { i in
                .rejected(RejectedInput(raw: Array("refused input \(i)".utf8), code: "invalid_json", message: "refusal \(i)", receivedAt: 1_605_243_600_000))
            })
        let original = try t.ledger.audit.verify()
        #expect(original.ok, "the original is sound: \(original.fault ?? "")")
        #expect(original.rejected == 3)
        let copy = NSTemporaryDirectory() + "ledger-copy-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        try t.ledger.copy(to: copy)
        do {
            let env = try Environment(path: copy)
            try alter(env)
        }
        let reopened = try Ledger(directory: copy, options: { var o = Ledger.Options(); o.readOnly = true; return o }(), logger: Logger(label: "t"))
        return try reopened.audit.verify()
    }

    @Test func anAlteredEventBreaksTheChain() throws {
        let report = try verifyAlteredCopy { env in
            let events = try env.openDatabase("events")
            try env.write { txn in
                let c = try txn.cursor(events)
                let first = try #require(try c.first())
                let key = Array(first.key)
                var value = Array(first.value)
                value[value.count / 2] ^= 0x01
                try txn.put(events, key: key, value: value)
            }
        }
        #expect(!report.ok)
        #expect(report.fault?.contains("hash chain broken") == true, "\(report.fault ?? "no fault")")
    }

    @Test func aDeletedLogEntryIsFound() throws {
        let report = try verifyAlteredCopy { env in
            let log = try env.openDatabase("log")
            try env.write { txn in _ = try txn.delete(log, key: bigEndian(7)) }
        }
        #expect(report.fault?.contains("7") == true, "\(report.fault ?? "no fault")")
    }

    @Test func aMissingIndexEntryIsFound() throws {
        let report = try verifyAlteredCopy { env in
            let byOTID = try env.openDatabase("by_otid", flags: [.dupSort])
            try env.write { txn in
                let c = try txn.cursor(byOTID)
                _ = try #require(try c.first())
                try c.deleteCurrent()
            }
        }
        #expect(report.fault?.contains("by_otid") == true, "\(report.fault ?? "no fault")")
    }

    @Test func anAlteredRawInputIsFound() throws {
        let report = try verifyAlteredCopy { env in
            let raw = try env.openDatabase("raw")
            try env.write { txn in
                let c = try txn.cursor(raw)
                let first = try #require(try c.first())
                try txn.put(raw, key: Array(first.key), value: Array("forged".utf8))
            }
        }
        #expect(report.fault?.contains("raw input") == true, "\(report.fault ?? "no fault")")
    }

    @Test func anAlteredProjectionDiffersFromTheReplay() throws {
        let report = try verifyAlteredCopy { env in
            let timelines = try env.openDatabase("timelines")
            try env.write { txn in
                let c = try txn.cursor(timelines)
                let first = try #require(try c.first())
                var value = Array(first.value)
                value[3] ^= 0xFF  // the stamp
                try txn.put(timelines, key: Array(first.key), value: value)
            }
        }
        #expect(report.fault?.contains("differs from a replay") == true, "\(report.fault ?? "no fault")")
    }

    // MARK: - The rejected store

    /// Rewrites one refusal's record in place: it still decodes, only the chain in `meta` can tell.
    @Test func anAlteredRejectedRecordIsFound() throws {
        let report = try verifyAlteredCopy { env in
            let rejected = try env.openDatabase("rejected")
            try env.write { txn in
                let stored = try #require(try txn.value(rejected, key: bigEndian(2)))
                var record = try stored.withUnsafeBytes { try RejectedInput(number: 2, decoding: $0) }
                record.message = "nothing to see here"
                try txn.put(rejected, key: bigEndian(2), value: record.encoded())
            }
        }
        #expect(report.fault?.contains("rejected store's chain") == true, "\(report.fault ?? "no fault")")
    }

    @Test func aDeletedRejectedRecordIsFound() throws {
        let report = try verifyAlteredCopy { env in
            let rejected = try env.openDatabase("rejected")
            try env.write { txn in _ = try txn.delete(rejected, key: bigEndian(2)) }
        }
        #expect(report.fault == "rejected record 2 is missing (the numbering jumps to 3)")
    }

    @Test func anUndecodableRejectedRecordIsFound() throws {
        let report = try verifyAlteredCopy { env in
            let rejected = try env.openDatabase("rejected")
            try env.write { txn in try txn.put(rejected, key: bigEndian(3), value: [0xFF, 0xFF, 0xFF]) }
        }
        #expect(report.fault?.hasPrefix("rejected record 3 does not decode") == true, "\(report.fault ?? "no fault")")
    }

    @Test func aRejectedCountThatDisagreesWithMetaIsFound() throws {
        let report = try verifyAlteredCopy { env in
            let meta = try env.openDatabase("meta")
            try env.write { txn in try txn.put(meta, key: Array("rejected_count".utf8), value: bigEndian(2)) }
        }
        #expect(report.fault == "rejected holds record 3 beyond meta's count 2", "\(report.fault ?? "no fault")")
    }

    @Test func aRejectedRecordKeepingMoreBytesThanItsSizeIsFound() throws {
        let report = try verifyAlteredCopy { env in
            let rejected = try env.openDatabase("rejected")
            try env.write { txn in
                let stored = try #require(try txn.value(rejected, key: bigEndian(1)))
                var record = try stored.withUnsafeBytes { try RejectedInput(number: 1, decoding: $0) }
                record.size = 3
                try txn.put(rejected, key: bigEndian(1), value: record.encoded())
            }
        }
        #expect(report.fault?.hasPrefix("rejected record 1 keeps 15 bytes of an input of 3") == true, "\(report.fault ?? "no fault")")
    }

    /// Refusals stored before the chain existed have no head in `meta`: they verify, and the next refusal links them.
    @Test func refusalsWithoutAChainHeadAreLinkedByTheNextOne() throws {
        let t = try TemporaryLedger()
        _ = try t.ledger.appendAndWait([.rejected(RejectedInput(raw: [1, 2], code: "invalid_json", message: "a", receivedAt: 1))])
        let copy = NSTemporaryDirectory() + "ledger-copy-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        try t.ledger.copy(to: copy)
        do {
            let env = try Environment(path: copy)
            let meta = try env.openDatabase("meta")
            try env.write { txn in _ = try txn.delete(meta, key: Array("rejected_head".utf8)) }
        }
        let legacy = try Ledger(directory: copy, logger: Logger(label: "t"))
        #expect(try legacy.audit.verify().ok)
        _ = try legacy.appendAndWait([.rejected(RejectedInput(raw: [3], code: "too_large", message: "b", receivedAt: 2))])
        let report = try legacy.audit.verify()
        #expect(report.ok, "\(report.fault ?? "")")
        #expect(report.rejected == 2)
        legacy.close()
    }
}
