import CoreMetrics
import Foundation
import Hummingbird
import LedgerAPI
import Logging
import NIOCore
import Synchronization

// MARK: - The fast read path

/// Whether new connections get the fast read path (`FastReadHandler`). On by default; `storeledger serve
/// --no-fast-reads` and the tests that compare both paths turn it off. Read once per connection.
public final class FastReadSwitch: Sendable {
    private let on: Atomic<Bool>
    private let count = Atomic<Int>(0)

    public init(_ on: Bool = true) { self.on = Atomic(on) }

    public var isOn: Bool {
        get { on.load(ordering: .relaxed) }
        set { on.store(newValue, ordering: .relaxed) }
    }

    /// Requests the fast read path answered so far (the request metrics count them with the router's).
    public var answered: Int { count.load(ordering: .relaxed) }

    func countAnswer() { count.wrappingAdd(1, ordering: .relaxed) }
}

/// Serves the hot reads — `GET /v1/customers/{id}`, `GET /v1/subscriptions/{otid}` (with `at`, `asOf`,
/// `environment`) and `GET /v1/health` — straight from the connection's event loop, in front of the HTTP decoder:
/// no HTTP parts, no task, no router, one buffer written per answer. Every other request goes to the decoder and
/// Hummingbird's router exactly as before.
///
/// Why it is equivalent:
/// - The answer is made by the router's own functions (`customerAnswer`, `subscriptionAnswer`, `healthAnswer`,
///   `ErrorMiddleware.answer`), recorded and logged by `RequestMetricsMiddleware.answered`, and written with the
///   fields Hummingbird writes (the `BufferedResponse`'s, then `Date`).
/// - It takes only what it reads unambiguously (`HeadScanner`): `GET`, an `HTTP/1.1` head of at most 8 KiB with no
///   body and no `Connection` (but `keep-alive`), `Expect`, `Upgrade` or `Transfer-Encoding` field, a target of
///   plain characters (no percent-encoding) naming one of those routes. Anything else is the decoder's, byte for
///   byte.
/// - The decoder only ever receives whole requests, so it is between requests whenever this handler looks at the
///   next one: a request it does not take is handed over with its `Content-Length` body; a head it cannot frame
///   (chunked, malformed, another method…) hands the rest of the connection over for good.
/// - Answers keep their order: a hot read is answered here only while no request handed to the router is still
///   unanswered (`ConnectionTimeouts.unanswered`); otherwise it goes to the router too.
/// - The connection's timeouts see it as a request answered (`ConnectionTimeouts.answeredHere`).
final class FastReadHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let routes: LedgerRoutes
    private let timeouts: ConnectionTimeouts
    private let enabled: FastReadSwitch
    /// Bytes of a head not complete yet (given to nobody yet).
    private var held: ByteBuffer?
    private var scanner = HeadScanner()
    /// Body bytes of the request last handed to the decoder that are still to come: they go to it unread.
    private var bodyToHandOver = 0
    /// Everything goes to the decoder from here on.
    private var handedOver = false
    /// Bytes went to the decoder since the last `channelReadComplete`.
    private var handedOverSinceReadComplete = false
    private var date = HTTPDate()
    /// The request-duration timer of each (route, status) this connection answered: looked up once, not per read.
    private var timers: [Int: CoreMetrics.Timer] = [:]

    init(routes: LedgerRoutes, timeouts: ConnectionTimeouts, enabled: FastReadSwitch) {
        self.routes = routes
        self.timeouts = timeouts
        self.enabled = enabled
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if handedOver {
            handedOverSinceReadComplete = true
            context.fireChannelRead(data)
            return
        }
        var input = unwrapInboundIn(data)
        if var held = held.take() {
            held.writeBuffer(&input)
            input = held
        }
        var answered = false
        scanning: while input.readableBytes > 0 && !handedOver {
            if bodyToHandOver > 0 {
                let n = min(bodyToHandOver, input.readableBytes)
                bodyToHandOver -= n
                handedOverSinceReadComplete = true
                context.fireChannelRead(wrapInboundOut(input.readSlice(length: n)!))
                continue
            }
            switch input.withUnsafeReadableBytes({ scanner.scan($0) }) {
            case .incomplete:
                held = input
                input = ByteBuffer()
                break scanning
            case .refused:
                handedOver = true
            case .complete(let head):
                scanner = HeadScanner()
                guard head.isPlain else {
                    handedOver = true
                    break
                }
                if head.isGet, head.contentLength == nil, mayAnswerHere(context),
                    let request = input.withUnsafeReadableBytes({ FastRequest($0[head.target]) })
                {
                    input.moveReaderIndex(forwardBy: head.length)
                    answer(request, context: context)
                    answered = true
                    timeouts.answeredHere(pending: input.readableBytes > 0 ? input : nil)
                } else {
                    bodyToHandOver = head.contentLength ?? 0
                    handedOverSinceReadComplete = true
                    context.fireChannelRead(wrapInboundOut(input.readSlice(length: head.length)!))
                }
            }
        }
        if answered { context.flush() }
        if handedOver {
            if let rest = held.take() { input = rest }
            if input.readableBytes > 0 {
                handedOverSinceReadComplete = true
                context.fireChannelRead(wrapInboundOut(input))
            }
        }
    }

    /// Passed on only when the handlers behind got something to read since the last one: for them (the decoder,
    /// the HTTP codec, Hummingbird's async channel, which delivers what it buffered) a read cycle in which this
    /// handler answered everything itself did not happen. Walking them cost a twelfth of a hot read.
    func channelReadComplete(context: ChannelHandlerContext) {
        guard handedOverSinceReadComplete || handedOver else { return }
        handedOverSinceReadComplete = false
        context.fireChannelReadComplete()
    }

    /// Only while the router owes this connection nothing (answers keep their order), and not once an answer said
    /// `Connection: close`.
    private func mayAnswerHere(_ context: ChannelHandlerContext) -> Bool {
        timeouts.unanswered == 0 && !timeouts.readingBody && !timeouts.closing && context.channel.isActive
    }

    /// The end of the input (`inputClosed`, then `channelInactive`) and graceful shutdown (`ChannelShouldQuiesceEvent`,
    /// after which Hummingbird closes the connection once the router owes nothing) hand everything over: what
    /// arrived of a head first, so that the decoder meets the end of the stream in the middle of a request as before
    /// (and refuses it, and the refusal is kept in `rejected`, as before).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent || (event as? ChannelEvent) == .inputClosed {
            handOverForGood(context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        handOverForGood(context)
        context.fireChannelInactive()
    }

    private func handOverForGood(_ context: ChannelHandlerContext) {
        handedOver = true
        if let rest = held.take() {
            context.fireChannelRead(wrapInboundOut(rest))
            context.fireChannelReadComplete()
        }
    }

    /// Answers `request` as the router would, into one buffer: a kept answer (`AnswerCache`) is written straight
    /// into it with its clocks, anything else through a `BufferedResponse`.
    private func answer(_ request: FastRequest, context: ChannelHandlerContext) {
        let start = DispatchTime.now().uptimeNanoseconds
        let (out, status) = answerBytes(request, allocator: context.channel.allocator)
        context.write(wrapOutboundOut(out), promise: nil)
        enabled.countAnswer()
        let key = request.route.rawValue &* 1000 &+ status.code
        let timer =
            timers[key] ?? routes.metrics.requestTimer(method: "GET", route: request.route.path, status: status.code)
        timers[key] = timer
        RequestMetricsMiddleware.answered(
            method: .get, path: request.path, route: request.route.path, status: status,
            nanoseconds: DispatchTime.now().uptimeNanoseconds &- start, timer: timer, logger: routes.logger)
    }

    private func answerBytes(_ request: FastRequest, allocator: ByteBufferAllocator) -> (ByteBuffer, HTTPResponse.Status) {
        do {
            if let read = try request.clockedRead(routes) {
                return (Self.okAnswer(read, date: date.current(), allocator: allocator), .ok)
            }
            return Self.answer(try request.answer(routes), date: date.current(), allocator: allocator)
        } catch {
            return Self.answer(
                ErrorMiddleware.answer(error, method: .get, path: request.path, logger: routes.logger),
                date: date.current(), allocator: allocator)
        }
    }

    private static func answer(_ response: BufferedResponse, date: [UInt8], allocator: ByteBufferAllocator)
        -> (ByteBuffer, HTTPResponse.Status)
    {
        var out = allocator.buffer(capacity: 192 + response.body.readableBytes)
        writeHead(response, date: date, to: &out)
        out.writeImmutableBuffer(response.body)
        return (out, response.status)
    }
}

extension FastReadHandler {
    /// What `writeHead` writes for a 200 JSON answer (`JSONBody.buffered`) up to its `Content-Length` value.
    private static let okHead = Array(
        "HTTP/1.1 200 \(HTTPResponse.Status.ok.reasonPhrase)\r\n\(BufferedResponse.Field.contentType.name): application/json\r\n\(BufferedResponse.Field.contentLength.name): "
            .utf8)

    /// A kept answer as `answer(_:date:allocator:)` writes the `BufferedResponse` of `ClockedRead.buffered`: its
    /// head, then its body written in place with its clocks (no body buffer, no field list).
    static func okAnswer(_ read: LedgerRoutes.ClockedRead, date: [UInt8], allocator: ByteBufferAllocator)
        -> ByteBuffer
    {
        let count = read.body.count(at: read.at, asOf: read.asOf)
        let length = String(count)
        let size = okHead.count + length.utf8.count + 8 + date.count + 4 + count
        var out = allocator.buffer(capacity: size)
        out.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { raw in
            var head = Copier(to: raw.baseAddress!)
            okHead.withUnsafeBytes { head.put($0) }
            head.put(length)
            head.put("\r\nDate: ")
            date.withUnsafeBytes { head.put($0) }
            head.put("\r\n\r\n")
            return head.written + read.body.write(at: read.at, asOf: read.asOf, to: raw.baseAddress! + head.written)
        }
        return out
    }

    /// The response's head as NIO's `HTTPResponseEncoder` writes what Hummingbird gives it: `HTTP/1.1`, the status
    /// code and reason phrase, each field as `Name: value`, then `Date`, then an empty line. One capacity check and
    /// plain copies (a `ByteBuffer` write per piece cost more than the rest of the head).
    static func writeHead(_ response: BufferedResponse, date: [UInt8], to out: inout ByteBuffer) {
        let code = String(response.status.code)
        let reason = response.status.reasonPhrase
        var size = 9 + code.utf8.count + 1 + reason.utf8.count + 2 + 6 + date.count + 4
        for (field, value) in response.fields { size += field.name.utf8.count + 2 + value.utf8.count + 2 }
        out.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { raw in
            var head = Copier(to: raw.baseAddress!)
            head.put("HTTP/1.1 ")
            head.put(code)
            head.put(" ")
            head.put(reason)
            head.put("\r\n")
            for (field, value) in response.fields {
                head.put(field.name)
                head.put(": ")
                head.put(value)
                head.put("\r\n")
            }
            head.put("Date: ")
            date.withUnsafeBytes { head.put($0) }
            head.put("\r\n\r\n")
            return head.written
        }
    }

    /// Copies bytes one after the other into memory with room for them (a struct, so no captured variable is
    /// boxed and checked on every access).
    private struct Copier {
        let start: UnsafeMutableRawPointer
        var written = 0

        init(to start: UnsafeMutableRawPointer) { self.start = start }

        mutating func put(_ bytes: UnsafeRawBufferPointer) {
            guard let from = bytes.baseAddress, !bytes.isEmpty else { return }
            (start + written).copyMemory(from: from, byteCount: bytes.count)
            written += bytes.count
        }

        mutating func put(_ text: StaticString) {
            put(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        }

        mutating func put(_ text: String) {
            var text = text
            text.withUTF8 { put(UnsafeRawBufferPointer($0)) }
        }
    }
}

// MARK: - The hot reads

/// A hot read the fast path takes: its route, its id, and its query.
struct FastRequest {
    enum Route: Int {
        case customer, subscription, health

        /// The route as the router names it (the `route` label of the request metrics).
        var path: String {
            switch self {
            case .customer: LedgerRoutes.customerRoute
            case .subscription: LedgerRoutes.subscriptionRoute
            case .health: LedgerRoutes.healthRoute
            }
        }
    }

    var route: Route
    /// The customer's or subscription's id (empty for health).
    var id: String
    /// `(name, value)` of each query parameter, at most one of each name.
    var query: [(name: Substring, value: Substring)] = []
    /// The target's path, for the log.
    var path: String {
        switch route {
        case .customer: "/v1/customers/" + id
        case .subscription: "/v1/subscriptions/" + id
        case .health: "/v1/health"
        }
    }

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

    private static let health = Array(LedgerRoutes.healthRoute.utf8)
    private static let customers = Array("/v1/customers/".utf8)
    private static let subscriptions = Array("/v1/subscriptions/".utf8)

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
        try LedgerRoutes.ReadClocks(route: "GET " + route.path, names: query.lazy.map(\.name)) { name in
            query.first { $0.name == name }?.value
        }
    }
}

// MARK: - Reading a request head

/// Checks a request head byte by byte as it arrives, against a strict subset of HTTP/1.1 (RFC 9112): a request line
/// `GET` or `POST`, a target of visible ASCII starting with `/`, `HTTP/1.1`; header lines `token: value` with
/// visible ASCII, spaces and tabs in values, each ending in CRLF; an empty line. At most 8 KiB. The first byte
/// outside it refuses the head (the decoder reads it instead), so a head that can never complete is handed over
/// at once, as the decoder would have refused it at once.
struct HeadScanner {
    static let maxHeadBytes = 8 << 10

    /// A head read whole.
    struct Head {
        var length: Int
        var isGet: Bool
        /// The request target's bytes within the head.
        var target: Range<Int>
        var contentLength: Int?
        /// No field that changes how the connection or the body is read (`Transfer-Encoding`, `Connection` but
        /// `keep-alive`, `Expect`, `Upgrade`), and at most one `Content-Length`, of digits.
        var isPlain: Bool
    }

    enum Outcome {
        case incomplete
        case refused
        case complete(Head)
    }

    private enum State {
        case method, target, version, lineStart, name, value, valueLF, finalLF
    }

    private var state = State.method
    /// Bytes checked so far (the head's bytes are rescanned from here when more arrive).
    private var scanned = 0
    private var methodEnd = 0
    private var targetEnd = 0
    private var versionMatched = 0

    private static let version = Array("HTTP/1.1\r\n".utf8)

    /// Scans what arrived since the last call; `bytes` starts at the head's first byte.
    mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        while scanned < bytes.count {
            let byte = bytes[scanned]
            let index = scanned
            scanned += 1
            if scanned > Self.maxHeadBytes { return .refused }
            switch state {
            case .method:
                if byte == UInt8(ascii: " ") {
                    methodEnd = index
                    let method = bytes[0..<index]
                    guard method.elementsEqual("GET".utf8) || method.elementsEqual("POST".utf8) else { return .refused }
                    state = .target
                } else if !(UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || index >= 4 {
                    return .refused
                }
            case .target:
                if byte == UInt8(ascii: " ") {
                    guard index > methodEnd + 1 else { return .refused }
                    targetEnd = index
                    state = .version
                } else if index == methodEnd + 1 ? byte != UInt8(ascii: "/") : !(0x21...0x7E).contains(byte) {
                    return .refused
                }
            case .version:
                guard byte == Self.version[versionMatched] else { return .refused }
                versionMatched += 1
                if versionMatched == Self.version.count { state = .lineStart }
            case .lineStart:
                if byte == UInt8(ascii: "\r") {
                    state = .finalLF
                } else if Self.isTokenByte(byte) {
                    state = .name
                } else {
                    return .refused
                }
            case .name:
                if byte == UInt8(ascii: ":") {
                    state = .value
                } else if !Self.isTokenByte(byte) {
                    return .refused
                }
            case .value:
                if byte == UInt8(ascii: "\r") {
                    state = .valueLF
                } else if !((0x20...0x7E).contains(byte) || byte == 0x09) {
                    return .refused
                }
            case .valueLF:
                guard byte == UInt8(ascii: "\n") else { return .refused }
                state = .lineStart
            case .finalLF:
                guard byte == UInt8(ascii: "\n") else { return .refused }
                return .complete(head(UnsafeRawBufferPointer(rebasing: bytes[0..<scanned])))
            }
        }
        return .incomplete
    }

    /// The head's fields that matter to framing, from a head the scanner accepted.
    private func head(_ bytes: UnsafeRawBufferPointer) -> Head {
        var head = Head(
            length: bytes.count, isGet: methodEnd == 3, target: (methodEnd + 1)..<targetEnd, contentLength: nil,
            isPlain: true)
        // Header lines start after the request line and end before the empty line.
        var lineStart = targetEnd + 1 + Self.version.count
        while lineStart < bytes.count - 2 {
            var lineEnd = lineStart
            while bytes[lineEnd] != UInt8(ascii: "\r") { lineEnd += 1 }
            let line = bytes[lineStart..<lineEnd]
            let colon = line.firstIndex(of: UInt8(ascii: ":"))!
            let name = line[lineStart..<colon]
            var value = line[(colon + 1)...]
            while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
            while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
            if Self.named(name, "content-length") {
                guard head.contentLength == nil, (1...15).contains(value.count),
                    value.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
                else {
                    head.isPlain = false
                    return head
                }
                head.contentLength = value.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            } else if Self.named(name, "connection") {
                // `keep-alive` is what HTTP/1.1 does anyway (and what many clients say); anything else is not plain.
                guard Self.named(value, "keep-alive") else {
                    head.isPlain = false
                    return head
                }
            } else if Self.named(name, "transfer-encoding") || Self.named(name, "expect")
                || Self.named(name, "upgrade")
            {
                head.isPlain = false
                return head
            }
            lineStart = lineEnd + 2
        }
        return head
    }

    /// Whether a field name is `lowercased`, in any case.
    private static func named(_ name: Slice<UnsafeRawBufferPointer>, _ lowercased: StaticString) -> Bool {
        guard name.count == lowercased.utf8CodeUnitCount else { return false }
        return lowercased.withUTF8Buffer { expected in
            zip(name, expected).allSatisfy { $0 | 0x20 == $1 || $0 == $1 }
        }
    }

    /// RFC 9110 `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}

// MARK: - Date

/// The `Date` field's value (RFC 9110 IMF-fixdate, as Hummingbird writes it), made once a second.
struct HTTPDate {
    private var second: Int64 = -1
    private var text: [UInt8] = []

    /// The value for now.
    mutating func current() -> [UInt8] {
        let now = Int64(Date().timeIntervalSince1970.rounded(.down))
        if now != second {
            second = now
            text = Array(Self.format(now).utf8)
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
