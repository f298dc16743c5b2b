import Foundation
import Hummingbird
import HummingbirdTesting
import LedgerClient
import LedgerCore
import LedgerStore
import LedgerTestSupport
import LedgerErrors
import Logging
import Testing

@testable import LedgerServer

// MARK: - Query parameters a route does not take

@Suite struct QueryParameterTests {
    /// One request with a parameter its route does not read, the parameter, and what the route takes.
    struct Case: CustomTestStringConvertible, Sendable {
        var method: HTTPRequest.Method
        var target: String
        var unknown: String
        var takes: String
        var testDescription: String { "\(method) \(target)" }
    }

    static let cases: [Case] = [
        Case(
            method: .get,
            target: "/v1/customers/u1?asof=3",
            unknown: "asof",
            takes: "GET /v1/customers/{appUserId} takes at, asOf, environment"
        ),
        Case(
            method: .get,
            target: "/v1/subscriptions/1001?at=1700000000000&env=Sandbox",
            unknown: "env",
            takes: "GET /v1/subscriptions/{otid} takes at, asOf, environment"
        ),
        Case(
            method: .get,
            target: "/v1/transactions/1001?verbose=1",
            unknown: "verbose",
            takes: "GET /v1/transactions/{transactionId} takes no query parameters"
        ),
        Case(
            method: .get,
            target: "/v1/events?afterSeq=3",
            unknown: "afterSeq",
            takes: "GET /v1/events takes after, limit, follow, timeout"
        ),
        Case(method: .get, target: "/v1/health?x=1", unknown: "x", takes: "GET /v1/health takes no query parameters"),
        Case(
            method: .get,
            target: "/metrics?format=json",
            unknown: "format",
            takes: "GET /metrics takes no query parameters"
        ),
        Case(
            method: .post,
            target: "/v1/events?appUserId=u1&user=u2",
            unknown: "user",
            takes: "POST /v1/events takes type, appUserId, receivedAt"
        ),
        Case(
            method: .post,
            target: "/v1/apple/notifications?type=receipt",
            unknown: "type",
            takes: "POST /v1/apple/notifications takes appUserId, receivedAt"
        ),
        Case(
            method: .post,
            target: "/v1/apple/receipts?appUserID=u1",
            unknown: "appUserID",
            takes: "POST /v1/apple/receipts takes appUserId, receivedAt"
        ),
        Case(
            method: .post,
            target: "/v1/apple/transactions?app_user_id=u1",
            unknown: "app_user_id",
            takes: "POST /v1/apple/transactions takes appUserId, receivedAt"
        ),
        Case(
            method: .post,
            target: "/v1/bindings?appUserId=u1",
            unknown: "appUserId",
            takes: "POST /v1/bindings takes receivedAt"
        ),
    ]

    /// Every route refuses a parameter it does not read with 400 `invalid_query`, naming it and the ones it takes;
    /// a write route writes nothing and keeps the refused request in `rejected`.
    @Test(arguments: cases)
    func anUnknownParameterIs400InvalidQuery(_ c: Case) async throws {
        let (api, directory) = try RouterTests.makeAPI()
        defer {
            api.ledger.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let body =
            c.target.hasPrefix("/v1/bindings")
            ? #"{"appUserId":"u1","originalTransactionId":"1001"}"# : Sample.transaction("1001")
        let app = Application(router: api.makeRouter())
        try await app.test(.router) { client in
            try await client.execute(
                uri: c.target,
                method: c.method,
                headers: [.contentType: "application/json"],
                body: c.method == .post ? ByteBuffer(string: body) : nil
            ) { response in
                #expect(response.status == .badRequest)
                #expect(
                    String(buffer: response.body)
                        == #"{"error":{"code":"invalid_query","message":"unknown query parameter '\#(c.unknown)': \#(c.takes)"}}"#
                        + "\n"
                )
            }
        }
        #expect(try api.ledger.lastSeq() == 0)
        let kept = try api.ledger.log.rejectedInputs(limit: 10)
        if c.method == .post {
            #expect(kept.map(\.code) == ["invalid_query"])
            #expect(kept.first?.request == "POST \(c.target)")
            #expect(kept.first?.raw == Array(body.utf8))
        } else {
            #expect(kept.isEmpty, "refused reads are not inputs")
        }
    }

    /// A parameter given twice is refused, not guessed at: two `appUserId`s would claim for one of two users, two
    /// `at`s answer one of two questions. The refused write is kept; nothing is appended.
    @Test(arguments: [
        (HTTPRequest.Method.post, "/v1/apple/transactions?appUserId=alice&appUserId=mallory", "appUserId"),
        (.get, "/v1/customers/u1?at=1700000000000&at=1800000000000", "at"),
    ])
    func aParameterGivenTwiceIs400InvalidQuery(method: HTTPRequest.Method, target: String, name: String) async throws {
        try await RouterTests.withRouter { client, api in
            try await client.execute(
                uri: target, method: method, headers: [.contentType: "application/json"],
                body: method == .post ? ByteBuffer(string: Sample.transaction("1001")) : nil
            ) { response in
                #expect(response.status == .badRequest)
                #expect(
                    String(buffer: response.body)
                        == #"{"error":{"code":"invalid_query","message":"query parameter '\#(name)' is given twice: give it once"}}"#
                        + "\n")
            }
            #expect(try api.ledger.lastSeq() == 0)
        }
    }

    /// The parameters the routes do read still work: `appUserId` and `receivedAt` on an Apple route, `receivedAt` on
    /// a binding.
    @Test func theParametersARouteReadsAreAccepted() async throws {
        let (api, directory) = try RouterTests.makeAPI()
        defer {
            api.ledger.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let app = Application(router: api.makeRouter())
        try await app.test(.router) { client in
            let payload =
                #"{"transactionId":"7","originalTransactionId":"7","productId":"p","purchaseDate":1700000000000,"expiresDate":1702592000000,"type":"Auto-Renewable Subscription","environment":"Production"}"#
            try await client.execute(
                uri: "/v1/apple/transactions?appUserId=u1&receivedAt=1700000001000",
                method: .post,
                headers: [.contentType: "application/json"],
                body: ByteBuffer(string: payload)
            ) { response in
                #expect(response.status == .ok, "\(String(buffer: response.body))")
            }
            try await client.execute(
                uri: "/v1/bindings?receivedAt=2023-11-15T00:00:00Z",
                method: .post,
                headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"appUserId":"u2","originalTransactionId":"7"}"#)
            ) { response in
                #expect(response.status == .ok, "\(String(buffer: response.body))")
            }
            try await client.execute(
                uri: "/v1/customers/u1?at=1700000002000&asOf=2&environment=Production",
                method: .get
            ) {
                response in
                #expect(response.status == .ok)
                #expect(
                    String(buffer: response.body).contains(#""subscriptions":["7"]"#),
                    "\(String(buffer: response.body))"
                )
            }
        }
        let events = try api.ledger.log.events(after: 0, limit: 10)
        #expect(events.map(\.event.metadata.receivedAt) == [1_700_000_001_000, 1_700_000_001_000, 1_700_006_400_000])
    }

    /// `follow` is a boolean: anything but true/false/1/0 is refused rather than read as false.
    @Test(arguments: ["yes", "TRUE", ""])
    func followMustBeABoolean(_ value: String) async throws {
        let (api, directory) = try RouterTests.makeAPI()
        defer {
            api.ledger.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let app = Application(router: api.makeRouter())
        try await app.test(.router) { client in
            try await client.execute(uri: "/v1/events?follow=\(value)", method: .get) { response in
                #expect(response.status == .badRequest)
                #expect(
                    String(buffer: response.body)
                        == #"{"error":{"code":"invalid_query","message":"follow must be true or false"}}"# + "\n"
                )
            }
            try await client.execute(uri: "/v1/events?follow=false&limit=5", method: .get) { response in
                #expect(response.status == .ok)
            }
        }
    }
}

// MARK: - Values outside a parameter's range

/// Every read's parameters have a range (docs/socket-api.md, openapi.yaml): a value outside it, or one no number can
/// hold, is refused with 400 `invalid_query` naming the parameter and the range, before any arithmetic is done on it.
@Suite struct QueryRangeTests {
    /// One request with a value out of its parameter's range, the parameter, and the range its refusal names.
    struct Case: CustomTestStringConvertible, Sendable {
        var target: String
        var parameter: String
        var range: String
        var testDescription: String { target }
    }

    static let instants = "within 1970-01-01T00:00:00Z...9999-12-31T23:59:59.999Z (0...253402300799999 ms)"
    static let seqs = "in 0...9223372036854775807"
    static let seconds = "greater than 0 and at most 86400"

    static let cases: [Case] = {
        var cases: [Case] = []
        // The instants of the reads at an instant: the ends of Int64, one before the epoch, one after year 9999.
        for route in [
            "/v1/subscriptions/1001", "/v1/subscriptions/1001/timeline.svg", "/v1/subscriptions/1001/timeline.html",
            "/v1/customers/u1", "/v1/customers/u1/entitlements/premium/why", "/v1/customers/u1/grants",
        ] {
            for at in ["-9223372036854775808", "-9223372036854775807", "9223372036854775807", "-1", "253402300800000"] {
                cases.append(Case(target: "\(route)?at=\(at)", parameter: "at", range: instants))
            }
            cases.append(Case(target: "\(route)?asOf=9223372036854775808", parameter: "asOf", range: seqs))
        }
        cases.append(Case(target: "/v1/subscriptions/1001?at=1969-12-31T23:59:59Z", parameter: "at", range: instants))
        for route in ["/v1/revenue", "/v1/customers/u1/revenue"] {
            for name in ["from", "to"] {
                for value in ["-9223372036854775808", "9223372036854775807", "-1"] {
                    cases.append(Case(target: "\(route)?\(name)=\(value)", parameter: name, range: instants))
                }
            }
            cases.append(Case(target: "\(route)?asOf=18446744073709551615", parameter: "asOf", range: seqs))
        }
        for route in ["/v1/events", "/v1/lifecycle"] {
            cases.append(Case(target: "\(route)?after=18446744073709551615", parameter: "after", range: seqs))
            cases.append(Case(target: "\(route)?after=9223372036854775808", parameter: "after", range: seqs))
            for limit in ["0", "-1", "9223372036854775808"] {
                cases.append(Case(target: "\(route)?limit=\(limit)", parameter: "limit", range: "in 1...9223372036854775807"))
            }
            for timeout in ["1e16", "inf", "nan", "1e308", "-inf", "0", "-1", "86400.5", "infinity"] {
                cases.append(
                    Case(target: "\(route)?follow=true&timeout=\(timeout)", parameter: "timeout", range: seconds))
            }
        }
        return cases
    }()

    @Test(arguments: cases)
    func aValueOutsideItsRangeIs400InvalidQueryNamingTheParameter(_ c: Case) async throws {
        try await RouterTests.withRouter { client, _ in
            // A subscription to draw, so a picture's refusal is not a 404 for want of one.
            try await client.execute(
                uri: "/v1/events", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: Sample.transaction("1001", user: "u1"))
            ) { #expect($0.status == .ok) }
            try await client.execute(uri: c.target, method: .get) { response in
                #expect(response.status == .badRequest)
                let object = try JSONSerialization.jsonObject(with: Data(String(buffer: response.body).utf8))
                let error = (object as? [String: Any])?["error"] as? [String: Any]
                #expect(error?["code"] as? String == "invalid_query", "\(String(buffer: response.body))")
                let message = error?["message"] as? String ?? ""
                #expect(message.hasPrefix("\(c.parameter) must be "), "\(message)")
                #expect(message.hasSuffix(c.range), "\(message)")
            }
            try await client.execute(uri: "/v1/health", method: .get) { #expect($0.status == .ok) }
        }
    }

    /// The ends of each range are answered.
    @Test func theEndsOfEachRangeAreAccepted() async throws {
        try await RouterTests.withRouter { client, _ in
            try await client.execute(
                uri: "/v1/events", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: Sample.transaction("1001", user: "u1"))
            ) { #expect($0.status == .ok) }
            for target in [
                "/v1/subscriptions/1001?at=0", "/v1/subscriptions/1001?at=253402300799999",
                "/v1/subscriptions/1001?at=9999-12-31T23:59:59Z", "/v1/subscriptions/1001?asOf=9223372036854775807",
                "/v1/subscriptions/1001/timeline.svg?at=0", "/v1/subscriptions/1001/timeline.html?at=253402300799999",
                "/v1/customers/u1?at=253402300799999&asOf=0", "/v1/customers/u1/grants?at=0",
                "/v1/customers/u1/entitlements/premium/why?at=253402300799999",
                "/v1/revenue?from=0&to=253402300799999", "/v1/customers/u1/revenue?asOf=9223372036854775807",
                "/v1/events?after=9223372036854775807&limit=9223372036854775807", "/v1/events?timeout=86400",
                "/v1/lifecycle?after=0&limit=1", "/v1/events?follow=true&timeout=0.001&limit=1",
                "/v1/lifecycle?follow=true&timeout=0.001",
            ] {
                try await client.execute(uri: target, method: .get) { response in
                    #expect(response.status == .ok, "\(target): \(String(buffer: response.body))")
                }
            }
        }
    }
}

// MARK: - A JSON body is one document

@Suite struct JSONBodyTests {
    /// `POST /v1/events` with a JSON body (or none said) takes one JSON text: bytes after the document are
    /// `invalid_json`, as on the routes that take one input, and nothing of the body is appended. NDJSON still takes
    /// documents back to back.
    @Test(arguments: ["x", "}", "]", " {}", "\n{}", "{\"a\":1}", " x "])
    func bytesAfterTheDocumentAreInvalidJSON(_ trailing: String) async throws {
        let (api, directory) = try RouterTests.makeAPI()
        defer {
            api.ledger.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let body = Sample.transaction("1001", user: "u1") + trailing
        let app = Application(router: api.makeRouter())
        try await app.test(.router) { client in
            for headers: HTTPFields in [
                [.contentType: "application/json"], [.contentType: "application/json; charset=utf-8"], [:],
            ] {
                try await client.execute(
                    uri: "/v1/events", method: .post, headers: headers, body: ByteBuffer(string: body)
                ) { response in
                    #expect(response.status == .badRequest, "\(headers): \(String(buffer: response.body))")
                    let text = String(buffer: response.body)
                    #expect(text.hasPrefix(#"{"error":{"code":"invalid_json","message":"not JSON: unexpected "#), "\(text)")
                    #expect(text.contains("after the value at byte"), "\(text)")
                }
            }
        }
        #expect(try api.ledger.lastSeq() == 0, "nothing of the body is appended")
        #expect(try api.ledger.log.rejectedInputs(limit: 10).count == 3, "each refused body is kept")
    }

    @Test func oneDocumentWithWhitespaceAroundItIsAppendedAndNDJSONIsABatch() async throws {
        let (api, directory) = try RouterTests.makeAPI()
        defer {
            api.ledger.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let app = Application(router: api.makeRouter())
        try await app.test(.router) { client in
            try await client.execute(
                uri: "/v1/events", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: " \r\n" + Sample.transaction("1001") + "\n\t ")
            ) { response in
                #expect(response.status == .ok, "\(String(buffer: response.body))")
            }
            try await client.execute(
                uri: "/v1/events", method: .post, headers: [.contentType: "application/x-ndjson"],
                body: ByteBuffer(string: Sample.transaction("2001") + Sample.transaction("2002"))
            ) { response in
                #expect(response.status == .ok, "\(String(buffer: response.body))")
                #expect(String(buffer: response.body).components(separatedBy: #""appended""#).count == 3)
            }
        }
        #expect(try api.ledger.lastSeq() == 3)
    }
}

// MARK: - A head that does not parse, behind pipelined requests

// The follow streams end on a timer that runs on the cooperative pool, which the whole suite's tests beside these
// can hold for many seconds on a 2-core machine: the reads wait long (a stream that never ends still fails).
@Suite("Malformed head behind pipelined requests", .serialized, .timeLimit(.minutes(6)), .blocking)
struct PipelinedMalformedHeadTests {
    static let garbage = "GARBAGE LINE\r\nHost: l\r\n\r\n"

    /// The answer to `garbage`: its error document, not an empty 400.
    static let refusal: String = {
        let document =
            #"{"error":{"code":"bad_request","message":"the request head does not parse (invalid HTTP method)"}}"#
            + "\n"
        return "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: close\r\n"
            + "Content-Length: \(document.utf8.count)\r\n\r\n" + document
    }()

    /// The answers in `text`, each from its status line.
    static func answers(_ text: String) -> [String] {
        text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { "HTTP/1.1 " + $0 }
    }

    /// Requests the router answers, then a garbage request line, sent at once: each request is answered in order,
    /// then the garbage gets 400 `bad_request` with its error document, and the connection closes. The same with
    /// the fast read path on and off.
    @Test(arguments: [
        "GET /v1/transactions/none HTTP/1.1\r\nHost: l\r\n\r\n",
        "POST /v1/events HTTP/1.1\r\nHost: l\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
        "GET /v1/events?follow=true&timeout=0.5 HTTP/1.1\r\nHost: l\r\n\r\n",
        "GET /v1/health HTTP/1.1\r\nHost: l\r\n\r\nGET /v1/transactions/none HTTP/1.1\r\nHost: l\r\n\r\n",
    ])
    func theGarbageIsAnsweredWithItsErrorDocumentAfterTheAnswersOwed(_ before: String) async throws {
        try await withServer { server in
            for fast in [true, false] {
                server.service.fastPath.isOn = fast
                let connection = try RawConnection(server.socketPath)
                connection.send(before + Self.garbage)
                let (text, closed) = await offThePool { connection.readUntilClosed(seconds: 90) }
                #expect(closed, "fast path \(fast)")
                let answers = Self.answers(text)
                let owed = before.components(separatedBy: " HTTP/1.1\r\n").count - 1
                #expect(answers.count == owed + 1, "fast path \(fast): \(text)")
                #expect(answers.dropLast().allSatisfy { !$0.hasPrefix("HTTP/1.1 400 ") }, "fast path \(fast): \(text)")
                #expect(answers.last == Self.refusal, "fast path \(fast): \(text)")
            }
            // Its bytes came in one read with the requests before it, so they are not known: nothing is kept rather
            // than bytes not its own (the head is kept when it has a read of its own, as in the test below).
            let kept = try server.ledger.log.rejectedInputs(limit: 10_000).filter { $0.code == "bad_request" }
            #expect(
                kept.allSatisfy { $0.raw == Array(Self.garbage.utf8) && $0.request == "GARBAGE LINE" },
                "\(kept.map { String(decoding: $0.raw, as: UTF8.self) })"
            )
            #expect(try await server.client().get("/v1/health").status == 200)
        }
    }

    /// The garbage arriving while a stream is still being answered: refused once the stream ends, and kept in
    /// `rejected` with its bytes (they came in a read of their own).
    @Test func aGarbageHeadDuringAStreamIsRefusedAfterItAndKept() async throws {
        try await withServer { server in
            let connection = try RawConnection(server.socketPath)
            connection.send("GET /v1/events?follow=true&timeout=1 HTTP/1.1\r\nHost: l\r\n\r\n")
            try await Task.sleep(for: .milliseconds(300))
            connection.send(Self.garbage)
            let (text, closed) = await offThePool { connection.readUntilClosed(seconds: 90) }
            #expect(closed)
            let answers = Self.answers(text)
            #expect(answers.count == 2, "\(text)")
            #expect(answers.first?.hasPrefix("HTTP/1.1 200 OK\r\n") == true)
            #expect(answers.first?.hasSuffix("0\r\n\r\n") == true, "the stream ended first: \(text)")
            #expect(answers.last == Self.refusal, "\(text)")
            let deadline = ContinuousClock.now + .seconds(120)  // a condition: the loop ends when the record is there
            var kept = try server.ledger.log.rejectedInputs(limit: 100)
            while kept.isEmpty && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                kept = try server.ledger.log.rejectedInputs(limit: 100)
            }
            #expect(kept.count == 1)
            #expect(kept.first?.code == "bad_request")
            #expect(kept.first?.request == "GARBAGE LINE")
            #expect(kept.first?.raw == Array(Self.garbage.utf8))
        }
    }
}

/// A read that fails in the store (a damaged page LMDB finds, a storage error) answers with the store's own code,
/// not a bare `internal`: what the operator must do differs.
@Suite struct StoreFailureAnswerTests {
    @Test func aStoreFailureAnswersWithItsCode() throws {
        let logger = Logger(label: "test")
        let corrupted = ErrorMiddleware.answer(
            LedgerError.corrupted("a page of events is damaged"), method: .get, path: "/v1/events", logger: logger)
        #expect(corrupted.status == .internalServerError)
        #expect(String(buffer: corrupted.body).contains(#""code":"corrupted""#))
        let other = ErrorMiddleware.answer(
            CancellationError(), method: .get, path: "/v1/events", logger: logger)
        #expect(String(buffer: other.body).contains(#""code":"internal""#))
    }
}
