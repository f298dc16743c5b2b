import Dispatch
import Foundation
import FuzzSupport
import Hummingbird
import LedgerAPI
import LedgerServer
import LedgerStore
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
/// Left out: `follow=true` (a stream that ends only when the server stops) and the socket itself (peer credentials,
/// keep-alive timers), which need a live connection.
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

let harness = Harness()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    for request in harness.requests(in: Array(UnsafeBufferPointer(start: data, count: size))).prefix(8) {
        if request.uri.queryParameters["follow"] != nil { continue }
        let status = harness.answer(request)
        precondition(status != 500, "500 for \(request.method) \(request.uri)")
    }
    return 0
}

/// The entry point SwiftPM links `main` to.
@_cdecl("FuzzHTTP_main")
public func fuzzHTTPMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv, fuzzOne)
}
