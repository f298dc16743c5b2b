import Foundation
import LMDB
import LedgerCore
import LedgerStore
import Logging
import Testing

/// `verify` names the first fault when stored bytes were altered behind the ledger's back (in a copy).
@Suite struct TamperTests {
    /// Builds a small ledger, copies its directory, lets `alter` change the copy through raw LMDB, and verifies it.
    func verifyAlteredCopy(_ alter: (Environment) throws -> Void) throws -> VerificationReport {
        let t = try TemporaryLedger()
        _ = try t.ledger.appendAndWait(
            (0..<20).map { i in input([.transaction(transaction("\(500 + i)", otid: "\(900 + i % 4)", purchase: 1_605_243_570_000 + Int64(i) * 86_400_000))]) })
        #expect(try t.ledger.verify().ok, "the original is sound")
        let copy = NSTemporaryDirectory() + "ledger-copy-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        try t.ledger.copy(to: copy)
        do {
            let env = try Environment(path: copy)
            try alter(env)
        }
        let reopened = try Ledger(directory: copy, options: { var o = Ledger.Options(); o.readOnly = true; return o }(), logger: Logger(label: "t"))
        return try reopened.verify()
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
            try env.write { txn in _ = try txn.delete(log, key: UInt64(7).bigEndianBytes) }
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
}
