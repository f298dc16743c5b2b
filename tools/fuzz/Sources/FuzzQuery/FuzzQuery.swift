#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import FuzzSupport
import Hummingbird
import HummingbirdCore
import LedgerAPI
import LedgerCore
import LedgerServer
import LedgerStore
import LedgerClient
import LedgerErrors
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import TestFixtures

// MARK: - The query strings of the read routes

/// Every GET route of the router asked with a query string made from the fuzzer's bytes (`ReadQuery`: the route's
/// own parameters, every other name any route reads and near misses of them, arbitrary names; values from a list of
/// numbers, instants and words that break parsers, or arbitrary bytes; each written plainly or percent-encoded),
/// over one ledger kept for the run and populated once, through FuzzHTTP's requests and a few more.
///
/// Each request goes through NIO's HTTP/1.1 decoder (as FuzzHTTP does) and is answered twice in process: by a router
/// that keeps answers (`AnswerCache`) and by one that makes every answer anew. Hot reads (`/v1/customers/{id}`,
/// `/v1/subscriptions/{otid}`, `/v1/health`) are also asked over a Unix socket of a `LedgerService` on the same
/// ledger, on two connections: one with the fast path (`FastPathHandler`, internal to LedgerServer, so reached
/// only through a real connection) and one without. Findings:
/// - a 5xx, or a status that is neither 200 nor 4xx;
/// - a 4xx whose body is not the error document `{"error":{"code","message"}}` with a code a read may refuse with;
/// - a 200 whose body is not what the route serves (JSON, NDJSON lines of JSON, an SVG picture, an HTML page);
/// - the two routers, or the two connections, answering with different statuses, or with different bodies when the
///   answer does not depend on the clock (`at` given, or an error).
///
/// `follow=true` is turned into `follow=false`: a followed stream ends only when the server stops.
final class Harness: @unchecked Sendable {
    let ledger: Ledger
    let keeping: LedgerRoutes
    let anew: LedgerRoutes
    let keepingResponder: RouterResponder<LedgerRequestContext>
    let anewResponder: RouterResponder<LedgerRequestContext>
    let logger: Logger
    /// Ids of each kind the ledger holds, and a few it does not.
    var known: [ReadRoute.ID: [String]] = [:]
    let socket: SocketReads
    /// The channel every request's context names. One for the run: a channel that is never closed keeps its
    /// pipeline (and the pipeline it), so one per request grew the process by megabytes a second.
    let contextChannel = EmbeddedChannel()

    /// Codes a GET may be refused with on a sound ledger.
    static let refusals: Set<String> = ["invalid_query", "not_found"]

    init() {
        var logger = Logger(label: "fuzz.query")
        logger.logLevel = .critical
        self.logger = logger
        let directory = NSTemporaryDirectory() + "storeledger-fuzz-query-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        var options = Ledger.Options()
        // Durability is not what is fuzzed.
        options.unsafeNoSync = true
        options.initialMapSize = 16 << 20
        ledger = try! Ledger(directory: directory, options: options, logger: logger)
        keeping = LedgerRoutes(ledger: ledger, configuration: LedgerConfiguration(), logger: logger)
        anew = LedgerRoutes(ledger: ledger, configuration: LedgerConfiguration(), logger: logger, keepAnswers: false)
        keepingResponder = keeping.makeRouter().buildResponder()
        anewResponder = anew.makeRouter().buildResponder()
        var configuration = LedgerConfiguration()
        // The fuzzer's connections stay open between inputs, however slow an input is.
        configuration.limits.idleTimeoutSeconds = 86_400
        socket = SocketReads(
            ledger: ledger, configuration: configuration, path: directory + ".sock", logger: logger)
        populate()
        checkParameterTable()
    }

    /// FuzzHTTP's requests (every input kind, through every write route), then a grant, a refund and a Sandbox
    /// subscription; then the ids the ledger holds.
    func populate() {
        typealias F = AppleFixtures
        var raw = Seeds.seeds(for: "FuzzHTTP")
        func post(_ target: String, _ body: [UInt8]) -> [UInt8] {
            Array("POST \(target) HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
        }
        raw.append(post("/v1/customers/u1/grants", Array(#"{"entitlement":"premium","duration":"P7D"}"#.utf8)))
        // Ids clients percent-encode: an email, and a subscription id with a slash, a space and a letter beyond ASCII.
        raw.append(
            post("/v1/customers/user%2B1%40example.org/grants", Array(#"{"entitlement":"premium","duration":"P7D"}"#.utf8)))
        raw.append(
            post(
                "/v1/events?appUserId=u5%2Fw%20x",
                F.json(F.v2Transaction(transactionId: "t/1 \u{00FC}", originalTransactionId: "sub/1 \u{00FC}"))))
        raw.append(
            post(
                "/v1/events?appUserId=u3",
                F.json(
                    F.v2Transaction(
                        transactionId: "2000000000000009", originalTransactionId: "2000000000000009",
                        revocationDate: F.epoch + F.day, revocationReason: 0))))
        raw.append(
            post(
                "/v1/events?appUserId=u4",
                F.json(
                    F.v2Transaction(
                        transactionId: "2000000000000020", originalTransactionId: "2000000000000020",
                        environment: "Sandbox"))))
        for bytes in raw {
            for request in requests(in: bytes) { _ = answer(request, keepingResponder) }
        }
        var subscriptions: [String] = []
        var users: [String] = []
        var keys: [String] = []
        for stored in try! ledger.events(after: 0, limit: 10_000) {
            let fact = stored.event.fact
            if let otid = fact.originalTransactionId?.rawValue, !subscriptions.contains(otid) { subscriptions.append(otid) }
            if !keys.contains(fact.eventKey) { keys.append(fact.eventKey) }
            switch fact {
            case .binding(let claim) where !users.contains(claim.appUserId.rawValue): users.append(claim.appUserId.rawValue)
            case .grant(let grant) where !users.contains(grant.appUserId.rawValue): users.append(grant.appUserId.rawValue)
            default: break
            }
        }
        finding(subscriptions.count >= 3 && users.count >= 2, "the ledger was not populated: \(subscriptions) \(users)")
        known = [
            .subscription: subscriptions + ["0"], .user: users + ["u3", "u4", "nobody"],
            .entitlement: ["premium", "com.example.premium.monthly", "gems", "none"], .transaction: keys + ["0"],
            .metric: ["subscriptions", "movements", "conversion", "mrr", "refunds", "retention", "ltv"],
        ]
    }

    /// The parameter table is a copy of the server's: every route must read exactly the names it lists, in its
    /// order (the refusal of an unknown name lists them), and the missing route must be missing.
    func checkParameterTable() {
        for route in ReadRoutes.all + [ReadRoutes.missing] {
            let path = route.path(route.ids.map { known[$0]![0] })
            let answer = answer(requests(in: Self.get(path + "?zz=1"))[0], keepingResponder)
            let text = String(decoding: answer.body, as: UTF8.self)
            if route.name == ReadRoutes.missing.name {
                finding(answer.status == 404, "\(path): \(answer.status) \(text)")
                continue
            }
            let takes = route.parameters.isEmpty ? "takes no query parameters" : "takes " + route.parameters.joined(separator: ", ")
            // The console's error page says the same, escaped as HTML.
            let refusal = "unknown query parameter 'zz': \(route.name) \(takes)"
            let said = route.body == .console ? refusal.replacingOccurrences(of: "'", with: "&#39;") : refusal
            finding(
                answer.status == 400 && text.contains(said),
                "the parameter table is not the server's for \(route.name): \(text)")
        }
    }

    static func get(_ target: String) -> [UInt8] {
        Array("GET \(target) HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
    }

    /// The requests NIO decodes from `bytes` (FuzzHTTP's pipeline).
    func requests(in bytes: [UInt8]) -> [Request] {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        do {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init())
            try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
        } catch {
            fatalError("cannot set up the HTTP pipeline: \(error)")
        }
        _ = try? channel.writeInbound(channel.allocator.buffer(bytes: bytes))
        var requests: [Request] = []
        var head: HTTPRequest?
        var body = ByteBuffer()
        while let part = try? channel.readInbound(as: HTTPRequestPart.self) {
            switch part {
            case .head(let h):
                head = h
                body.clear()
            case .body(var b):
                body.writeBuffer(&b)
            case .end:
                if let head { requests.append(Request(head: head, body: RequestBody(buffer: body))) }
                head = nil
            }
        }
        return requests
    }

    /// Answers `request` through `responder`, its body read in full.
    func answer(_ request: Request, _ responder: RouterResponder<LedgerRequestContext>) -> Answer {
        let semaphore = DispatchSemaphore(value: 0)
        let box = AnswerBox()
        let context = LedgerRequestContext(source: .init(channel: contextChannel, logger: logger))
        Task {
            defer { semaphore.signal() }
            let response: Response
            do {
                response = try await responder.respond(to: request, context: context)
            } catch let error as any HTTPResponseError {
                response = (try? error.response(from: request, context: context)) ?? Response(status: .internalServerError)
            } catch {
                response = Response(status: .internalServerError)
            }
            var answer = Answer(status: Int(response.status.code), contentType: response.headers[.contentType] ?? "")
            let body = BodyBytes()
            try? await response.body.write(Collecting(into: body))
            answer.body = body.take()
            box.answer = answer
        }
        semaphore.wait()
        return box.answer!
    }
}

/// A status, its content type and its body.
struct Answer: Equatable {
    var status: Int
    var contentType: String
    var body: [UInt8] = []
}

/// The answer, handed from the request's task to the fuzzer's thread (after the semaphore: no race).
final class AnswerBox: @unchecked Sendable {
    var answer: Answer?
}

/// Bytes a body writer collects.
final class BodyBytes: @unchecked Sendable {
    private var bytes: [UInt8] = []
    func append(_ buffer: ByteBuffer) { bytes += buffer.readableBytesView }
    func take() -> [UInt8] {
        defer { bytes = [] }
        return bytes
    }
}

/// A response body writer that keeps what it is given.
struct Collecting: ResponseBodyWriter {
    let into: BodyBytes
    mutating func write(_ buffer: ByteBuffer) async throws { into.append(buffer) }
    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}

// MARK: - Asking

extension Harness {
    /// Asks `query` of both routers (and of both connections, for a hot read) and checks every answer.
    func ask(_ query: ReadQuery) {
        guard var request = requests(in: Self.get(query.target)).first else {
            fatalError("NIO did not decode the request for \(query.target)")
        }
        var target = query.target
        if Self.follows(request) {
            target = Self.notFollowing(target)
            guard let again = requests(in: Self.get(target)).first, !Self.follows(again) else { return }
            request = again
        }
        if Self.verbose { print("GET \(target)") }
        let parsed = request.uri.queryParameters
        let kept = answer(request, keepingResponder)
        Self.check(kept, query.route, target)
        let made = answer(request, anewResponder)
        finding(
            kept.status == made.status, "GET \(target): \(kept.status) with kept answers, \(made.status) without")
        let clockFree =
            kept.status != 200 || parsed["at"] != nil
            || ["GET /v1/events", "GET /v1/lifecycle", "GET /v1/transactions/{transactionId}"].contains(query.route.name)
        // A known id percent-encoded is the id: the same answer as the target that writes it plainly.
        if query.plainTarget != query.target {
            let plain = target == query.target ? query.plainTarget : Self.notFollowing(query.plainTarget)
            guard let plainRequest = requests(in: Self.get(plain)).first else {
                fatalError("NIO did not decode the request for \(plain)")
            }
            let asPlain = answer(plainRequest, keepingResponder)
            finding(asPlain.status == kept.status, "GET \(target): \(kept.status), but \(asPlain.status) for GET \(plain)")
            // A refusal may quote the target as it was written: the status says enough. Two requests made one
            // after the other answer alike only when neither reads the clock (an empty `at` on a console page or a
            // picture is now).
            let clockRead = parsed["at"].map { $0.isEmpty } ?? true
            let noClock =
                !clockRead
                || ["GET /v1/events", "GET /v1/lifecycle", "GET /v1/transactions/{transactionId}"].contains(query.route.name)
            if noClock && kept.status == 200 {
                finding(
                    Self.same(kept.body, asPlain.body, query.route),
                    "GET \(target) answers otherwise than GET \(plain):\n"
                        + "\(String(decoding: kept.body, as: UTF8.self))\n\(String(decoding: asPlain.body, as: UTF8.self))")
            }
        }
        if clockFree {
            finding(
                Self.same(kept.body, made.body, query.route),
                "GET \(target): the answer with kept answers differs from the one without:\n"
                    + "\(String(decoding: kept.body, as: UTF8.self))\n\(String(decoding: made.body, as: UTF8.self))")
        }
        guard query.route.fastRead else { return }
        let fast = socket.ask(target, fastReads: true)
        let routed = socket.ask(target, fastReads: false)
        finding(
            fast.status == kept.status && routed.status == kept.status,
            "GET \(target): \(fast.status) on the fast path, \(routed.status) through the router on the socket, "
                + "\(kept.status) in process")
        Self.check(fast, query.route, target)
        if clockFree {
            finding(
                Self.same(fast.body, routed.body, query.route),
                "GET \(target): the fast path answers otherwise than the router:\n"
                    + "\(String(decoding: fast.body, as: UTF8.self))\n\(String(decoding: routed.body, as: UTF8.self))")
        }
    }

    /// `FUZZ_VERBOSE=1`: every target is printed (to rerun an artifact and see what it asked).
    static let verbose = ProcessInfo.processInfo.environment["FUZZ_VERBOSE"] != nil

    /// Whether the request would stream (`follow` true on a route that follows).
    static func follows(_ request: Request) -> Bool {
        request.uri.queryParameters.contains { $0.key == "follow" && ($0.value == "true" || $0.value == "1") }
    }

    /// `target` with every parameter that reads as `follow=true` replaced by `follow=false`.
    static func notFollowing(_ target: String) -> String {
        guard let mark = target.firstIndex(of: "?") else { return target }
        let pairs = target[target.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: false).map {
            pair -> Substring in
            let alone = URI("/?" + pair).queryParameters
            return alone.contains { $0.key == "follow" && ($0.value == "true" || $0.value == "1") } ? "follow=false" : pair
        }
        return target[..<mark] + "?" + pairs.joined(separator: "&")
    }

    /// A 200 holds what the route serves; anything else is a 4xx error document with a code a read may refuse with.
    static func check(_ answer: Answer, _ route: ReadRoute, _ target: String) {
        let text = String(decoding: answer.body, as: UTF8.self)
        let what = "GET \(target): \(answer.status) \(answer.contentType) \(text.prefix(600))"
        switch answer.status {
        case 200:
            finding(route.name != ReadRoutes.missing.name, what)
            switch route.body {
            case .json:
                finding(answer.contentType.hasPrefix("application/json") && isJSONObject(answer.body), what)
            case .ndjson:
                finding(answer.contentType == "application/x-ndjson", what)
                for line in answer.body.split(separator: 0x0A) { finding(isJSONObject(Array(line)), what) }
                finding(answer.body.isEmpty || answer.body.last == 0x0A, what)
            case .svg:
                finding(answer.contentType.hasPrefix("image/svg+xml") && text.contains("<svg") && text.contains("</svg>"), what)
            case .html, .console:
                finding(
                    answer.contentType.hasPrefix("text/html") && text.hasPrefix("<!DOCTYPE html>") && text.contains("</html>"),
                    what)
            case .text:
                finding(answer.contentType.hasPrefix("text/plain") && !text.isEmpty, what)
            }
        case 400..<500 where route.body == .console && !answer.contentType.hasPrefix("application/json"):
            // The console answers an error as a page naming its code (a path no route takes, an empty id, is the
            // router's JSON 404).
            guard answer.contentType.hasPrefix("text/html"), text.hasPrefix("<!DOCTYPE html>"),
                let start = text.range(of: "<p class=\"problem\" role=\"alert\"><strong>"),
                let end = text[start.upperBound...].range(of: "</strong>")
            else { fatalError("not an error page: \(what)") }
            let code = String(text[start.upperBound..<end.lowerBound])
            finding(refusals.contains(code), "a read refused with '\(code)': \(what)")
            finding((code == "not_found") == (answer.status == 404), what)
        case 400..<500:
            guard answer.contentType.hasPrefix("application/json"),
                let document = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any],
                document.count == 1, let error = document["error"] as? [String: Any], error.count == 2,
                let code = error["code"] as? String, let message = error["message"] as? String, !message.isEmpty
            else { fatalError("not an error document: \(what)") }
            finding(refusals.contains(code), "a read refused with '\(code)': \(what)")
            finding((code == "not_found") == (answer.status == 404), what)
        default:
            fatalError(what)
        }
    }

    /// Whether two bodies say the same: JSON compared as values, since the members of a dictionary (an event's
    /// `extra`) come in the order of its hash table, which differs from one decoding of an event to the next.
    static func same(_ a: [UInt8], _ b: [UInt8], _ route: ReadRoute) -> Bool {
        guard a != b else { return true }
        func values(_ bytes: [UInt8]) -> [NSObject]? {
            let documents = route.body == .ndjson ? bytes.split(separator: 0x0A).map(Array.init) : [bytes]
            let parsed = documents.compactMap { try? JSONSerialization.jsonObject(with: Data($0)) as? NSObject }
            return parsed.count == documents.count ? parsed : nil
        }
        guard route.body == .json || route.body == .ndjson, let x = values(a), let y = values(b) else { return false }
        return x == y
    }

    static func isJSONObject(_ bytes: [UInt8]) -> Bool {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) is [String: Any]
    }
}

// MARK: - The hot reads over a socket

/// A `LedgerService` on a Unix socket over the fuzzed ledger, and two connections to it: one opened while the fast
/// read path was on, one while it was off (the switch is read once per connection).
final class SocketReads: @unchecked Sendable {
    let service: LedgerService
    let path: String
    private var fast: Int32 = -1
    private var routed: Int32 = -1

    init(ledger: Ledger, configuration: LedgerConfiguration, path: String, logger: Logger) {
        self.path = path
        unlink(path)
        service = LedgerService(ledger: ledger, configuration: configuration, socketPath: path, logger: logger)
        let service = self.service
        Task {
            do {
                try await service.run()
            } catch {
                fatalError("the server stopped: \(error)")
            }
        }
        for _ in 0..<600 where !service.isListening { usleep(50_000) }
        finding(service.isListening, "the server does not listen on \(path)")
        connect(fastReads: true)
        connect(fastReads: false)
        let before = service.fastPath.answered
        _ = ask("/v1/health", fastReads: true)
        finding(service.fastPath.answered == before + 1, "the fast path did not answer")
        _ = ask("/v1/health", fastReads: false)
        finding(service.fastPath.answered == before + 1, "the fast path answered with it off")
    }

    /// The last targets asked, oldest first, with the connection each went to.
    private var recent: [String] = []

    /// The answer to `GET target` on the connection with (or without) the fast path.
    func ask(_ target: String, fastReads: Bool) -> Answer {
        recent = recent.suffix(11) + ["\(fastReads ? "fast" : "routed") GET \(target)"]
        for attempt in 0..<2 {
            if (fastReads ? fast : routed) < 0 { connect(fastReads: fastReads) }
            let fd = fastReads ? fast : routed
            if send(fd, Harness.get(target)), let (answer, closes) = receive(fd) {
                if closes { disconnect(fastReads: fastReads) }
                return answer
            }
            // The server closed the connection between inputs: once more on a new one.
            disconnect(fastReads: fastReads)
            finding(attempt == 0, "GET \(target): no answer on a new connection")
        }
        fatalError()
    }

    /// What a new connection gets for `/v1/health` (to tell a stuck connection from a stuck server).
    private func probe() -> String {
        guard let fd = try? UnixSocket.connect(path) else { return "cannot connect" }
        defer { close(fd) }
        guard send(fd, Harness.get("/v1/health")), RawConnection.waitReadable(fd, seconds: 5) else {
            return "gets no answer in 5 s"
        }
        var chunk = [UInt8](repeating: 0, count: 4096)
        let n = RawConnection.receive(fd, into: &chunk)
        return "gets \(String(decoding: chunk.prefix(max(n, 0)), as: UTF8.self).prefix(40))"
    }

    private func connect(fastReads: Bool) {
        service.fastPath.isOn = fastReads
        defer { service.fastPath.isOn = true }
        guard let fd = try? UnixSocket.connect(path) else { fatalError("cannot connect to \(path)") }
        // The switch is read when the server sets the connection up, which it has once it answered.
        finding(send(fd, Harness.get("/v1/health")) && receive(fd) != nil, "no answer on a new connection")
        if fastReads { fast = fd } else { routed = fd }
    }

    private func disconnect(fastReads: Bool) {
        close(fastReads ? fast : routed)
        if fastReads { fast = -1 } else { routed = -1 }
    }

    private func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool { RawConnection.send(fd, bytes) }

    /// One answer with a `Content-Length` body, and whether it closes the connection; nil when the connection
    /// closed first.
    private func receive(_ fd: Int32) -> (Answer, Bool)? {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let separator: [UInt8] = [13, 10, 13, 10]
        while true {
            if let end = received.indices.dropLast(3).first(where: { received[$0..<($0 + 4)].elementsEqual(separator) }) {
                let head = String(decoding: received[..<end], as: UTF8.self)
                let lines = head.split(separator: "\r\n")
                let fields = lines.dropFirst().map { line -> (String, String) in
                    let colon = line.firstIndex(of: ":") ?? line.endIndex
                    return (
                        line[..<colon].lowercased(),
                        line[colon...].dropFirst().trimmingCharacters(in: .whitespaces)
                    )
                }
                let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
                guard let length = fields.first(where: { $0.0 == "content-length" }).flatMap({ Int($0.1) }) else {
                    fatalError("an answer without Content-Length: \(head)")
                }
                if received.count >= end + 4 + length {
                    finding(received.count == end + 4 + length, "bytes after the answer: \(head)")
                    let answer = Answer(
                        status: status, contentType: fields.first { $0.0 == "content-type" }?.1 ?? "",
                        body: Array(received[(end + 4)...]))
                    return (answer, fields.contains { $0.0 == "connection" && $0.1.lowercased() == "close" })
                }
            }
            // libFuzzer's `-timeout` alarm (a SIGALRM every 16 s with run.sh's `-timeout=30`) interrupts this thread's
            // waits; the wait goes on through it.
            guard RawConnection.waitReadable(fd, seconds: 20) else {
                // On a Unix socket, what the peer has not read yet of what was sent.
                var unread: Int32 = -1
                _ = ioctl(fd, UInt(TIOCOUTQ), &unread)
                // Another request on the same connection: if the missing answer arrives with its own, it was
                // written and not sent on.
                var after = "nothing"
                if send(fd, Harness.get("/v1/health")), RawConnection.waitReadable(fd, seconds: 5) {
                    usleep(200_000)
                    let n = RawConnection.receive(fd, into: &chunk)
                    let text = String(decoding: chunk.prefix(max(n, 0)), as: UTF8.self)
                    after = "\(text.components(separatedBy: "HTTP/1.1 ").count - 1) answers (\(text.prefix(60)))"
                }
                fatalError(
                    "no answer within 20 s on the connection \(fd == fast ? "with" : "without") the fast path; "
                        + "received \(received.count) bytes; the server left \(unread) bytes of the request unread; "
                        + "another request on it then brought \(after); \(service.openConnections) connections open; "
                        + "a new connection \(probe()); asked last:\n" + recent.joined(separator: "\n"))
            }
            let n = RawConnection.receive(fd, into: &chunk)
            if n <= 0 { return nil }
            received += chunk[0..<n]
        }
    }
}

let harness = Harness()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    harness.ask(ReadQuery(Array(UnsafeBufferPointer(start: data, count: size)), known: harness.known))
    return 0
}

/// The entry point SwiftPM links `main` to.
@_cdecl("FuzzQuery_main")
public func fuzzQueryMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv, fuzzOne)
}
