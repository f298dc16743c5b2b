import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerTestSupport
import Logging

/// A ledger in a directory of its own with the one ingest path in front of it, as the story tests feed it: Apple's
/// production inputs, signatures checked against the test PKI.
final class StoryLedger {
    let directory: TemporaryDirectory
    let ledger: Ledger
    let pipeline: IngestPipeline

    init(_ prefix: String) throws {
        directory = try TemporaryDirectory(prefix: prefix)
        ledger = try Ledger(directory: directory.path, logger: Logger(label: "test"))
        pipeline = IngestPipeline(
            ledger: ledger,
            configuration: AppStoreConfiguration(
                bundleId: AppleFixtures.bundleId, trustedRootsDER: [TestPKI.shared.rootDER],
                acceptedEnvironments: [.production]))
    }

    /// `body` ingested at `now`, claimed for `user` when one is named.
    func ingest(_ body: [UInt8], claimedBy user: String? = nil, now: UnixMillis) async throws -> [AppendResult] {
        var options = IngestPipeline.Options()
        options.appUserId = user.map(AppUserID.init)
        return try await pipeline.ingest(body: body, options: options, now: now)
    }

    /// Closes the ledger and removes its directory.
    func close() {
        ledger.close()
        directory.remove()
    }
}
