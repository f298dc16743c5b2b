import Foundation
import Hummingbird
import HummingbirdCore
import LedgerAPI
import LedgerErrors
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - The HTTP/1.1 child channel with the ledger's connection limits

/// Hummingbird's HTTP/1.1 channel with what a server on a shared socket needs against callers that hold connections
/// or send what does not parse:
/// - at most `maxConnections` open connections, `maxConnectionsPerPeer` of one peer user, and (writers restricted)
///   `reservedForWriters` of them kept for writers (`ConnectionRegistry`). A connection over a limit takes the place
///   of the one that has waited longest with no request in progress; with none, it is answered 503 `overloaded`;
/// - a request deadline: a request's head and body must arrive whole within `requestTimeoutSeconds` of its first
///   byte, else 408 `request_timeout` and close (a declared body over the limit is refused at once by the routes);
/// - an HTTP/1.0 request without `Connection: keep-alive` gets its answer with `Connection: close`, then the
///   connection closes;
/// - a header timeout: a request's head must arrive whole within `headerTimeoutSeconds` of its first byte (of the
///   connection's start, for its first request), else 408 `request_timeout` and close;
/// - an idle timeout: a keep-alive connection quiet between requests, or a request body that stalls, for
///   `idleTimeoutSeconds` is closed. A request the server is still answering (a commit, a `follow` stream) is
///   never timed out;
/// - a request head that does not parse (a garbage request line, header fields over the limits) is answered 400
///   `bad_request` with an error document, and kept in `rejected` through `onMalformedHead`.
///
/// Hummingbird's own idle timeout counts from the last decoded request part, so it cannot tell a stalled head from
/// a quiet keep-alive connection; hence a handler in front of the HTTP decoder that sees the bytes.
struct GuardedHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = HTTP1Channel.Value

    let responder: HTTPChannelHandler.Responder
    let limits: ConnectionLimits
    let connections: ConnectionRegistry
    /// Who may write (`socket.writers`): peers that may not hold no place kept for writers.
    let writers: LedgerConfiguration.Writers
    let metrics: ServerMetrics
    /// The routes the fast path answers from, and whether it is on (read once per connection).
    let fastPath: (routes: LedgerRoutes, enabled: FastPathSwitch)?
    let onMalformedHead: @Sendable (_ channel: any Channel, _ head: [UInt8], _ message: String) -> Void

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        // On the channel's event loop, where reading the peer's credentials completes at once.
        var peer: PeerCredentials?
        PeerCredentials.reading(channel).assumeIsolated().whenSuccess { peer = $0 }
        let mayWrite = !writers.restricted || peer.map { writers.uids.contains($0.uid) || writers.gids.contains($0.gid) } ?? false
        let metricsForEviction = metrics
        let admission = connections.admit(uid: peer?.uid, mayWrite: mayWrite, limits: limits) { [weak channel] in
            metricsForEviction.connectionClosed(.evicted)
            channel?.close(promise: nil)
        }
        let connections = self.connections
        let metrics = self.metrics
        metrics.setConnections(connections.current)
        let registered: ConnectionRegistry.Registration? =
            switch admission {
            case .admitted(let registration): registration
            case .refused: nil
            }
        channel.closeFuture.whenComplete { _ in metrics.setConnections(connections.close(registered)) }
        let timeouts = ConnectionTimeouts(
            limits: limits, metrics: metrics, logger: logger, registration: registered, registry: connections)
        let admitted = registered != nil
        do {
            if case .refused(let why) = admission {
                metrics.connectionRefused()
                connections.logRefusal(logger, why: why)
                try channel.pipeline.syncOperations.addHandler(RefuseConnectionHandler(why: why), position: .first)
            } else {
                try channel.pipeline.syncOperations.addHandler(ConnectionBytesHandler(timeouts), position: .first)
            }
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        // Hummingbird calls this synchronously on the channel's event loop, where the handler lives.
        let http1 = HTTP1Channel(responder: responder)
        return http1.setup(channel: channel, logger: logger).assumeIsolated().flatMapThrowing { value in
            guard admitted else { return value }
            // Between NIO's decoder and Hummingbird's conversion to HTTP types (set up synchronously above): every
            // request is framed by the one parser; the phases see each one, and the fast path answers the hot
            // reads in NIO's own types (the conversion and the router's task are most of a read's cost).
            let phases = RequestPhaseHandler(timeouts, onMalformedHead: onMalformedHead)
            var handlers: [any ChannelHandler] = [phases]
            if let fastPath, fastPath.enabled.isOn {
                handlers.append(
                    FastPathHandler(routes: fastPath.routes, phases: phases, enabled: fastPath.enabled, mayWrite: mayWrite))
            }
            let operations = channel.pipeline.syncOperations
            let codec = try operations.context(handlerType: HTTP1ToHTTPServerCodec.self).handler
            try operations.addHandlers(handlers, position: .before(codec))
            return value
        }.nonisolated()
    }

    func handle(value: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: value, logger: logger)
    }
}

/// The connection limits of `LedgerConfiguration.Limits`, as the channel uses them: the timeouts as NIO's time
/// amounts, and at most half the connections kept for writers.
struct ConnectionLimits: Sendable {
    let configured: LedgerConfiguration.Limits

    init(_ limits: LedgerConfiguration.Limits) { configured = limits }

    var headerTimeout: TimeAmount { Self.amount(configured.headerTimeoutSeconds) }
    var idleTimeout: TimeAmount { Self.amount(configured.idleTimeoutSeconds) }
    var requestTimeout: TimeAmount { Self.amount(configured.requestTimeoutSeconds) }
    var maxConnections: Int { configured.maxConnections }
    var maxConnectionsPerPeer: Int { configured.maxConnectionsPerPeer }
    var reservedForWriters: Int { min(configured.reservedForWriters, configured.maxConnections / 2) }

    private static func amount(_ seconds: Double) -> TimeAmount { .nanoseconds(Int64(seconds * 1e9)) }
}

/// The open connections of one server, by peer user, and which of them wait with no request in progress.
///
/// A connection that arrives over a limit (all connections, one peer user's, or those of peers that may not write
/// when writers are restricted) takes the place of the connection in the same group that has waited longest with
/// no request in progress: one that sent nothing yet, a part of a head, or nothing since its last answer. So
/// connections opened and left idle, by the thousand, hold no place a client with a request needs, and one peer, or
/// readers, cannot take the places of others: it is refused (503) only when every connection of the group is in a
/// request.
final class ConnectionRegistry: @unchecked Sendable {
    /// One admitted connection.
    final class Registration: @unchecked Sendable {
        let uid: UInt32?
        let mayWrite: Bool
        /// When the connection began to wait with no request in progress (uptime ns); nil while one is. Read and
        /// written under the registry's lock.
        fileprivate var waitingSince: UInt64?
        fileprivate var closed = false
        fileprivate let evict: @Sendable () -> Void

        fileprivate init(uid: UInt32?, mayWrite: Bool, evict: @escaping @Sendable () -> Void) {
            self.uid = uid
            self.mayWrite = mayWrite
            self.evict = evict
            waitingSince = DispatchTime.now().uptimeNanoseconds
        }
    }

    enum Admission {
        case admitted(Registration)
        /// Over a limit with every connection of the group in a request: why, in words.
        case refused(String)
    }

    private let lock = NSLock()
    private var open: [ObjectIdentifier: Registration] = [:]
    /// Counted from the moment a connection arrives (a refused one too, until it closes): the descriptors in use.
    private var count = 0
    private var byUID: [UInt32: Int] = [:]
    private var nonWriters = 0
    private var refused = 0
    private var lastRefusalLog: UInt64 = 0

    /// Admits a new connection of peer `uid`, making room as above; `evict` closes it when a later one takes its
    /// place.
    func admit(uid: UInt32?, mayWrite: Bool, limits: ConnectionLimits, evict: @escaping @Sendable () -> Void)
        -> Admission
    {
        var evicted: [Registration] = []
        defer { for e in evicted { e.evict() } }
        return lock.withLock {
            count += 1
            if let uid, byUID[uid, default: 0] >= limits.maxConnectionsPerPeer {
                guard let e = longestWaiting(where: { $0.uid == uid }) else {
                    return .refused("uid \(uid) holds \(limits.maxConnectionsPerPeer) connections, each in a request: the most one user may hold")
                }
                evicted.append(e)
            }
            if !mayWrite, limits.reservedForWriters > 0, nonWriters >= limits.maxConnections - limits.reservedForWriters {
                guard let e = longestWaiting(where: { !$0.mayWrite }) else {
                    return .refused("the places of peers that may not write are all in a request; \(limits.reservedForWriters) are kept for writers")
                }
                evicted.append(e)
            }
            if open.count >= limits.maxConnections {
                guard let e = longestWaiting(where: { _ in true }) else {
                    return .refused("the server has \(limits.maxConnections) open connections, each in a request")
                }
                evicted.append(e)
            }
            let registration = Registration(uid: uid, mayWrite: mayWrite, evict: evict)
            open[ObjectIdentifier(registration)] = registration
            if let uid { byUID[uid, default: 0] += 1 }
            if !mayWrite { nonWriters += 1 }
            return .admitted(registration)
        }
    }

    /// The waiting connection of the group that has waited longest, removed from the counts (it is being closed).
    /// Called with the lock held.
    private func longestWaiting(where belongs: (Registration) -> Bool) -> Registration? {
        var oldest: Registration?
        for r in open.values where belongs(r) {
            guard let since = r.waitingSince else { continue }
            if oldest.map({ since < $0.waitingSince! }) ?? true { oldest = r }
        }
        if let oldest { remove(oldest) }
        return oldest
    }

    /// Called with the lock held.
    private func remove(_ r: Registration) {
        guard !r.closed else { return }
        r.closed = true
        open[ObjectIdentifier(r)] = nil
        if let uid = r.uid {
            byUID[uid, default: 1] -= 1
            if byUID[uid] == 0 { byUID[uid] = nil }
        }
        if !r.mayWrite { nonWriters -= 1 }
    }

    /// A request began on the connection (its head arrived): it holds its place until it is answered.
    func requestBegan(_ r: Registration?) {
        guard let r else { return }
        lock.withLock { r.waitingSince = nil }
    }

    /// The connection answered everything it was asked: it waits again.
    func waiting(_ r: Registration?) {
        guard let r else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        lock.withLock { if !r.closed { r.waitingSince = now } }
    }

    /// Counts a connection closed (`nil`: one that was refused); returns how many stay open.
    @discardableResult
    func close(_ r: Registration?) -> Int {
        lock.withLock {
            count -= 1
            if let r { remove(r) }
            return count
        }
    }

    var current: Int { lock.withLock { count } }

    /// Logs refused connections at most once a second, with how many were refused since the last line, so a flood
    /// of connections cannot flood the log too.
    func logRefusal(_ logger: Logger, why: String) {
        let now = DispatchTime.now().uptimeNanoseconds
        let report: Int? = lock.withLock {
            refused += 1
            guard now &- lastRefusalLog >= 1_000_000_000 else { return nil }
            lastRefusalLog = now
            defer { refused = 0 }
            return refused
        }
        if let report {
            logger.warning(
                "refused connections over the limits with 503 overloaded",
                metadata: ["why": "\(why)", "refused": "\(report)"]
            )
        }
    }
}

// MARK: - Timeouts

/// One connection's clocks, shared by its two handlers (the byte-level one in front of the decoder, the part-level
/// one after it). Both run on the connection's event loop, so no lock.
final class ConnectionTimeouts {
    enum Reason: String {
        case header = "header timeout"
        case idle = "idle timeout"
        case bodyStalled = "request body stalled"
        case request = "request timeout"

        var metric: ServerMetrics.ConnectionCloseReason {
            switch self {
            case .header: .headerTimeout
            case .idle: .idleTimeout
            case .bodyStalled: .bodyStalled
            case .request: .requestTimeout
            }
        }
    }

    let limits: ConnectionLimits
    let metrics: ServerMetrics
    let logger: Logger
    /// The connection's place in the server's registry (nil: refused, or not counted).
    let registration: ConnectionRegistry.Registration?
    let registry: ConnectionRegistry?
    /// When the first byte of the request being read arrived: its head and body must arrive by the request timeout.
    var requestStartedAt: NIODeadline?
    /// When bytes last arrived.
    var lastByte = NIODeadline.now()
    /// When the first byte of a head not yet decoded arrived.
    var headStartedAt: NIODeadline?
    /// The buffers that brought that head so far (views, not copies: a head that parses, the usual case, costs no
    /// copy), for the `rejected` record when it does not parse.
    private var headBuffers: [ByteBuffer] = []
    private var headBuffered = 0
    /// `headBuffers` begin with the head being read: they start with a read that arrived between requests. False
    /// once a head was decoded within that read, since the decoder does not say where in the read it ended: a next
    /// head that begins in the same read is not known (one that begins there and ends in a later read is kept from
    /// that later read on).
    private(set) var headBytesKnown = false
    /// A request's head was decoded and its end not yet.
    var readingBody = false
    /// Requests whose head arrived and whose answer is not yet written.
    var unanswered = 0
    /// An answer said `Connection: close`, or a head that does not parse was refused: nothing more is answered.
    var closing = false
    /// The connection's start, or the end of the last answer.
    var quietSince = NIODeadline.now()
    var servedAny = false
    private var scheduled: Scheduled<Void>?
    private var scheduledFor: NIODeadline?
    /// `ConnectionBytesHandler`'s context, in front of the HTTP codec: the timer fires there whichever handler armed
    /// it, because what it writes (a closing answer) is bytes for the socket, which the codec's handlers, taking
    /// HTTP parts only, would trap on.
    private var bytesContext: ChannelHandlerContext?

    static let keptHeadBytes = 16 << 10

    init(
        limits: ConnectionLimits, metrics: ServerMetrics, logger: Logger,
        registration: ConnectionRegistry.Registration? = nil, registry: ConnectionRegistry? = nil
    ) {
        self.limits = limits
        self.metrics = metrics
        self.logger = logger
        self.registration = registration
        self.registry = registry
    }

    /// When the connection is to be closed if nothing changes, and why; nil while the server is answering.
    func deadline() -> (NIODeadline, Reason)? {
        if readingBody {
            let stalled = lastByte + limits.idleTimeout
            if let requestStartedAt, requestStartedAt + limits.requestTimeout < stalled {
                return (requestStartedAt + limits.requestTimeout, .request)
            }
            return (stalled, .bodyStalled)
        }
        if unanswered > 0 { return nil }
        if let headStartedAt { return (headStartedAt + limits.headerTimeout, .header) }
        return servedAny ? (quietSince + limits.idleTimeout, .idle) : (quietSince + limits.headerTimeout, .header)
    }

    /// Bytes arrived (before the decoder sees them).
    func bytesArrived(_ buffer: ByteBuffer) {
        lastByte = .now()
        if !readingBody {
            if headStartedAt == nil {
                headStartedAt = lastByte
                headBuffers.removeAll(keepingCapacity: true)
                headBuffered = 0
                headBytesKnown = true
            }
            if headBuffered < Self.keptHeadBytes {
                headBuffers.append(buffer)
                headBuffered += buffer.readableBytes
            }
        }
    }

    func headDecoded() {
        requestStartedAt = headStartedAt ?? .now()
        registry?.requestBegan(registration)
        headStartedAt = nil
        headBuffers.removeAll(keepingCapacity: true)
        headBuffered = 0
        headBytesKnown = false
        readingBody = true
        unanswered += 1
    }

    func requestEnded() {
        readingBody = false
        requestStartedAt = nil
    }

    /// The first `keptHeadBytes` of the head being read.
    var headBytes: [UInt8] {
        var bytes: [UInt8] = []
        for buffer in headBuffers where bytes.count < Self.keptHeadBytes {
            bytes += buffer.readableBytesView.prefix(Self.keptHeadBytes - bytes.count)
        }
        return bytes
    }

    func answerEnded() {
        unanswered = max(0, unanswered - 1)
        guard unanswered == 0 else { return }
        quietSince = .now()
        servedAny = true
        registry?.waiting(registration)
        // Bytes of a pipelined head that arrived while the server was busy get a full header timeout from now.
        if headStartedAt != nil { headStartedAt = quietSince }
    }

    /// Writes `bytes` for the socket in front of the HTTP codec (a whole answer, `RequestPhaseHandler`'s).
    func writeBytes(_ bytes: ByteBuffer) {
        bytesContext?.write(NIOAny(bytes), promise: nil)
    }

    func flush() {
        bytesContext?.flush()
    }

    /// Called by `ConnectionBytesHandler` when it joins the pipeline, with its context (`nil` when it leaves).
    func attach(_ context: ChannelHandlerContext?) {
        bytesContext = context
    }

    /// Arms the timer for the current deadline, if it is earlier than the one armed; a later deadline (or none,
    /// while the server answers) is picked up when the armed one fires. So a busy keep-alive connection costs no
    /// timer work per request: one wake-up per timeout period.
    func rearm() {
        guard let context = bytesContext, let (deadline, _) = deadline() else { return }
        if let scheduledFor, scheduledFor <= deadline { return }
        scheduled?.cancel()
        scheduledFor = deadline
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        scheduled = context.eventLoop.scheduleTask(deadline: deadline) {
            let (timeouts, context) = loopBound.value
            timeouts.fired(context)
        }
    }

    private func fired(_ context: ChannelHandlerContext) {
        scheduled = nil
        scheduledFor = nil
        guard let (deadline, reason) = deadline() else { return }
        guard NIODeadline.now() >= deadline else {
            rearm()
            return
        }
        metrics.connectionClosed(reason.metric)
        // A keep-alive connection expiring is routine; a head or body that stalls is worth an operator's notice.
        logger.log(
            level: reason == .idle ? .debug : .info,
            "closing a connection",
            metadata: ["reason": "\(reason.rawValue)"]
        )
        if reason == .request {
            let answer = HTTPErrors.closingAnswer(
                CodedError(
                    .requestTimeout,
                    "the request did not arrive whole within \(limits.requestTimeout.nanoseconds / 1_000_000) ms of its first byte"))
            context.writeAndFlush(NIOAny(answer)).assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
            }
        } else if reason == .header, headStartedAt != nil {
            // Part of a request arrived: say why it is dropped (as a server would to a slow but honest client).
            let answer = HTTPErrors.closingAnswer(
                CodedError(
                    .requestTimeout,
                    "the request's header section did not arrive within \(limits.headerTimeout.nanoseconds / 1_000_000) ms"))
            context.writeAndFlush(NIOAny(answer)).assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
            }
        } else {
            context.close(promise: nil)
        }
    }

    func cancel() {
        scheduled?.cancel()
        scheduled = nil
        scheduledFor = nil
    }
}

/// In front of the HTTP decoder: sees every byte that arrives.
final class ConnectionBytesHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeouts: ConnectionTimeouts

    init(_ timeouts: ConnectionTimeouts) { self.timeouts = timeouts }

    func handlerAdded(context: ChannelHandlerContext) {
        timeouts.attach(context)
        if context.channel.isActive { timeouts.rearm() }
    }

    func channelActive(context: ChannelHandlerContext) {
        timeouts.rearm()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timeouts.cancel()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timeouts.cancel()
        timeouts.attach(nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        timeouts.bytesArrived(unwrapInboundIn(data))
        // The decoder runs inside this call and reports heads and ends to `RequestPhaseHandler` before it returns.
        context.fireChannelRead(data)
        timeouts.rearm()
    }
}

/// Right after the HTTP decoder: sees requests begin and end, and answers end; sets every answer's `Date`; closes
/// after answering an HTTP/1.0 request without `Connection: keep-alive`; answers a head that does not parse.
final class RequestPhaseHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    let timeouts: ConnectionTimeouts
    private let onMalformedHead: @Sendable (any Channel, [UInt8], String) -> Void
    /// The answer being written said `Connection: close`.
    private var closeAfterAnswer = false
    /// A head that did not parse was refused, or its refusal waits in `pendingRefusal`.
    private var refusedHead = false
    /// The message of a refusal that waits for the answers owed before it.
    private var pendingRefusal: String?
    /// For each request handed on and not yet answered, in order: whether its answer closes the connection (an
    /// HTTP/1.0 request without `Connection: keep-alive`).
    private var closeAfter: [Bool] = []
    private var date = HTTPDate()
    /// This handler's context, for a refusal that waited for a whole answer (`writeWholeAnswer`).
    private var context: ChannelHandlerContext?

    init(_ timeouts: ConnectionTimeouts, onMalformedHead: @escaping @Sendable (any Channel, [UInt8], String) -> Void) {
        self.timeouts = timeouts
        self.onMalformedHead = onMalformedHead
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            timeouts.headDecoded()
            closeAfter.append(head.version == .http1_0 && !head.isKeepAlive)
        case .body: break
        case .end: timeouts.requestEnded()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head):
            closeAfterAnswer = head.headers[canonicalForm: "connection"].contains { $0.lowercased() == "close" }
            let final = head.status.code >= 200
            if final { head.headers.replaceOrAdd(name: "Date", value: date.current()) }
            if final, !closeAfter.isEmpty, closeAfter.removeFirst(), !closeAfterAnswer {
                // HTTP/1.0 without keep-alive: one answer, then the connection ends, and the answer says so.
                head.headers.replaceOrAdd(name: "Connection", value: "close")
                closeAfterAnswer = true
                timeouts.closing = true
                context.write(wrapOutboundOut(.head(head)), promise: promise)
                return
            }
            if closeAfterAnswer { timeouts.closing = true }
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            timeouts.answerEnded()
            timeouts.rearm()
            if closeAfterAnswer {
                // The rest of the request (a body over the limit, or one that cannot be framed) is not read.
                let written = promise ?? context.eventLoop.makePromise()
                context.writeAndFlush(data, promise: written)
                written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
            } else if let message = pendingRefusal, timeouts.unanswered == 0 {
                // The last answer owed before the head that did not parse: now its refusal.
                pendingRefusal = nil
                context.write(data, promise: promise)
                refuseHead(context, message)
            } else {
                context.write(data, promise: promise)
            }
        }
    }

    /// Writes the whole answer to the request just decoded, made on the event loop (the fast path's), as one
    /// buffer in front of the encoder (which is between answers, as the router owes nothing): its head as the
    /// encoder writes the router's, `Date` last. The request must be HTTP/1.1 with keep-alive (its answer does not
    /// close the connection).
    func writeWholeAnswer(allocator: ByteBufferAllocator, _ write: (_ date: String, _ out: inout ByteBuffer) -> Void) {
        if !closeAfter.isEmpty { closeAfter.removeFirst() }
        var out = allocator.buffer(capacity: 0)
        write(date.current(), &out)
        timeouts.writeBytes(out)
        timeouts.answerEnded()
        timeouts.rearm()
        if let message = pendingRefusal, timeouts.unanswered == 0, let context {
            // The last answer owed before the head that did not parse: now its refusal.
            pendingRefusal = nil
            refuseHead(context, message)
        }
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if refusedHead, error is HTTPParserError || error is ByteToMessageDecoderError {
            // The decoder stopped at the refused head; what it says about the bytes after it changes nothing.
            return
        }
        // A head that does not parse: answered with an error document and kept, then the connection closes. Behind
        // pipelined requests still being answered, the refusal waits for their answers (answers keep their order).
        // Within a body the error goes on to the route reading the body (400 `invalid_body`).
        guard let parserError = error as? HTTPParserError, !timeouts.readingBody else {
            context.fireErrorCaught(error)
            return
        }
        refusedHead = true
        timeouts.closing = true
        timeouts.metrics.connectionClosed(.badRequest)
        let message = "the request head does not parse (\(parserError))"
        // Kept when its bytes are known; a head that came in one read with the requests before it is answered all
        // the same, but what arrived of it cannot be told from them.
        if timeouts.headBytesKnown { onMalformedHead(context.channel, timeouts.headBytes, message) }
        if timeouts.unanswered == 0 {
            refuseHead(context, message)
        } else {
            pendingRefusal = message
        }
    }

    /// Writes the 400 `bad_request` answer with its error document, then closes the connection.
    private func refuseHead(_ context: ChannelHandlerContext, _ message: String) {
        refuse(context, CodedError(.badRequest, message), status: .badRequest)
    }

    /// Writes an error answer with its document, then closes the connection.
    private func refuse(_ context: ChannelHandlerContext, _ error: CodedError, status: HTTPResponseStatus) {
        timeouts.cancel()
        timeouts.closing = true
        var body = context.channel.allocator.buffer(capacity: 128)
        body.writeBytes(JSONWriter.bytes(of: ErrorDocument(error)))
        body.writeString("\n")
        let head = HTTPResponseHead(
            version: .http1_1,
            status: status,
            headers: [
                "Content-Type": "application/json", "Connection": "close", "Content-Length": "\(body.readableBytes)",
            ]
        )
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}

/// On a connection over the limit: one 503 `overloaded` answer, then close, before anything is read.
final class RefuseConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private var answered = false
    private let why: String

    init(why: String) { self.why = why }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { refuse(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        refuse(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    private func refuse(_ context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        let answer = HTTPErrors.closingAnswer(
            CodedError(.overloaded, "\(why); retry shortly"))
        context.writeAndFlush(NIOAny(answer)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
