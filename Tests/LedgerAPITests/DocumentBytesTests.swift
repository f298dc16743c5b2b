import Foundation
import LedgerAPI
import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerTestSupport
import Logging
import Testing

/// Every document of a small ledger, byte for byte as the build before the one JSON encoder wrote it: the server's
/// answers (keys in declaration order) and the CLI's `--json` output (keys sorted). The expected bytes were written by
/// that build (`Fixtures/documents.tsv`: name, tab, base64). When a change alters documents on purpose (a new id rule
/// changes an event's key and every chain hash after it), `STORELEDGER_RECORD_DOCUMENTS=1 swift test --filter
/// DocumentBytesTests` writes the fixture anew; the commit's diff of it is then the change to review.
@Suite struct DocumentBytesTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/documents.tsv")

    static func expected() throws -> [String: [UInt8]] {
        let url = fixture
        var documents: [String: [UInt8]] = [:]
        for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") {
            let parts = line.split(separator: "\t", maxSplits: 1)
            documents[String(parts[0])] = [UInt8](Data(base64Encoded: String(parts[1]))!)
        }
        return documents
    }

    @Test func everyDocumentOfALedgerIsWrittenAsBefore() async throws {
        var written: [String: [UInt8]] = [:]
        func put(_ name: String, _ bytes: [UInt8]) { written[name] = bytes }

        let dir = try TemporaryDirectory(prefix: "documents")
        defer { dir.remove() }
        let configuration = try LedgerConfiguration(json: Array(GoldenScenario.configuration.utf8), baseDirectory: dir.path)
        let ledger = try Ledger(directory: dir.path, rules: configuration.rules, logger: Logger(label: "documents"))
        defer { ledger.close() }
        let pipeline = IngestPipeline(ledger: ledger, configuration: configuration.appStore)
        let now: Int64 = 1_700_000_000_000
        for (i, body) in GoldenScenario.inputs.enumerated() {
            let results = try await pipeline.ingest(body: Array(body.utf8), options: .init(), now: now + Int64(i))
            put("results.\(i).server", JSONWriter.bytes(of: ResultsDocument(results: results)))
            for (j, r) in results.enumerated() { put("result.\(i).\(j).cli", JSONWriter.bytes(of: r, sortedKeys: true)) }
        }
        for otid in ["1", "10", "30"] {
            for at in GoldenScenario.instants {
                let asOf: UInt64? = at == GoldenScenario.instants[1] ? 3 : nil
                guard let view = try ledger.timeline(OriginalTransactionID(otid), at: at, asOf: asOf) else { continue }
                put("timeline.\(otid).\(at).server", JSONWriter.bytes(of: view))
                put("timeline.\(otid).\(at).cli", JSONWriter.bytes(of: view, sortedKeys: true))
            }
        }
        for (label, user) in GoldenScenario.users {
            for at in GoldenScenario.instants {
                let view = try ledger.customer(AppUserID(user), at: at)
                put("customer.\(label).\(at).server", JSONWriter.bytes(of: view))
                put("customer.\(label).\(at).cli", JSONWriter.bytes(of: view, sortedKeys: true))
            }
        }
        for stored in try ledger.log.events(after: 0, limit: 1000) {
            put("event.\(stored.event.seq).server", try JSONWriter.bytes(encoding: EventDocument(stored)))
            put(
                "event.\(stored.event.seq).cli",
                try JSONWriter.bytes(encoding: EventDocument(stored, raw: try ledger.log.raw(of: stored)), sortedKeys: true))
        }
        for r in try ledger.log.rejectedInputs(after: 0, limit: 100) {
            put("rejected.\(r.number).cli", try JSONWriter.bytes(encoding: RejectedDocument(r), sortedKeys: true))
        }
        put("verify.cli", try JSONWriter.bytes(encoding: try ledger.audit.verify(), sortedKeys: true))
        if ProcessInfo.processInfo.environment["STORELEDGER_RECORD_DOCUMENTS"] == "1" {
            let lines = written.keys.sorted().map { "\($0)\t\(Data(written[$0]!).base64EncodedString())\n" }
            try lines.joined().write(to: Self.fixture, atomically: true, encoding: .utf8)
        }
        let expected = try Self.expected()

        #expect(Set(written.keys) == Set(expected.keys))
        for name in expected.keys.sorted() {
            guard let ours = written[name], let theirs = expected[name] else { continue }
            if name.hasPrefix("event.") && name.hasSuffix(".server") && ours != theirs {
                // A fact's `extra` is a dictionary: the server writes it in the dictionary's order, which differs from
                // one process to the next; the document is the same.
                #expect(try Self.sameJSON(ours, theirs), "\(name)")
                continue
            }
            #expect(
                ours == theirs,
                "\(name)\n ours: \(String(decoding: ours, as: UTF8.self))\nbefore: \(String(decoding: theirs, as: UTF8.self))")
        }
        #expect(written.keys.contains { $0.hasPrefix("timeline.1.") }, "the scenario must exercise timelines")
        // The store's counts depend on its layout: the same document as Foundation writes, not fixed bytes.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let statistics = try ledger.statistics()
        #expect(try JSONWriter.bytes(encoding: statistics, sortedKeys: true) == [UInt8](try encoder.encode(statistics)))
    }

    static func sameJSON(_ a: [UInt8], _ b: [UInt8]) throws -> Bool {
        let x = try JSONSerialization.jsonObject(with: Data(a))
        let y = try JSONSerialization.jsonObject(with: Data(b))
        return NSDictionary(dictionary: ["v": x]).isEqual(NSDictionary(dictionary: ["v": y]))
    }
}
