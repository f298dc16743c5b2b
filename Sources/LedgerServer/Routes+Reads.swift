import Foundation
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerErrors
import Logging
import NIOCore

// MARK: - GET /v1/subscriptions/{otid}, /v1/customers/{appUserId}

extension LedgerRoutes {
    /// The two clocks and the environment of a projection read: `at` (valid time, default now), `asOf` (a log
    /// seq, default everything known), `environment` (default Production).
    struct ReadClocks {
        var at: UnixMillis
        var asOf: UInt64?
        var environment: AppStoreEnvironment

        /// - Parameters:
        ///   - endpoint: the endpoint read (`GET /v1/customers/{appUserId}`), whose parameters these are.
        ///   - names: every query parameter's name, in the order given; one the route does not read is refused.
        ///   - query: a query parameter's value by name (decoded by `RequestTarget.query`, or the fast path's
        ///     own parse of a query it takes).
        init(_ endpoint: Endpoint, names: some Sequence<Substring>, query: (String) -> Substring?) throws {
            try LedgerRoutes.checkQuery(names, endpoint)
            at = try query("at").map { try LedgerRoutes.instantQuery("at", $0) } ?? currentMillis()
            asOf = try query("asOf").map { try LedgerRoutes.seqQuery("asOf", $0) }
            if let text = query("environment") {
                guard let env = AppStoreEnvironment(appleName: String(text)) else {
                    throw CodedError(.invalidQuery, "environment must be Production, Sandbox, Xcode or LocalTesting")
                }
                environment = env
            } else {
                environment = .production
            }
        }

        init(_ request: Request, _ endpoint: Endpoint) throws {
            let query = try RequestTarget.query(request)
            try self.init(endpoint, names: query.map(\.key)) { query[Substring($0)] }
        }
    }

    // The hot reads, shared by the router and the fast path (`FastPathHandler`), so both answer alike.

    /// A hot read's 200 answer: its body with the clocks to write into it.
    struct ClockedRead {
        var body: ClockedAnswer
        var at: UnixMillis
        var asOf: UInt64

        var buffered: BufferedResponse {
            var buffer = ByteBuffer()
            let count = body.count(at: at, asOf: asOf)
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
                body.write(at: at, asOf: asOf, to: raw.baseAddress!)
            }
            return BufferedResponse(status: .ok, contentType: "application/json", body: buffer)
        }

        /// The whole answer, as `buffered` with its head written by `BufferedResponse.writeHead`, in one pass: the
        /// body written in place with its clocks (no body buffer, no field list).
        func writeAnswer(date: String, to out: inout ByteBuffer) {
            let count = body.count(at: at, asOf: asOf)
            let length = String(count)
            let size = Self.okHead.utf8CodeUnitCount + length.utf8.count + 8 + date.utf8.count + 4 + count
            out.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { raw in
                var head = ByteCopier(to: UnsafeMutableRawBufferPointer(rebasing: raw[..<size]))
                head.put(Self.okHead)
                head.put(length)
                head.put("\r\nDate: ")
                head.put(date)
                head.put("\r\n\r\n")
                precondition(head.written + count == size, "an answer of another size than the room computed for it")
                return head.written + body.write(at: at, asOf: asOf, to: raw.baseAddress! + head.written)
            }
        }

        /// What `BufferedResponse.writeHead` writes for `buffered`'s head up to its `Content-Length` value.
        static let okHead: StaticString = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
    }

    /// `GET /v1/subscriptions/{otid}` from the answer cache (nil when there is none).
    func subscriptionRead(otid: String, _ clocks: ReadClocks) throws -> ClockedRead? {
        guard let answers else { return nil }
        guard
            let (body, asOf) = try read({
                try answers.timeline(
                    OriginalTransactionID(otid), environment: clocks.environment, at: clocks.at, asOf: clocks.asOf,
                    answer: ClockedAnswer.init)
            })
        else {
            throw CodedError(.notFound, "no \(clocks.environment.rawValue) subscription \(otid) is known")
        }
        return ClockedRead(body: body, at: clocks.at, asOf: asOf)
    }

    /// `GET /v1/customers/{appUserId}` from the answer cache (nil when there is none).
    func customerRead(user: String, _ clocks: ReadClocks) throws -> ClockedRead? {
        guard let answers else { return nil }
        let (body, asOf) = try read {
            try answers.customer(
                AppUserID(user), environment: clocks.environment, at: clocks.at, asOf: clocks.asOf,
                answer: ClockedAnswer.init)
        }
        return ClockedRead(body: body, at: clocks.at, asOf: asOf)
    }

    /// `GET /v1/subscriptions/{otid}`.
    func subscriptionAnswer(otid: String, _ clocks: ReadClocks) throws -> BufferedResponse {
        if let kept = try subscriptionRead(otid: otid, clocks) { return kept.buffered }
        let view = try timelineView(otid: otid, clocks)
        return JSONBody.buffered(view)
    }

    /// The subscription's timeline at the request's clocks; `not_found` when nothing is known of it.
    private func timelineView(otid: String, _ clocks: ReadClocks) throws -> TimelineView {
        guard
            let view = try read({
                try ledger.timeline(
                    OriginalTransactionID(otid), environment: clocks.environment, at: clocks.at, asOf: clocks.asOf)
            })
        else {
            throw CodedError(.notFound, "no \(clocks.environment.rawValue) subscription \(otid) is known")
        }
        return view
    }

    /// `GET /v1/customers/{appUserId}`.
    func customerAnswer(user: String, _ clocks: ReadClocks) throws -> BufferedResponse {
        if let kept = try customerRead(user: user, clocks) { return kept.buffered }
        let view = try read {
            try ledger.customer(AppUserID(user), environment: clocks.environment, at: clocks.at, asOf: clocks.asOf)
        }
        return JSONBody.buffered(view)
    }

    /// `GET /v1/subscriptions/{otid}/timeline.svg` and `.html`: the timeline's picture (`TimelinePicture`).
    func pictureAnswer(otid: String, _ clocks: ReadClocks, page: Bool, contentType: String) throws -> Response {
        let view = try timelineView(otid: otid, clocks)
        let picture = TimelinePicture(view)
        return Self.document(.ok, contentType: contentType, page ? picture.html : picture.svg)
    }

    /// `GET /v1/health`.
    func healthAnswer() throws -> BufferedResponse {
        let seq = try read { try ledger.lastSeq() }
        return JSONBody.buffered(HealthDocument(lastSeq: seq))
    }

    /// `GET /v1/subscriptions/{otid}/timeline.svg` (`page` false) and `.html` (true).
    func picture(_ request: Request, _ context: LedgerRequestContext, _ endpoint: Endpoint, page: Bool) throws
        -> Response
    {
        let otid = try RequestTarget.parameter("otid", of: context)
        return try pictureAnswer(
            otid: otid, ReadClocks(request, endpoint), page: page,
            contentType: page ? "text/html; charset=utf-8" : "image/svg+xml; charset=utf-8")
    }

    /// `GET /v1/customers/{appUserId}/entitlements/{entitlement}/why`: why a customer has, or has not, an
    /// entitlement (`Entitlements.explain`).
    func why(_ request: Request, _ context: LedgerRequestContext) throws -> Response {
        let user = try RequestTarget.parameter("appUserId", of: context)
        let entitlement = try RequestTarget.parameter("entitlement", of: context)
        let clocks = try ReadClocks(request, .why)
        let explanation = try read {
            try ledger.explain(
                AppUserID(user), entitlement: entitlement, environment: clocks.environment, at: clocks.at,
                asOf: clocks.asOf)
        }
        return JSONBody.buffered(explanation).response
    }

    /// `GET /v1/transactions/{transactionId}`: every revision recorded under the transaction's id.
    func transaction(_ request: Request, _ context: LedgerRequestContext) throws -> Response {
        try Self.checkQuery(RequestTarget.query(request).map(\.key), .transaction)
        let id = try RequestTarget.parameter("transactionId", of: context)
        let events = try read { try ledger.log.events(key: id) }
        guard !events.isEmpty else { throw CodedError(.notFound, "no event is recorded for transaction \(id)") }
        return try JSONBody.response(
            encoding: TransactionDocument(transactionId: id, events: events.map { EventDocument($0) }))
    }

    /// Runs a store read; its failures become coded refusals (a damaged ledger is a 500, never a crash).
    func read<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as LedgerError {
            logger.error("read failed", metadata: ["code": "\(error.code)", "message": "\(error.message)"])
            throw CodedError(error)
        }
    }
}

// MARK: - GET /v1/events

extension LedgerRoutes {
    /// The parameters of the NDJSON streams (`GET /v1/events`, `GET /v1/lifecycle`): `after` a log seq (default 0,
    /// `seqQuery`), `limit` a positive count, `follow` a boolean (default false), `timeout` seconds in
    /// (0, `maxFollowSeconds`]; `invalid_query` names the one that is not, and its range.
    static func streamQuery(_ query: Parameters) throws -> (after: UInt64, limit: Int?, follow: Bool, timeout: Double?) {
        let after: UInt64 = try query["after"].map { try seqQuery("after", $0) } ?? 0
        let limit: Int? = try query["limit"].map { text -> Int in
            guard let v = Int(text), v > 0 else {
                throw CodedError(.invalidQuery, "limit must be an integer in 1...\(Int.max)")
            }
            return v
        }
        let follow: Bool = try query["follow"].map { text -> Bool in
            switch text {
            case "true", "1": return true
            case "false", "0": return false
            default: throw CodedError(.invalidQuery, "follow must be true or false")
            }
        } ?? false
        let timeout: Double? = try query["timeout"].map { text -> Double in
            // `Double` also reads `inf`, `nan` and `1e308`, which no deadline can be made of.
            guard let v = Double(text), v.isFinite, v > 0, v <= maxFollowSeconds else {
                throw CodedError(
                    .invalidQuery, "timeout must be a number of seconds greater than 0 and at most \(Int(maxFollowSeconds))")
            }
            return v
        }
        return (after, limit, follow, timeout)
    }

    /// The longest `timeout` of a followed stream: a day. A stream meant to last longer leaves `timeout` out.
    static let maxFollowSeconds = 86_400.0

    /// Events per read transaction while streaming.
    static let eventPage = 1_000
    /// Largest `limit` without `follow`.
    static let maxEventLimit = 10_000

    /// NDJSON of events after `after`, at most `limit` (default 1000). With `follow=true` the answer streams: events
    /// are written as they commit until `limit` events were sent (if given), `timeout` seconds passed (if given), the
    /// client goes away, or the server shuts down.
    func events(_ request: Request, _ context: LedgerRequestContext) throws -> Response {
        try stream(request, context, .events) { [self] after, limit in
            let events = try read { try ledger.log.events(after: after, limit: limit) }
            var lines = ByteBuffer()
            for e in events { try Self.writeLine(EventDocument(e), to: &lines) }
            return StreamPage(lines: lines, count: events.count, next: events.last?.event.seq ?? after)
        }
    }

    /// One page of an NDJSON stream: its lines, how many items they hold, and the `after` of the next page.
    struct StreamPage {
        var lines: ByteBuffer
        var count: Int
        var next: UInt64
    }

    /// The answer of a stream endpoint (`GET /v1/events`, `GET /v1/lifecycle`) to `request`'s query:
    /// one page of at most `limit` (default 1000) items after `after`; with `follow=true` pages written as they
    /// commit, until `limit` items were sent (if given), `timeout` seconds passed (if given), the client goes away,
    /// or the server shuts down.
    func stream(
        _ request: Request, _ context: LedgerRequestContext, _ endpoint: Endpoint,
        page: @escaping @Sendable (_ after: UInt64, _ limit: Int) throws -> StreamPage
    ) throws -> Response {
        let query = try RequestTarget.query(request)
        try Self.checkQuery(query.map(\.key), endpoint)
        let (after, limit, follow, timeout) = try Self.streamQuery(query)
        let headers: HTTPFields = [.contentType: "application/x-ndjson"]
        guard follow else {
            let first = try page(after, min(limit ?? Self.eventPage, Self.maxEventLimit))
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: first.lines))
        }

        guard let place = followers.enter(limit: Self.maxFollowers) else {
            // A follower holds its place for long: wait longer than for a full writer queue.
            return HTTPErrors.response(
                CodedError(.overloaded, "too many followers (\(Self.maxFollowers))"), retryAfter: 5)
        }
        let channel = context.channel
        let deadline = timeout.map { ContinuousClock.now + .milliseconds(Int64($0 * 1000)) }
        let body = ResponseBody { [self] writer in
            defer { place.release() }
            var cursor = after
            var sent = 0
            streaming: while true {
                let next = try page(cursor, min(Self.eventPage, limit.map { $0 - sent } ?? Self.eventPage))
                cursor = next.next
                if next.count > 0 {
                    try await writer.write(next.lines)
                    sent += next.count
                    if let limit, sent >= limit { break streaming }
                    continue
                }
                if commits.isClosed || channel?.isActive == false { break }
                var wait = Duration.seconds(1)
                if let deadline {
                    let left = deadline - ContinuousClock.now
                    if left <= .zero { break }
                    wait = min(wait, left)
                }
                await commits.wait(after: cursor, timeout: wait)
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    /// One NDJSON line: the event's JSON text and a newline.
    static func writeLine(_ event: EventDocument, to buffer: inout ByteBuffer) throws {
        buffer.writeBytes(try JSONWriter.bytes(encoding: event))
        buffer.writeString("\n")
    }
}

// MARK: - GET /v1/lifecycle

extension LedgerRoutes {
    /// NDJSON of the lifecycle events said after log seq `after`, at most `limit` (default 1000) plus the rest of
    /// the last seq's; with `follow=true` streamed as they commit, as `GET /v1/events` streams events. A client
    /// resumes with `after` = the `seq` of the last line it handled (events of that seq may come again: ids make
    /// them idempotent).
    func lifecycle(_ request: Request, _ context: LedgerRequestContext) throws -> Response {
        try stream(request, context, .lifecycle) { [self] after, limit in
            let page = try read { try ledger.lifecycleEvents(after: after, limit: limit) }
            var lines = ByteBuffer()
            for e in page.events { Self.writeLine(e, to: &lines) }
            return StreamPage(lines: lines, count: page.events.count, next: page.next)
        }
    }

    /// One NDJSON line: the lifecycle event's JSON text and a newline.
    static func writeLine(_ event: LifecycleEvent, to buffer: inout ByteBuffer) {
        buffer.writeBytes(JSONWriter.bytes(of: event))
        buffer.writeString("\n")
    }
}
