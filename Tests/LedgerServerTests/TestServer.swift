import Foundation
import LedgerAPI
import LedgerClient
import LedgerServer
import LedgerStore
import LedgerTestSupport
import LedgerErrors
import Logging
import ServiceLifecycle
import Testing

// MARK: - A real server on a temporary socket

/// A `LedgerService` running in-process on a socket in a fresh temporary directory, for end-to-end tests.
final class TestServer: Sendable {
    let directory: String
    let socketPath: String
    let service: LedgerService
    let ledger: Ledger
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    /// Starts a server (configuration JSON optional; the ledger in `dataDirectory`, default a fresh one, naming people
    /// by pseudonyms when `pseudonyms`) and waits until it answers.
    init(configuration json: String? = nil, dataDirectory: String? = nil, pseudonyms: Bool = false) async throws {
        let directory = try Self.makeDirectory()
        self.directory = directory
        socketPath = directory + "/s.sock"
        let configuration =
            try json.map { try LedgerConfiguration(json: Array($0.utf8), baseDirectory: directory) } ?? LedgerConfiguration()
        var logger = Logger(label: "test.server")
        logger.logLevel = ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        var options = Ledger.Options()
        options.maxQueuedInputs = configuration.limits.maxQueuedInputs
        options.pseudonyms = pseudonyms
        ledger = try Ledger(
            directory: dataDirectory ?? directory + "/data", rules: configuration.rules, options: options, logger: logger)
        service = LedgerService(ledger: ledger, configuration: configuration, socketPath: socketPath, logger: logger)
        let group = ServiceGroup(services: [service], logger: logger)
        self.group = group
        task = Task(executorPreference: TestExecutor.shared) { try await group.run() }
        try await Self.waitUntilAnswering(socketPath)
        // The socket answers as soon as it listens; its configured mode is set just after (Hummingbird's
        // onServerRunning), and `isListening` turns true once it is.
        let deadline = ContinuousClock.now + .seconds(30)
        while !service.isListening && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
    }

    /// A short directory under /tmp (socket paths must fit in 107 bytes).
    static func makeDirectory() throws -> String {
        var template = Array("/tmp/sl-test-XXXXXX".utf8CString)
        guard let p = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        return String(cString: p)
    }

    private static func waitUntilAnswering(_ socketPath: String) async throws {
        // Generous: the whole suite runs in parallel on two cores, with processes of other suites competing.
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let client = try? AsyncLedgerClient(socketPath: socketPath, timeoutSeconds: 2),
                let r = try? await client.get("/v1/health"), r.status == 200
            {
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw CodedError(.timeout, "the test server did not start")
    }

    /// A client whose blocking calls run on a queue of their own, never on the cooperative pool the server's handlers
    /// need (this machine has two cores: two blocked cooperative threads would stall the server).
    func client() throws -> AsyncLedgerClient { try AsyncLedgerClient(socketPath: socketPath, timeoutSeconds: 30) }

    /// Graceful shutdown, as on SIGTERM; then removes the directory.
    func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Runs `body` against a fresh server and always stops it. Server and test run on `TestExecutor`.
func withServer(configuration: String? = nil, _ body: (TestServer) async throws -> Void) async throws {
    try await withTaskExecutorPreference(TestExecutor.shared) {
        let server = try await TestServer(configuration: configuration)
        do {
            try await body(server)
        } catch {
            try? await server.stop()
            throw error
        }
        try await server.stop()
    }
}

// MARK: - Documents

enum Sample {
    static let product = "com.example.premium.monthly"
    static let day: Int64 = 86_400_000
    static let start: Int64 = 1_700_000_000_000

    /// A decoded V2 transaction in an envelope (received at its purchase, so a re-delivery is a byte-for-byte
    /// duplicate, binding claim included).
    static func transaction(_ tid: String, otid: String? = nil, user: String? = nil, month: Int64 = 0) -> String {
        let purchase = start + month * 30 * day
        let userField = user.map { #""appUserId":"\#($0)","# } ?? ""
        return #"{"type":"transaction",\#(userField)"receivedAt":\#(purchase),"payload":{"transactionId":"\#(tid)","originalTransactionId":"\#(otid ?? tid)","productId":"\#(product)","purchaseDate":\#(purchase),"expiresDate":\#(purchase + 30 * day),"type":"Auto-Renewable Subscription","environment":"Production"}}"#
    }

    /// A V1 server notification (unified_receipt shape).
    static func notificationV1(_ tid: String, otid: String, type: String = "DID_RENEW") -> String {
        #"{"notification_type":"\#(type)","environment":"PROD","bid":"com.example.app","auto_renew_status":"true","auto_renew_product_id":"\#(product)","unified_receipt":{"environment":"Production","status":0,"latest_receipt_info":[{"transaction_id":"\#(tid)","original_transaction_id":"\#(otid)","product_id":"\#(product)","purchase_date_ms":"\#(start)","expires_date_ms":"\#(start + 30 * day)","web_order_line_item_id":"9\#(tid)","quantity":"1"}],"pending_renewal_info":[{"original_transaction_id":"\#(otid)","product_id":"\#(product)","auto_renew_status":"1","auto_renew_product_id":"\#(product)"}]}}"#
    }
}

// MARK: - Reading answers

extension LedgerResponse {
    /// The body as a JSON object (empty when it is not one).
    var object: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:]
    }

    /// `error.code` of an error document.
    var errorCode: String? { (object["error"] as? [String: Any])?["code"] as? String }

    /// The statuses of a `{"results":[…]}` document.
    var resultStatuses: [String] {
        (object["results"] as? [[String: Any]] ?? []).compactMap { $0["status"] as? String }
    }

    /// Non-empty lines of an NDJSON body.
    var lines: [Substring] { text.split(separator: "\n") }
}

extension AsyncLedgerClient {
    func post(_ path: String, _ body: String, contentType: String = "application/json") async throws -> LedgerResponse {
        try await request(method: "POST", path: path, body: Array(body.utf8), contentType: contentType)
    }
}
