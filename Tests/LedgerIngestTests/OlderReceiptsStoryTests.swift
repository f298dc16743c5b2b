import Foundation
import LMDB
import LedgerAppStore
import LedgerCore
import LedgerStore
import LedgerTestSupport
import Logging
import Testing

/// Receipts a build before schema 6 stored: their `in_app` copies were kept without the receipt's creation date,
/// so they spoke from the request date. This build reads the date again from their raw bytes, when it upgrades such
/// a ledger and when it imports an export of one (docs/domain.md, "Receipts an older build stored").
@Suite("Receipts an older build stored", .timeLimit(.minutes(2)))
struct OlderReceiptsStoryTests {
    static let day: Int64 = 86_400_000
    static let t0: Int64 = 1_709_283_600_000  // 2024-03-01T09:00:00Z
    static let lifetime = "com.example.lifetime"
    static let tid = "2000000000000777"
    static let later = t0 + 25 * day

    static let configuration = AppStoreConfiguration(
        bundleId: AppleFixtures.bundleId, trustedRootsDER: [TestPKI.shared.rootDER], acceptedEnvironments: [.production])

    /// Bob buys a lifetime unlock at T0; Apple refunds it at T0+10d; at T0+20d his app posts an old device receipt,
    /// made a minute after the purchase, whose `in_app` holds the purchase without a cancellation. The receipt is
    /// stored as a build before schema 6 decoded it: without `receiptCreationDate`.
    static func writeAsAnOlderBuild(_ story: StoryLedger) async throws {
        let purchase = AppleFixtures.v2Transaction(
            transactionId: tid, originalTransactionId: tid, productId: lifetime, purchaseDate: t0, signedDate: t0,
            type: "Non-Consumable")
        _ = try await story.ingest(Array(AppleFixtures.signedTransaction(purchase).utf8), claimedBy: "bob", now: t0)
        var refunded = purchase
        refunded["signedDate"] = t0 + 10 * day
        refunded["revocationDate"] = t0 + 10 * day
        refunded["revocationReason"] = 0
        refunded["revocationType"] = "REFUND_FULL"
        _ = try await story.ingest(
            AppleFixtures.v2Notification(
                type: "REFUND", subtype: nil, notificationUUID: "5e1c3b9a-0000-4000-8000-000000000101",
                signedDate: t0 + 10 * day, transaction: refunded),
            now: t0 + 10 * day)

        let stale = AppleFixtures.receiptIOS7(
            requestDate: t0 + 20 * day, creationDate: t0 + 60_000,
            inApp: [
                AppleFixtures.v1Transaction(
                    transactionId: tid, originalTransactionId: tid, productId: lifetime, purchaseDate: t0,
                    expiresDate: nil, webOrderLineItemId: nil)
            ])
        let decoded = try InputDecoder(configuration: configuration).decode(stale, receivedAt: t0 + 20 * day)
        let asAnOlderBuild = decoded.facts.map { fact -> Fact in
            guard case .transaction(var t) = fact else { return fact }
            #expect(t.receiptCreationDate == t0 + 60_000, "this build states the creation date")
            t.receiptCreationDate = nil
            return .transaction(t)
        }
        let results = try await story.ledger.append([.facts(asAnOlderBuild, metadata: decoded.metadata, raw: stale)])
        #expect(results.map(\.status) == [.appended])
    }

    /// Whether bob may use the unlock at `later`, and the subscription's status then.
    static func answers(_ ledger: Ledger) throws -> (active: Bool?, status: String?) {
        let customer = try ledger.customer(AppUserID("bob"), at: later)
        let view = try ledger.timeline(OriginalTransactionID(tid), at: later)
        return (customer.entitlements[lifetime]?.active, view?.status)
    }

    /// Marks the ledger in `directory` as one of schema 5, as a build before the stale-receipt rule left it.
    static func markAsSchema5(_ directory: String) throws {
        let env = try Environment(path: directory)
        let meta = try env.openDatabase("meta")
        try env.write { txn in
            try txn.put(meta, key: Array("schema".utf8), value: withUnsafeBytes(of: UInt64(5).bigEndian, Array.init))
        }
    }

    static func options(parsing: Bool) -> Ledger.Options {
        var options = Ledger.Options()
        if parsing {
            let decoder = InputDecoder(configuration: configuration)
            options.receiptCreationDates = { raw in decoder.receiptCreationDates(raw) }
        }
        return options
    }

    @Test func theUpgradeReadsTheCreationDateAgainSoAStaleReceiptReversesNoRefund() async throws {
        let copy = try TemporaryDirectory(prefix: "older-receipts-copy")
        let unparsed = try TemporaryDirectory(prefix: "older-receipts-unparsed")
        defer {
            copy.remove()
            unparsed.remove()
        }
        do {
            let story = try StoryLedger("older-receipts")
            defer { story.close() }
            try await Self.writeAsAnOlderBuild(story)
            // As that build folded it: the receipt spoke from its request date, later than the refund.
            #expect(try Self.answers(story.ledger) == (true, "active"))
            try story.ledger.copy(to: copy.path)
            try story.ledger.copy(to: unparsed.path)
        }
        try Self.markAsSchema5(copy.path)
        try Self.markAsSchema5(unparsed.path)

        let upgraded = try Ledger(directory: copy.path, options: Self.options(parsing: true), logger: Logger(label: "test"))
        defer { upgraded.close() }
        #expect(try Self.answers(upgraded) == (false, "revoked"), "the stale receipt gave a refunded purchase back")
        #expect(try upgraded.customer(AppUserID("bob"), at: Self.t0 + 5 * Self.day).entitlements[Self.lifetime]?.active == true)
        // The event is as it was stored (the chain covers its bytes); the fold reads the date beside it.
        #expect(try upgraded.audit.verify().ok)
        #expect(try upgraded.audit.replay(check: true).differences.isEmpty)
        let receiptEvent = try #require(try upgraded.log.events(key: Self.tid).last)
        guard case .transaction(let stored) = receiptEvent.event.fact else { Issue.record("not a transaction"); return }
        #expect(stored.receiptCreationDate == nil)
        // As known before the receipt came, and at every later position, the same fold.
        #expect(try upgraded.customer(AppUserID("bob"), at: Self.later, asOf: receiptEvent.event.seq - 1)
            .entitlements[Self.lifetime]?.active == false)

        // Without Apple's parsing the upgrade cannot read the bytes: the receipt keeps its request date.
        do {
            let plain = try Ledger(directory: unparsed.path, options: Self.options(parsing: false), logger: Logger(label: "test"))
            defer { plain.close() }
            #expect(try Self.answers(plain) == (true, "active"))
        }

        // A date given to an event that states its own instant (the signed purchase, seq 1) is a fault of `verify`.
        do {
            let env = try Environment(path: unparsed.path)
            let dates = try env.openDatabase("receipt_created")
            try env.write { txn in
                try txn.put(
                    dates, key: withUnsafeBytes(of: UInt64(1).bigEndian, Array.init),
                    value: withUnsafeBytes(of: UInt64(Self.t0).bigEndian, Array.init))
            }
        }
        var readOnly = Ledger.Options()
        readOnly.readOnly = true
        let damaged = try Ledger(directory: unparsed.path, options: readOnly, logger: Logger(label: "test"))
        defer { damaged.close() }
        let report = try damaged.audit.verify()
        #expect(!report.ok)
        #expect(report.fault?.contains("receipt_created gives event 1") == true, "\(String(describing: report.fault))")
    }

    @Test func anImportOfAnOlderBuildsExportReadsTheCreationDateAgain() async throws {
        let story = try StoryLedger("older-receipts-export")
        defer { story.close() }
        try await Self.writeAsAnOlderBuild(story)
        let events = try story.ledger.audit.exportedEvents(after: 0, limit: .max).map {
            ImportedEvent(
                seq: $0.stored.event.seq, key: $0.stored.event.fact.eventKey, bytes: $0.bytes, rawKey: $0.stored.rawKey,
                raw: $0.raw, chainHash: $0.stored.chainHash)
        }
        for parsing in [true, false] {
            let target = try TemporaryDirectory(prefix: "older-receipts-import")
            defer { target.remove() }
            let ledger = try Ledger(directory: target.path, options: Self.options(parsing: parsing), logger: Logger(label: "test"))
            defer { ledger.close() }
            let importer = try LedgerImport(into: ledger)
            // One event per write: the receipt's raw bytes and its events reach the importer in separate writes.
            for event in events { try importer.write([event]) }
            try importer.finish()
            #expect(try Self.answers(ledger) == (parsing ? (false, "revoked") : (true, "active")), "parsing: \(parsing)")
            #expect(try ledger.statistics().chainHead == (try story.ledger.statistics().chainHead))
            #expect(try ledger.audit.verify().ok)
            #expect(try ledger.audit.replay(check: true).differences.isEmpty)
        }
    }
}
