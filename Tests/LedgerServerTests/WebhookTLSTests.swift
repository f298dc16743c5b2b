import Crypto
import Foundation
import LedgerAPI
import LedgerClient
import LedgerCore
import LedgerServer
import LedgerStore
import LedgerTestSupport
import LedgerErrors
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Testing

// MARK: - Certificates made by openssl

/// The `openssl` command-line tool, if installed: the tests below mint their certificates with it, as an operator
/// with a private CA would.
private let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl", "/bin/openssl"]
    .first { FileManager.default.isExecutableFile(atPath: $0) }

/// A certificate and its private key, as PEM files.
private struct Credentials {
    var certificate: String
    var key: String
}

private enum TestPKI {
    /// A throwaway CA (P-256, valid for two days).
    static func authority(_ name: String, in directory: TemporaryDirectory) throws -> Credentials {
        let made = Credentials(certificate: directory.file("\(name).pem"), key: directory.file("\(name).key"))
        try run([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", made.key, "-out", made.certificate, "-days", "2", "-subj", "/CN=StoreLedger test \(name)",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
        return made
    }

    /// A server certificate for 127.0.0.1 and localhost, signed by `authority`.
    static func server(_ name: String, signedBy authority: Credentials, in directory: TemporaryDirectory) throws
        -> Credentials
    {
        let made = Credentials(certificate: directory.file("\(name).pem"), key: directory.file("\(name).key"))
        let request = directory.file("\(name).csr")
        let extensions = directory.file("\(name).ext")
        try """
            basicConstraints=critical,CA:FALSE
            keyUsage=critical,digitalSignature
            extendedKeyUsage=serverAuth
            subjectAltName=IP:127.0.0.1,DNS:localhost

            """.write(toFile: extensions, atomically: true, encoding: .utf8)
        try run([
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", made.key, "-out", request, "-subj", "/CN=127.0.0.1",
        ])
        try run([
            "x509", "-req", "-in", request, "-CA", authority.certificate, "-CAkey", authority.key,
            "-set_serial", "\(UInt32.random(in: 1...UInt32.max))", "-days", "2", "-extfile", extensions,
            "-out", made.certificate,
        ])
        return made
    }

    private static func run(_ arguments: [String]) throws {
        let output = try runProcess(openssl ?? "openssl", arguments, deadline: 60)
        guard output.status == 0 else {
            throw CodedError(.failed, "openssl \(arguments.prefix(2).joined(separator: " ")): \(output.stderr)")
        }
    }
}

// MARK: - An HTTPS receiver

/// The webhook's receiver for these tests: HTTPS (NIO and NIOSSL) on 127.0.0.1 with the given certificate, every
/// request recorded and answered 200 on a connection kept open; counts the connections it accepted, handshakes that
/// fail included.
private final class HTTPSReceiver: Sendable {
    let port: Int
    let record: Record
    private let channel: any Channel

    final class Record: @unchecked Sendable {
        struct Request {
            var method: String
            var uri: String
            var headers: HTTPHeaders
            var body: [UInt8]
        }

        private let lock = NSLock()
        private var _requests: [Request] = []
        private var _connections = 0

        var requests: [Request] { lock.withLock { _requests } }
        var connections: Int { lock.withLock { _connections } }
        func connected() { lock.withLock { _connections += 1 } }
        func received(_ request: Request) { lock.withLock { _requests.append(request) } }
    }

    init(_ credentials: Credentials) async throws {
        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(credentials.certificate).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: credentials.key, format: .pem)))
        let context = try NIOSSLContext(configuration: tls)
        let record = Record()
        self.record = record
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                record.connected()
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(RequestHandler(record: record))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress?.port ?? 0
    }

    func stop() async {
        try? await channel.close()
    }

    /// Waits (bounded) until `condition` holds for the requests received.
    func wait(seconds: Int = 60, until condition: ([Record.Request]) -> Bool) async throws -> [Record.Request] {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline && !condition(record.requests) {
            try await Task.sleep(for: .milliseconds(20))
        }
        return record.requests
    }

    /// Collects one request and answers 200 with an empty body.
    private final class RequestHandler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let record: Record
        var head: HTTPRequestHead?
        var body: [UInt8] = []

        init(record: Record) { self.record = record }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let h):
                head = h
                body = []
            case .body(var buffer):
                body += buffer.readBytes(length: buffer.readableBytes) ?? []
            case .end:
                guard let head else { return }
                record.received(.init(method: head.method.rawValue, uri: head.uri, headers: head.headers, body: body))
                var answer = HTTPResponseHead(version: .http1_1, status: .ok)
                answer.headers.add(name: "Content-Length", value: "0")
                context.write(wrapOutboundOut(.head(answer)), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}

// MARK: - The webhook over HTTPS

/// The webhook to an `https://` receiver whose certificate a private CA signed: trusted through
/// `webhook.trustedCertificates`, every event arrives in order with a valid signature; a receiver whose certificate
/// that CA did not sign gets nothing, and the event becomes a dead letter after its attempts.
@Suite(
    "The webhook over HTTPS", .serialized, .timeLimit(.minutes(3)),
    .enabled(if: openssl != nil, "needs the openssl command-line tool to mint the receiver's certificates"), .blocking)
struct WebhookTLSTests {
    static let secret = "tls-webhook-secret"

    static func configuration(port: Int, trusting ca: String, maxAttempts: Int) -> String {
        #"""
        {"webhook": {"url": "https://127.0.0.1:\#(port)/hooks/storeledger?source=ledger", "secret": "\#(secret)",
         "trustedCertificates": ["\#(ca)"], "maxAttempts": \#(maxAttempts), "initialBackoffSeconds": 0.05,
         "maxBackoffSeconds": 0.2, "timeoutSeconds": 10}}
        """#
    }

    /// Whether `StoreLedger-Signature` is HMAC-SHA256 with the secret over `<t>.` and the body received.
    private static func signatureIsValid(_ request: HTTPSReceiver.Record.Request) -> Bool {
        guard let header = request.headers.first(name: "StoreLedger-Signature") else { return false }
        let parts = Dictionary(
            header.split(separator: ",").compactMap { part -> (String, String)? in
                let pair = part.split(separator: "=", maxSplits: 1)
                return pair.count == 2 ? (String(pair[0]), String(pair[1])) : nil
            }, uniquingKeysWith: { first, _ in first })
        guard let t = parts["t"], let v1 = parts["v1"], Int(t) != nil else { return false }
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array(t.utf8) + [UInt8(ascii: ".")] + request.body, using: SymmetricKey(data: Array(secret.utf8)))
        return mac.map { String(format: "%02x", $0) }.joined() == v1
    }

    static func eventId(_ tid: String) -> String { "Production/\(tid)/INITIAL_PURCHASE/\(tid)" }

    /// Runs `body` against a server whose webhook goes to an HTTPS receiver with `credentials` and trusts only
    /// `authority`; stops both, and returns what the receiver saw.
    private static func withReceiver(
        _ credentials: Credentials, trusting authority: Credentials, maxAttempts: Int,
        _ body: (TestServer, HTTPSReceiver) async throws -> Void
    ) async throws -> HTTPSReceiver.Record {
        let receiver = try await HTTPSReceiver(credentials)
        let configuration = Self.configuration(
            port: receiver.port, trusting: authority.certificate, maxAttempts: maxAttempts)
        do {
            try await withServer(configuration: configuration) { server in try await body(server, receiver) }
        } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
        return receiver.record
    }

    // The tests run on `TestExecutor`: openssl is waited for, and the cooperative pool is left to the servers.

    @Test func aReceiverWithAPrivateCAGetsEveryEventInOrderSigned() async throws {
        try await withTaskExecutorPreference(TestExecutor.shared) { try await trustedReceiver() }
    }

    private func trustedReceiver() async throws {
        let directory = try TemporaryDirectory(prefix: "sl-webhook-tls")
        defer { directory.remove() }
        let ca = try TestPKI.authority("ca", in: directory)
        let tids = ["870001", "870002", "870003", "870004"]
        let record = try await Self.withReceiver(
            try TestPKI.server("receiver", signedBy: ca, in: directory), trusting: ca, maxAttempts: 3
        ) { server, receiver in
            let client = try server.client()
            for tid in tids {
                #expect(try await client.post("/v1/events", Sample.transaction(tid, user: "u\(tid)")).status == 200)
            }
            let received = try await receiver.wait { $0.count >= tids.count }
            #expect(received.map { $0.headers.first(name: "StoreLedger-Event-Id") } == tids.map(Self.eventId))
            for request in received {
                #expect(request.method == "POST")
                #expect(request.uri == "/hooks/storeledger?source=ledger")
                #expect(request.headers.first(name: "Content-Type") == "application/json")
                #expect(Self.signatureIsValid(request), "the signature of \(request.headers)")
                let event = try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
                #expect(event?["id"] as? String == request.headers.first(name: "StoreLedger-Event-Id"))
            }
            // The position is written after each 2xx: it reaches the last event, and nothing is dead.
            let last = try server.ledger.outbox.entries(after: nil, limit: 100).last?.position
            let deadline = ContinuousClock.now + .seconds(30)
            while try server.ledger.outbox.position() != last, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(try server.ledger.outbox.position() == last)
            #expect(try server.ledger.outbox.deadLetters().isEmpty)
        }
        // One connection carried every event.
        #expect(record.connections == 1)
    }

    @Test func aReceiverTheCADidNotSignGetsNothingAndTheEventIsADeadLetter() async throws {
        try await withTaskExecutorPreference(TestExecutor.shared) { try await untrustedReceiver() }
    }

    private func untrustedReceiver() async throws {
        let directory = try TemporaryDirectory(prefix: "sl-webhook-untrusted")
        defer { directory.remove() }
        let trusted = try TestPKI.authority("trusted-ca", in: directory)
        let other = try TestPKI.authority("other-ca", in: directory)
        let record = try await Self.withReceiver(
            try TestPKI.server("impostor", signedBy: other, in: directory), trusting: trusted, maxAttempts: 2
        ) { server, receiver in
            #expect(try await server.client().post("/v1/events", Sample.transaction("880001", user: "u1")).status == 200)
            let deadline = ContinuousClock.now + .seconds(60)
            while try server.ledger.outbox.deadLetters().isEmpty, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let letters = try server.ledger.outbox.deadLetters()
            try #require(letters.count == 1)
            #expect(letters[0].event.id == Self.eventId("880001"))
            #expect(letters[0].attempts == 2)
            #expect(letters[0].reason.contains("127.0.0.1:\(receiver.port)"), "\(letters[0].reason)")
            #expect(letters[0].reason.contains("CERTIFICATE_VERIFY_FAILED"), "\(letters[0].reason)")
        }
        // Tried twice (two handshakes), and no request went over either.
        #expect(record.connections == 2)
        #expect(record.requests.isEmpty)
    }

    /// A trusted certificate that cannot be read stops the server before it takes its socket.
    @Test func anUnreadableTrustedCertificateStopsTheStart() async throws {
        let directory = try TemporaryDirectory(prefix: "sl-webhook-nocert")
        defer { directory.remove() }
        let configuration = try LedgerConfiguration(
            json: Array(Self.configuration(port: 9, trusting: "missing-ca.pem", maxAttempts: 1).utf8),
            baseDirectory: directory.path)
        #expect(configuration.webhook?.trustedCertificates == [directory.file("missing-ca.pem")])
        var logger = Logger(label: "test.webhook")
        logger.logLevel = .critical
        let ledger = try Ledger(directory: directory.file("data"), logger: logger)
        let socket = directory.file("s.sock")
        let service = LedgerService(ledger: ledger, configuration: configuration, socketPath: socket, logger: logger)
        do {
            try await service.run()
            Issue.record("the server started")
        } catch let error as CodedError {
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.contains("missing-ca.pem"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: socket))
    }

    @Test func theURLAndTheTrustedCertificatesAreChecked() throws {
        func webhook(_ json: String) throws -> LedgerConfiguration.Webhook? {
            try LedgerConfiguration(json: Array(json.utf8), baseDirectory: "/etc/storeledger").webhook
        }
        let https = try webhook(#"{"webhook": {"url": "https://hooks.example.com/in", "secret": "s"}}"#)
        #expect(https?.url.url == "https://hooks.example.com:443/in")
        #expect(https?.trustedCertificates == [])
        let http = try webhook(#"{"webhook": {"url": "http://[::1]:8080", "secret": "s"}}"#)
        #expect(http?.url.url == "http://[::1]:8080/")
        #expect(throws: LedgerConfiguration.Invalid.self) {
            try webhook(#"{"webhook": {"url": "ftp://example.com/in", "secret": "s"}}"#)
        }
        #expect(throws: LedgerConfiguration.Invalid.self) {
            try webhook(#"{"webhook": {"url": "http://example.com/in", "secret": "s", "trustedCertificates": ["ca.pem"]}}"#)
        }
        #expect(throws: LedgerConfiguration.Invalid.self) {
            try webhook(#"{"webhook": {"url": "https://example.com/in", "secret": "s", "trustedCertificates": "ca.pem"}}"#)
        }
    }
}
