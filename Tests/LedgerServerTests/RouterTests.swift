import Foundation
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerServer
import LedgerStore
import Logging
import Testing

/// The router without a socket (HummingbirdTesting). The OpenAPI document is checked against it in
/// OpenAPIDocumentTests.
@Suite("Router", .timeLimit(.minutes(3)))
struct RouterTests {
    /// Runs `body` against the router of a fresh ledger configured by `json`, then closes and removes the ledger.
    static func withRouter(
        _ json: String? = nil, _ body: @escaping @Sendable (any TestClientProtocol, LedgerRoutes) async throws -> Void
    ) async throws {
        let (api, directory) = try makeAPI(json)
        defer {
            api.ledger.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        try await Application(router: api.makeRouter()).test(.router) { client in try await body(client, api) }
    }

    static func makeAPI(_ json: String? = nil) throws -> (LedgerRoutes, String) {
        let directory = try TestServer.makeDirectory()
        var logger = Logger(label: "test.router")
        logger.logLevel = .warning
        let configuration =
            try json.map { try LedgerConfiguration(json: Array($0.utf8), baseDirectory: directory) } ?? LedgerConfiguration()
        let ledger = try Ledger(directory: directory, rules: configuration.rules, logger: logger)
        return (LedgerRoutes(ledger: ledger, configuration: configuration, logger: logger), directory)
    }

    // MARK: - Routes without a socket

    @Test func routerAnswersWithoutASocket() async throws {
        let (api, directory) = try Self.makeAPI()
        defer {
            api.ledger.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let app = Application(router: api.makeRouter())
        try await app.test(.router) { client in
            try await client.execute(uri: "/v1/health", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains(#""status":"ok""#))
            }
            try await client.execute(
                uri: "/v1/bindings", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"appUserId":"u1","originalTransactionId":"42"}"#)
            ) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains(#""status":"appended""#))
            }
            try await client.execute(uri: "/v1/events", method: .delete) { response in
                #expect(response.status.code == 405 || response.status.code == 404)
                #expect(String(buffer: response.body).contains(#""error":{"#))
            }
            try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains("storeledger_appends_total"))
            }
        }
    }

    @Test func restrictedWritersFailClosedWithoutPeerCredentials() async throws {
        let (api, directory) = try Self.makeAPI(#"{"socket":{"writers":{"uids":[0,1000]}}}"#)
        defer {
            api.ledger.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let app = Application(router: api.makeRouter())
        try await app.test(.router) { client in
            try await client.execute(
                uri: "/v1/events", method: .post, body: ByteBuffer(string: Sample.transaction("1"))
            ) { response in
                #expect(response.status == .forbidden)
                #expect(String(buffer: response.body).contains(#""code":"forbidden""#))
            }
        }
    }
}
