#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LedgerClient
import LedgerTestSupport
import Testing

/// A receiver of the webhook for the tests: a real HTTP server (Python's standard library) that verifies each
/// request's signature with the shared secret, answers 500 to the first `failFirst` requests, holds the
/// `holdRequest`-th for `holdSeconds` before answering (so the ledger can be killed while it waits), and records each
/// request as one JSON line.
private let receiverScript = #"""
import hashlib, hmac, http.server, json, sys, threading, time
port_file, log_file, secret = sys.argv[1], sys.argv[2], sys.argv[3].encode()
fail_first, hold_request, hold_seconds = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
count, lock = 0, threading.Lock()
def record(entry):
    with lock, open(log_file, "a") as f:
        f.write(json.dumps(entry) + "\n")
class Receiver(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        global count
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            count += 1
            n = count
        parts = dict(p.split("=", 1) for p in self.headers.get("StoreLedger-Signature", "").split(",") if "=" in p)
        expected = hmac.new(secret, parts.get("t", "").encode() + b"." + body, hashlib.sha256).hexdigest()
        verified = hmac.compare_digest(expected, parts.get("v1", ""))
        status = 500 if n <= fail_first else (200 if verified else 401)
        entry = {"n": n, "id": self.headers.get("StoreLedger-Event-Id"), "verified": verified, "status": status,
                 "body": json.loads(body)}
        if n == hold_request:
            record(dict(entry, held=True))
            time.sleep(hold_seconds)
            try:
                self.send_response(status); self.send_header("Content-Length", "0"); self.end_headers()
            except OSError:
                pass
            return
        # Recorded before answering: the ledger sends the next event only after this answer, so the log's order is
        # the order of arrival (recorded after, the next request's thread could write its line first).
        record(entry)
        self.send_response(status); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os; os.rename(port_file + ".tmp", port_file)
server.serve_forever()
"""#

/// One webhook receiver process.
private final class Receiver {
    let process: ChildProcess
    let log: String
    let port: Int

    init(in directory: TemporaryDirectory, failFirst: Int, holdRequest: Int = 0, holdSeconds: Double = 0) async throws {
        let script = directory.file("receiver.py")
        try receiverScript.write(toFile: script, atomically: true, encoding: .utf8)
        log = directory.file("received.ndjson")
        let portFile = directory.file("receiver.port")
        process = try ChildProcess(
            "/usr/bin/env",
            [
                "python3", script, portFile, log, LiveProcesses.WebhookProcessTests.secret, "\(failFirst)", "\(holdRequest)",
                "\(holdSeconds)",
            ])
        let deadline = ContinuousClock.now + .seconds(30)
        while !FileManager.default.fileExists(atPath: portFile), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        guard let text = try? String(contentsOfFile: portFile, encoding: .utf8), let p = Int(text) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw CodedTestFailure("the receiver did not start")
        }
        port = p
    }

    /// The requests received so far.
    func requests() -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: log, encoding: .utf8) else { return [] }
        let lines = text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        // In the order the requests arrived (their number), whatever the order their lines were written in.
        return lines.sorted { ($0["n"] as? Int ?? 0) < ($1["n"] as? Int ?? 0) }
    }

    /// Waits (bounded) until `condition` holds for the requests received.
    func wait(seconds: Double = 90, until condition: ([[String: Any]]) -> Bool) async throws -> [[String: Any]] {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while ContinuousClock.now < deadline {
            let r = requests()
            if condition(r) { return r }
            try await Task.sleep(for: .milliseconds(50))
        }
        return requests()
    }

    /// SIGKILL, not SIGTERM: the test process may ignore SIGTERM (a ServiceGroup of an in-process server listens
    /// for it), and an ignored signal stays ignored in a child across exec, so a terminate() would wait forever.
    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

private struct CodedTestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

extension LiveProcesses {
    /// The outbound webhook of a real `storeledger serve` against a real HTTP receiver: delivered in order and signed
    /// (the receiver checks the HMAC), retried after 500, and nothing lost when the ledger is killed -9 while the
    /// receiver holds a delivery (at-least-once: the event is delivered again after the restart, with the same id).
    @Suite("The outbound webhook", .serialized, .timeLimit(.minutes(4)), .enabled(if: installedTool("python3") != nil))
    struct WebhookProcessTests {
        static let secret = "s3cret-webhook-key"

        func configuration(_ directory: TemporaryDirectory, port: Int, maxAttempts: Int = 6) throws -> String {
            let path = directory.file("config.json")
            let json = #"""
                {"webhook": {"url": "http://127.0.0.1:\#(port)/hooks/storeledger", "secret": "\#(Self.secret)",
                 "maxAttempts": \#(maxAttempts), "initialBackoffSeconds": 0.05, "maxBackoffSeconds": 0.2, "timeoutSeconds": 20}}
                """#
            try json.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        func post(_ server: ServerProcess, _ tids: [String]) async throws {
            let client = try AsyncLedgerClient(socketPath: server.socketPath, timeoutSeconds: 30)
            for tid in tids {
                let answer = try await client.post("/v1/events", body: Array(transactionEnvelope(tid, user: "u-\(tid)").utf8))
                #expect(answer.status == 200)
            }
        }

        static func delivered(_ requests: [[String: Any]]) -> [String] {
            var ids: [String] = []
            for r in requests where r["status"] as? Int == 200 && r["held"] == nil {
                if let id = r["id"] as? String, !ids.contains(id) { ids.append(id) }
            }
            return ids
        }

        @Test func signedRetriedAfter500AndNothingLostOnKillNine() async throws {
            try await withTaskExecutorPreference(TestExecutor.shared) { try await signedRetriedAndKilled() }
        }

        private func signedRetriedAndKilled() async throws {
            let directory = try TemporaryDirectory(prefix: "sl-webhook")
            defer { directory.remove() }
            // 500 to the first two requests; the sixth held for 6 s.
            let receiver = try await Receiver(in: directory, failFirst: 2, holdRequest: 6, holdSeconds: 6)
            defer { receiver.stop() }
            let config = try configuration(directory, port: receiver.port)
            let data = directory.file("ledger")
            let first = try ServerProcess(data: data, arguments: ["--config", config])
            try await first.waitUntilAnswering()

            try await post(first, ["810001", "810002", "810003"])
            let phase1 = try await receiver.wait { Self.delivered($0).count >= 3 }
            let ids = ["810001", "810002", "810003"].map { "Production/\($0)/INITIAL_PURCHASE/\($0)" }
            #expect(Self.delivered(phase1) == ids, "delivered once each, in stream order")
            // The first event was refused twice with 500, then delivered: the same id each time.
            #expect(phase1.prefix(3).map { $0["id"] as? String } == [ids[0], ids[0], ids[0]])
            #expect(phase1.prefix(3).map { $0["status"] as? Int } == [500, 500, 200])
            for r in phase1 {
                #expect(r["verified"] as? Bool == true, "the receiver verified the HMAC of \(r["id"] ?? "?")")
                let body = r["body"] as? [String: Any]
                #expect(body?["id"] as? String == r["id"] as? String)
                #expect(body?["type"] as? String == "INITIAL_PURCHASE")
                #expect(body?["appUserId"] as? String != nil)
            }

            // The sixth request (the fourth event) is held: kill -9 the ledger while the receiver holds it.
            try await post(first, ["810004", "810005"])
            let held = try await receiver.wait { $0.contains { $0["held"] as? Bool == true } }
            let heldId = try #require(held.first { $0["held"] as? Bool == true }?["id"] as? String)
            #expect(heldId == "Production/810004/INITIAL_PURCHASE/810004")
            first.killAndWait()

            let second = try ServerProcess(data: data, arguments: ["--config", config])
            try await second.waitUntilAnswering()
            defer { second.killAndWait() }
            let all = try await receiver.wait { Self.delivered($0).count >= 5 }
            let allIds = ["810001", "810002", "810003", "810004", "810005"].map {
                "Production/\($0)/INITIAL_PURCHASE/\($0)"
            }
            #expect(Self.delivered(all) == allIds, "nothing lost: the held event was delivered again after the restart")
            #expect(all.filter { $0["id"] as? String == heldId }.count >= 2, "at least once: the held one came again")
            #expect(all.allSatisfy { $0["verified"] as? Bool == true })

            let verify = try runProcess(storeledgerExecutable(), ["verify", "--data", data, "--config", config], deadline: 120)
            #expect(verify.status == 0, "verify after kill -9: \(verify.stderr)")
        }

        @Test func aDeadLetterIsListedAndDeliveredOnReplay() async throws {
            try await withTaskExecutorPreference(TestExecutor.shared) { try await deadLetterAndReplay() }
        }

        private func deadLetterAndReplay() async throws {
            let directory = try TemporaryDirectory(prefix: "sl-webhook-dead")
            defer { directory.remove() }
            // Two attempts per event, and the receiver refuses the first two requests: the first event is dead.
            let receiver = try await Receiver(in: directory, failFirst: 2)
            defer { receiver.stop() }
            let config = try configuration(directory, port: receiver.port, maxAttempts: 2)
            let data = directory.file("ledger")
            let server = try ServerProcess(data: data, arguments: ["--config", config])
            try await server.waitUntilAnswering()
            defer { server.killAndWait() }

            try await post(server, ["820001", "820002"])
            let first = try await receiver.wait { Self.delivered($0).count >= 1 }
            #expect(Self.delivered(first) == ["Production/820002/INITIAL_PURCHASE/820002"])
            let list = try runProcess(
                storeledgerExecutable(), ["webhook", "dead-letters", "--json", "--data", data, "--config", config], deadline: 60)
            #expect(list.status == 0, "\(list.stderr)")
            let listing = try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any]
            let letters = listing?["deadLetters"] as? [[String: Any]] ?? []
            #expect(letters.count == 1)
            #expect((letters.first?["event"] as? [String: Any])?["id"] as? String == "Production/820001/INITIAL_PURCHASE/820001")
            #expect(letters.first?["attempts"] as? Int == 2)
            #expect((letters.first?["reason"] as? String)?.contains("500") == true)

            // The server is the ledger's only writer: asking for a replay while it runs is refused (ledger_in_use);
            // stopped, the request is recorded, and the next server delivers it.
            let refused = try runProcess(
                storeledgerExecutable(), ["webhook", "replay", "--all", "--data", data, "--config", config], deadline: 60)
            #expect(refused.status == 1 && refused.stderr.contains("ledger_in_use"), "\(refused.stderr)")
            server.signal(SIGTERM)
            #expect(try await server.waitForExit(seconds: 30) == 0)
            let replay = try runProcess(
                storeledgerExecutable(), ["webhook", "replay", "--all", "--data", data, "--config", config], deadline: 60)
            #expect(replay.status == 0, "\(replay.stderr)")
            let restarted = try ServerProcess(data: data, arguments: ["--config", config])
            try await restarted.waitUntilAnswering()
            defer { restarted.killAndWait() }
            let after = try await receiver.wait { Self.delivered($0).count >= 2 }
            #expect(Set(Self.delivered(after)) == ["Production/820001/INITIAL_PURCHASE/820001", "Production/820002/INITIAL_PURCHASE/820002"])
            // Delivered on replay: no dead letter left.
            var left = 1
            let deadline = ContinuousClock.now + .seconds(30)
            while left > 0, ContinuousClock.now < deadline {
                let again = try runProcess(
                    storeledgerExecutable(), ["webhook", "dead-letters", "--json", "--data", data, "--config", config],
                    deadline: 60)
                let doc = try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any]
                left = (doc?["deadLetters"] as? [Any])?.count ?? -1
                if left > 0 { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(left == 0)
        }
    }
}
