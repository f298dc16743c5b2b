import Foundation
import LedgerAPI
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerTestSupport
import Logging
import Testing

/// `storeledger export` of the golden scenario's ledger is, line by line, the bytes the build before the one JSON
/// encoder wrote for each event with its raw input (`Fixtures/documents.tsv`, `event.<seq>.cli`): the export made
/// fast writes what the export always wrote.
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
        let expected = try DocumentBytesTests.expected()
        let last = try ledger.lastSeq()
        var lines: [UInt8] = []
        for seq in 1...last { lines += try #require(expected["event.\(seq).cli"], "event \(seq) is recorded") + [10] }

        let path = dir.file("export.ndjson")
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        let summary = try EventExport.write(ledger, to: fd)
        close(fd)
        let written = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(written == lines)
        #expect(summary.events == last && summary.bytes == UInt64(lines.count))
    }
}
