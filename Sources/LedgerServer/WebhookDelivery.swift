import AsyncHTTPClient
import Crypto
import Foundation
import LedgerAPI
import LedgerCore
import LedgerHTTP
import LedgerStore
import LedgerErrors
import Logging
import NIOCore
import NIOHTTP1

// MARK: - WebhookDelivery

/// Delivers the lifecycle stream to the configured webhook (`"webhook"` in the configuration), one event per POST,
/// in stream order, signed with the shared secret.
///
/// At least once: the position of the last event delivered is in LMDB (`meta`), written after the receiver's 2xx,
/// so an event in flight when the process dies (kill -9) is delivered again after the restart, never lost; its `id`
/// lets the receiver drop the copy. A failed attempt (a status other than 2xx, no connection, no answer within the
/// timeout) is retried with exponential backoff; after `maxAttempts` the event becomes a dead letter (kept, listed and
/// replayed by the operator: `storeledger webhook`) and delivery goes on with the next one.
///
/// One `HTTPClient` for the server's life: `http://` or `https://` (trusting `trustedCertificates` when configured),
/// its connection kept between events; `shutdown()` closes it once `run()` has returned.
final class WebhookDelivery: Sendable {
    let ledger: Ledger
    let webhook: LedgerConfiguration.Webhook
    let commits: CommitSignal
    let logger: Logger
    private let http: HTTPClient

    /// Events read per read transaction.
    static let page = 100
    /// How often dead letters the operator asked to replay are looked for while the stream is quiet.
    static let idleWait = Duration.seconds(1)

    /// Reads the trusted certificates; throws `invalid_configuration` naming the file at fault.
    init(ledger: Ledger, webhook: LedgerConfiguration.Webhook, commits: CommitSignal, logger: Logger)
        throws(CodedError)
    {
        let timeout = TimeAmount.milliseconds(Int64(webhook.timeoutSeconds * 1000))
        // A receiver that cannot be reached is a failed attempt at once, retried after the configured backoff.
        self.http = try OutboundHTTP.client(
            trustedCertificates: webhook.trustedCertificates, setting: "webhook", connectTimeout: timeout,
            readTimeout: timeout, retryConnecting: false)
        self.ledger = ledger
        self.webhook = webhook
        self.commits = commits
        self.logger = logger
    }

    /// Closes the client's connections; once, after `run()` returned.
    func shutdown() async {
        do {
            try await http.shutdown()
        } catch {
            logger.warning("webhook: closing the HTTP client: \(error)")
        }
    }

    /// Delivers until the task is cancelled (the server shuts down): what was not acknowledged by then is delivered
    /// after the next start.
    func run() async {
        var position: LifecyclePosition?
        do {
            position = try ledger.outbox.position()
        } catch {
            logger.error("webhook: cannot read the delivery position: \(error)")
            return
        }
        while !Task.isCancelled {
            do {
                try await replayRequestedDeadLetters()
                let entries = try ledger.outbox.entries(after: position, limit: Self.page)
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
            // An attempt cut short by the shutdown is not the receiver's failure: the event stays after the
            // position and is delivered after the next start, its attempts not counted.
            if Task.isCancelled { return false }
            guard let failure else {
                try ledger.outbox.delivered(position)
                return true
            }
            logger.warning(
                "webhook: \(event.id) not delivered (attempt \(attempt) of \(webhook.maxAttempts)): \(failure)")
            if attempt == webhook.maxAttempts {
                try ledger.outbox.gaveUp(position, attempts: attempt, reason: failure, at: currentMillis())
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
        for letter in try ledger.outbox.deadLetters() where letter.replayRequested {
            if Task.isCancelled { return }
            let failure = await attemptDelivery(letter.event)
            if Task.isCancelled { return }
            if let failure {
                try ledger.outbox.deadLetterFailed(letter, reason: failure, at: currentMillis())
            } else {
                try ledger.outbox.deadLetterDelivered(letter.position)
                logger.notice("webhook: dead letter \(letter.event.id) delivered on replay")
            }
        }
    }

    /// POSTs the event; nil when the receiver answered 2xx, else why not.
    func attemptDelivery(_ event: LifecycleEvent) async -> String? {
        let body = JSONWriter.bytes(of: event)
        let timestamp = String(currentMillis() / 1000)
        var request = HTTPClientRequest(url: webhook.url.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "storeledger-webhook")
        request.headers.add(name: "StoreLedger-Event-Id", value: event.id)
        request.headers.add(
            name: "StoreLedger-Signature", value: Self.signature(body: body, timestamp: timestamp, secret: webhook.secret))
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await http.execute(
                request, timeout: .milliseconds(Int64(webhook.timeoutSeconds * 1000)))
            // Read to its end (and dropped: only the status counts), within the same timeout, so the connection can
            // carry the next event.
            for try await _ in response.body {}
            let status = Int(response.status.code)
            return (200..<300).contains(status) ? nil : "the receiver answered \(status)"
        } catch let error as HTTPClientError where [.deadlineExceeded, .readTimeout, .connectTimeout].contains(error) {
            return "no answer within \(webhook.timeoutSeconds) s"
        } catch {
            return "\(webhook.url.host):\(webhook.url.port): \(error)"
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
}
