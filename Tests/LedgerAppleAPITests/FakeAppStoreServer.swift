import Crypto
import Foundation
import LedgerAppleAPI
import LedgerTestSupport
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import SwiftASN1
import X509

/// A local HTTPS server standing in for Apple's App Store Server API: TLS with a certificate minted for the test
/// (the client is told to trust its CA through `trustedCertificates`, as an operator behind a TLS proxy would), the
/// requests recorded, and the answers made by the test's `respond` closure.
final class FakeAppStoreServer: @unchecked Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        var query: [String: String]
        var headers: [(String, String)]
        var body: [UInt8]
        var receivedAt: Date

        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    }

    struct Response: Sendable {
        var status: Int
        var headers: [(String, String)] = []
        var body: [UInt8]

        static func json(_ object: Any, status: Int = 200) -> Response {
            Response(status: status, headers: [("Content-Type", "application/json")], body: AppleFixtures.json(object))
        }
    }

    let port: Int
    /// The CA certificate (DER) the client must trust.
    let caCertificatePath: String
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let lock = NSLock()
    private var recorded: [Request] = []
    private let respond: @Sendable (Request) -> Response

    var baseURL: String { "https://localhost:\(port)" }
    var requests: [Request] { lock.withLock { recorded } }

    init(directory: TemporaryDirectory, respond: @escaping @Sendable (Request) -> Response) throws {
        self.respond = respond
        let (caDER, leafDER, leafKey) = try Self.mintCertificates()
        caCertificatePath = directory.file("fake-apple-ca.cer")
        try Data(caDER).write(to: URL(fileURLWithPath: caCertificatePath))
        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: leafDER, format: .der))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(leafKey.pemRepresentation.utf8), format: .pem)))
        let context = try NIOSSLContext(configuration: tls)
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let handlerFactory = HandlerFactory(server: nil)
        channel = try ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(RequestHandler(factory: handlerFactory))
                }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        port = channel.localAddress!.port!
        handlerFactory.server = self
    }

    func shutdown() {
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }

    fileprivate func handle(_ request: Request) -> Response {
        lock.withLock { recorded.append(request) }
        return respond(request)
    }

    /// A CA and a server certificate for localhost / 127.0.0.1 signed by it, P-256.
    private static func mintCertificates() throws -> (ca: [UInt8], leaf: [UInt8], leafKey: P256.Signing.PrivateKey) {
        let caKey = P256.Signing.PrivateKey()
        let leafKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName { CommonName("Fake App Store Server API CA") }
        let leafName = try DistinguishedName { CommonName("localhost") }
        let now = Date()
        let ca = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(caKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 86_400, issuer: caName, subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(caKey))
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 86_400, issuer: caName, subject: leafName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))])
            },
            issuerPrivateKey: .init(caKey))
        func der(_ c: Certificate) throws -> [UInt8] {
            var s = DER.Serializer()
            try s.serialize(c)
            return s.serializedBytes
        }
        return (try der(ca), try der(leaf), leafKey)
    }
}

/// Hands the server to the handlers of each connection (set once the server is made).
private final class HandlerFactory: @unchecked Sendable {
    var server: FakeAppStoreServer?
    init(server: FakeAppStoreServer?) { self.server = server }
}

/// Collects one request (head and body) and writes the server's answer, keeping the connection open.
private final class RequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let factory: HandlerFactory
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(factory: HandlerFactory) { self.factory = factory }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            body = []
        case .body(var buffer):
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            guard let head, let server = factory.server else { return }
            let parts = head.uri.split(separator: "?", maxSplits: 1)
            var query: [String: String] = [:]
            if parts.count == 2 {
                for pair in parts[1].split(separator: "&") {
                    let kv = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
                    query[kv[0]] = kv.count > 1 ? kv[1] : ""
                }
            }
            let request = FakeAppStoreServer.Request(
                method: head.method.rawValue, path: String(parts[0]), query: query,
                headers: head.headers.map { ($0.name, $0.value) }, body: body, receivedAt: Date())
            let response = server.handle(request)
            var headers = HTTPHeaders(response.headers)
            headers.replaceOrAdd(name: "Content-Length", value: String(response.body.count))
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(
                    version: .http1_1, status: HTTPResponseStatus(statusCode: response.status), headers: headers))),
                promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: response.body)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            self.head = nil
        }
    }
}

// MARK: - Apple's documents

/// Apple-shaped answers, as the App Store Server API documents them (checked by hand against Apple's examples).
enum AppleAnswers {
    /// A Get Transaction History (v2) page.
    static func historyPage(_ signed: [String], revision: String, hasMore: Bool) -> [String: Any] {
        [
            "revision": revision, "hasMore": hasMore, "bundleId": AppleFixtures.bundleId,
            "appAppleId": AppleFixtures.appAppleId, "environment": "Production", "signedTransactions": signed,
        ]
    }

    /// Get All Subscription Statuses for one subscription.
    static func statuses(otid: String, status: Int64, transaction: String, renewal: String) -> [String: Any] {
        [
            "environment": "Production", "bundleId": AppleFixtures.bundleId, "appAppleId": AppleFixtures.appAppleId,
            "data": [[
                "subscriptionGroupIdentifier": "21000001",
                "lastTransactions": [[
                    "status": status, "originalTransactionId": otid, "signedTransactionInfo": transaction,
                    "signedRenewalInfo": renewal,
                ] as [String: Any]],
            ] as [String: Any]],
        ]
    }

    /// A Get Notification History page.
    static func notificationPage(_ items: [(signedPayload: String, attempts: [(Int64, String)])], token: String?, hasMore: Bool)
        -> [String: Any]
    {
        var o: [String: Any] = [
            "hasMore": hasMore,
            "notificationHistory": items.map { item in
                [
                    "signedPayload": item.signedPayload,
                    "sendAttempts": item.attempts.map { ["attemptDate": $0.0, "sendAttemptResult": $0.1] as [String: Any] },
                ] as [String: Any]
            },
        ]
        o["paginationToken"] = token
        return o
    }

    /// Apple's error document.
    static func error(_ code: Int64, _ message: String) -> [String: Any] { ["errorCode": code, "errorMessage": message] }
}

// MARK: - The operator's key

/// An in-app purchase key as App Store Connect hands it out (PKCS#8 PEM), written to a `.p8` file, and the settings
/// that point the client at a fake server.
struct OperatorKey {
    static let keyId = "2X9R4HXF34"
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"

    let key = P256.Signing.PrivateKey()
    let path: String

    init(directory: TemporaryDirectory) throws {
        path = directory.file("SubscriptionKey_\(Self.keyId).p8")
        try Data((key.pemRepresentation + "\n").utf8).write(to: URL(fileURLWithPath: path))
    }

    func settings(for server: FakeAppStoreServer, maxRetries: Int = 3, maxRetryWaitSeconds: Double = 5)
        -> AppStoreServerAPISettings
    {
        AppStoreServerAPISettings(
            keyFile: path, keyId: Self.keyId, issuerId: Self.issuerId, bundleId: AppleFixtures.bundleId,
            baseURL: server.baseURL, trustedCertificates: [server.caCertificatePath], maxRetries: maxRetries,
            maxRetryWaitSeconds: maxRetryWaitSeconds, timeoutSeconds: 20)
    }

    /// What Apple checks of a request's token: the header (`alg` ES256, `kid`, `typ` JWT), the claims (`iss`, `aud`
    /// appstoreconnect-v1, `bid`, `iat` now, `exp` at most an hour later) and the ES256 signature with the key's
    /// public half, at the instant the request arrived. Nil when it holds; else what is wrong.
    func problem(with request: FakeAppStoreServer.Request) -> String? {
        let now = request.receivedAt
        guard let authorization = request.header("Authorization"), authorization.hasPrefix("Bearer ") else {
            return "no bearer token"
        }
        let parts = authorization.dropFirst("Bearer ".count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Self.base64URL(parts[0]), let claimsBytes = Self.base64URL(parts[1]),
            let signatureBytes = Self.base64URL(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerBytes) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsBytes) as? [String: Any]
        else { return "not a compact JWS of JSON" }
        guard header["alg"] as? String == "ES256", header["kid"] as? String == Self.keyId, header["typ"] as? String == "JWT"
        else { return "header \(header)" }
        guard claims["iss"] as? String == Self.issuerId, claims["aud"] as? String == "appstoreconnect-v1",
            claims["bid"] as? String == AppleFixtures.bundleId, let iat = claims["iat"] as? Int, let exp = claims["exp"] as? Int
        else { return "claims \(claims)" }
        let t = Int(now.timeIntervalSince1970)
        guard abs(iat - t) <= 60, exp > t, exp - iat <= 3600 else { return "iat \(iat) exp \(exp) now \(t)" }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            key.publicKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8))
        else { return "the ES256 signature does not verify" }
        return nil
    }

    static func base64URL(_ s: Substring) -> Data? {
        var t = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while t.count % 4 != 0 { t += "=" }
        return Data(base64Encoded: t)
    }
}
