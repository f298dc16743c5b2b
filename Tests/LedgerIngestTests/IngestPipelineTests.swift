import Foundation
import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerTestSupport
import LedgerErrors
import Logging
import Testing

/// Refused Apple inputs, through the one path every input takes: each gets its own code, lands in `rejected` with
/// its bytes, and leaves the log exactly as it was.
@Suite struct IngestPipelineRefusalTests {
    static let pki = TestPKI.shared
    static let otherPKI = try! TestPKI(name: "Someone Else")

    static func refusals() -> [(String, String, String)] {
        let payload = AppleFixtures.json(AppleFixtures.v2Transaction())
        var sandbox = AppleFixtures.v2Transaction()
        sandbox["environment"] = "Sandbox"
        var otherBundle = AppleFixtures.v2Transaction()
        otherBundle["bundleId"] = "com.example.other"
        return [
            ("forged signature", pki.forge(payload, .badSignature), "signature_invalid"),
            ("forged payload", pki.forge(payload, .tamperedPayload), "signature_invalid"),
            ("alg none", pki.forge(payload, .algNone), "unsupported_alg"),
            ("missing x5c", pki.forge(payload, .missingX5C), "missing_x5c"),
            ("untrusted root", otherPKI.sign(payload), "untrusted_chain"),
            ("sandbox into production", pki.sign(json: sandbox), "environment_not_accepted"),
            ("wrong bundle", pki.sign(json: otherBundle), "wrong_bundle"),
        ]
    }

    @Test func refusedSignedInputsAreKeptAndChangeNothing() async throws {
        let dir = try TemporaryDirectory(prefix: "pipeline")
        defer { dir.remove() }
        let ledger = try Ledger(directory: dir.path, logger: Logger(label: "test"))
        defer { ledger.close() }
        let configuration = AppStoreConfiguration(
            bundleId: AppleFixtures.bundleId, trustedRootsDER: [Self.pki.rootDER], requireSignatures: true,
            acceptedEnvironments: [.production])
        let pipeline = IngestPipeline(ledger: ledger, configuration: configuration)

        // One genuine input first, so there is a log to leave alone.
        let genuine = try await pipeline.ingest(
            body: Array(AppleFixtures.signedTransaction().utf8), options: .init(), now: 1_700_000_000_000)
        #expect(genuine.map(\.status) == [.appended])
        let before = try ledger.statistics()

        var kept = 0
        for (name, jws, code) in Self.refusals() {
            let results = try await pipeline.ingest(body: Array(jws.utf8), options: .init(), now: 1_700_000_000_000)
            #expect(results.map(\.status) == [.rejected], "\(name)")
            #expect(results.first?.error?.code.rawValue == code, "\(name): \(results.first?.error?.message ?? "")")
            kept += 1
            let rejected = try ledger.log.rejectedInputs(limit: 100)
            #expect(rejected.count == kept, "\(name) is kept for the auditor")
            #expect(rejected.last?.raw == Array(jws.utf8), "\(name): the exact bytes are kept")
            #expect(rejected.last?.code.rawValue == code)
        }
        let after = try ledger.statistics()
        #expect(after.lastSeq == before.lastSeq)
        #expect(after.chainHead == before.chainHead)
        #expect(try ledger.audit.verify().ok)
    }
}
