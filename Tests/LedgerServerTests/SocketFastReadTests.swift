import Foundation
import LedgerTestSupport
import LedgerClient
import LedgerStore
import LedgerErrors
import Testing

@testable import LedgerServer

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Reading raw answers

extension RawConnection {
    /// Reads `count` whole answers (each with a Content-Length body), or fewer if the peer closes or `seconds` pass.
    ///
    /// `seconds` bounds a wait for answers that come, not a latency: an answer the router makes needs a thread of
    /// Swift's cooperative pool, which the whole suite's tests running beside it on two cores can hold for tens of
    /// seconds (the fast path's answers, made on the event loop, do not wait for it).
    func readAnswers(_ count: Int, seconds: Double = 120) -> [String] {
        var received: [UInt8] = []
        var answers: [String] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while answers.count < count {
            // Take every whole answer at the front of what arrived.
            while let end = Self.firstAnswerLength(received) {
                answers.append(String(decoding: received[..<end], as: UTF8.self))
                received.removeFirst(end)
            }
            if answers.count == count || deadline.timeIntervalSinceNow <= 0 { break }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        return answers
    }

    private static func firstAnswerLength(_ bytes: [UInt8]) -> Int? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let end = text.range(of: "\r\n\r\n") else { return nil }
        let head = text[..<end.lowerBound].lowercased()
        let length =
            head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        let headBytes = text[..<end.upperBound].utf8.count
        return bytes.count - headBytes >= length ? headBytes + length : nil
    }
}

/// An answer with its `Date` value blanked (the two paths answer in different seconds).
func withoutDate(_ answer: String) -> String {
    answer.replacingOccurrences(of: #"\r\nDate: [^\r]*\r\n"#, with: "\r\nDate: -\r\n", options: .regularExpression)
}

// MARK: - The fast read path against the router

@Suite("Fast read path", .serialized, .timeLimit(.minutes(2)), .blocking)
struct FastReadTests {
    static let at = Sample.start + Sample.day

    /// Two subscriptions, one user; a refund-free history the customer and timeline routes can show.
    static func fill(_ server: TestServer) async throws {
        let client = try server.client()
        for (tid, user) in [("1001", "u1"), ("1002", "u1"), ("2001", "u2")] {
            #expect(try await client.post("/v1/events", Sample.transaction(tid, user: user)).status == 200)
        }
        #expect(try await client.post("/v1/events", Sample.transaction("1003", otid: "1001", month: 1)).status == 200)
    }

    /// Every hot route, its refusals included: each target's answer, through the fast path and through the router.
    static let targets = [
        "/v1/customers/u1?at=\(at)",
        "/v1/customers/u1?at=\(at + 40 * Sample.day)",
        "/v1/customers/u1?at=\(at)&asOf=2",
        "/v1/customers/u1?asOf=2&at=\(at)&environment=Production",
        "/v1/customers/u1?at=\(at)&environment=Sandbox",
        "/v1/customers/u1?at=2023-11-15T00:00:00Z",
        "/v1/customers/u1?at=\(at)&unknown=1",
        "/v1/customers/nobody?at=\(at)",
        "/v1/customers/u1?at=yesterday",
        "/v1/customers/u1?at=",
        "/v1/customers/u1?at=\(at)&asOf=minus-one",
        "/v1/customers/u1?at=\(at)&environment=Mars",
        "/v1/subscriptions/1001?at=\(at)",
        "/v1/subscriptions/1001?at=\(at + 31 * Sample.day)&asOf=3",
        "/v1/subscriptions/2001?at=\(at)",
        "/v1/subscriptions/nope?at=\(at)",
        "/v1/subscriptions/1001?asOf=minus-one",
        "/v1/subscriptions/1001?at=\(at)&environment=Sandbox",
        "/v1/subscriptions/1001?at=yesterday&env=Sandbox",
        "/v1/customers/u1?asof=2",
        "/v1/health",
    ]

    static func get(_ target: String) -> String { "GET \(target) HTTP/1.1\r\nHost: ledger\r\n\r\n" }

    @Test func everyHotRouteAnswersByteForByteAsTheRouter() async throws {
        try await withServer { server in
            try await Self.fill(server)
            let before = server.service.fastPath.answered  // the test server's start-up probe is a health read
            let fast = try RawConnection(server.socketPath)
            var fastAnswers: [String] = []
            for target in Self.targets {
                fast.send(Self.get(target))
                fastAnswers.append(await offThePool { fast.readAnswers(1).first ?? "no answer" })
            }
            #expect(server.service.fastPath.answered - before == Self.targets.count)

            server.service.fastPath.isOn = false
            let general = try RawConnection(server.socketPath)  // a new connection: the switch is read per connection
            for (target, fastAnswer) in zip(Self.targets, fastAnswers) {
                general.send(Self.get(target))
                let answer = await offThePool { general.readAnswers(1).first ?? "no answer" }
                #expect(withoutDate(fastAnswer) == withoutDate(answer), "\(target)")
                #expect(answer.contains("\r\nDate: ") && fastAnswer.contains("\r\nDate: "))
            }
            #expect(server.service.fastPath.answered - before == Self.targets.count, "the router answered the second round")

            // Said with the fields clients add, `Connection: keep-alive` among them: the same answers.
            let busy = "GET /v1/customers/u1?at=\(Self.at) HTTP/1.1\r\nHost: ledger\r\nUser-Agent: test/1.0\r\n"
                + "Accept: */*\r\nConnection: Keep-Alive\r\nX-Empty:\r\nX-Tab:\tvalue \r\n\r\n"
            general.send(busy)
            let viaRouter = await offThePool { general.readAnswers(1).first ?? "no answer" }
            server.service.fastPath.isOn = true
            let again = try RawConnection(server.socketPath)
            again.send(busy)
            let viaFastPath = await offThePool { again.readAnswers(1).first ?? "no answer" }
            #expect(withoutDate(viaFastPath) == withoutDate(viaRouter))
            #expect(withoutDate(viaFastPath) == withoutDate(fastAnswers[0]))
            #expect(server.service.fastPath.answered - before == Self.targets.count + 1)
            // Refusals are among them: a parameter the route does not read is refused (before a bad value), not
            // ignored.
            #expect(fastAnswers.contains { $0.hasPrefix("HTTP/1.1 404 Not Found\r\n") })
            #expect(fastAnswers.contains { $0.hasPrefix("HTTP/1.1 400 Bad Request\r\n") })
            for (target, unknown, route) in [
                ("/v1/customers/u1?at=\(Self.at)&unknown=1", "unknown", "GET /v1/customers/{appUserId}"),
                ("/v1/customers/u1?asof=2", "asof", "GET /v1/customers/{appUserId}"),
                ("/v1/subscriptions/1001?at=yesterday&env=Sandbox", "env", "GET /v1/subscriptions/{otid}"),
            ] {
                let answer = try #require(Self.targets.firstIndex(of: target).map { fastAnswers[$0] })
                #expect(answer.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(target)")
                #expect(
                    answer.hasSuffix(
                        #"{"error":{"code":"invalid_query","message":"unknown query parameter '\#(unknown)': \#(route) takes at, asOf, environment"}}"#
                            + "\n"),
                    "\(target): \(answer)")
            }
        }
    }

    /// Without `at` the answer speaks of now: the same but for that one number.
    @Test func aReadWithoutAtAnswersAsTheRouterButForTheInstant() async throws {
        try await withServer { server in
            try await Self.fill(server)
            func blank(_ s: String) -> String {
                withoutDate(s).replacingOccurrences(of: #""at":[0-9]+"#, with: #""at":0"#, options: .regularExpression)
            }
            let before = server.service.fastPath.answered
            let fast = try RawConnection(server.socketPath)
            fast.send(Self.get("/v1/customers/u1") + Self.get("/v1/subscriptions/1001"))
            let fastAnswers = await offThePool { fast.readAnswers(2) }
            server.service.fastPath.isOn = false
            let general = try RawConnection(server.socketPath)
            general.send(Self.get("/v1/customers/u1") + Self.get("/v1/subscriptions/1001"))
            let answers = await offThePool { general.readAnswers(2) }
            #expect(fastAnswers.map(blank) == answers.map(blank))
            #expect(server.service.fastPath.answered - before == 2)
        }
    }

    /// Requests the fast path leaves to the router still get the router's answer (and it counts none of them).
    @Test func whatItDoesNotTakeTheRouterAnswers() async throws {
        try await withServer { server in
            try await Self.fill(server)
            let declined = [
                "GET /v1/customers/u1?at=\(Self.at) HTTP/1.1\r\nHost: ledger\r\nContent-Length: 0\r\n\r\n",
                "GET /v1/customers/u%31?at=\(Self.at) HTTP/1.1\r\nHost: ledger\r\n\r\n",
                "GET /v1/customers/u1?at=\(Self.at)&at=1 HTTP/1.1\r\nHost: ledger\r\n\r\n",
                "GET /v1/customers/u1/?at=\(Self.at) HTTP/1.1\r\nHost: ledger\r\n\r\n",
                "GET /v1/customers/u1? HTTP/1.1\r\nHost: ledger\r\n\r\n",
                "GET /v1/transactions/1001 HTTP/1.1\r\nHost: ledger\r\n\r\n",
                "GET /v2/whatever HTTP/1.1\r\nHost: ledger\r\n\r\n",
                "GET /v1/health?verbose=1 HTTP/1.1\r\nHost: ledger\r\n\r\n",
            ]
            let before = server.service.fastPath.answered
            let connection = try RawConnection(server.socketPath)
            for request in declined {
                connection.send(request)
                let answer = await offThePool { connection.readAnswers(1).first ?? "no answer" }
                #expect(answer.hasPrefix("HTTP/1.1 "), "\(request)")
            }
            #expect(server.service.fastPath.answered == before)
            // The same connection still takes a hot read afterwards.
            connection.send(Self.get("/v1/health"))
            let health = await offThePool { connection.readAnswers(1).first ?? "" }
            #expect(health.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(server.service.fastPath.answered == before + 1)
        }
    }

    /// Pipelined: hot reads, a write, a read the router answers, and hot reads again, sent at once, answered in order;
    /// the hot read sent after the write sees it.
    @Test func pipelinedRequestsAnswerInOrderAcrossBothPaths() async throws {
        try await withServer { server in
            let append = Sample.transaction("5001", user: "p1")
            let requests =
                Self.get("/v1/customers/p1?at=\(Self.at)")
                + "POST /v1/events HTTP/1.1\r\nHost: ledger\r\nContent-Type: application/json\r\nContent-Length: \(append.utf8.count)\r\n\r\n\(append)"
                + Self.get("/v1/customers/p1?at=\(Self.at)")
                + Self.get("/v1/transactions/5001")
                + Self.get("/v1/subscriptions/5001?at=\(Self.at)")
                + Self.get("/v1/health")
            let connection = try RawConnection(server.socketPath)
            connection.send(requests)
            let answers = await offThePool { connection.readAnswers(6) }
            try #require(answers.count == 6, "\(answers)")
            #expect(answers.allSatisfy { $0.hasPrefix("HTTP/1.1 200 OK\r\n") }, "\(answers)")
            #expect(answers[0].contains(#""subscriptions":[]"#), "before the write")
            #expect(answers[1].contains(#""status":"appended""#))
            #expect(answers[2].contains(#""subscriptions":["5001"]"#), "after the write")
            #expect(answers[3].contains(#""transactionId":"5001""#))
            #expect(answers[4].contains(#""originalTransactionId":"5001""#))
            #expect(answers[5].contains(#""lastSeq":"#) && !answers[5].contains(#""lastSeq":0"#))
            // Once the connection is quiet again, hot reads are the fast path's.
            let before = server.service.fastPath.answered
            connection.send(Self.get("/v1/health"))
            #expect(await offThePool { connection.readAnswers(1) }.first?.hasPrefix("HTTP/1.1 200 OK\r\n") == true)
            #expect(server.service.fastPath.answered == before + 1)
        }
    }

    /// A request arriving in pieces (split anywhere, the next one begun in the same piece) is answered as a whole.
    @Test func aRequestSplitAcrossReadsIsAnsweredWhole() async throws {
        try await withServer { server in
            try await Self.fill(server)
            let one = Self.get("/v1/customers/u1?at=\(Self.at)")
            let whole = try RawConnection(server.socketPath)
            whole.send(one)
            let expected = await offThePool { whole.readAnswers(1).first ?? "no answer" }

            let bytes = Array((one + one).utf8)
            for cuts in [[3, 20, 47], [one.utf8.count - 1, one.utf8.count + 2], [one.utf8.count - 2, one.utf8.count + 30]] {
                let split = try RawConnection(server.socketPath)
                var from = 0
                for cut in cuts + [bytes.count] {
                    split.send(Array(bytes[from..<cut]))
                    from = cut
                    try await Task.sleep(for: .milliseconds(30))
                }
                let answers = await offThePool { split.readAnswers(2) }
                #expect(answers.map(withoutDate) == [withoutDate(expected), withoutDate(expected)], "cut at \(cuts)")
            }
        }
    }

    /// A head that does not parse, behind hot reads, is answered 400 and closes the connection, as before.
    @Test func aMalformedHeadAfterHotReadsIs400AndCloses() async throws {
        try await withServer { server in
            let connection = try RawConnection(server.socketPath)
            connection.send(Self.get("/v1/health") + "GET /v1/health HTTP/1.1\r\nBad Header\r\n\r\n")
            let (text, closed) = await offThePool { connection.readUntilClosed(seconds: 120) }
            #expect(closed)
            #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(text)")
            #expect(text.contains("HTTP/1.1 400 Bad Request\r\n"), "\(text)")
            #expect(text.contains(#""code":"bad_request""#), "\(text)")
        }
    }

    /// A head cut short by the end of the stream (the client goes, or the header timeout closes) is refused and kept
    /// in `rejected` exactly as through the router: what the fast path held goes to the decoder before the end.
    @Test func aHeadCutShortIsKeptInRejectedAsThroughTheRouter() async throws {
        try await withServer(configuration: #"{"limits":{"headerTimeoutSeconds":1,"idleTimeoutSeconds":3}}"#) { server in
            let cut = ["GET /v1/health HTTP/1.1\r\nHo", "POST /v1/ev", "GET /v1/cust"]
            var records: [[String]] = []
            for on in [true, false] {
                server.service.fastPath.isOn = on
                let before = try server.ledger.log.rejectedInputs(limit: 10_000).count
                for text in cut {
                    // The client goes: the connection closes when it is released.
                    let connection = try RawConnection(server.socketPath)
                    connection.send(text)
                    try await Task.sleep(for: .milliseconds(100))
                    withExtendedLifetime(connection) {}
                }
                // The server goes: the header timeout.
                let slow = try RawConnection(server.socketPath)
                slow.send("GET /v1/customers/x HTTP/1.1\r\nX-Slow: a")
                let (answer, closed) = await offThePool { slow.readUntilClosed(seconds: 120) }
                #expect(closed && answer.hasPrefix("HTTP/1.1 408 "), "\(answer)")
                let deadline = ContinuousClock.now + .seconds(120)
                while try server.ledger.log.rejectedInputs(limit: 10_000).count < before + 4 && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                let kept = try server.ledger.log.rejectedInputs(limit: 10_000).dropFirst(before)
                records.append(kept.map { "\($0.code) \($0.request ?? "-") \($0.message) \(String(decoding: $0.raw, as: UTF8.self))" })
            }
            #expect(records[0].count == 4)
            #expect(records[0] == records[1])
        }
    }

    /// The request metrics count the hot reads in the router's series.
    @Test func metricsCountTheHotReads() async throws {
        try await withServer { server in
            try await Self.fill(server)
            let before = server.service.fastPath.answered
            let connection = try RawConnection(server.socketPath)
            connection.send(Self.get("/v1/customers/u1?at=\(Self.at)") + Self.get("/v1/subscriptions/nope"))
            _ = await offThePool { connection.readAnswers(2) }
            #expect(server.service.fastPath.answered - before == 2)
            server.service.fastPath.isOn = false
            let general = try RawConnection(server.socketPath)
            general.send(Self.get("/v1/customers/u1?at=\(Self.at)") + Self.get("/metrics"))
            let metrics = await offThePool { general.readAnswers(2) }.last ?? ""
            #expect(
                metrics.contains(#"storeledger_request_duration_seconds_count{method="GET",route="/v1/customers/{appUserId}",status="200"} 2"#),
                "\(metrics)")
            #expect(
                metrics.contains(#"storeledger_request_duration_seconds_count{method="GET",route="/v1/subscriptions/{otid}",status="404"} 1"#),
                "\(metrics)")
        }
    }
}

// MARK: - The pieces

@Suite struct HTTPDateTests {
    @Test func writesIMFFixdate() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(1_767_225_599) == "Wed, 31 Dec 2025 23:59:59 GMT")
    }
}
