import Foundation
import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerTestSupport
import LedgerErrors
import Logging
import Testing

/// A line of `storeledger export` sent as an input (the socket's `POST /v1/events`, `ingest`) is refused as one,
/// with `export_line`, instead of being taken apart into refusals and new documents.
@Suite struct ExportLineRefusalTests {
    static let eventLine =
        #"{"chainHash":"4c5f0d7a1f0e2b9b6f61c8e4f3d8a1c2b7e6d5c4b3a2918f7e6d5c4b3a291807","environment":"Production","fact":{"originalTransactionId":"1000000000000001","productId":"com.example.premium.monthly","purchaseDate":1605243570000,"transactionId":"1000000000000001"},"key":"1000000000000001","kind":"transaction","observedAt":1605243570000,"originalTransactionId":"1000000000000001","raw":"e30=","rawDigest":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","rawKey":1,"receivedAt":1605243570000,"seq":12,"signature":"unsigned","source":"decodedJSON","stored":"AQ==","transactionId":"1000000000000001"}"#
    static let refusalLine =
        #"{"rejected":{"code":"invalid_json","message":"not JSON","number":3,"raw":"e25vdA==","receivedAt":1605243570000,"record":"CAE=","size":4}}"#
    static let beginLine = #"{"begin":{"format":1}}"#
    static let endLine =
        #"{"end":{"chainHead":"4c5f0d7a1f0e2b9b6f61c8e4f3d8a1c2b7e6d5c4b3a2918f7e6d5c4b3a291807","lastSeq":12,"rejected":3,"rejectedHead":"0000000000000000000000000000000000000000000000000000000000000000"}}"#

    @Test(arguments: [
        (eventLine, "event 12"), (refusalLine, "refused input 3"), (beginLine, "the first line"), (endLine, "the end line"),
    ])
    func anExportLineIsRecognised(_ line: String, _ what: String) {
        #expect(ExportLines.recognise(Array(line.utf8)) == what)
    }

    /// Inputs that merely mention the member names are inputs.
    @Test func inputsNamingTheMembersAreNotExportLines() {
        for input in [
            #"{"appUserId":"\"chainHash\"","originalTransactionId":"1"}"#,
            #"{"type":"binding","payload":{"appUserId":"record","originalTransactionId":"\"record\""}}"#,
            #"{"chainHash":"00","seq":1}"#,
            #"{"begin":"2020-01-01","originalTransactionId":"1"}"#,
            String(decoding: AppleFixtures.json(AppleFixtures.v2Transaction(extra: ["record": "x", "rejectedHead": "y"])), as: UTF8.self),
        ] {
            #expect(ExportLines.recognise(Array(input.utf8)) == nil, "\(input)")
        }
    }

    @Test func thePipelineRefusesExportLinesAndAppendsTheInputsBesideThem() async throws {
        let dir = try TemporaryDirectory(prefix: "export-line")
        defer { dir.remove() }
        let ledger = try Ledger(directory: dir.path, logger: Logger(label: "test"))
        defer { ledger.close() }
        let pipeline = IngestPipeline(ledger: ledger, configuration: AppStoreConfiguration())
        let genuine = String(decoding: AppleFixtures.json(AppleFixtures.v2Transaction()), as: UTF8.self)
        let body = [Self.eventLine, genuine, Self.refusalLine, Self.endLine].joined(separator: "\n")
        let results = try await pipeline.ingest(body: Array(body.utf8), options: .init(), now: AppleFixtures.epoch)
        #expect(results.map(\.status) == [.rejected, .appended, .rejected, .rejected])
        #expect(results.compactMap(\.error?.code) == ["export_line", "export_line", "export_line"])
        #expect(results[0].error?.message.contains("storeledger import") == true)
        #expect(results[0].error?.message.contains("(event 12)") == true)
        let stats = try ledger.statistics()
        #expect(stats.lastSeq == 1, "only the genuine transaction was appended")
        #expect(try ledger.log.rejectedInputs().map(\.raw) == [Self.eventLine, Self.refusalLine, Self.endLine].map { Array($0.utf8) })
    }
}
