#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LedgerClient
import LedgerTestSupport
import LedgerErrors
import Testing

// MARK: - The built executable

/// One `storeledger serve` process.
final class ServerProcess {
    let process: ChildProcess
    let socketPath: String
    let stderrPath: String

    /// `arguments` follow `serve --data DATA` (e.g. `--config FILE`); `environment` adds to the process's variables.
    init(data: String, arguments: [String] = [], environment: [String: String] = [:]) throws {
        socketPath = data + "/ledger.sock"
        stderrPath = data + ".serve-\(UInt32.random(in: 0...UInt32.max)).log"
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process = try ChildProcess(
            storeledgerExecutable(), ["serve", "--data", data] + arguments,
            environment: ["STORELEDGER_LOG_LEVEL": "warning"].merging(environment) { $1 }, stderr: stderrPath)
    }

    /// Waits until `/v1/health` answers (or the process dies).
    func waitUntilAnswering() async throws {
        // Generous, and off the cooperative pool: the whole suite runs in parallel on two shared cores.
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline, process.isRunning {
            if let client = try? AsyncLedgerClient(socketPath: socketPath, timeoutSeconds: 2),
                (try? await client.get("/v1/health"))?.status == 200
            {
                return
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        let log = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        // Never leave a server behind a failed test (its directory is about to be removed).
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        throw CodedError("not_started", "storeledger serve did not answer: \(log)")
    }

    func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// What the server wrote to stderr so far (its log).
    var log: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Kills the server (SIGKILL) and waits for it: the end of a test that started it.
    func killAndWait() {
        signal(SIGKILL)
        process.waitUntilExit()
    }

    /// Waits for the process to exit (bounded) and returns its status.
    func waitForExit(seconds: Double = 15) async throws -> Int32 {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw CodedError("hung", "storeledger serve did not exit in \(seconds) s")
        }
        return process.terminationStatus
    }
}

/// A decoded V2 transaction envelope with a fixed receipt instant.
func transactionEnvelope(_ tid: String, user: String) -> String {
    let purchase: Int64 = 1_700_000_000_000
    return #"{"type":"transaction","appUserId":"\#(user)","receivedAt":\#(purchase),"payload":{"transactionId":"\#(tid)","originalTransactionId":"\#(tid)","productId":"com.example.premium.monthly","purchaseDate":\#(purchase),"expiresDate":\#(purchase + 2_592_000_000),"type":"Auto-Renewable Subscription","environment":"Production"}}"#
}

/// Transaction ids the server acknowledged (2xx), from every writer.
actor Acknowledged {
    private(set) var ids: [String] = []
    func add(_ more: [String]) { ids += more }
}

// MARK: - Tests

@Suite("storeledger serve as a process", .serialized, .timeLimit(.minutes(4)), .blocking)
struct ServeProcessTests {
    @Test func killNineUnderLoadLosesNoAcknowledgedInputAndVerifyPasses() async throws {
        try await withTaskExecutorPreference(TestExecutor.shared) { try await killNineUnderLoad() }
    }

    private func killNineUnderLoad() async throws {
        let directory = try TemporaryDirectory(prefix: "sl-cli")
        defer { directory.remove() }
        let data = directory.path
        let first = try ServerProcess(data: data)
        try await first.waitUntilAnswering()

        // Six writers: four send single events, two send NDJSON batches of 16, until the server dies (bounded).
        let acknowledged = Acknowledged()
        let socketPath = first.socketPath
        let writers = (0..<6).map { writer in
            Task {
                guard let client = try? AsyncLedgerClient(socketPath: socketPath, timeoutSeconds: 5) else { return }
                var n = 0
                while n < 5_000 {
                    let batch = writer < 4 ? 1 : 16
                    let ids = (0..<batch).map { "k\(writer)-\(n + $0)" }
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
        // Kill once a fair amount was acknowledged (under heavy machine load that takes longer than usual).
        let deadline = ContinuousClock.now + .seconds(90)
        while await acknowledged.ids.count < 200, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        first.signal(SIGKILL)
        _ = try await first.waitForExit()
        for w in writers { await w.value }
        let acked = await acknowledged.ids
        #expect(acked.count > 50, "the load should have been acknowledged before the kill")
        #expect(FileManager.default.fileExists(atPath: first.socketPath), "kill -9 leaves the socket file behind")

        // Restart over the stale socket; every acknowledged input must be there.
        let second = try ServerProcess(data: data)
        try await second.waitUntilAnswering()
        let reader = try AsyncLedgerClient(socketPath: second.socketPath, timeoutSeconds: 10)
        var missing: [String] = []
        for tid in acked where try await reader.get("/v1/transactions/\(tid)").status != 200 {
            missing.append(tid)
        }
        #expect(missing.isEmpty, "acknowledged but lost: \(missing.prefix(10))")

        // SIGTERM: exit 0 and the socket is gone.
        second.signal(SIGTERM)
        #expect(try await second.waitForExit() == 0)
        #expect(!FileManager.default.fileExists(atPath: second.socketPath))

        let verify = try runProcess(storeledgerExecutable(), ["verify", "--data", data])
        #expect(verify.status == 0, "verify: \(verify.stderr)")
    }

    @Test func secondServerOnALiveSocketIsRefusedAndSigintDrains() async throws {
        let directory = try TemporaryDirectory(prefix: "sl-cli")
        defer { directory.remove() }
        let data = directory.path
        let server = try ServerProcess(data: data)
        try await server.waitUntilAnswering()

        // On the same ledger, the journal's lock refuses it first; on another ledger, the live socket does.
        let refused = try runProcess(storeledgerExecutable(), ["serve", "--data", data, "--socket", server.socketPath])
        #expect(refused.status == 1)
        #expect(refused.stderr.hasPrefix("error: ledger_in_use: "), "\(refused.stderr)")
        let other = try runProcess(
            storeledgerExecutable(), ["serve", "--data", directory.path + "/other", "--socket", server.socketPath])
        #expect(other.status == 1)
        #expect(other.stderr.contains("socket_in_use"), "\(other.stderr)")

        // An acknowledged append before SIGINT is there after it.
        let client = try AsyncLedgerClient(socketPath: server.socketPath, timeoutSeconds: 5)
        let r = try await client.post("/v1/events", body: Array(transactionEnvelope("s1", user: "u").utf8))
        #expect(r.status == 200)
        server.signal(SIGINT)
        #expect(try await server.waitForExit() == 0)
        #expect(!FileManager.default.fileExists(atPath: server.socketPath))

        let events = try runProcess(storeledgerExecutable(), ["events", "--data", data, "--transaction", "s1", "--json"])
        #expect(events.status == 0)
    }
}
