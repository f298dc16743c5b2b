import Foundation
import LedgerTestSupport
import Testing

@Suite("A full disk from the command line", .serialized, .blocking)
struct DiskFullCLITests {
    /// `ingest` into a ledger on a full tmpfs (16 MiB, 14 of them held by a reserve file) says "disk full" in one line and exits 1; once space is freed the
    /// same file ingests (what was committed is a duplicate) and verify passes.
    @Test(.enabled(if: TinyFilesystem.available))
    func ingestOnAFullDiskSaysDiskFullAndRecovers() async throws {
        let disk = try #require(TinyFilesystem(megabytes: 16))
        defer { disk.unmount() }
        try disk.reserve(megabytes: 14)
        let work = try TemporaryDirectory()
        defer { work.remove() }
        let file = work.file("many.ndjson")
        try (0..<4_000).map { transactionLine($0) }.joined(separator: "\n").write(
            toFile: file,
            atomically: true,
            encoding: .utf8
        )
        let ledger = disk.path + "/ledger"

        let full = try await runStoreLedger(["ingest", "--data", ledger, file])
        #expect(full.exited && full.status == 1, "\(full.status): \(full.stderr)")
        #expect(full.errorLines.count == 1, "\(full.stderr)")
        #expect(full.stderr.hasPrefix("error: storage_full: disk full: "), "\(full.stderr)")

        try disk.free()
        let again = try await runStoreLedger(["ingest", "--data", ledger, file])
        #expect(again.status == 0, "\(again.stderr)")
        let counts = try await runStoreLedger(["stats", "--json", "--data", ledger])
        #expect(counts.stdout.contains(#""lastSeq":4000"#), "\(counts.stdout)")
        let verify = try await runStoreLedger(["verify", "--data", ledger])
        #expect(verify.status == 0, "\(verify.stderr)")
    }
}
