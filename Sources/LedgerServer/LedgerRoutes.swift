import CoreMetrics
import Foundation
import Hummingbird
import LedgerAPI
import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerErrors
import Logging
import NIOCore
import NIOHTTP1

// MARK: - LedgerRoutes

/// The HTTP surface (docs/socket-api.md) over one ledger: builds the router and holds what every route shares (the
/// ingest pipeline, limits, writer allow-list, metrics, the commit signal for followers).
///
/// Decoding and signature checks run on the request's task; only `Ledger.append` reaches the writer thread, whose group
/// commit answers many concurrent requests with one fsync. A 2xx is sent only after that commit.
public final class LedgerRoutes: Sendable {
    public let ledger: Ledger
    public let configuration: LedgerConfiguration
    public let metrics: ServerMetrics
    let pipeline: IngestPipeline
    /// Where accepted inputs go when the server runs with a replicated intake; nil: the ledger's own append.
    let intake: (any Intake)?
    let logger: Logger
    let commits: CommitSignal
    let followers: FollowerCount
    /// The hot reads' answers kept between the commits that change them (`AnswerCache`); nil: every read is made
    /// anew (`storeledger serve --no-answer-cache`, and the tests that compare both).
    let answers: AnswerCache<ClockedAnswer>?

    /// Answers kept at most: a customer's or subscription's JSON is typically 0.5–2 KB, so about 32 MB.
    static let answerCacheCapacity = 16_384

    /// At most this many `follow=true` streams at once; more get 503.
    static let maxFollowers = 256

    /// - Parameters:
    ///   - ledger: an open, writable ledger; the API registers a commit observer on it.
    ///   - configuration: limits, writers and the Apple decoding configuration.
    ///   - logger: requests are logged at debug, failures at error.
    ///   - keepAnswers: whether the hot reads' answers are kept between the commits that change them.
    ///   - intake: a replicated intake that appends in the place of the ledger (`serve --intake`); nil by default.
    public init(
        ledger: Ledger, configuration: LedgerConfiguration, logger: Logger, keepAnswers: Bool = true,
        intake: (any Intake)? = nil
    ) {
        self.ledger = ledger
        self.intake = intake
        self.answers = keepAnswers ? AnswerCache(ledger: ledger, capacity: Self.answerCacheCapacity) : nil
        self.configuration = configuration
        self.logger = logger
        self.pipeline = IngestPipeline(ledger: ledger, configuration: Self.decoding(configuration))
        let metrics = ServerMetrics()
        self.metrics = metrics
        self.followers = FollowerCount { metrics.setFollowers($0) }
        let commits = CommitSignal(lastSeq: (try? ledger.lastSeq()) ?? 0)
        self.commits = commits
        ledger.observeCommits { [weak ledger] inputs, lastSeq, nanoseconds in
            metrics.recordCommit(
                inputs: inputs, lastSeq: lastSeq, nanoseconds: nanoseconds, queueDepth: ledger?.queueDepth ?? 0)
            commits.committed(lastSeq)
        }
    }

    /// The decoding configuration of the server's inputs: an input may be as large as a body (so every replica of a
    /// replicated intake decodes with the same limits as the server that accepted it).
    public static func decoding(_ configuration: LedgerConfiguration) -> AppStoreConfiguration {
        var appStore = configuration.appStore
        appStore.maxInputBytes = max(appStore.maxInputBytes, configuration.limits.maxBodyBytes)
        return appStore
    }

    /// Ends every `follow=true` stream (graceful shutdown).
    public func endFollowers() { commits.close() }

    // MARK: - Router

    /// The router with every endpoint of the socket API (`Endpoint`), behind the error and metrics middlewares.
    public func makeRouter() -> Router<LedgerRequestContext> {
        let router = Router(context: LedgerRequestContext.self)
        router.add(middleware: RequestMetricsMiddleware(metrics: metrics, logger: logger))
        router.add(middleware: ErrorMiddleware(logger: logger))
        for endpoint in Endpoint.allCases {
            router.on(RouterPath(stringLiteral: endpoint.path), method: endpoint.method, use: responder(endpoint))
        }
        return router
    }

    typealias Responder = @Sendable (Request, LedgerRequestContext) async throws -> Response

    /// What answers each endpoint (the handlers are in the Routes+*.swift files, by resource).
    private func responder(_ endpoint: Endpoint) -> Responder {
        switch endpoint {
        case .appendEvents: return { try await self.appendEvents($0, $1) }
        case .appleNotifications: return { try await self.appendOne($0, $1, endpoint, type: .notification) }
        case .appleReceipts: return { try await self.appendOne($0, $1, endpoint, type: .receipt) }
        case .appleTransactions: return { try await self.appendOne($0, $1, endpoint, type: .transaction) }
        case .bindings: return { try await self.appendOne($0, $1, endpoint, type: .binding) }
        case .subscription:
            return { request, context in
                let otid = try RequestTarget.parameter("otid", of: context)
                return try self.subscriptionAnswer(otid: otid, ReadClocks(request, endpoint)).response
            }
        case .timelineSVG: return { try self.picture($0, $1, endpoint, page: false) }
        case .timelineHTML: return { try self.picture($0, $1, endpoint, page: true) }
        case .customer:
            return { request, context in
                let user = try RequestTarget.parameter("appUserId", of: context)
                return try self.customerAnswer(user: user, ReadClocks(request, endpoint)).response
            }
        case .why: return { try self.why($0, $1) }
        case .customerRevenue:
            return { request, context in
                let user = try RequestTarget.parameter("appUserId", of: context)
                return try self.revenueAnswer(user: user, RevenueQuery(request, endpoint)).response
            }
        case .appendGrant: return { try await self.appendGrant($0, $1) }
        case .grants: return { try self.grants($0, $1) }
        case .forget: return { try await self.forget($0, $1) }
        case .transaction: return { try self.transaction($0, $1) }
        case .events: return { try self.events($0, $1) }
        case .lifecycle: return { try self.lifecycle($0, $1) }
        case .revenue: return { request, _ in try self.revenueAnswer(user: nil, RevenueQuery(request, endpoint)).response }
        case .metrics:
            return { request, context in
                try self.metricsAnswer(name: try RequestTarget.parameter("name", of: context), request).response
            }
        case .health:
            return { request, _ in
                try Self.checkQuery(RequestTarget.query(request).map(\.key), endpoint)
                return try self.healthAnswer().response
            }
        case .prometheus:
            return { request, _ in
                try Self.checkQuery(RequestTarget.query(request).map(\.key), endpoint)
                return Response(
                    status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                    body: ResponseBody(byteBuffer: ByteBuffer(bytes: self.metrics.render(self.ledger))))
            }
        case .console:
            return { request, _ in self.consolePage(path: request.uri.path) { try self.consoleOverview(request) } }
        case .consoleCustomers:
            return { request, _ in self.consolePage(path: request.uri.path) { try self.consoleCustomer(request) } }
        case .consoleSubscription:
            return { request, context in
                let otid = try RequestTarget.parameter("otid", of: context)
                return self.consolePage(path: request.uri.path) { try self.consoleSubscription(otid: otid, request) }
            }
        }
    }

    // MARK: - Shared steps of the write routes

    /// Refuses writers outside the allow-list (when one is configured) with 403.
    func authorizeWriter(_ context: LedgerRequestContext) async throws {
        let writers = configuration.writers
        guard writers.restricted else { return }
        guard let peer = await context.peerCredentials() else {
            throw CodedError(.forbidden, "writers are restricted and the peer's credentials are unknown")
        }
        guard writers.uids.contains(peer.uid) || writers.gids.contains(peer.gid) else {
            throw CodedError(.forbidden, "uid \(peer.uid) gid \(peer.gid) may not write to this ledger")
        }
    }

    /// Media types a write route accepts; a missing Content-Type is taken as JSON.
    static let acceptedMediaTypes: Set<String> = [
        "application/json", "application/x-ndjson", "application/ndjson", "text/plain", "application/jose",
    ]

    /// Refuses bodies of another media type with 415; true when the body is sent as JSON (`application/json`, any
    /// parameters, or no Content-Type).
    @discardableResult
    func checkContentType(_ request: Request) throws -> Bool {
        guard let value = request.headers[.contentType] else { return true }
        let base = Self.mediaType(value)
        guard Self.acceptedMediaTypes.contains(base) else {
            throw CodedError(
                .unsupportedMediaType,
                "content type '\(value)' is not accepted; use application/json, application/x-ndjson or text/plain")
        }
        return base == "application/json"
    }

    /// The media type of a Content-Type value: what comes before its parameters, without the spaces and tabs around
    /// it, in lower case (type and subtype are case-insensitive, RFC 9110 §8.3.1). Read as bytes: every write reads
    /// it, and Foundation's trimming cost more than the rest of the request's head.
    static func mediaType(_ value: String) -> String {
        trimmedLowercased(value.utf8.prefix { $0 != UInt8(ascii: ";") })
    }

    /// `text` without the spaces and tabs around it, its ASCII letters in lower case.
    static func trimmedLowercased(_ text: Substring.UTF8View) -> String {
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = text.firstIndex(where: { !isBlank($0) }), let last = text.lastIndex(where: { !isBlank($0) })
        else { return "" }
        return String(
            decoding: text[first...last].lazy.map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 | 0x20 : $0 },
            as: UTF8.self)
    }

    /// What arrived of a request body, kept for the `rejected` record when the request is refused.
    struct ReceivedBody {
        /// The bytes read (at most the limit and one more buffer).
        var bytes: [UInt8] = []
        /// The body's size as far as known: the bytes read, or the declared Content-Length when it was not read.
        var size = 0
    }

    /// The whole body, refused with 413 as soon as it grows past the limit, or 400 `invalid_body` when its framing
    /// does not parse. `received` holds what arrived either way. A declared size over the limit (or too large to be
    /// a number) is refused at once, before any of the body is read (the connection closes, so it never is).
    func collectBody(_ request: Request, into received: inout ReceivedBody) async throws -> [UInt8] {
        let limit = configuration.limits.maxBodyBytes
        let keep = min(limit, RejectedInput.keptBytesLimit)
        let declaredText = request.headers[.contentLength]
        let declared = declaredText.flatMap(Int.init)
        let declaredTooLarge = declared.map { $0 > limit } ?? (declaredText != nil)
        if let codings = request.headers[.transferEncoding] {
            // HTTP/1.1 frames a request body by Content-Length or `chunked` alone; a body in another coding (gzip)
            // would reach the decoders as bytes they cannot read (RFC 9112 §6.1: 501 for a coding not understood).
            let names = codings.split(separator: ",").map { Self.trimmedLowercased($0.utf8) }
            if names != ["chunked"] {
                throw CodedError(
                    .unsupportedTransferEncoding,
                    "Transfer-Encoding '\(codings)' is not supported; send the body plain with Content-Length, or chunked")
            }
        }
        if declaredTooLarge {
            // Refused at its head, without waiting for a body that may be trickled, or never come (a client that
            // sent `Expect: 100-continue` waits for an answer first): the record keeps its declared size.
            received = ReceivedBody(bytes: [], size: declared ?? Int.max)
            throw Self.tooLarge(limit)
        }
        var body: [UInt8] = []
        // One allocation for a declared body, as `collect(upTo:)` made, rather than doubling through its buffers.
        body.reserveCapacity(min(declared ?? 0, declaredTooLarge ? keep : limit))
        do {
            for try await buffer in request.body {
                body.append(contentsOf: buffer.readableBytesView)
                if body.count > limit || (declaredTooLarge && body.count >= keep) { break }
            }
        } catch let error as HTTPParserError {
            received = ReceivedBody(bytes: body, size: body.count)
            throw CodedError(
                .invalidBody, "the request body does not parse (\(error)); send a Content-Length or valid chunks")
        } catch is NIOTooManyBytesError {
            received = ReceivedBody(bytes: body, size: body.count)
            throw Self.tooLarge(limit)
        }
        received = ReceivedBody(bytes: body, size: max(body.count, declared ?? 0))
        if body.count > limit || declaredTooLarge { throw Self.tooLarge(limit) }
        return body
    }

    static func tooLarge(_ limit: Int) -> CodedError {
        CodedError(.tooLarge, "the request body exceeds \(limit) bytes")
    }

    /// Keeps a refused request in `rejected` for the auditor: its method and target, the size of its header fields,
    /// the code and message it was answered with, and the first bytes of its body. A failure to record (a full
    /// disk, a full queue) is logged; the caller still gets the refusal's own answer.
    func recordRefusal(_ error: CodedError, _ request: Request, _ received: ReceivedBody) async {
        let keep = min(configuration.limits.maxBodyBytes, RejectedInput.keptBytesLimit)
        var rejection = RejectedInput(
            raw: received.bytes.prefix(keep), code: error.code, message: error.message,
            receivedAt: currentMillis())
        rejection.size = max(received.size, rejection.raw.count)
        rejection.request = "\(request.method) \(request.head.path ?? request.uri.description)"
        rejection.headerBytes = request.headers.reduce(0) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count + 4 }
        await record(rejection)
    }

    /// Keeps a request head that did not parse (a garbage request line, header fields over the limits) in
    /// `rejected`: the bytes of the head as received (up to 16 KiB), its first line, and its size. Called on the
    /// connection's event loop just before the connection closes; peers that may not write leave no record.
    func recordMalformedHead(_ channel: any Channel, head: [UInt8], message: String) {
        let peer = PeerCredentials.reading(channel)
        let writers = configuration.writers
        let receivedAt = currentMillis()
        Task {
            if writers.restricted {
                guard let peer = try? await peer.get(), writers.uids.contains(peer.uid) || writers.gids.contains(peer.gid)
                else { return }
            }
            var rejection = RejectedInput(
                raw: head, code: .badRequest, message: message, receivedAt: receivedAt)
            let line = head.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }.prefix(512)
            rejection.request = String(decoding: line, as: UTF8.self)
            rejection.headerBytes = head.count
            await self.record(rejection)
        }
    }

    /// Appends one refusal; never throws.
    func record(_ rejection: RejectedInput) async {
        do {
            _ = try await ledger.append([.rejected(rejection)])
        } catch {
            logger.warning(
                "a refused request could not be kept in rejected",
                metadata: ["code": "\(rejection.code)", "error": "\(error)"])
        }
    }

    /// Appends through the writer; store failures become 503 (with Retry-After) or 500.
    /// Appends the inputs decoded from `raws` with `options`: through the replicated intake when there is one
    /// (which needs the raw bytes and options, as every replica decodes them again), else to the ledger.
    func append(_ inputs: [LedgerInput], raws: [ArraySlice<UInt8>], options: IngestPipeline.Options) async throws
        -> [AppendResult]
    {
        guard let intake else { return try await append(inputs) }
        let results = try await intake.append(inputs, raws: raws, options: options)
        metrics.record(results)
        return results
    }

    func append(_ inputs: [LedgerInput]) async throws -> [AppendResult] {
        let outcome: Result<[AppendResult], LedgerError>
        do {
            outcome = .success(try await ledger.append(inputs))
        } catch let error as LedgerError {
            outcome = .failure(error)
        }
        return try appended(outcome)
    }

    /// The results of an append, counted; or its failure logged (a full queue and a closing ledger are
    /// back-pressure, not faults) and thrown as the refusal it answers with.
    func appended(_ outcome: Result<[AppendResult], LedgerError>) throws(CodedError) -> [AppendResult] {
        switch outcome {
        case .success(let results):
            metrics.record(results)
            return results
        case .failure(let error):
            if error.code != .overloaded && error.code != .shuttingDown {
                logger.error("append failed", metadata: ["code": "\(error.code)", "message": "\(error.message)"])
            }
            throw CodedError(error)
        }
    }

    /// `type` (`POST /v1/events` only), `appUserId` and `receivedAt` from the query string of a request to
    /// `endpoint`.
    func ingestOptions(_ request: Request, _ endpoint: Endpoint, forcedType: InputType? = nil) throws
        -> IngestPipeline.Options
    {
        let query = try RequestTarget.query(request)
        try Self.checkQuery(query.map(\.key), endpoint)
        var options = IngestPipeline.Options(forcedType: forcedType)
        if let type = query["type"] {
            guard let t = InputType(rawValue: String(type)) else {
                throw CodedError(
                    .invalidQuery, "type must be one of \(InputType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            options.forcedType = t
        }
        if let user = query["appUserId"] {
            guard !user.isEmpty, user.utf8.count <= 1024 else {
                throw CodedError(.invalidQuery, "appUserId must be 1 to 1024 bytes long")
            }
            options.appUserId = AppUserID(String(user))
        }
        if let at = query["receivedAt"] {
            guard let ms = Instant.parse(String(at)) else {
                throw CodedError(.invalidQuery, "receivedAt must be milliseconds since epoch, ISO-8601 or a date YYYY-MM-DD")
            }
            options.receivedAt = ms
        }
        return options
    }
}

// MARK: - Query parameters

extension LedgerRoutes {
    /// `name`'s value (`at`, `from`, `to`) as an instant within `Instant.queryRange`; `invalid_query` names the
    /// parameter and the range otherwise.
    static func instantQuery(_ name: String, _ text: Substring, timeZone: TimeZone = Instant.utc) throws -> UnixMillis {
        guard let ms = Instant.parseInQueryRange(String(text), timeZone: timeZone) else {
            throw CodedError(
                .invalidQuery,
                "\(name) must be milliseconds since epoch, ISO-8601 or a date YYYY-MM-DD within \(Instant.queryRangeText)")
        }
        return ms
    }

    /// `name`'s value (`after`, `asOf`) as a log sequence number in 0...`QuerySeq.max`; `invalid_query` names the
    /// parameter and the range otherwise.
    static func seqQuery(_ name: String, _ text: Substring) throws -> UInt64 {
        guard let seq = UInt64(text), seq <= QuerySeq.max else {
            throw CodedError(.invalidQuery, "\(name) must be a log sequence number in \(QuerySeq.rangeText)")
        }
        return seq
    }

    /// Refuses the first of `names` that `endpoint` does not read, and a name given twice: which of two values was
    /// meant (two `appUserId`s claiming for two users, two `at`s) is not for the server to guess. A misspelt `asof`
    /// or `apUserId` ignored would answer another question than the one asked, or claim for nobody, and look like
    /// success.
    static func checkQuery(_ names: some Sequence<Substring>, _ endpoint: Endpoint) throws {
        let known = endpoint.query
        var seen = Set<Substring>()
        for name in names {
            guard known.contains(where: { $0.utf8.elementsEqual(name.utf8) }) else {
                let takes = known.isEmpty ? "takes no query parameters" : "takes " + known.joined(separator: ", ")
                throw CodedError(.invalidQuery, "unknown query parameter '\(name)': \(endpoint.route) \(takes)")
            }
            guard seen.insert(name).inserted else {
                throw CodedError(.invalidQuery, "query parameter '\(name)' is given twice: give it once")
            }
        }
    }
}

// MARK: - Middlewares

/// Turns every error into the socket API's `{"error":{"code","message"}}` document; a failing request never escapes as
/// anything else, and never takes the server down.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = LedgerRequestContext
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch {
            return Self.answer(error, method: request.method, path: request.uri.path, logger: logger).response
        }
    }

    /// The error document for `error` (the fast path refuses through this too).
    static func answer(_ error: any Error, method: HTTPRequest.Method, path: @autoclosure () -> String, logger: Logger)
        -> BufferedResponse
    {
        let refusal = refusal(error, method: method, path: path(), logger: logger)
        return HTTPErrors.buffered(refusal.error, status: refusal.status, closesConnection: refusal.closesConnection)
    }

    /// What `error` refuses a request with: its code and message, and the status and connection handling when they
    /// are not the code's own (`HTTPErrors.answer(for:)`). The JSON answers and the console's error pages both say
    /// this.
    static func refusal(_ error: any Error, method: HTTPRequest.Method, path: @autoclosure () -> String, logger: Logger)
        -> (error: CodedError, status: HTTPResponse.Status?, closesConnection: Bool?)
    {
        switch error {
        case let error as CodedError:
            return (error, nil, nil)
        case let error as HTTPError:
            // Hummingbird's own refusals (no route, wrong method) keep their status, under the code it names.
            let code: ErrorCode
            switch error.status {
            case .notFound: code = .notFound
            case .methodNotAllowed: code = .methodNotAllowed
            case .contentTooLarge: code = .tooLarge
            case .badRequest: code = .badRequest
            default: code = ErrorCode("http_\(error.status.code)")
            }
            let message =
                error.body
                ?? (error.status == .notFound ? "no route for \(method) \(path())" : error.status.reasonPhrase)
            return (CodedError(code, message), error.status, false)
        case let error as HTTPParserError:
            // A body that does not parse, on a route that does not read it through `collectBody`: the caller's fault.
            return (CodedError(.invalidBody, "the request does not parse (\(error))"), nil, nil)
        case is NIOTooManyBytesError:
            return (CodedError(.tooLarge, "the request body is too large"), nil, false)
        default:
            // A store or LMDB failure answers with its own code (`corrupted` on a damaged page, `storage_error`, …),
            // not a bare `internal`: the operator reading it knows what to do.
            let failure = LedgerError.from(error)
            logger.error(
                "request failed",
                metadata: ["method": "\(method)", "path": "\(path())", "code": "\(failure.code)", "error": "\(error)"])
            guard failure.code == .failed else { return (CodedError(failure), nil, nil) }
            return (CodedError(.internal, "\(error)"), nil, nil)
        }
    }
}

/// Times every request into `storeledger_request_duration_seconds{method,route,status}` and logs it at debug.
struct RequestMetricsMiddleware: RouterMiddleware {
    typealias Context = LedgerRequestContext
    let metrics: ServerMetrics
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let start = DispatchTime.now().uptimeNanoseconds
        let response = try await next(request, context)
        let elapsed = DispatchTime.now().uptimeNanoseconds &- start
        Self.answered(
            method: request.method, path: request.uri.path, route: context.endpointPath ?? "unmatched",
            status: response.status, nanoseconds: elapsed, metrics: metrics, logger: logger)
        return response
    }

    /// Records and logs one answered request.
    static func answered(
        method: HTTPRequest.Method, path: @autoclosure () -> String, route: String, status: HTTPResponse.Status,
        nanoseconds elapsed: UInt64, metrics: ServerMetrics, logger: Logger
    ) {
        answered(
            method: method, path: path(), route: route, status: status, nanoseconds: elapsed,
            timer: metrics.requestTimer(method: method.rawValue, route: route, status: status.code), logger: logger)
    }

    /// Records one answered request into `timer` (its series: the fast path keeps them) and logs it.
    static func answered(
        method: HTTPRequest.Method, path: @autoclosure () -> String, route: String, status: HTTPResponse.Status,
        nanoseconds elapsed: UInt64, timer: CoreMetrics.Timer, logger: Logger
    ) {
        timer.recordNanoseconds(Int64(clamping: elapsed))
        // 503 is back-pressure (a full writer queue, shutting down), not a fault: it is counted, not logged as one;
        // 501 (a transfer coding the server does not speak) is the caller's.
        if status.code >= 500 && status != .serviceUnavailable && status != .notImplemented {
            logger.error(
                "request failed", metadata: ["method": "\(method)", "path": "\(path())", "status": "\(status.code)"])
        } else {
            logger.debug(
                "request",
                metadata: [
                    "method": "\(method)", "path": "\(path())", "status": "\(status.code)", "micros": "\(elapsed / 1000)",
                ])
        }
    }
}

/// How many followers stream right now. A follower holds its place as a `Place`, which gives it back when released
/// and, whatever ends the connection first (the peer closing before the streamed body starts, during it, a timeout,
/// the server shutting down), when the answer that holds it is dropped: a place is never kept by a connection that is
/// gone.
final class FollowerCount: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    /// Told the number after every change (the `storeledger_event_followers` gauge).
    private let changed: @Sendable (Int) -> Void

    init(changed: @escaping @Sendable (Int) -> Void = { _ in }) { self.changed = changed }

    /// One follower's place, given back once.
    final class Place: @unchecked Sendable {
        private let owner: FollowerCount
        private let lock = NSLock()
        private var held = true

        fileprivate init(_ owner: FollowerCount) { self.owner = owner }

        deinit { release() }

        func release() {
            let wasHeld = lock.withLock {
                defer { held = false }
                return held
            }
            if wasHeld { owner.leave() }
        }
    }

    /// Takes a place if fewer than `limit` are taken.
    func enter(limit: Int) -> Place? {
        let now: Int? = lock.withLock {
            guard count < limit else { return nil }
            count += 1
            return count
        }
        guard let now else { return nil }
        changed(now)
        return Place(self)
    }

    private func leave() {
        changed(lock.withLock {
            count -= 1
            return count
        })
    }
}
