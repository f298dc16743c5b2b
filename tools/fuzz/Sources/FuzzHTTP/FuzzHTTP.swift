#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import FuzzSupport
import Hummingbird
import LedgerAPI
import LedgerClient
import LedgerServer
import LedgerStore
import TestFixtures
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

// MARK: - The HTTP request path, without a socket

/// The bytes a client writes on a connection go through the handlers Hummingbird's `HTTP1Channel` installs (NIO's
/// HTTP/1.1 decoder, then the conversion to HTTP types), in an `EmbeddedChannel`; every request decoded from them is
/// answered by the ledger's router (`LedgerRoutes.makeRouter()`) over one ledger kept for the whole run, and the answer's
/// body is written out in full. A trap anywhere is a finding, and so is a 500: every refusal the API knows has a
/// 4xx or 503 code.
///
/// The same bytes also go, unchanged, to a `LedgerService` over a Unix socket (`SocketLeg`): the server's own
/// connection handlers, NIO's decoder, the fast path and the router, as a client reaches them.
///
/// Left out: `follow=true` (a stream that ends only when the server stops).
final class Harness: Sendable {
    let api: LedgerRoutes
    let responder: RouterResponder<LedgerRequestContext>
    let logger: Logger
    /// The channel every request's context names. One for the run: a channel that is never closed keeps its
    /// pipeline (and the pipeline it), so one per request grows the process with every request.
    let contextChannel = EmbeddedChannel()

    init() {
        var logger = Logger(label: "fuzz.http")
        logger.logLevel = .critical
        self.logger = logger
        let directory = NSTemporaryDirectory() + "storeledger-fuzz-http-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        var options = Ledger.Options()
        // Durability is not what is fuzzed; an fsync per input would make the run a hundred times slower.
        options.unsafeNoSync = true
        let ledger = try! Ledger(directory: directory, options: options, logger: logger)
        api = LedgerRoutes(ledger: ledger, configuration: LedgerConfiguration(), logger: logger)
        responder = api.makeRouter().buildResponder()
    }

    /// The requests NIO decodes from `bytes`, as the server would see them (stopping where the decoder gives up:
    /// the server closes such a connection).
    func requests(in bytes: [UInt8]) -> [Request] {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        do {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init())
            try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
        } catch {
            preconditionFailure("cannot set up the HTTP pipeline: \(error)")
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

    /// Answers `request` through the router and writes its body out; returns the status.
    func answer(_ request: Request) -> Int {
        let semaphore = DispatchSemaphore(value: 0)
        let status = Box()
        let context = LedgerRequestContext(source: .init(channel: contextChannel, logger: logger))
        Task { [responder] in
            defer { semaphore.signal() }
            let response: Response
            do {
                response = try await responder.respond(to: request, context: context)
            } catch let error as any HTTPResponseError {
                response = (try? error.response(from: request, context: context)) ?? Response(status: .internalServerError)
            } catch {
                response = Response(status: .internalServerError)
            }
            status.value = response.status.code
            try? await response.body.write(Discarding())
        }
        semaphore.wait()
        return status.value
    }
}

/// The status, handed from the request's task to the fuzzer's thread (after the semaphore: no race).
final class Box: @unchecked Sendable {
    var value = 0
}

/// A response body writer that reads everything and keeps nothing.
struct Discarding: ResponseBodyWriter {
    mutating func write(_ buffer: ByteBuffer) async throws {}
    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}

// MARK: - The same bytes through the server

/// A `LedgerService` on a Unix socket over the harness's ledger, with short timeouts. Each input's bytes are
/// written to a new connection, which then closes its sending side: the server must answer what it decoded (each
/// answer `HTTP/1.1`, none a 5xx but 501 and 503) and close the connection within 10 s, and a new connection must
/// then get `GET /v1/health` answered 200 (the server still serves).
final class SocketLeg: @unchecked Sendable {
    let service: LedgerService
    let path: String

    init(ledger: Ledger, logger: Logger) {
        path = NSTemporaryDirectory() + "storeledger-fuzz-http-\(getpid()).sock"
        unlink(path)
        var configuration = LedgerConfiguration()
        configuration.limits.headerTimeoutSeconds = 2
        configuration.limits.requestTimeoutSeconds = 3
        configuration.limits.idleTimeoutSeconds = 2
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
    }

    func send(_ bytes: [UInt8]) {
        guard let connection = try? RawConnection(path) else { fatalError("cannot connect to \(path)") }
        _ = connection.send(bytes)
        shutdown(connection.fd, Int32(SHUT_WR))
        let (text, closed) = connection.readUntilClosed(seconds: 10)
        finding(closed, "the server kept a half-closed connection open 10 s; it answered: \(text.prefix(300))")
        finding(text.isEmpty || text.hasPrefix("HTTP/1.1 "), "an answer that is not HTTP/1.1: \(text.prefix(300))")
        for answer in text.components(separatedBy: "HTTP/1.1 ").dropFirst() {
            // Bodies are JSON or an SVG picture: neither holds an `HTTP/1.1 ` followed by a status and its reason.
            guard let status = Int(answer.prefix(3)), answer.dropFirst(3).hasPrefix(" ") else { continue }
            finding(status < 500 || status == 501 || status == 503, "\(status) from the server: \(answer.prefix(300))")
        }
        guard let probe = try? RawConnection(path) else { fatalError("the server stopped accepting on \(path)") }
        _ = probe.send("GET /v1/health HTTP/1.1\r\nHost: fuzz\r\n\r\n")
        let health = probe.readAnswer(seconds: 5) ?? "no answer in 5 s"
        finding(health.hasPrefix("HTTP/1.1 200 "), "GET /v1/health after the input: \(health.prefix(300))")
    }
}

let harness = Harness()
let socketLeg = SocketLeg(ledger: harness.api.ledger, logger: harness.logger)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let requests = harness.requests(in: bytes)
    for request in requests.prefix(8) {
        if request.uri.queryParameters["follow"] != nil { continue }
        let status = harness.answer(request)
        precondition(status != 500, "500 for \(request.method) \(request.uri)")
    }
    // Through the server when no request asks for a stream that would not end.
    if !requests.contains(where: { $0.uri.queryParameters["follow"] != nil }) { socketLeg.send(bytes) }
    return 0
}

/// The entry point SwiftPM links `main` to.
@_cdecl("FuzzHTTP_main")
public func fuzzHTTPMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv, fuzzOne)
}
