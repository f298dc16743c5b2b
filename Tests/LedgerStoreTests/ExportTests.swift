import Foundation
import LMDB
@testable import LedgerAPI
import LedgerAppStore
import LedgerCore
import LedgerStore
import LedgerTestSupport
import LedgerErrors
import Logging
import Testing

/// `storeledger export` writes, for every event, the bytes the export wrote before it was made fast: one line of
/// `JSONWriter.bytes(encoding: EventDocument(exported), sortedKeys: true)` each, pages of `exportedEvents` read one
/// transaction at a time. Both are compared here on a ledger of every kind of input Apple sends, with ids, users and
/// strings that need escaping.
@Suite struct ExportTests {
    typealias F = AppleFixtures

    /// The export's events as they were written before: the reference the fast one must equal byte for byte.
    static func referenceExport(_ ledger: Ledger, after: UInt64) throws -> [UInt8] {
        var out: [UInt8] = []
        var next = after
        while true {
            let page = try ledger.audit.exportedEvents(after: next, limit: 1_000)
            guard let last = page.last else { break }
            for exported in page {
                out += try JSONWriter.bytes(encoding: EventDocument(exported), sortedKeys: true)
                out.append(UInt8(ascii: "\n"))
            }
            next = last.stored.event.seq
        }
        return out
    }

    /// `EventExport.write` into a temporary file, read back.
    static func export(_ ledger: Ledger, after: UInt64 = 0, batchSize: Int = 4_096) throws -> (bytes: [UInt8], summary: EventExport.Summary) {
        let path = NSTemporaryDirectory() + "export-" + UUID().uuidString
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let summary = try EventExport.write(ledger, after: after, to: fd, batchSize: batchSize)
        close(fd)
        return (Array(try Data(contentsOf: URL(fileURLWithPath: path))), summary)
    }

    /// A ledger of Apple's documents, decoded as the server decodes them: V1 and V2 notifications (signed by the
    /// test PKI), a verifyReceipt response and signed transactions claimed by users whose ids need escaping, a
    /// TEST notification (no subscription), claims with and without an environment, a sandbox subscription, a
    /// refund (a second revision of a transaction), and a refused input.
    static func variedLedger() throws -> TemporaryLedger {
        let t = try TemporaryLedger()
        let decoder = InputDecoder(
            configuration: AppStoreConfiguration(bundleId: F.bundleId, trustedRootsDER: [TestPKI.shared.rootDER]))
        var inputs: [LedgerInput] = []
        func add(_ bytes: [UInt8], user: String? = nil, at: Int64) {
            do {
                let d = try decoder.decode(bytes, appUserId: user.map { AppUserID($0) }, receivedAt: at)
                inputs.append(.facts(d.facts, metadata: d.metadata, raw: d.raw))
            } catch {
                inputs.append(.rejected(RejectedInput(raw: bytes, code: error.code, message: error.message, receivedAt: at)))
            }
        }
        let day = F.day
        for i in 0..<6 {
            let otid = String(1_000_000_000_000_100 + i)
            let at = F.epoch + Int64(i) * day
            let latest = (0...(i % 3)).map { k in
                F.v1Transaction(
                    transactionId: String(1_000_000_000_000_200 + 10 * i + k), originalTransactionId: otid,
                    purchaseDate: at + Int64(k) * 30 * day, webOrderLineItemId: String(1_000_000_000_000_900 + 10 * i + k))
            }
            add(F.v1Notification(type: i == 0 ? "INITIAL_BUY" : "DID_RENEW", latest: latest), at: at + day)
            let v2otid = String(2_000_000_000_000_100 + i)
            add(
                F.v2Notification(
                    type: "DID_RENEW", subtype: nil, notificationUUID: "9d3a5f0e-1c2b-4e6f-8a7b-00000000010\(i)",
                    signedDate: at, environment: i == 4 ? "Sandbox" : "Production",
                    transaction: F.v2Transaction(
                        transactionId: String(2_000_000_000_000_200 + i), originalTransactionId: v2otid, purchaseDate: at,
                        signedDate: at, environment: i == 4 ? "Sandbox" : "Production",
                        appAccountToken: i % 2 == 0 ? "7a9c3e2b-0000-4000-8000-00000000000\(i)" : nil, offerType: i == 3 ? 1 : nil,
                        offerIdentifier: i == 3 ? "intro \"free\"/month" : nil),
                    renewal: F.v2Renewal(originalTransactionId: v2otid, signedDate: at)),
                at: at + 2)
        }
        // Users whose ids need escaping, claims with and without an environment, a receipt, a signed transaction.
        add(F.envelope(type: "binding", payload: F.binding(appUserId: "ü\"\\\n\t\u{1}", originalTransactionId: "1000000000000100")), at: F.epoch + 10 * day)
        add(F.envelope(type: "binding", payload: F.json(["appUserId": "u2", "originalTransactionId": "2000000000000104", "environment": "Sandbox"])), at: F.epoch + 11 * day)
        add(
            F.receiptIOS7(
                requestDate: F.epoch + 12 * day,
                inApp: [F.v1Transaction(transactionId: "1000000000000300", originalTransactionId: "1000000000000300", purchaseDate: F.epoch + 12 * day)],
                latest: [F.v1Transaction(transactionId: "1000000000000300", originalTransactionId: "1000000000000300", purchaseDate: F.epoch + 12 * day)],
                pending: [F.v1PendingRenewal(originalTransactionId: "1000000000000300", productId: F.monthly)]),
            user: "receipt user 🧾", at: F.epoch + 12 * day)
        add(Array(F.signedTransaction(F.v2Transaction(transactionId: "2000000000000400", originalTransactionId: "2000000000000400")).utf8), user: "u3", at: F.epoch + 13 * day)
        add(F.v2Notification(type: "TEST", subtype: nil, notificationUUID: "9d3a5f0e-1c2b-4e6f-8a7b-0000000000ff", signedDate: F.epoch + 14 * day), at: F.epoch + 14 * day)
        add(F.v1Notification(
            type: "REFUND",
            latest: [F.v1Transaction(
                transactionId: "1000000000000200", originalTransactionId: "1000000000000100", purchaseDate: F.epoch,
                webOrderLineItemId: "1000000000000900", cancellationDate: F.epoch + 15 * day, cancellationReason: "0")]),
            at: F.epoch + 15 * day)
        add(Array("{\"not\": json".utf8), at: F.epoch + 16 * day)
        _ = try t.ledger.appendAndWait(inputs)
        return t
    }

    @Test func theExportIsTheBytesItWasBefore() throws {
        let t = try Self.variedLedger()
        let last = try t.ledger.lastSeq()
        #expect(last > 40, "a varied ledger: \(last) events")
        let reference = try Self.referenceExport(t.ledger, after: 0)
        // Batches of 1 and 3 cut the events of one input (one raw input) across read transactions.
        for batchSize in [1, 3, 4_096] {
            let (bytes, summary) = try Self.export(t.ledger, batchSize: batchSize)
            #expect(bytes == reference, "batches of \(batchSize): the export differs from the reference")
            #expect(summary.events == last && summary.bytes == UInt64(reference.count))
        }
        let text = String(decoding: reference, as: UTF8.self)
        #expect(text.contains(#""appUserId":"ü\"\\\n\t\u0001""#), "a user id with escapes is in the export")
        #expect(text.contains(#""rawKey":1,"receivedAt":"#) && text.contains(#","stored":""#))
        #expect(text.contains(#""environment":"Sandbox""#) && text.contains(#""kind":"notification""#))
    }

    @Test(arguments: [0, 1, 7, 25, 1_000] as [UInt64])
    func theExportAfterASeqIsTheBytesItWasBefore(after: UInt64) throws {
        let t = try Self.variedLedger()
        let (bytes, summary) = try Self.export(t.ledger, after: after, batchSize: 5)
        #expect(bytes == (try Self.referenceExport(t.ledger, after: after)))
        #expect(summary.events == (try t.ledger.lastSeq()) - min(after, try t.ledger.lastSeq()))
    }

    /// An event whose raw input is missing (a damaged ledger) ends the export as corrupted, as before.
    @Test func anEventWithoutItsRawInputEndsTheExport() throws {
        let t = try Self.variedLedger()
        let copy = NSTemporaryDirectory() + "export-copy-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        try t.ledger.copy(to: copy)
        // The raw input of the second input: its first event is the first named.
        var first: UInt64 = 0
        do {
            let env = try Environment(path: copy)
            let raw = try env.openDatabase("raw")
            try env.write { txn in
                let cursor = try txn.cursor(raw)
                _ = try #require(try cursor.first())
                let second = try #require(try cursor.next())
                first = second.key.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self).bigEndian }
                try cursor.deleteCurrent()
            }
        }
        var options = Ledger.Options()
        options.readOnly = true
        let damaged = try Ledger(directory: copy, options: options, logger: Logger(label: "t"))
        for (name, export) in [
            ("reference", { _ = try Self.referenceExport(damaged, after: 0) }), ("fast", { _ = try Self.export(damaged, batchSize: 2) }),
        ] as [(String, () throws -> Void)] {
            do {
                try export()
                Issue.record("the \(name) export went through")
            } catch let error as LedgerError {
                #expect(error.code == .corrupted && error.message == "raw input of event \(first) is missing", "\(name): \(error)")
            }
        }
    }

    @Test func anEmptyLedgerExportsNothing() throws {
        let t = try TemporaryLedger()
        let (bytes, summary) = try Self.export(t.ledger)
        #expect(bytes.isEmpty && summary == EventExport.Summary(events: 0, bytes: 0, lastSeq: 0, chainHead: nil))
    }

    /// A write that fails is a coded error, not a crash.
    @Test func aFailedWriteIsAStorageError() throws {
        let t = try Self.variedLedger()
        let fd = open("/dev/null", O_RDONLY)
        defer { close(fd) }
        #expect(throws: LedgerError.self) { try EventExport.write(t.ledger, to: fd) }
        do {
            _ = try EventExport.write(t.ledger, to: fd)
        } catch let error as LedgerError {
            #expect(error.code == .storageError && error.message.hasPrefix("the export could not be written"))
        }
    }
}
