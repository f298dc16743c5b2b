import Foundation
import LedgerAPI
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerTestSupport
import Logging
import Testing

/// `storeledger export` of the golden scenario's ledger is, line by line, what the export wrote before it was made
/// fast (`EventDocument` of each `ExportedEvent`, sorted keys), and, less its `rawKey` and `stored` members, the bytes
/// the build before the one JSON encoder wrote for each event with its raw input (`Fixtures/documents.tsv`,
/// `event.<seq>.cli`).
@Suite struct ExportBytesTests {
    @Test func theExportOfTheGoldenLedgerIsItsRecordedEventDocuments() async throws {
        let dir = try TemporaryDirectory(prefix: "export-bytes")
        defer { dir.remove() }
        let configuration = try LedgerConfiguration(json: Array(GoldenScenario.configuration.utf8), baseDirectory: dir.path)
        let ledger = try Ledger(directory: dir.path, rules: configuration.rules, logger: Logger(label: "export-bytes"))
        defer { ledger.close() }
        let pipeline = IngestPipeline(ledger: ledger, configuration: configuration.appStore)
        let now: Int64 = 1_700_000_000_000
        for (i, body) in GoldenScenario.inputs.enumerated() {
            _ = try await pipeline.ingest(body: Array(body.utf8), options: .init(), now: now + Int64(i))
        }

        let path = dir.file("export.ndjson")
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        let summary = try EventExport.write(ledger, to: fd)
        close(fd)
        let written = Array(try Data(contentsOf: URL(fileURLWithPath: path)))

        let recorded = try DocumentBytesTests.expected()
        let exported = try ledger.audit.exportedEvents(after: 0, limit: 1_000)
        var lines: [UInt8] = []
        for e in exported {
            let line = try JSONWriter.bytes(encoding: EventDocument(e), sortedKeys: true)
            lines += line + [10]
            // The recorded document is the line without the two members the export adds.
            var text = String(decoding: line, as: UTF8.self)
            text = text.replacingOccurrences(of: #""rawKey":\#(e.stored.rawKey),"#, with: "")
            text = text.replacingOccurrences(of: #","stored":"\#(Data(e.bytes).base64EncodedString())""#, with: "")
            #expect(Array(text.utf8) == recorded["event.\(e.stored.event.seq).cli"], "event \(e.stored.event.seq)")
        }
        #expect(written == lines)
        #expect(summary.events == UInt64(exported.count) && summary.bytes == UInt64(lines.count))
        #expect(summary.lastSeq == (try ledger.lastSeq()) && summary.chainHead == exported.last?.stored.chainHash)
    }
}
