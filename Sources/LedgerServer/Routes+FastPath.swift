import CoreMetrics
import Foundation
import Hummingbird
import LedgerAPI
import LedgerIngest
import LedgerStore
import Logging
import NIOCore
import NIOHTTP1
import Synchronization

// MARK: - The fast path

/// Whether new connections get the fast path (`FastPathHandler`). On by default; `storeledger serve --no-fast-path`
/// and the tests that compare both paths turn it off. Read once per connection.
public final class FastPathSwitch: Sendable {
    private let on: Atomic<Bool>
    private let reads = Atomic<Int>(0)
    private let writes = Atomic<Int>(0)

    public init(_ on: Bool = true) { self.on = Atomic(on) }

    public var isOn: Bool {
        get { on.load(ordering: .relaxed) }
        set { on.store(newValue, ordering: .relaxed) }
    }

    /// Reads the fast path answered so far (the request metrics count them with the router's).
    public var answered: Int { reads.load(ordering: .relaxed) }

    /// `POST /v1/events` requests the fast path answered so far.
    public var appended: Int { writes.load(ordering: .relaxed) }

    func countRead() { reads.wrappingAdd(1, ordering: .relaxed) }
    func countWrite() { writes.wrappingAdd(1, ordering: .relaxed) }
}

/// Serves the hot reads — `GET /v1/customers/{id}`, `GET /v1/subscriptions/{otid}` (with `at`, `asOf`,
/// `environment`) and `GET /v1/health` — and plain appends — `POST /v1/events` with a body — on the connection's
/// event loop: no conversion to HTTP types, no task, no router, no middleware. It sits right behind NIO's HTTP
/// decoder and `RequestPhaseHandler`, so every byte meets one parser, and each request is timed, limited and dated
/// by the same handler as any other; that handler writes these answers whole, in one buffer (through NIO's encoder,
/// three parts cost a third of a hot read).
///
/// Why it is equivalent:
/// - The answer is made by the router's own functions (`customerAnswer`, `subscriptionAnswer`, `healthAnswer`,
///   the ingest pipeline, `LedgerRoutes.appended` and `eventsAnswer`, `ErrorMiddleware.answer`) and recorded and
///   logged by `RequestMetricsMiddleware.answered`.
/// - It takes only what it reads unambiguously, HTTP/1.1 and keep-alive (no `Connection` field but `keep-alive`), no
///   `Expect`, `Upgrade` or `Transfer-Encoding` field:
///   - a `GET` with no body (no `Content-Length`) whose target, of plain characters (no percent-encoding), names
///     one of the hot routes (`FastRequest`);
///   - a `POST /v1/events` with no query, a `Content-Length` body within `maxBodyBytes`, an accepted media type, on
///     a server without a replicated intake, from a peer that may write. A body refused as a whole (not JSON, a
///     batch over the limit) goes to the router after all, which answers and keeps the refusal as for any request.
///   Anything else goes on to the router, untouched.
/// - Answers keep their order: a request is taken only while the router owes the connection nothing
///   (`ConnectionTimeouts.unanswered` counts this request alone). While an append waits for the writer, what
///   arrives after it waits here, and the socket is not read (`autoRead` off), until its answer is written.
final class FastPathHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    /// A request taken, between its head and its end.
    private enum Held {
        case read(FastRequest, head: HTTPRequestHead)
        case append(head: HTTPRequestHead, body: ByteBuffer, isJSON: Bool)
    }

    private let routes: LedgerRoutes
    /// The connection's phases, which write the whole answers of this handler.
    private let phases: RequestPhaseHandler
    private var timeouts: ConnectionTimeouts { phases.timeouts }
    private let enabled: FastPathSwitch
    /// The peer may write to the ledger (`socket.writers`: every peer when writers are not restricted).
    private let mayWrite: Bool
    private var held: Held?
    /// An append waits for the writer: requests that arrive wait in `waiting`, and the socket is not read.
    private var appending = false {
        didSet { if appending != oldValue { try? context?.channel.syncOptions?.setOption(.autoRead, value: !appending) } }
    }
    private var waiting = CircularBuffer<HTTPServerRequestPart>()
    private var context: ChannelHandlerContext?
    /// Graceful shutdown asked for while an append waited: passed on once its answer is written.
    private var quiesceWanted = false
    /// Answers were written since the last flush.
    private var unflushed = false
    /// Requests went on to the router since the last `channelReadComplete` passed on.
    private var passedOn = false
    /// The request-duration timer of each (route, status) this connection answered: looked up once, not per read.
    private var timers: [Int: CoreMetrics.Timer] = [:]

    init(routes: LedgerRoutes, phases: RequestPhaseHandler, enabled: FastPathSwitch, mayWrite: Bool) {
        (self.routes, self.phases, self.enabled, self.mayWrite) = (routes, phases, enabled, mayWrite)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if appending || !waiting.isEmpty {
            waiting.append(part)
            return
        }
        take(part, context: context)
    }

    private func take(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        switch part {
        case .head(let head):
            if let request = hotRead(head, context) {
                held = .read(request, head: head)
                return
            }
            if let (length, isJSON) = plainAppend(head, context) {
                held = .append(head: head, body: context.channel.allocator.buffer(capacity: length), isJSON: isJSON)
                return
            }
        case .body(var bytes):
            switch held {
            case .append(let head, var body, let isJSON):
                held = nil
                body.writeBuffer(&bytes)
                held = .append(head: head, body: body, isJSON: isJSON)
                return
            case .read(_, let head):
                // A held read has no body (it declared none, and the decoder frames by the declaration): should one
                // come all the same, the router gets the request whole.
                held = nil
                passOn(.head(head), context)
            case nil:
                break
            }
        case .end:
            switch held.take() {
            case .read(let request, _):
                answer(request, context: context)
                return
            case .append(let head, let body, let isJSON):
                append(head: head, body: body, isJSON: isJSON, context: context)
                return
            case nil:
                break
            }
        }
        passOn(part, context)
    }

    private func passOn(_ part: HTTPServerRequestPart, _ context: ChannelHandlerContext) {
        passedOn = true
        context.fireChannelRead(wrapInboundOut(part))
    }

    /// Passed on only when the handlers behind got something to read since the last one: for them (the conversion
    /// to HTTP types, Hummingbird's async channel, which delivers what it buffered) a read cycle in which this
    /// handler answered everything itself did not happen. Walking them cost ~7k instructions of a hot read
    /// (callgrind).
    func channelReadComplete(context: ChannelHandlerContext) {
        if unflushed {
            unflushed = false
            timeouts.flush()
        }
        guard passedOn else { return }
        passedOn = false
        context.fireChannelReadComplete()
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if appending, event is ChannelShouldQuiesceEvent {
            quiesceWanted = true
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: Reads

    /// The hot read `head` asks for, when this handler may answer it now.
    private func hotRead(_ head: HTTPRequestHead, _ context: ChannelHandlerContext) -> FastRequest? {
        guard head.method == .GET, mayTake(head, context), !head.headers.contains(name: "content-length") else {
            return nil
        }
        var uri = head.uri
        return uri.withUTF8 { FastRequest(UnsafeRawBufferPointer($0)[...]) }
    }

    /// Whether this handler may take `head` now: HTTP/1.1 and keep-alive, no `Expect`, `Upgrade` or
    /// `Transfer-Encoding`, and the router owes the connection nothing.
    private func mayTake(_ head: HTTPRequestHead, _ context: ChannelHandlerContext) -> Bool {
        guard head.version == .http1_1, timeouts.unanswered == 1, !timeouts.closing, context.channel.isActive else {
            return false
        }
        let headers = head.headers
        return !headers.contains(name: "transfer-encoding") && !headers.contains(name: "expect")
            && !headers.contains(name: "upgrade")
            && headers[canonicalForm: "connection"].allSatisfy { $0.lowercased() == "keep-alive" }
    }

    /// Answers `request` as the router would, and records it as the router's metrics middleware does.
    private func answer(_ request: FastRequest, context: ChannelHandlerContext) {
        let start = DispatchTime.now().uptimeNanoseconds
        let status: HTTPResponse.Status
        let allocator = context.channel.allocator
        do {
            if let read = try request.clockedRead(routes) {
                status = .ok
                phases.writeWholeAnswer(allocator: allocator) { date, out in read.writeAnswer(date: date, to: &out) }
            } else {
                status = write(try request.answer(routes), allocator)
            }
        } catch {
            status = write(ErrorMiddleware.answer(error, method: .get, path: request.path, logger: routes.logger), allocator)
        }
        unflushed = true
        enabled.countRead()
        let endpoint = request.route.endpoint
        record(.get, path: request.path, route: endpoint.path, key: endpoint.rawValue, status, since: start)
    }

    // MARK: Appends

    /// The body's length and whether it is JSON, when `head` is a plain append this handler may take now.
    private func plainAppend(_ head: HTTPRequestHead, _ context: ChannelHandlerContext) -> (Int, Bool)? {
        guard head.method == .POST, head.uri == Endpoint.appendEvents.path, routes.intake == nil, mayWrite,
            mayTake(head, context)
        else { return nil }
        var length: Int?
        var isJSON = true
        for (name, value) in head.headers {
            switch name.lowercased() {
            case "content-length":
                guard length == nil, let n = Int(value), n > 0, n <= routes.configuration.limits.maxBodyBytes else {
                    return nil
                }
                length = n
            case "content-type":
                let type = LedgerRoutes.mediaType(value)
                guard LedgerRoutes.acceptedMediaTypes.contains(type) else { return nil }
                isJSON = type == "application/json"
            default: continue
            }
        }
        return length.map { ($0, isJSON) }
    }

    /// Frames and decodes the body here, then waits for the writer without holding the event loop; a body refused
    /// as a whole goes to the router (which answers and keeps the refusal).
    private func append(head: HTTPRequestHead, body: ByteBuffer, isJSON: Bool, context: ChannelHandlerContext) {
        let start = DispatchTime.now().uptimeNanoseconds
        let bytes = Array(body.readableBytesView)
        let pieces: [ArraySlice<UInt8>]
        do {
            pieces =
                try isJSON
                ? IngestPipeline.document(bytes)
                : IngestPipeline.batch(bytes, limit: routes.configuration.limits.maxBatchInputs)
        } catch {
            passOn(.head(head), context)
            passOn(.body(body), context)
            passOn(.end(nil), context)
            return
        }
        let options = IngestPipeline.Options()
        let now = currentMillis()
        let inputs = pieces.map { routes.pipeline.prepare($0, options: options, now: now) }
        appending = true
        let eventLoop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: eventLoop)
        routes.ledger.append(inputs) { outcome in
            eventLoop.execute {
                let (handler, context) = bound.value
                handler.appended(outcome, since: start, context: context)
            }
        }
    }

    /// The append's answer, then what waited behind it.
    private func appended(
        _ outcome: Result<[AppendResult], LedgerError>, since start: UInt64, context: ChannelHandlerContext
    ) {
        appending = false
        let response: BufferedResponse
        do {
            response = try LedgerRoutes.eventsAnswer(try routes.appended(outcome))
        } catch {
            response = ErrorMiddleware.answer(error, method: .post, path: Endpoint.appendEvents.path, logger: routes.logger)
        }
        guard self.context != nil else { return }  // the connection went while the append waited
        enabled.countWrite()
        let status = write(response, context.channel.allocator)
        timeouts.flush()
        let endpoint = Endpoint.appendEvents
        record(.post, path: endpoint.path, route: endpoint.path, key: endpoint.rawValue, status, since: start)
        while !appending, let part = waiting.popFirst() { take(part, context: context) }
        if unflushed && !appending {
            unflushed = false
            timeouts.flush()
        }
        if passedOn {
            passedOn = false
            context.fireChannelReadComplete()
        }
        if quiesceWanted && !appending {
            quiesceWanted = false
            context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
    }

    // MARK: Answers

    private func write(_ response: BufferedResponse, _ allocator: ByteBufferAllocator) -> HTTPResponse.Status {
        phases.writeWholeAnswer(allocator: allocator) { date, out in
            response.writeHead(date: date, to: &out)
            out.writeImmutableBuffer(response.body)
        }
        return response.status
    }

    /// Records an answer as `RequestMetricsMiddleware` does (`key` tells the route apart in the timers kept).
    private func record(
        _ method: HTTPRequest.Method, path: String, route: String, key: Int, _ status: HTTPResponse.Status,
        since start: UInt64
    ) {
        let timerKey = key &* 1000 &+ status.code
        let timer =
            timers[timerKey]
            ?? routes.metrics.requestTimer(method: method.rawValue, route: route, status: status.code)
        timers[timerKey] = timer
        RequestMetricsMiddleware.answered(
            method: method, path: path, route: route, status: status,
            nanoseconds: DispatchTime.now().uptimeNanoseconds &- start, timer: timer, logger: routes.logger)
    }
}

// MARK: - The hot reads

/// A hot read the fast path takes: its route, its id, and its query.
struct FastRequest {
    /// The endpoints the fast path answers.
    enum Route {
        case customer, subscription, health

        var endpoint: Endpoint {
            switch self {
            case .customer: .customer
            case .subscription: .subscription
            case .health: .health
            }
        }
    }

    var route: Route
    /// The customer's or subscription's id (empty for health).
    var id: String
    /// `(name, value)` of each query parameter, at most one of each name.
    var query: [(name: Substring, value: Substring)] = []
    /// The target's path, for the log.
    var path: String { route.endpoint.pathPrefix + id }

    /// Nil unless `target` is one of the hot routes written plainly: `/v1/health`, or `/v1/customers/ID` or
    /// `/v1/subscriptions/ID` with an optional query of `name=value` pairs, where every character of the id, names
    /// and values is a letter, a digit or one of `-._~:` (`@` too in an id), no name repeats, and the id does not
    /// start with a dot. So no percent-decoding, no empty segment, nothing the router might read another way.
    init?(_ target: Slice<UnsafeRawBufferPointer>) {
        let target = UnsafeRawBufferPointer(rebasing: target)
        if target.elementsEqual(Self.health) {
            route = .health
            id = ""
            return
        }
        let idStart: Int
        if target.starts(with: Self.customers) {
            route = .customer
            idStart = Self.customers.count
        } else if target.starts(with: Self.subscriptions) {
            route = .subscription
            idStart = Self.subscriptions.count
        } else {
            return nil
        }
        var idEnd = idStart
        while idEnd < target.count, target[idEnd] != UInt8(ascii: "?") {
            guard Self.isPlain(target[idEnd]) || target[idEnd] == UInt8(ascii: "@") else { return nil }
            idEnd += 1
        }
        guard idEnd > idStart, target[idStart] != UInt8(ascii: ".") else { return nil }
        id = String(decoding: target[idStart..<idEnd], as: UTF8.self)
        guard idEnd < target.count else { return }
        // A query (rare on the hot path): checked and split as text.
        let queryText = String(decoding: target[(idEnd + 1)...], as: UTF8.self)
        guard !queryText.isEmpty else { return nil }
        for pair in queryText.split(separator: "&", omittingEmptySubsequences: false) {
            guard let equals = pair.firstIndex(of: "=") else { return nil }
            let name = pair[..<equals]
            let value = pair[pair.index(after: equals)...]
            guard !name.isEmpty, name.utf8.allSatisfy(Self.isPlain), value.utf8.allSatisfy(Self.isPlain),
                !query.contains(where: { $0.name == name })
            else { return nil }
            query.append((name, value))
        }
    }

    private static let health = Array(Endpoint.health.path.utf8)
    private static let customers = Array(Endpoint.customer.pathPrefix.utf8)
    private static let subscriptions = Array(Endpoint.subscription.pathPrefix.utf8)

    /// Letters, digits and `-._~:`.
    static func isPlain(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"), UInt8(ascii: ":"):
            true
        default: false
        }
    }

    /// A kept answer's clocks, when the route keeps answers (its refusals thrown as the route throws them).
    func clockedRead(_ routes: LedgerRoutes) throws -> LedgerRoutes.ClockedRead? {
        switch route {
        case .health: nil
        case .customer: try routes.customerRead(user: id, clocks())
        case .subscription: try routes.subscriptionRead(otid: id, clocks())
        }
    }

    /// The router's answer to this request (its refusals thrown as the route throws them).
    func answer(_ routes: LedgerRoutes) throws -> BufferedResponse {
        switch route {
        case .health:
            return try routes.healthAnswer()
        case .customer:
            return try routes.customerAnswer(user: id, clocks())
        case .subscription:
            return try routes.subscriptionAnswer(otid: id, clocks())
        }
    }

    private func clocks() throws -> LedgerRoutes.ReadClocks {
        try LedgerRoutes.ReadClocks(route.endpoint, names: query.lazy.map(\.name)) { name in
            query.first { $0.name == name }?.value
        }
    }
}

// MARK: - Date

/// The `Date` field's value (RFC 9110 IMF-fixdate), made once a second. `RequestPhaseHandler` sets it on every
/// answer, the router's and the fast path's alike.
struct HTTPDate {
    private var second: Int64 = -1
    private var text = ""

    /// The value for now.
    mutating func current() -> String {
        let now = Int64(currentMillis() / 1000)
        if now != second {
            second = now
            text = Self.format(now)
        }
        return text
    }

    /// `seconds` since 1970 (not before) in UTC, by the civil calendar (days to year, month, day as in Howard
    /// Hinnant's `civil_from_days`), without the C library's `tm`.
    static func format(_ seconds: Int64) -> String {
        let days = seconds / 86_400
        let time = seconds % 86_400
        let era = (days + 719_468) / 146_097
        let dayOfEra = days + 719_468 - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // March = 0
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let weekday = (days + 4) % 7  // 1970-01-01 was a Thursday
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let dayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        return "\(dayNames[Int(weekday)]), \(two(day)) \(monthNames[Int(month - 1)]) \(year) "
            + "\(two(time / 3600)):\(two(time / 60 % 60)):\(two(time % 60)) GMT"
    }
}
