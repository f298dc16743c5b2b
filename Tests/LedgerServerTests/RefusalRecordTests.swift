import Foundation
import LedgerClient
import LedgerServer
import LedgerStore
import LedgerTestSupport
import LedgerErrors
import Testing

/// Every request refused as a whole on a write route is kept in `rejected` with its code, its method and target,
/// the size of its header fields and the first bytes of its body.
@Suite("Refused requests are kept", .serialized, .timeLimit(.minutes(1)), .blocking)
struct RefusalRecordTests {
    /// The last record of the rejected store, once there are `count` (refusals from a connection's event loop are
    /// kept asynchronously).
    func rejected(_ server: TestServer, count: Int) async throws -> RejectedInput {
        // Generous: on two shared cores the whole suite runs in parallel, and the record is appended in a task.
        let deadline = ContinuousClock.now + .seconds(20)
        while try server.ledger.log.rejectedInputs(limit: 10_000).count < count && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let all = try server.ledger.log.rejectedInputs(limit: 10_000)
        #expect(all.count == count)
        return try #require(all.last)
    }

    @Test func emptyBodiesAreKept() async throws {
        try await withServer { server in
            let client = try server.client()
            let events = try await client.post("/v1/events", "  \n")
            #expect(events.status == 400 && events.errorCode == "invalid_json")
            let first = try await rejected(server, count: 1)
            #expect(first.code == "invalid_json")
            #expect(first.message == "the body holds no input")
            #expect(first.request == "POST /v1/events")
            #expect(first.raw == Array("  \n".utf8) && first.size == 3)
            #expect((first.headerBytes ?? 0) > 20, "content-type and content-length at least")

            let notification = try await client.post("/v1/apple/notifications", "")
            #expect(notification.status == 400 && notification.errorCode == "invalid_json")
            let second = try await rejected(server, count: 2)
            #expect(second.request == "POST /v1/apple/notifications")
            #expect(second.raw.isEmpty && second.size == 0)
        }
    }

    @Test func wrongMediaTypesAndBadQueriesAreKeptWithTheirBodies() async throws {
        try await withServer { server in
            let client = try server.client()
            let html = try await client.post("/v1/events", "<p>hello</p>", contentType: "text/html")
            #expect(html.status == 415)
            let media = try await rejected(server, count: 1)
            #expect(media.code == "unsupported_media_type")
            #expect(media.raw == Array("<p>hello</p>".utf8))

            let query = try await client.post("/v1/events?type=coupon", Sample.transaction("1"))
            #expect(query.status == 400 && query.errorCode == "invalid_query")
            let refused = try await rejected(server, count: 2)
            #expect(refused.code == "invalid_query")
            #expect(refused.request == "POST /v1/events?type=coupon")
            #expect(refused.raw == Array(Sample.transaction("1").utf8))
            #expect(try server.ledger.lastSeq() == 0, "nothing else was written")

            // A refused read is answered, not recorded: reads are not inputs.
            let read = try await client.get("/v1/subscriptions/x?asOf=minus-one")
            #expect(read.status == 400)
            try await Task.sleep(for: .milliseconds(100))
            #expect(try server.ledger.log.rejectedInputs().count == 2)
        }
    }

    @Test func tooLargeBodiesKeepTheFirstBytesAndTheirSize() async throws {
        try await withServer(configuration: #"{"limits":{"maxBodyBytes":4096,"maxBatchInputs":3}}"#) { server in
            let body = String(repeating: "x", count: 10_000)
            let client = try server.client()
            // Declared over the limit: refused at its head, the record keeps the declared size.
            let answer = try await client.post("/v1/events", body)
            #expect(answer.status == 413 && answer.errorCode == "too_large")
            #expect(answer.headers["connection"] == "close")
            let record = try await rejected(server, count: 1)
            #expect(record.code == "too_large")
            #expect(record.request == "POST /v1/events")
            #expect(record.size == 10_000 && record.raw.isEmpty)
            // Chunked, with no size declared: refused as it grows past the limit, the first bytes kept.
            let connection = try RawConnection(server.socketPath)
            let chunk = String(repeating: "y", count: 3_000)
            connection.send(
                "POST /v1/events HTTP/1.1\r\nHost: l\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + (0..<4).map { _ in "bb8\r\n" + chunk + "\r\n" }.joined() + "0\r\n\r\n")
            let chunked = await offThePool { connection.readAnswer(seconds: 120) } ?? ""
            #expect(chunked.hasPrefix("HTTP/1.1 413 "), "\(chunked.prefix(200))")
            let chunkedRecord = try await rejected(server, count: 2)
            #expect(chunkedRecord.raw.count == 4096 && chunkedRecord.raw.allSatisfy { $0 == UInt8(ascii: "y") })

            let batch = (1...5).map { Sample.transaction("\($0)") }.joined(separator: "\n")
            let big = try await server.client().post("/v1/events", batch, contentType: "application/x-ndjson")
            #expect(big.status == 413 && big.errorCode == "batch_too_large")
            let batchRecord = try await rejected(server, count: 3)
            #expect(batchRecord.code == "batch_too_large")
            #expect(batchRecord.raw == Array(batch.utf8))
            #expect(try await server.client().get("/v1/health").status == 200)
        }
    }

    /// curl sends `Expect: 100-continue` for bodies over 1 MiB and waits: a declared size over the limit is refused
    /// at once, without waiting for a body that is not coming.
    @Test func anOversizedBodyAnnouncedWithExpectContinueIsRefusedAtOnce() async throws {
        // A server waiting for the body would answer nothing until its request timeout (an hour here), then 408: a
        // 413 read well before that says it answered at the head, however long a loaded machine takes to send it.
        let limits = #"{"limits":{"maxBodyBytes":4096,"requestTimeoutSeconds":3600,"idleTimeoutSeconds":3600}}"#
        try await withServer(configuration: limits) { server in
            let connection = try RawConnection(server.socketPath)
            connection.send(
                "POST /v1/events HTTP/1.1\r\nHost: l\r\nContent-Type: application/json\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n"
            )
            let answer = await offThePool { connection.readAnswer(seconds: 120) } ?? ""
            #expect(answer.hasPrefix("HTTP/1.1 413 "), "\(answer.prefix(300))")
            let record = try await rejected(server, count: 1)
            #expect(record.code == "too_large" && record.size == 100_000 && record.raw.isEmpty)
        }
    }

    /// Requests by name: Swift Testing prints each argument, and ten thousand trailers would flood the log.
    static let badChunkedBodies = [
        "a chunk size that is not hex":
            "POST /v1/events HTTP/1.1\r\nHost: l\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nabc\r\n0\r\n\r\n",
        "ten thousand trailers":
            "POST /v1/events HTTP/1.1\r\nHost: l\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n"
            + String(repeating: "X-Trailer: 1\r\n", count: 10_000) + "\r\n",
    ]

    @Test(arguments: ["a chunk size that is not hex", "ten thousand trailers"])
    func badChunkedBodiesAre400InvalidBodyAndKept(_ name: String) async throws {
        let request = try #require(Self.badChunkedBodies[name])
        try await withServer { server in
            let connection = try RawConnection(server.socketPath)
            connection.send(request)
            let answer = await offThePool { connection.readAnswer() } ?? ""
            #expect(answer.hasPrefix("HTTP/1.1 400 "), "\(name): \(answer.prefix(300))")
            #expect(answer.contains(#""code":"invalid_body""#), "\(name): \(answer.prefix(300))")
            let record = try await rejected(server, count: 1)
            #expect(record.code == "invalid_body", "\(name)")
            #expect(record.request == "POST /v1/events", "\(name)")
            #expect(try await server.client().get("/v1/health").status == 200)
        }
    }

    /// RFC 9112 §6.1: a transfer coding the server does not understand is 501; `gzip, chunked` too (the body would
    /// be gzip bytes).
    @Test(arguments: ["gzip", "gzip, chunked"])
    func anUnsupportedTransferCodingIs501AndKept(_ coding: String) async throws {
        try await withServer { server in
            let connection = try RawConnection(server.socketPath)
            connection.send(
                "POST /v1/events HTTP/1.1\r\nHost: l\r\nContent-Type: application/json\r\nTransfer-Encoding: \(coding)\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
            )
            let answer = await offThePool { connection.readAnswer() } ?? ""
            #expect(answer.hasPrefix("HTTP/1.1 501 "), "\(answer.prefix(300))")
            #expect(answer.contains(#""code":"unsupported_transfer_encoding""#), "\(answer.prefix(300))")
            let record = try await rejected(server, count: 1)
            #expect(record.code == "unsupported_transfer_encoding")
            #expect(record.request == "POST /v1/events")
            #expect(try server.ledger.lastSeq() == 0)
            #expect(try await server.client().get("/v1/health").status == 200)
        }
    }

    @Test func aGarbageRequestLineIs400BadRequestAndKept() async throws {
        try await withServer { server in
            let connection = try RawConnection(server.socketPath)
            connection.send("\u{1}\u{2}GARBAGE NONSENSE\r\nHost: l\r\n\r\n")
            let (answer, closed) = await offThePool { connection.readUntilClosed(seconds: 120) }
            #expect(closed)
            #expect(answer.hasPrefix("HTTP/1.1 400 "), "\(answer)")
            #expect(answer.contains(#""code":"bad_request""#), "\(answer)")
            let record = try await rejected(server, count: 1)
            #expect(record.code == "bad_request")
            #expect(record.request == "\u{1}\u{2}GARBAGE NONSENSE")
            #expect(record.raw == Array("\u{1}\u{2}GARBAGE NONSENSE\r\nHost: l\r\n\r\n".utf8))
            #expect(record.headerBytes == record.raw.count)
            #expect(try server.ledger.audit.verify().ok)
        }
    }
}
