import Crypto
import Foundation
import LedgerAPI
import LedgerCore
import LedgerStore
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

// MARK: - WebhookDelivery

/// Delivers the lifecycle stream to the configured webhook (`"webhook"` in the configuration), one event per POST,
/// in stream order, signed with the shared secret.
///
/// At least once: the position of the last event delivered is in LMDB (`meta`), written after the receiver's 2xx,
/// so an event in flight when the process dies (kill -9) is delivered again after the restart, never lost; its `id`
/// lets the receiver drop the copy. A failed attempt (a status other than 2xx, no connection, no answer within the
/// timeout) is retried with exponential backoff; after `maxAttempts` the event becomes a dead letter (kept, listed and
/// replayed by the operator: `storeledger webhook`) and delivery goes on with the next one.
final class WebhookDelivery: Sendable {
    let ledger: Ledger
    let webhook: LedgerConfiguration.Webhook
    let commits: CommitSignal
    let logger: Logger

    /// Events read per read transaction.
    static let page = 100
    /// How often dead letters the operator asked to replay are looked for while the stream is quiet.
    static let idleWait = Duration.seconds(1)

    init(ledger: Ledger, webhook: LedgerConfiguration.Webhook, commits: CommitSignal, logger: Logger) {
        self.ledger = ledger
        self.webhook = webhook
        self.commits = commits
        self.logger = logger
    }

    /// Delivers until the task is cancelled (the server shuts down): what was not acknowledged by then is delivered
    /// after the next start.
    func run() async {
        var position: LifecyclePosition?
        do {
            position = try ledger.webhookPosition()
        } catch {
            logger.error("webhook: cannot read the delivery position: \(error)")
            return
        }
        while !Task.isCancelled {
            do {
                try await replayRequestedDeadLetters()
                let entries = try ledger.lifecycleEntries(after: position, limit: Self.page)
                if entries.isEmpty {
                    let last = try ledger.lastSeq()
                    await commits.wait(after: last, timeout: Self.idleWait)
                    continue
                }
                for (p, event) in entries {
                    guard try await deliverWithRetries(event, at: p) else { return }
                    position = p
                }
            } catch {
                logger.error("webhook: \(error)")
                try? await Task.sleep(for: Self.idleWait)
            }
        }
    }

    /// Delivers one event, retrying with backoff; records it delivered or dead. False when cancelled first.
    private func deliverWithRetries(_ event: LifecycleEvent, at position: LifecyclePosition) async throws -> Bool {
        var delay = webhook.initialBackoffSeconds
        for attempt in 1...webhook.maxAttempts {
            if Task.isCancelled { return false }
            let failure = await attemptDelivery(event)
            guard let failure else {
                try ledger.webhookDelivered(position)
                return true
            }
            logger.warning(
                "webhook: \(event.id) not delivered (attempt \(attempt) of \(webhook.maxAttempts)): \(failure)")
            if attempt == webhook.maxAttempts {
                try ledger.webhookGaveUp(position, attempts: attempt, reason: failure, at: Self.now())
                return true
            }
            do {
                try await Task.sleep(for: .milliseconds(Int64(delay * 1000)))
            } catch {
                return false
            }
            delay = min(delay * 2, webhook.maxBackoffSeconds)
        }
        return true
    }

    /// One more attempt at every dead letter the operator asked to replay.
    private func replayRequestedDeadLetters() async throws {
        for letter in try ledger.deadLetters() where letter.replayRequested {
            if Task.isCancelled { return }
            if let failure = await attemptDelivery(letter.event) {
                try ledger.deadLetterFailed(letter, reason: failure, at: Self.now())
            } else {
                try ledger.deadLetterDelivered(letter.position)
                logger.notice("webhook: dead letter \(letter.event.id) delivered on replay")
            }
        }
    }

    /// POSTs the event; nil when the receiver answered 2xx, else why not.
    func attemptDelivery(_ event: LifecycleEvent) async -> String? {
        let body = JSONWriter.bytes(of: event)
        let timestamp = String(Self.now() / 1000)
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: webhook.url.hostHeader)
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: String(body.count))
        headers.add(name: "Connection", value: "close")
        headers.add(name: "User-Agent", value: "storeledger-webhook")
        headers.add(name: "StoreLedger-Event-Id", value: event.id)
        headers.add(name: "StoreLedger-Signature", value: Self.signature(body: body, timestamp: timestamp, secret: webhook.secret))
        do {
            let status = try await WebhookHTTP.post(
                host: webhook.url.host, port: webhook.url.port, path: webhook.url.path, headers: headers, body: body,
                timeoutSeconds: webhook.timeoutSeconds)
            return (200..<300).contains(status) ? nil : "the receiver answered \(status)"
        } catch {
            return "\(error)"
        }
    }

    /// `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>." ‖ body)>`: the receiver recomputes it over the bytes it
    /// received, and may refuse a timestamp too old (a replayed request).
    static func signature(body: [UInt8], timestamp: String, secret: [UInt8]) -> String {
        var message = Array(timestamp.utf8)
        message.append(UInt8(ascii: "."))
        message += body
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret))
        return "t=\(timestamp),v1=" + mac.map { byte in
            let hex = Array("0123456789abcdef".utf8)
            return String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
        }.joined()
    }

    static func now() -> UnixMillis { UnixMillis(Date().timeIntervalSince1970 * 1000) }
}

// MARK: - One POST over HTTP/1.1

/// A minimal HTTP/1.1 client on SwiftNIO (already in the server): one connection per request, `Connection: close`,
/// the status of the answer. Enough for one webhook; plain `http://` (put a TLS-terminating proxy in front of an
/// `https://` receiver).
enum WebhookHTTP {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func post(
        host: String, port: Int, path: String, headers: HTTPHeaders, body: [UInt8], timeoutSeconds: Double
    ) async throws -> Int {
        let group = MultiThreadedEventLoopGroup.singleton
        let loop = group.next()
        let status = loop.makePromise(of: Int.self)
        let timeout = TimeAmount.milliseconds(Int64(timeoutSeconds * 1000))
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(StatusHandler(status: status))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: host, port: port).get()
        } catch {
            status.fail(error)
            throw Failure(description: "cannot connect to \(host):\(port): \(error)")
        }
        let deadline = loop.scheduleTask(in: timeout) {
            status.fail(Failure(description: "no answer within \(timeoutSeconds) s"))
        }
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: path)
        head.headers = headers
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        defer {
            deadline.cancel()
            channel.close(promise: nil)
        }
        return try await status.futureResult.get()
    }

    /// Completes the promise with the answer's status once the answer has ended (or fails it).
    final class StatusHandler: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPClientResponsePart
        let status: EventLoopPromise<Int>
        var code: Int?

        init(status: EventLoopPromise<Int>) { self.status = status }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): code = Int(head.status.code)
            case .body: break
            case .end:
                if let code { status.succeed(code) }
                context.close(promise: nil)
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            status.fail(error)
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            status.fail(Failure(description: "the receiver closed the connection without an answer"))
            context.fireChannelInactive()
        }
    }
}
