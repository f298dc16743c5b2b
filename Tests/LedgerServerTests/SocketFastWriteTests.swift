import Foundation
import LedgerClient
import LedgerCore
import LedgerErrors
import LedgerStore
import LedgerTestSupport
import Testing

@testable import LedgerServer

/// `POST /v1/events` through the fast path against the router: the same requests on two fresh ledgers, one server
/// with the fast path and one without, answered byte for byte alike (the date aside), and the same events stored.
@Suite("Fast path appends", .serialized, .timeLimit(.minutes(2)), .blocking)
struct FastWriteTests {
    static func post(_ body: String, contentType: String? = "application/json", extra: String = "") -> String {
        let type = contentType.map { "Content-Type: \($0)\r\n" } ?? ""
        return "POST /v1/events HTTP/1.1\r\nHost: ledger\r\n\(type)\(extra)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    static let renewal = Sample.transaction("7002", otid: "7001", month: 1)
    static let batch = [Sample.transaction("7003", user: "w2"), "not json", Sample.transaction("7001", user: "w1")]
        .joined(separator: "\n")

    /// Requests the fast path takes and ones it hands over, in one order: appended, a duplicate, a batch with a
    /// refused line (207), a body that is not JSON at all (400, from the router), an unknown media type (415).
    static let requests = [
        post(Sample.transaction("7001", user: "w1")),
        post(Sample.transaction("7001", user: "w1")),
        post(renewal, contentType: nil),
        post(batch, contentType: "application/x-ndjson"),
        post("{\"type\":", contentType: "application/json; charset=utf-8"),
        post(batch, contentType: "text/csv"),
        post(Sample.transaction("7004", user: "w3"), extra: "Connection: keep-alive\r\n"),
    ]

    /// Sends each request alone on one connection; returns the answers with their dates blanked, and how many the
    /// fast path appended.
    static func answers(fastPath: Bool) async throws -> (answers: [String], appended: Int, events: [String]) {
        var answers: [String] = []
        var appended = 0
        var events: [String] = []
        try await withServer { server in
            server.service.fastPath.isOn = fastPath
            let before = server.service.fastPath.appended
            let connection = try RawConnection(server.socketPath)
            for request in requests {
                connection.send(request)
                answers.append(withoutDate(await offThePool { connection.readAnswers(1).first ?? "no answer" }))
            }
            appended = server.service.fastPath.appended - before
            events = try server.ledger.log.events(after: 0, limit: 100).map { "\($0.event.seq) \($0.event.fact)" }
        }
        return (answers, appended, events)
    }

    @Test func answersAndStoredEventsAreTheRoutersByteForByte() async throws {
        let fast = try await Self.answers(fastPath: true)
        let routed = try await Self.answers(fastPath: false)
        #expect(fast.answers.count == Self.requests.count)
        for (index, (a, b)) in zip(fast.answers, routed.answers).enumerated() {
            #expect(a == b, "request \(index): fast path\n\(a)\nrouter\n\(b)")
        }
        #expect(fast.answers[0].hasPrefix("HTTP/1.1 200 OK\r\n") && fast.answers[0].contains(#""status":"appended""#))
        #expect(fast.answers[1].contains(#""status":"duplicate""#))
        #expect(fast.answers[3].hasPrefix("HTTP/1.1 207 Multi-Status\r\n"))
        #expect(fast.answers[4].hasPrefix("HTTP/1.1 400 Bad Request\r\n") && fast.answers[4].contains("invalid_json"))
        #expect(fast.answers[5].hasPrefix("HTTP/1.1 415 "))
        #expect(fast.events == routed.events && fast.events.count >= 4, "\(fast.events)")
        // All but the media type it does not take were the fast path's: a body that is not JSON is one input refused
        // (kept in `rejected` by the writer, answered 400 by the same function as the router's).
        #expect(fast.appended == 6)
        #expect(routed.appended == 0)
    }

    /// Pipelined behind an append that waits for the writer: a hot read, a read the router answers, another append
    /// and a hot read, sent at once, answered in order; each read sees the appends sent before it.
    @Test func requestsPipelinedBehindAnAppendAreAnsweredInOrder() async throws {
        try await withServer { server in
            let requests =
                Self.post(Sample.transaction("8001", user: "p8"))
                + FastReadTests.get("/v1/customers/p8?at=\(FastReadTests.at)")
                + FastReadTests.get("/v1/transactions/8001")
                + Self.post(Sample.transaction("8002", otid: "8001", month: 1))
                + FastReadTests.get("/v1/subscriptions/8001?at=\(FastReadTests.at + 40 * Sample.day)")
            let connection = try RawConnection(server.socketPath)
            connection.send(requests)
            let answers = await offThePool { connection.readAnswers(5) }
            try #require(answers.count == 5, "\(answers)")
            #expect(answers.allSatisfy { $0.hasPrefix("HTTP/1.1 200 OK\r\n") }, "\(answers)")
            #expect(answers[0].contains(#""transactionId":"8001""#) && answers[0].contains(#""status":"appended""#))
            #expect(answers[1].contains(#""subscriptions":["8001"]"#), "\(answers[1])")
            #expect(answers[2].contains(#""transactionId":"8001""#))
            #expect(answers[3].contains(#""transactionId":"8002""#) && answers[3].contains(#""status":"appended""#))
            #expect(answers[4].contains(#""transactionId":"8002""#), "the renewal is in the timeline: \(answers[4])")
            // The second append came behind a read the router was answering: the router's too (answers keep order).
            #expect(server.service.fastPath.appended == 1)
        }
    }

    /// The ledger's own client (AsyncHTTPClient) sends plain appends: they take the fast path.
    @Test func theLedgersClientsAppendsTakeTheFastPath() async throws {
        try await withServer { server in
            let before = server.service.fastPath.appended
            let client = try server.client()
            #expect(try await client.post("/v1/events", Sample.transaction("9101", user: "c1")).status == 200)
            let batch = [Sample.transaction("9102", user: "c2"), Sample.transaction("9103", user: "c3")]
            #expect(
                try await client.post("/v1/events", batch.joined(separator: "\n"), contentType: "application/x-ndjson")
                    .status == 200)
            #expect(server.service.fastPath.appended == before + 2)
        }
    }

    /// Restricted writers: a peer that may not write is refused by the router (403, kept), never appended here.
    @Test func aPeerThatMayNotWriteIsTheRoutersToRefuse() async throws {
        try await withServer(configuration: #"{"socket":{"writers":{"uids":[4000000000]}}}"#) { server in
            let before = server.service.fastPath.appended
            let connection = try RawConnection(server.socketPath)
            connection.send(Self.post(Sample.transaction("9001", user: "x")))
            let answer = await offThePool { connection.readAnswers(1).first ?? "no answer" }
            #expect(answer.hasPrefix("HTTP/1.1 403 "), "\(answer)")
            #expect(server.service.fastPath.appended == before)
            #expect(try server.ledger.log.events(after: 0, limit: 10).isEmpty)
        }
    }
}
