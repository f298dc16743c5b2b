#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LedgerClient
import LedgerTestSupport
import LedgerErrors
import LedgerReplication
import NATSClient
import Testing

/// One `storeledger serve --intake …` process: a ledger replica.
final class ReplicaProcess: @unchecked Sendable {
    let data: String
    let arguments: [String]
    let socketPath: String
    let logPath: String
    private var process: ChildProcess?

    init(data: String, arguments: [String]) throws {
        self.data = data
        self.arguments = arguments
        socketPath = data + "/ledger.sock"
        logPath = data + ".log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        try start()
    }

    func start() throws {
        // Its log appended to across restarts.
        process = try ChildProcess(
            storeledgerExecutable(), ["serve", "--data", data] + arguments,
            environment: ["STORELEDGER_LOG_LEVEL": "notice"], stderr: logPath)
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The ledger's last seq, by `/v1/health`; nil while it does not answer.
    func lastSeq() async -> UInt64? {
        guard let client = try? AsyncLedgerClient(socketPath: socketPath, timeoutSeconds: 5),
            let answer = try? await client.get("/v1/health"), answer.status == 200,
            let object = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any]
        else { return nil }
        return (object["lastSeq"] as? NSNumber)?.uint64Value
    }

    func waitUntilAnswering(seconds: Int = 90) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if await lastSeq() != nil { return }
            if let process, !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        stop(SIGKILL)
        throw CodedError("not_started", "storeledger serve --intake did not answer: \(log)")
    }

    /// Sends a signal and waits for the process to end (SIGKILL after 30 s).
    @discardableResult
    func stop(_ signal: Int32) -> Int32? {
        guard let process else { return nil }
        kill(process.processIdentifier, signal)
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        self.process = nil
        return process.terminationReason == .exit ? process.terminationStatus : nil
    }
}

/// A decoded V2 transaction; without `receivedAt` every replica takes the stream's timestamp.
func intakeInput(_ n: Int, statedReceivedAt: Bool) -> String {
    let purchase: Int64 = 1_700_000_000_000 + Int64(n) * 1_000
    let otid = 7_000_000 + n % 97
    let received = statedReceivedAt ? #""receivedAt":\#(purchase + 5),"# : ""
    return #"{"type":"transaction","appUserId":"u\#(n % 13)",\#(received)"payload":{"transactionId":"\#(9_000_000 + n)","originalTransactionId":"\#(otid)","productId":"com.example.premium.monthly","purchaseDate":\#(purchase),"expiresDate":\#(purchase + 2_592_000_000),"type":"Auto-Renewable Subscription","environment":"Production"}}"#
}

/// `storeledger stats` of the ledger in `data`: its last seq and chain head, as `"SEQ HEAD"`.
func lastSeqAndChainHead(_ data: String) async throws -> String {
    let stats = try await runCLI(["stats", "--json", "--data", data])
    let object = try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any]
    return "\(object?["lastSeq"] ?? "-") \(object?["chainHead"] ?? "-")"
}

/// The transaction ids acknowledged (200, appended) by either replica.
actor Acknowledgements {
    private(set) var ids: Set<String> = []
    private(set) var failures = 0
    func add(_ id: String) { ids.insert(id) }
    func failed() { failures += 1 }
    var count: Int { ids.count }
}

@Suite("Replicated ledgers on NATS JetStream (real processes)", .serialized, .timeLimit(.minutes(10)), .blocking)
struct ReplicatedLedgerTests {
    @Test(.enabled(if: natsServerPath != nil, natsMissing))
    func twoReplicasSurviveKilledNATSNodeAndKilledReplicaWithTheSameChainHead() async throws {
        try await withTaskExecutorPreference(TestExecutor.shared) { try await survive() }
    }

    private func survive() async throws {
        let scratch = try TemporaryDirectory(prefix: "sl-repl")
        let cluster = try await NATSCluster.started(size: 3, scratch: scratch.path)
        var replicas: [ReplicaProcess] = []
        defer {
            for replica in replicas { replica.stop(SIGKILL) }
            cluster.stopAll()
            scratch.remove()
        }

        for name in ["a", "b"] {
            replicas.append(
                try ReplicaProcess(data: scratch.file(name), arguments: ["--intake", cluster.url, "--node", name]))
        }
        for replica in replicas { try await replica.waitUntilAnswering() }

        // Four writers, each input to one replica (the other when that one fails), while a NATS node and replica b
        // are killed and restarted.
        let total = 600
        let acknowledged = Acknowledgements()
        let next = Counter()
        let pair = replicas
        let writers = (0..<4).map { _ in
            Task(executorPreference: TestExecutor.shared) {
                while let n = next.take(below: total) {
                    let body = Array(intakeInput(n, statedReceivedAt: n % 2 == 0).utf8)
                    for attempt in 0..<2 {
                        let replica = pair[(n + attempt) % 2]
                        guard let client = try? AsyncLedgerClient(socketPath: replica.socketPath, timeoutSeconds: 60),
                            let answer = try? await client.post("/v1/events", body: body)
                        else { continue }
                        if answer.status == 200 {
                            let text = String(decoding: answer.body, as: UTF8.self)
                            // A first attempt appends; a second one may find the input already stored (the first
                            // was published, its replica killed before it answered): a duplicate, durable all the same.
                            if text.contains("\"status\":\"appended\"")
                                || (attempt == 1 && text.contains("\"status\":\"duplicate\""))
                            {
                                await acknowledged.add("\(9_000_000 + n)")
                            } else {
                                Issue.record("input \(n) answered \(text) (attempt \(attempt))")
                            }
                            break
                        }
                        if attempt == 1 { await acknowledged.failed() }
                    }
                }
            }
        }
        func waitForAcks(_ count: Int) async throws {
            let deadline = ContinuousClock.now + .seconds(240)
            while await acknowledged.count < count, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        try await waitForAcks(100)
        cluster.kill9(0)
        try await waitForAcks(200)
        replicas[1].stop(SIGKILL)
        try await waitForAcks(300)
        try cluster.start(0)
        try await waitForAcks(400)
        try replicas[1].start()
        for writer in writers { await writer.value }
        let acked = await acknowledged.ids
        #expect(acked.count >= total / 2, "only \(acked.count) of \(total) inputs were acknowledged")

        // Both replicas reach the same last seq (b catches up from the stream), and stay there.
        let seqs = try await sameLastSeq(replicas, seconds: 180)
        #expect(seqs[0] != nil && seqs[0] == seqs[1], "replicas at \(seqs): \(replicas[1].log.suffix(2000))")

        // Stopped gracefully: the same chain head, the same projections digest, every acknowledged input in both.
        for replica in replicas { #expect(replica.stop(SIGTERM) == 0, "\(replica.log.suffix(2000))") }
        var heads: [String] = []
        var digests: [String] = []
        for replica in replicas {
            heads.append(try await lastSeqAndChainHead(replica.data))
            let replay = try await runCLI(["replay", "--check", "--json", "--data", replica.data])
            #expect(replay.status == 0, "replay --check: \(replay.stderr)")
            let replayObject = try JSONSerialization.jsonObject(with: Data(replay.stdout.utf8)) as? [String: Any]
            digests.append("\(replayObject?["projectionsDigest"] ?? "-")")
            let verify = try await runCLI(["verify", "--quiet", "--data", replica.data])
            #expect(verify.status == 0, "verify: \(verify.stderr)")
            let events = try await runCLI(["events", "--json", "--limit", "100000", "--data", replica.data])
            let stored = Set(events.stdout.matches(of: /"transactionId":"(\d+)"/).map { String($0.output.1) })
            let lost = acked.subtracting(stored)
            #expect(lost.isEmpty, "\(replica.data) lost \(lost.count) acknowledged inputs: \(lost.sorted().prefix(5))")
        }
        #expect(heads[0] == heads[1] && !heads[0].hasPrefix("0 "), "chain heads \(heads)")
        #expect(digests[0] == digests[1] && digests[0] != "-", "projection digests \(digests)")
    }
}

/// Waits (up to `seconds`) until every replica answers with the same last seq, above 0; the seqs last seen.
private func sameLastSeq(_ replicas: [ReplicaProcess], seconds: Int) async throws -> [UInt64?] {
    let deadline = ContinuousClock.now + .seconds(seconds)
    var seqs: [UInt64?] = []
    while ContinuousClock.now < deadline {
        seqs = []
        for replica in replicas { seqs.append(await replica.lastSeq()) }
        if let first = seqs[0], first > 0, seqs.allSatisfy({ $0 == first }) { break }
        try await Task.sleep(for: .milliseconds(200))
    }
    return seqs
}

private func runCLI(_ arguments: [String]) async throws -> ProcessOutput {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            continuation.resume(with: Result { try runProcess(storeledgerExecutable(), arguments, deadline: 120) })
        }
    }
}

/// Hands out 0, 1, 2, … below a bound, to several writers.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func take(below bound: Int) -> Int? {
        lock.withLock {
            guard value < bound else { return nil }
            defer { value += 1 }
            return value
        }
    }
}

/// Forgetting a user on replicated ledgers (docs/privacy.md): the erasure goes through the stream under the user's
/// pseudonym, and every replica applies it in its place.
@Suite("Forgetting on replicated ledgers (real processes)", .serialized, .timeLimit(.minutes(10)), .blocking)
struct ReplicatedForgetTests {
    static func person(_ n: Int) -> String { "person-\(n)@example.com" }

    /// The files under `directory` whose bytes hold `needle`.
    static func filesHolding(_ needle: String, under directory: String) -> [String] {
        ((try? FileManager.default.subpathsOfDirectory(atPath: directory)) ?? []).map {
            (directory as NSString).appendingPathComponent($0)
        }.filter { FileManager.default.contents(atPath: $0)?.range(of: Data(needle.utf8)) != nil }
    }

    static func input(_ n: Int) -> String {
        let purchase: Int64 = 1_700_000_000_000 + Int64(n) * 1_000
        return #"{"type":"transaction","appUserId":"\#(person(n % 5))","receivedAt":\#(purchase + 5),"payload":{"transactionId":"\#(8_000_000 + n)","originalTransactionId":"\#(6_000_000 + n % 7)","productId":"com.example.premium.monthly","purchaseDate":\#(purchase),"expiresDate":\#(purchase + 2_592_000_000),"type":"Auto-Renewable Subscription","environment":"Production"}}"#
    }

    /// On one NATS server, and on a cluster of three, whose servers also keep the stream's recent operations in
    /// its raft log until JetStream snapshots it (every two minutes in nats-server 2.9).
    @Test(.enabled(if: natsServerPath != nil, natsMissing), arguments: [1, 3])
    func anErasureAskedOfOneReplicaIsAppliedByEveryReplicaInItsPlace(natsServers: Int) async throws {
        try await withTaskExecutorPreference(TestExecutor.shared) { try await forget(natsServers: natsServers) }
    }

    private func forget(natsServers: Int) async throws {
        let scratch = try TemporaryDirectory(prefix: "sl-repl-forget")
        let cluster = try await NATSCluster.started(size: natsServers, scratch: scratch.path)
        var replicas: [ReplicaProcess] = []
        defer {
            for replica in replicas { replica.stop(SIGKILL) }
            cluster.stopAll()
            scratch.remove()
        }
        for name in ["a", "b"] {
            replicas.append(
                try ReplicaProcess(
                    data: scratch.file(name), arguments: ["--intake", cluster.url, "--node", name, "--pseudonyms"]))
        }
        for replica in replicas { try await replica.waitUntilAnswering() }
        // Inputs to both replicas, the erasure asked of a, more inputs (none naming her) to both.
        for n in 0..<20 {
            let client = try AsyncLedgerClient(socketPath: replicas[n % 2].socketPath, timeoutSeconds: 60)
            let answer = try await client.post("/v1/events", body: Array(Self.input(n).utf8))
            #expect(answer.status == 200, "\(answer.text)")
        }
        let a = try AsyncLedgerClient(socketPath: replicas[0].socketPath, timeoutSeconds: 60)
        let forgot = try await a.post(
            "/v1/customers/\(Self.person(3))/forget", body: Array(#"{"requestedBy":"ticket 7"}"#.utf8))
        #expect(forgot.status == 200, "\(forgot.text)")
        #expect(!forgot.text.contains(Self.person(3)))
        for n in 20..<30 where n % 5 != 3 {
            let client = try AsyncLedgerClient(socketPath: replicas[n % 2].socketPath, timeoutSeconds: 60)
            let answer = try await client.post("/v1/events", body: Array(Self.input(n).utf8))
            #expect(answer.status == 200, "\(answer.text)")
        }
        // Asked again, of b: it forgot her too.
        let b = try AsyncLedgerClient(socketPath: replicas[1].socketPath, timeoutSeconds: 60)
        let again = try await b.post(
            "/v1/customers/\(Self.person(3))/forget", body: Array(#"{"requestedBy":"ticket 7"}"#.utf8))
        #expect(again.status == 404, "\(again.text)")

        let seqs = try await sameLastSeq(replicas, seconds: 120)
        #expect(seqs[0] != nil && seqs[0] == seqs[1], "replicas at \(seqs)")
        for replica in replicas { #expect(replica.stop(SIGTERM) == 0, "\(replica.log.suffix(2000))") }
        var heads: [String] = []
        for replica in replicas {
            heads.append(try await lastSeqAndChainHead(replica.data))
            let verify = try await runCLI(["verify", "--quiet", "--data", replica.data])
            #expect(verify.status == 0, "verify: \(verify.stderr)")
            let customer = try await runCLI(
                ["customer", Self.person(3), "--json", "--at", "1700000010000", "--data", replica.data])
            #expect(!customer.stdout.contains("6000003"), "\(replica.data) still answers for her: \(customer.stdout)")
            let other = try await runCLI(
                ["customer", Self.person(1), "--json", "--at", "1700000010000", "--data", replica.data])
            #expect(other.stdout.contains("6000001"), "\(replica.data): \(other.stdout)")
            #expect(Self.filesHolding(Self.person(3), under: replica.data).isEmpty)
        }
        #expect(heads[0] == heads[1] && !heads[0].hasPrefix("0 "), "chain heads \(heads)")

        // Every replica appended the erasure (stream seq 21; b, asked again, knew her no more and published nothing):
        // the stream forgot what came before it, so no message of it and no file of the NATS server holds her id.
        let connection = try await NATSConnection.connect(to: cluster.servers, timeout: .seconds(20))
        let info = try await JetStream(connection).streamInfo("STORELEDGER")
        await connection.close()
        #expect(info?.state.firstSeq == 22 && info?.state.messages == 8, "\(String(describing: info?.state))")
        let servers = (1...natsServers).map { scratch.path + "/n\($0)" }
        let raftCompacted = ContinuousClock.now + .seconds(natsServers == 1 ? 0 : 200)
        while ContinuousClock.now < raftCompacted, servers.contains(where: { !Self.filesHolding(Self.person(3), under: $0).isEmpty }) {
            try await Task.sleep(for: .seconds(5))
        }
        for server in servers { #expect(Self.filesHolding(Self.person(3), under: server).isEmpty, "\(server)") }
        // What an operator sees: both replicas past the erasure, no purge waiting.
        let listed = try await runCLI(["replicas", "--intake", cluster.url, "--json"])
        #expect(listed.status == 0, "replicas: \(listed.stderr)")
        let overview = try JSONDecoder().decode(IntakeReplicas.Overview.self, from: Data(listed.stdout.utf8))
        #expect(overview.replicas.map(\.node).sorted() == ["a", "b"])
        // (A replica records its place when it starts and when it appends an erasure: here, the erasure's.)
        #expect(overview.replicas.allSatisfy { $0.applied == 21 && $0.erasure == 21 }, "\(overview.replicas)")
        #expect(overview.firstSeq == 22 && overview.purgeWaitsFor == nil)

        // A replica started empty cannot rebuild from the stream any more: it says so and does not start.
        let empty = try ReplicaProcess(
            data: scratch.file("c"), arguments: ["--intake", cluster.url, "--node", "c", "--pseudonyms"])
        replicas.append(empty)
        var answered = true
        do { try await empty.waitUntilAnswering(seconds: 60) } catch { answered = false }
        #expect(!answered, "\(empty.log.suffix(2000))")
        #expect(empty.log.contains("the stream now begins at 22"), "\(empty.log.suffix(2000))")

        // One restored from a backup of a, with a's intake-position beside it, starts where a was and follows the
        // stream from there: the same chain head as the others after inputs the others appended too.
        let backup = scratch.file("a-backup")
        let copied = try await runCLI(["backup", backup, "--quiet", "--data", replicas[0].data])
        #expect(copied.status == 0, "backup: \(copied.stderr)")
        let restored = scratch.file("d")
        let installed = try await runCLI(["restore", backup, "--quiet", "--data", restored])
        #expect(installed.status == 0, "restore: \(installed.stderr)")
        try FileManager.default.copyItem(
            atPath: replicas[0].data + "/intake-position", toPath: restored + "/intake-position")
        let rebuilt = try ReplicaProcess(
            data: restored, arguments: ["--intake", cluster.url, "--node", "d", "--pseudonyms"])
        replicas.append(rebuilt)
        try replicas[0].start()
        try await replicas[0].waitUntilAnswering()
        try await rebuilt.waitUntilAnswering()
        for n in 30..<34 where n % 5 != 3 {
            let client = try AsyncLedgerClient(socketPath: [replicas[0], rebuilt][n % 2].socketPath, timeoutSeconds: 60)
            let answer = try await client.post("/v1/events", body: Array(Self.input(n).utf8))
            #expect(answer.status == 200, "\(answer.text)")
        }
        // The scan finds an id the stream does hold: person 1's input after the purge.
        for server in servers { #expect(!Self.filesHolding(Self.person(1), under: server).isEmpty, "\(server)") }
        let caughtUp = try await sameLastSeq([replicas[0], rebuilt], seconds: 120)
        #expect(caughtUp[0] != nil && caughtUp[0] == caughtUp[1] && caughtUp[0] != seqs[0], "at \(caughtUp)")
        #expect(replicas[0].stop(SIGTERM) == 0, "\(replicas[0].log.suffix(2000))")
        #expect(rebuilt.stop(SIGTERM) == 0, "\(rebuilt.log.suffix(2000))")
        #expect(try await lastSeqAndChainHead(rebuilt.data) == lastSeqAndChainHead(replicas[0].data))

        // d is let go for good: its record and consumer are removed, and a name nobody holds is not found.
        let removed = try await runCLI(["replicas", "--intake", cluster.url, "--remove", "d", "--json"])
        #expect(removed.status == 0, "replicas --remove: \(removed.stderr)")
        let after = try JSONDecoder().decode(IntakeReplicas.Overview.self, from: Data(removed.stdout.utf8))
        #expect(after.replicas.map(\.node).sorted() == ["a", "b"])
        let unknown = try await runCLI(["replicas", "--intake", cluster.url, "--remove", "zz"])
        #expect(unknown.status == 1 && unknown.stderr.contains("not_found"), "\(unknown.stderr)")
        #expect(Self.filesHolding(Self.person(3), under: rebuilt.data).isEmpty)
    }
}
