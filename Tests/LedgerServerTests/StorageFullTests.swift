import Foundation
import LMDB
import LedgerClient
import LedgerServer
import LedgerStore
import LedgerTestSupport
import LedgerErrors
import Logging
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A full disk is named as such (`storage_full`, 503 with Retry-After), loses nothing acknowledged, and the ledger
/// works again once space is freed.
@Suite("A full disk", .serialized, .timeLimit(.minutes(2)), .blocking)
struct StorageFullTests {
    /// The error mapping on its own, without a disk: what the LMDB wrapper reports becomes `storage_full`.
    @Test func noSpaceIsStorageFullAndAnIOErrorIsNot() throws {
        #expect(LMDBError(code: ENOSPC, operation: "mdb_txn_commit").isStorageFull)
        #expect(LMDBError(code: EDQUOT, operation: "mdb_txn_commit").isStorageFull)
        #expect(LMDBError.mapFull.isStorageFull)
        #expect(!LMDBError(code: EIO, operation: "mdb_txn_commit").isStorageFull)
        let full = LedgerError.storage(LMDBError(code: ENOSPC, operation: "mdb_txn_commit"))
        #expect(full.code == "storage_full")
        #expect(full.message.hasPrefix("disk full: "))
        #expect(LedgerError.storage(LMDBError(code: EIO, operation: "mdb_txn_commit")).code == "storage_error")
    }

    /// A ledger on a 4 MiB tmpfs, a quarter of it held by a reserve file: batches are appended until the disk is
    /// full; then the reserve is freed and appends succeed again, every acknowledged input is there, and verify passes.
    @Test(.enabled(if: TinyFilesystem.available))
    func aFullDiskIs503StorageFullAndTheLedgerRecoversOnceSpaceIsFreed() async throws {
        try await withTaskExecutorPreference(TestExecutor.shared) { try await fillTheDiskThenFreeIt() }
    }

    private func fillTheDiskThenFreeIt() async throws {
        let disk = try #require(TinyFilesystem(megabytes: 4))
        defer { disk.unmount() }
        try disk.reserve(megabytes: 1)
        let server = try await TestServer(dataDirectory: disk.path + "/ledger")
        var acknowledged: [String] = []
        var refusal: LedgerResponse?
        do {
            let client = try server.client()
            for batch in 0..<400 {
                let ids = (0..<25).map { "\(8_000_000 + batch * 25 + $0)" }
                let body = ids.map { Sample.transaction($0) }.joined(separator: "\n")
                let answer = try await client.post("/v1/events", body, contentType: "application/x-ndjson")
                if answer.status == 200 {
                    acknowledged += ids
                } else {
                    refusal = answer
                    break
                }
            }
            let full = try #require(refusal, "the disk never filled")
            #expect(full.status == 503)
            #expect(full.errorCode == "storage_full", "\(full.text)")
            #expect(full.headers["retry-after"] == "30")
            #expect(full.text.contains("disk full"))
            #expect(acknowledged.count > 100)
            // Reads still work on a full disk.
            #expect(try await client.get("/v1/transactions/\(acknowledged[0])").status == 200)

            try disk.free()
            let after = try await client.post("/v1/events", Sample.transaction("9999999"))
            #expect(after.status == 200, "\(after.text)")
            acknowledged.append("9999999")
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()

        var options = Ledger.Options()
        options.readOnly = true
        let reopened = try Ledger(directory: disk.path + "/ledger", options: options, logger: Logger(label: "t"))
        let report = try reopened.audit.verify()
        #expect(report.ok, "\(report.fault ?? "")")
        #expect(report.events == UInt64(acknowledged.count))
        for id in acknowledged { #expect(try !reopened.log.events(key: id).isEmpty, "acknowledged \(id) is lost") }
    }
}
