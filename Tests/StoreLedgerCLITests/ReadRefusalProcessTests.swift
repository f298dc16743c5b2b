#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LedgerClient
import LedgerTestSupport
import Testing

// MARK: - Reads no caller can crash, against the real process

/// Anyone who may open the socket may read, so no read may end the server: an instant or a timeout at the ends of
/// what a number can say is refused with 400 `invalid_query` naming the parameter, and the server keeps answering.
/// The CLI's reads refuse the same instants with a usage error (exit 2), never a signal.
@Suite("Read refusals against storeledger serve", .serialized, .timeLimit(.minutes(3)), .blocking)
struct ReadRefusalProcessTests {
    static func error(_ response: LedgerResponse) -> (code: String?, message: String?) {
        let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        let error = object?["error"] as? [String: Any]
        return (error?["code"] as? String, error?["message"] as? String)
    }

    /// Requests whose numbers would trap arithmetic in the server if they got that far (an instant drawn, a timeout
    /// made a deadline), with the parameter each refusal names.
    static let refused: [(target: String, parameter: String)] = {
        var refused: [(String, String)] = []
        for picture in ["timeline.svg", "timeline.html"] {
            for at in ["-9223372036854775808", "-9223372036854775807", "9223372036854775807", "253402300800000"] {
                refused.append(("/v1/subscriptions/1/\(picture)?at=\(at)", "at"))
            }
        }
        refused.append(("/v1/subscriptions/1?at=-9223372036854775808", "at"))
        refused.append(("/v1/customers/u9?at=9223372036854775807", "at"))
        for stream in ["/v1/events", "/v1/lifecycle"] {
            for timeout in ["1e16", "inf", "nan", "1e308", "-1"] {
                refused.append(("\(stream)?follow=true&timeout=\(timeout)", "timeout"))
            }
        }
        return refused
    }()

    @Test func crashingReadsAre400AndTheServerKeepsAnswering() async throws {
        let directory = try TemporaryDirectory(prefix: "sl-reads")
        defer { directory.remove() }
        let data = directory.path
        let server = try ServerProcess(data: data)
        try await server.waitUntilAnswering()
        let client = try AsyncLedgerClient(socketPath: server.socketPath, timeoutSeconds: 10)

        // A subscription to draw: the pictures are drawn only for one the ledger knows.
        let good = #"{"transactionId":"1","originalTransactionId":"1","productId":"p","purchaseDate":1700000000000,"expiresDate":1702592000000}"#
        let appended = try await client.post("/v1/apple/transactions?appUserId=u9", body: Array(good.utf8))
        #expect(appended.status == 200, "\(appended.text)")

        for (target, parameter) in Self.refused {
            let answer = try await client.get(target)
            let (code, message) = Self.error(answer)
            #expect(answer.status == 400, "\(target): \(answer.text)")
            #expect(code == "invalid_query", "\(target): \(answer.text)")
            #expect(message?.hasPrefix(parameter + " must be ") == true, "\(target): \(answer.text)")
            #expect(server.process.isRunning, "\(target) ended the server: \(server.log)")
            #expect(try await client.get("/v1/health").status == 200, "\(target)")
        }

        // Bytes after a JSON body's document are not JSON: nothing of it is appended.
        for body in [good, #"{"type":"transaction","appUserId":"u8","payload":\#(good)}"#] {
            for trailing in ["x", "}", " {}"] {
                let answer = try await client.post("/v1/events", body: Array((body + trailing).utf8))
                #expect(answer.status == 400, "\(body + trailing): \(answer.text)")
                #expect(Self.error(answer).code == "invalid_json", "\(body + trailing): \(answer.text)")
            }
        }

        // Still alive, and still reading: the subscription, its picture, a customer.
        let timeline = try await client.get("/v1/subscriptions/1?at=1700000000001")
        #expect(timeline.status == 200, "\(timeline.text)")
        #expect(timeline.text.contains(#""status":"active""#), "\(timeline.text)")
        let picture = try await client.get("/v1/subscriptions/1/timeline.svg?at=1700000000001")
        #expect(picture.status == 200, "\(picture.text)")
        #expect(try await client.get("/v1/customers/u9").status == 200)
        let health = try await client.get("/v1/health")
        #expect(health.status == 200)
        #expect(health.text.contains(#""lastSeq":2"#), "only the transaction and u9's claim: \(health.text)")

        server.signal(SIGTERM)
        #expect(try await server.waitForExit() == 0, "\(server.log)")
    }

    /// The CLI's reads refuse the same instants and seqs: a usage error naming the flag and the range (exit 2), not
    /// a signal.
    @Test func theCLIsReadsRefuseOutOfRangeInstantsWithAUsageError() throws {
        let directory = try TemporaryDirectory(prefix: "sl-reads-cli")
        defer { directory.remove() }
        let data = directory.path + "/ledger"
        let input = directory.path + "/input.json"
        let envelope = #"{"type":"transaction","appUserId":"u9","receivedAt":1700000000000,"payload":{"transactionId":"1","originalTransactionId":"1","productId":"p","purchaseDate":1700000000000,"expiresDate":1702592000000,"type":"Auto-Renewable Subscription","environment":"Production"}}"#
        try Data(envelope.utf8).write(to: URL(fileURLWithPath: input))
        let ingest = try runProcess(storeledgerExecutable(), ["ingest", "--data", data, input], deadline: 60)
        #expect(ingest.status == 0, "\(ingest.stderr)")

        for arguments in [
            ["timeline", "1", "--at=-9223372036854775808"],
            ["timeline", "1", "--at=-9223372036854775808", "--svg", "-"],
            ["timeline", "1", "--at=-9223372036854775807", "--html", "-"],
            ["timeline", "1", "--at=9223372036854775807", "--svg", "-"],
            ["timeline", "1", "--at=253402300800000", "--html", "-"],
            ["customer", "u9", "--at=-9223372036854775808"],
            ["why", "u9", "p", "--at=-9223372036854775808"],
            ["grants", "u9", "--at=9223372036854775807"],
            ["revenue", "--from=-9223372036854775808"],
            ["revenue", "--to=9223372036854775807"],
            ["timeline", "1", "--as-of=18446744073709551615"],
            ["events", "--after=18446744073709551615"],
            ["lifecycle", "--after=9223372036854775808"],
        ] {
            let run = try runProcess(storeledgerExecutable(), arguments + ["--data", data], deadline: 60)
            #expect(run.exited, "\(arguments) ended by a signal: \(run.stderr)")
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            let flag = arguments.first { $0.hasPrefix("--") }.map { String($0.prefix { $0 != "=" }) } ?? ""
            #expect(run.stderr.hasPrefix("error: usage: \(flag) "), "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains(" is outside "), "\(arguments): \(run.stderr)")
        }
        // The ends of the range are answered.
        for arguments in [
            ["timeline", "1", "--at=1700000000001", "--svg", "-"], ["timeline", "1", "--at=0", "--html", "-"],
            ["timeline", "1", "--at=253402300799999", "--json"], ["events", "--limit=9223372036854775807"],
        ] {
            let run = try runProcess(storeledgerExecutable(), arguments + ["--data", data], deadline: 60)
            #expect(run.status == 0, "\(arguments): \(run.stderr)")
        }
    }
}
