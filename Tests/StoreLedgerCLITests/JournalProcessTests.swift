#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LedgerClient
import LedgerTestSupport
import Testing

/// `serve`'s write-ahead journal with real processes: kill -9 at random instants, recovery as after a power loss
/// (`STORELEDGER_TEST_BOOT_ID`: a checkpoint of "another boot" means the page cache was lost, so LMDB is brought back
/// to its last checkpoint and everything after it comes from the journal alone), a group durable in the journal but
/// never committed, and the other writers kept out meanwhile.
@Suite("The write-ahead journal, as processes", .serialized, .timeLimit(.minutes(5)), .blocking)
struct JournalProcessTests {
    @Test func killNineAtRandomInstantsThenRecoveryAsAfterAPowerLossLosesNothingAcknowledged() async throws {
        try await withTaskExecutorPreference(TestExecutor.shared) { try await killRounds() }
    }

    private func killRounds() async throws {
        let directory = try TemporaryDirectory(prefix: "sl-journal")
        defer { directory.remove() }
        let data = directory.path
        var acknowledgedSoFar: [String] = []
        var roundsReplayingTheJournal = 0
        for round in 0..<4 {
            let server = try ServerProcess(
                data: data, environment: ["STORELEDGER_TEST_BOOT_ID": "boot-\(round)", "STORELEDGER_LOG_LEVEL": "notice"])
            try await server.waitUntilAnswering()
            if round > 0 {
                #expect(server.log.contains("LMDB brought back to its last checkpoint"), "round \(round): \(server.log)")
                if server.log.contains("applied the journal's records LMDB lacked") { roundsReplayingTheJournal += 1 }
                let missing = try await missingTransactions(acknowledgedSoFar, socketPath: server.socketPath)
                #expect(missing.isEmpty, "round \(round): acknowledged but lost: \(missing.prefix(10))")
            }
            acknowledgedSoFar += try await writeUntilKilled(server, round: round)
        }
        #expect(acknowledgedSoFar.count > 200)
        #expect(roundsReplayingTheJournal > 0, "no recovery needed the journal: the test did not exercise it")

        // A last start in yet another boot, then a clean stop: everything is there and verify passes.
        let last = try ServerProcess(data: data, environment: ["STORELEDGER_TEST_BOOT_ID": "boot-last"])
        try await last.waitUntilAnswering()
        let missing = try await missingTransactions(acknowledgedSoFar, socketPath: last.socketPath)
        #expect(missing.isEmpty, "acknowledged but lost: \(missing.prefix(10))")
        last.signal(SIGTERM)
        #expect(try await last.waitForExit() == 0)
        let verify = try runProcess(storeledgerExecutable(), ["verify", "--data", data])
        #expect(verify.status == 0, "verify: \(verify.stderr)")
        // A clean stop leaves LMDB synced and no journal segment behind.
        let journal = try FileManager.default.contentsOfDirectory(atPath: data + "/journal")
        #expect(!journal.contains { $0.hasPrefix("segment-") }, "\(journal)")
    }

    /// Six writers (four of single events, two of NDJSON batches of 16) until the server is killed at a random instant
    /// after a random number of acknowledgements; returns the transaction ids acknowledged.
    private func writeUntilKilled(_ server: ServerProcess, round: Int) async throws -> [String] {
        let acknowledged = Acknowledged()
        let socketPath = server.socketPath
        let writers = (0..<6).map { writer in
            Task {
                guard let client = try? AsyncLedgerClient(socketPath: socketPath, timeoutSeconds: 5) else { return }
                var n = 0
                while n < 5_000 {
                    let batch = writer < 4 ? 1 : 16
                    let ids = (0..<batch).map { "r\(round)-w\(writer)-\(n + $0)" }
                    n += batch
                    let body = ids.map { transactionEnvelope($0, user: "user\(writer)") }.joined(separator: "\n")
                    guard
                        let response = try? await client.post(
                            "/v1/events", body: Array(body.utf8),
                            contentType: batch == 1 ? "application/json" : "application/x-ndjson")
                    else { return }  // the server is gone
                    if response.status == 200 { await acknowledged.add(ids) }
                }
            }
        }
        let target = Int.random(in: 100...600)
        let deadline = ContinuousClock.now + .seconds(30)
        while await acknowledged.ids.count < target, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        try await Task.sleep(for: .milliseconds(Int.random(in: 0...1_500)))
        server.signal(SIGKILL)
        _ = try await server.waitForExit()
        for w in writers { await w.value }
        let ids = await acknowledged.ids
        #expect(ids.count >= min(target, 100), "round \(round): too little was acknowledged before the kill")
        return ids
    }

    private func missingTransactions(_ ids: [String], socketPath: String) async throws -> [String] {
        let reader = try AsyncLedgerClient(socketPath: socketPath, timeoutSeconds: 10)
        var missing: [String] = []
        for tid in ids where try await reader.get("/v1/transactions/\(tid)").status != 200 { missing.append(tid) }
        return missing
    }

    @Test func aGroupDurableInTheJournalButNeverCommittedIsAppliedAtTheNextStart() async throws {
        try await withTaskExecutorPreference(TestExecutor.shared) { try await exitAfterJournalRecord() }
    }

    private func exitAfterJournalRecord() async throws {
        let directory = try TemporaryDirectory(prefix: "sl-journal")
        defer { directory.remove() }
        let data = directory.path
        // The process ends right after the third record is durable, before its group commits or is answered.
        let first = try ServerProcess(data: data, environment: ["STORELEDGER_TEST_EXIT_AFTER_JOURNAL_RECORDS": "3"])
        try await first.waitUntilAnswering()
        let client = try AsyncLedgerClient(socketPath: first.socketPath, timeoutSeconds: 10)
        var statuses: [Int] = []
        for tid in ["j1", "j2", "j3"] {
            let response = try? await client.post("/v1/events", body: Array(transactionEnvelope(tid, user: "u").utf8))
            statuses.append(response.map { Int($0.status) } ?? 0)
        }
        #expect(statuses == [200, 200, 0], "the third request is never answered")
        #expect(try await first.waitForExit() == 137)

        let second = try ServerProcess(data: data, environment: ["STORELEDGER_LOG_LEVEL": "notice"])
        try await second.waitUntilAnswering()
        #expect(second.log.contains("applied the journal's records LMDB lacked"), "\(second.log)")
        #expect(second.log.contains("groups=1") || second.log.contains("groups: 1"), "\(second.log)")
        let reader = try AsyncLedgerClient(socketPath: second.socketPath, timeoutSeconds: 10)
        for tid in ["j1", "j2", "j3"] {
            #expect(try await reader.get("/v1/transactions/\(tid)").status == 200, "\(tid)")
        }
        second.signal(SIGTERM)
        #expect(try await second.waitForExit() == 0)
        let stats = try runProcess(storeledgerExecutable(), ["stats", "--data", data, "--json"])
        let document = try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any]
        // Each input states its transaction and the claim of its appUserId: two events.
        #expect(document?["lastSeq"] as? Int == 6, "\(stats.stdout)")
        let verify = try runProcess(storeledgerExecutable(), ["verify", "--data", data])
        #expect(verify.status == 0, "verify: \(verify.stderr)")
    }

    @Test func otherWritersAreKeptOutWhileServeRunsAndReadersWaitForRecovery() async throws {
        try await withTaskExecutorPreference(TestExecutor.shared) { try await otherWriters() }
    }

    private func otherWriters() async throws {
        let directory = try TemporaryDirectory(prefix: "sl-journal")
        defer { directory.remove() }
        let data = directory.path + "/ledger"
        let file = directory.path + "/one.json"
        try transactionEnvelope("w2", user: "u").write(toFile: file, atomically: true, encoding: .utf8)
        let server = try ServerProcess(data: data, environment: ["STORELEDGER_TEST_BOOT_ID": "boot-a"])
        try await server.waitUntilAnswering()
        let client = try AsyncLedgerClient(socketPath: server.socketPath, timeoutSeconds: 10)
        #expect(try await client.post("/v1/events", body: Array(transactionEnvelope("w1", user: "u").utf8)).status == 200)

        // While serve runs: another writer is refused, readers read.
        let ingest = try runProcess(storeledgerExecutable(), ["ingest", "--data", data, file])
        #expect(ingest.status == 1)
        #expect(ingest.stderr.hasPrefix("error: ledger_in_use: "), "\(ingest.stderr)")
        let stats = try runProcess(
            storeledgerExecutable(), ["stats", "--data", data], environment: ["STORELEDGER_TEST_BOOT_ID": "boot-a"])
        #expect(stats.status == 0, "\(stats.stderr)")

        // Killed, then read in "another boot": the newest LMDB commits may be torn, so readers are sent to recovery.
        server.killAndWait()
        let reader = try runProcess(
            storeledgerExecutable(), ["events", "--data", data], environment: ["STORELEDGER_TEST_BOOT_ID": "boot-b"])
        #expect(reader.status == 1)
        #expect(reader.stderr.hasPrefix("error: recovery_needed: "), "\(reader.stderr)")

        // Any writer recovers it (here `ingest`, which commits durably and leaves the journal empty).
        let recovering = try runProcess(
            storeledgerExecutable(), ["ingest", "--data", data, file], environment: ["STORELEDGER_TEST_BOOT_ID": "boot-b"])
        #expect(recovering.status == 0, "\(recovering.stderr)")
        let events = try runProcess(
            storeledgerExecutable(), ["events", "--data", data, "--json"], environment: ["STORELEDGER_TEST_BOOT_ID": "boot-b"])
        #expect(events.status == 0, "\(events.stderr)")
        #expect(events.stdout.contains("\"w1\"") && events.stdout.contains("\"w2\""), "\(events.stdout)")
        let verify = try runProcess(
            storeledgerExecutable(), ["verify", "--data", data], environment: ["STORELEDGER_TEST_BOOT_ID": "boot-b"])
        #expect(verify.status == 0, "verify: \(verify.stderr)")
    }
}
