#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LedgerClient
import LedgerTestSupport
import Testing

// MARK: - Poison inputs against the real process

/// The poison input's story, against `storeledger serve`: a transaction with an `expiresDate` of Int64.min, once
/// appended with 200 (after which every read of its subscription trapped and the server died with SIGILL), is refused
/// at the door and the server keeps answering; the CLI's reads, `replay --check` and `verify` too.
@Suite("Poison inputs against storeledger serve", .serialized, .timeLimit(.minutes(2)), .blocking)
struct PoisonInputProcessTests {
    static func errorCode(_ response: LedgerResponse) -> String? {
        let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return (object?["error"] as? [String: Any])?["code"] as? String
    }

    @Test func theIssuesPoisonInputIsRefusedAndTheServerKeepsAnswering() async throws {
        let directory = try TemporaryDirectory(prefix: "sl-poison")
        defer { directory.remove() }
        let data = directory.path
        let server = try ServerProcess(data: data)
        try await server.waitUntilAnswering()
        let client = try AsyncLedgerClient(socketPath: server.socketPath, timeoutSeconds: 10)

        let poisons = [
            #"{"transactionId":"1","originalTransactionId":"1","productId":"p","purchaseDate":1700000000000,"expiresDate":-9223372036854775808}"#,
            #"{"transactionId":"1","originalTransactionId":"1","productId":"p","purchaseDate":1700000000000,"expiresDate":9223372036854775807}"#,
            #"{"transactionId":"1","originalTransactionId":"1","productId":"p","purchaseDate":-9223372036854775808}"#,
        ]
        for poison in poisons {
            let refused = try await client.post("/v1/apple/transactions?appUserId=u9", body: Array(poison.utf8))
            #expect(refused.status == 422, "\(poison): \(refused.text)")
            #expect(Self.errorCode(refused) == "out_of_range", "\(poison): \(refused.text)")
            // The reads that used to trap: nothing of the poison is stored, and the server answers.
            #expect(try await client.get("/v1/subscriptions/1").status == 404)
            #expect(try await client.get("/v1/customers/u9").status == 200)
            #expect(try await client.get("/v1/health").status == 200)
        }
        // Point 4: a trailing comma is not JSON, whatever it would have said.
        let comma = try await client.post(
            "/v1/apple/notifications", body: Array(#"{"notification_type":"DID_RENEW",}"#.utf8))
        #expect(comma.status == 400, "\(comma.text)")
        #expect(Self.errorCode(comma) == "invalid_json", "\(comma.text)")
        let empty = try await client.post(
            "/v1/apple/transactions",
            body: Array(#"{"transactionId":"2","originalTransactionId":"2","productId":"","purchaseDate":1700000000000}"#.utf8))
        #expect(empty.status == 422, "\(empty.text)")
        #expect(Self.errorCode(empty) == "missing_field", "\(empty.text)")

        let good = #"{"transactionId":"1","originalTransactionId":"1","productId":"p","purchaseDate":1700000000000,"expiresDate":1702592000000}"#
        let appended = try await client.post("/v1/apple/transactions?appUserId=u9", body: Array(good.utf8))
        #expect(appended.status == 200, "\(appended.text)")
        let timeline = try await client.get("/v1/subscriptions/1?at=1700000000001")
        #expect(timeline.status == 200, "\(timeline.text)")
        #expect(timeline.text.contains(#""status":"active""#), "\(timeline.text)")
        #expect(try await client.get("/v1/customers/u9").status == 200)
        let health = try await client.get("/v1/health")
        #expect(health.status == 200)
        #expect(health.text.contains(#""lastSeq":2"#), "\(health.text)")  // the transaction and u9's claim

        server.signal(SIGTERM)
        #expect(try await server.waitForExit() == 0)
        for arguments in [["timeline", "1"], ["customer", "u9"], ["replay", "--check"], ["verify"]] {
            let run = try runProcess(storeledgerExecutable(), arguments + ["--data", data])
            #expect(run.status == 0, "\(arguments): \(run.stderr)")
        }
        let rejected = try runProcess(storeledgerExecutable(), ["rejected", "--data", data, "--json"])
        #expect(rejected.stdout.components(separatedBy: "out_of_range").count - 1 == poisons.count, "\(rejected.stdout)")
    }
}
