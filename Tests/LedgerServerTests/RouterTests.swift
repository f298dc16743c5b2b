import Foundation
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerServer
import LedgerStore
import Logging
import Testing

/// The router without a socket (HummingbirdTesting), and the OpenAPI document against it.
@Suite("Router", .timeLimit(.minutes(1)))
struct RouterTests {
    static func makeAPI(_ json: String? = nil) throws -> (LedgerRoutes, String) {
        let directory = try TestServer.makeDirectory()
        var logger = Logger(label: "test.router")
        logger.logLevel = .warning
        let configuration =
            try json.map { try LedgerConfiguration(json: Array($0.utf8), baseDirectory: directory) } ?? LedgerConfiguration()
        let ledger = try Ledger(directory: directory, rules: configuration.rules, logger: logger)
        return (LedgerRoutes(ledger: ledger, configuration: configuration, logger: logger), directory)
    }

    // MARK: - OpenAPI in step with the router

    /// `(METHOD, path)` pairs under `paths:` of openapi.yaml (the document's own two-space layout).
    static func documentedRoutes() throws -> Set<String> {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/LedgerServer/openapi.yaml")
        let text = try String(contentsOf: url, encoding: .utf8)
        var routes = Set<String>()
        var inPaths = false
        var path: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix(" ") && !line.isEmpty {
                inPaths = line == "paths:"
                continue
            }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "),
                let method = ["get", "post", "put", "delete", "patch"].first(where: { line == "    \($0):" })
            {
                routes.insert("\(method.uppercased()) \(path)")
            }
        }
        return routes
    }

    @Test func openAPIDocumentsExactlyTheRouterRoutes() throws {
        let (api, directory) = try Self.makeAPI()
        defer {
            api.ledger.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let served = Set(api.makeRouter().routes.map { "\($0.method.rawValue) \($0.path.description)" })
        let documented = try Self.documentedRoutes()
        #expect(served.count == 11)
        #expect(served.subtracting(documented).isEmpty, "served but not documented: \(served.subtracting(documented))")
        #expect(documented.subtracting(served).isEmpty, "documented but not served: \(documented.subtracting(served))")
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
