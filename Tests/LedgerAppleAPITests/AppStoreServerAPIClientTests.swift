import Foundation
import LedgerAppleAPI
import LedgerTestSupport
import LedgerErrors
import Logging
import Testing

/// The App Store Server API client against a local HTTPS server answering with Apple-shaped documents.
@Suite struct AppStoreServerAPIClientTests {
    static let logger = Logger(label: "test")

    /// Runs `body` with a fake Apple answering with `respond`, and a client that trusts it.
    func withFakeApple(
        maxRetries: Int = 3, maxRetryWaitSeconds: Double = 5,
        _ respond: @escaping @Sendable (FakeAppStoreServer.Request) -> FakeAppStoreServer.Response,
        _ body: (AppStoreServerAPIClient, FakeAppStoreServer, OperatorKey) async throws -> Void
    ) async throws {
        let dir = try TemporaryDirectory(prefix: "apple-api")
        defer { dir.remove() }
        let server = try FakeAppStoreServer(directory: dir, respond: respond)
        defer { server.shutdown() }
        let key = try OperatorKey(directory: dir)
        let client = try AppStoreServerAPIClient(
            settings: key.settings(for: server, maxRetries: maxRetries, maxRetryWaitSeconds: maxRetryWaitSeconds),
            logger: Self.logger)
        do {
            try await body(client, server, key)
        } catch {
            await client.shutdown()
            throw error
        }
        await client.shutdown()
    }

    @Test func everyRequestCarriesATokenAppleWouldAccept() async throws {
        try await withFakeApple({ _ in .json(AppleAnswers.historyPage([], revision: "r0", hasMore: false)) }) {
            client, server, key in
            _ = try await client.transactionHistory("2000000000000001")
            _ = try await client.allSubscriptionStatuses("2000000000000001")
            let request = try #require(server.requests.first)
            #expect(key.problem(with: request) == nil)
            #expect(server.requests.count == 2)
            #expect(server.requests.allSatisfy { key.problem(with: $0) == nil })
            // A token signed by another key is refused by the same check.
            let stranger = try OperatorKey(directory: TemporaryDirectory(prefix: "stranger"))
            #expect(stranger.problem(with: request) == "the ES256 signature does not verify")
        }
    }

    /// Apple answers at once, but the task that asked cannot run for longer than the request's timeout (its thread is
    /// held by other work, as the cooperative pool's two threads were held by a test process's synchronous tests).
    /// The answer is read by the connection meanwhile: it is in the client's hands when the task runs again, not
    /// counted as silence from Apple and asked again. (Read as a stream at the task's pace, it stopped half read, the
    /// read timeout fired, and the page was asked twice.)
    @Test func anAnswerReceivedWhileTheCallerCannotRunIsNotAskedAgain() async throws {
        // The task asks from a thread of its own, which a second task holds once the request has arrived.
        let thread = ThreadExecutor(name: "the caller's thread")
        defer { thread.finish() }
        let received = DispatchSemaphore(value: 0)
        let held = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let holder = Holder()
        DispatchQueue.global().async {
            received.wait()
            holder.task = Task(executorPreference: thread) {
                held.signal()
                gate.wait()
            }
        }
        let first = Once()
        try await withFakeApple({ _ in
            // Answered once the caller's thread is held (this runs on the server's own thread), so the answer always
            // arrives while the caller cannot run; the thread is let go 6 s later, after the 2 s timeout.
            if first.take() {
                received.signal()
                held.wait()
                DispatchQueue.global().asyncAfter(deadline: .now() + 6) { gate.signal() }
            }
            return .json(AppleAnswers.historyPage(Self.largePage, revision: "r1", hasMore: false))
        }) { _, server, key in
            var settings = key.settings(for: server, maxRetries: 2, maxRetryWaitSeconds: 1)
            settings.timeoutSeconds = 2
            let quick = try AppStoreServerAPIClient(settings: settings, logger: Self.logger)
            let asked = Task(executorPreference: thread) { try await quick.transactionHistory("2000000000000001") }
            let outcome = await asked.result
            await holder.task?.value
            await quick.shutdown()
            let page = try outcome.get()
            #expect(page.signedTransactions == Self.largePage)
            #expect(server.requests.count == 1, "asked \(server.requests.count) times")
        }
    }

    /// A page as large as Apple's with 20 signed transactions and their certificate chains (about 200 KB): it
    /// reaches the client in many reads, so the client must keep reading it while the caller cannot run.
    static let largePage = (0..<20).map { i in "jws-\(i)-" + String(repeating: "x", count: 10_000) }

    /// True the first time only.
    final class Once: @unchecked Sendable {
        private let lock = NSLock()
        private var taken = false
        func take() -> Bool { lock.withLock { defer { taken = true }; return !taken } }
    }

    /// The task that holds the caller's thread, kept to be awaited.
    final class Holder: @unchecked Sendable {
        private let lock = NSLock()
        private var held: Task<Void, Never>?
        var task: Task<Void, Never>? {
            get { lock.withLock { held } }
            set { lock.withLock { held = newValue } }
        }
    }

    @Test func theTokenIsNeverInTheSignersDescription() throws {
        let dir = try TemporaryDirectory(prefix: "apple-key")
        defer { dir.remove() }
        let key = try OperatorKey(directory: dir)
        let signer = try APITokenSigner(
            keyFile: key.path, keyId: OperatorKey.keyId, issuerId: OperatorKey.issuerId, bundleId: AppleFixtures.bundleId)
        let token = try signer.token()
        #expect(!String(describing: signer).contains(token))
        let pem = try String(contentsOfFile: key.path, encoding: .utf8)
        #expect(!String(describing: signer).contains(String(pem.dropFirst(28).prefix(40))))
        // A file that is not a key is named, its contents never quoted.
        try Data("-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n".utf8)
            .write(to: URL(fileURLWithPath: dir.file("bad.p8")))
        #expect {
            _ = try APITokenSigner(keyFile: dir.file("bad.p8"), keyId: "K", issuerId: "I", bundleId: "B")
        } throws: { error in
            (error as? CodedError)?.code == .invalidConfiguration && !"\(error)".contains("c2VjcmV0")
        }
    }

    @Test func historyIsFollowedAcrossThreePagesByRevision() async throws {
        let pages: [String?: (signed: [String], next: String, more: Bool)] = [
            nil: (["jws-1", "jws-2"], "rev-1", true), "rev-1": (["jws-3", "jws-4"], "rev-2", true),
            "rev-2": (["jws-5"], "rev-3", false),
        ]
        try await withFakeApple({ request in
            guard request.method == "GET", request.path == "/inApps/v2/history/2000000000000001",
                request.query["sort"] == "ASCENDING", let page = pages[request.query["revision"]]
            else { return .json(AppleAnswers.error(4000006, "Invalid transaction id."), status: 400) }
            return .json(AppleAnswers.historyPage(page.signed, revision: page.next, hasMore: page.more))
        }) { client, server, _ in
            var seen: [[String]] = []
            let whole = try await client.wholeTransactionHistory("2000000000000001") { seen.append($0.signedTransactions) }
            #expect(whole.signedTransactions == ["jws-1", "jws-2", "jws-3", "jws-4", "jws-5"])
            #expect(whole.revision == "rev-3")
            #expect(whole.pages == 3)
            #expect(seen == [["jws-1", "jws-2"], ["jws-3", "jws-4"], ["jws-5"]])
            #expect(server.requests.map { $0.query["revision"] } == [nil, "rev-1", "rev-2"])
        }
    }

    @Test func a429IsTriedAgainAfterAppleSaysAndThenSucceeds() async throws {
        let answered = Counter()
        try await withFakeApple({ _ in
            if answered.next() == 0 {
                // Apple's Retry-After: the UNIX time, in milliseconds, when a request may be sent again.
                let at = Int64((Date().timeIntervalSince1970 + 1.2) * 1000)
                var response = FakeAppStoreServer.Response.json(AppleAnswers.error(4290000, "Rate limit exceeded."), status: 429)
                response.headers.append(("Retry-After", String(at)))
                return response
            }
            return .json(AppleAnswers.historyPage(["jws-1"], revision: "r1", hasMore: false))
        }) { client, server, _ in
            let page = try await client.transactionHistory("2000000000000001")
            #expect(page.signedTransactions == ["jws-1"])
            let requests = server.requests
            #expect(requests.count == 2)
            // The second request waited for the instant Apple named (a second after the first, give or take).
            let waited = requests[1].receivedAt.timeIntervalSince(requests[0].receivedAt)
            #expect(waited >= 1.0, "waited \(waited) s")
        }
    }

    @Test func rateLimitingThatDoesNotEndFailsWithACode() async throws {
        try await withFakeApple(maxRetries: 2, { _ in
            var response = FakeAppStoreServer.Response.json(AppleAnswers.error(4290000, "Rate limit exceeded."), status: 429)
            response.headers.append(("Retry-After", "0"))
            return response
        }) { client, server, _ in
            await #expect {
                _ = try await client.transactionHistory("2000000000000001")
            } throws: { error in
                let e = error as? CodedError
                return e?.code == .appleRateLimited && e?.message.contains("4290000") == true
            }
            #expect(server.requests.count == 3, "the first attempt and two retries, no more")
        }
        // A Retry-After beyond the longest wait allowed fails at once rather than stall.
        try await withFakeApple(maxRetries: 5, maxRetryWaitSeconds: 2, { _ in
            var response = FakeAppStoreServer.Response.json(AppleAnswers.error(4290000, "Rate limit exceeded."), status: 429)
            response.headers.append(("Retry-After", String(Int64((Date().timeIntervalSince1970 + 3600) * 1000))))
            return response
        }) { client, server, _ in
            await #expect(throws: CodedError(.appleRateLimited, "")) {
                _ = try await client.transactionHistory("2000000000000001")
            }
            #expect(server.requests.count == 1)
        }
    }

    @Test func appleErrorsHaveCodes() async throws {
        try await withFakeApple({ request in
            switch request.path {
            case "/inApps/v1/subscriptions/401": return .json([:], status: 401)
            case "/inApps/v1/subscriptions/404": return .json(AppleAnswers.error(4040010, "Transaction id not found."), status: 404)
            case "/inApps/v1/subscriptions/400": return .json(AppleAnswers.error(4000006, "Invalid transaction id."), status: 400)
            default: return FakeAppStoreServer.Response(status: 200, body: Array("{\"data\": 7}".utf8))
            }
        }) { client, _, _ in
            for (id, code, words) in [
                ("401", ErrorCode.appleUnauthorized, "keyId"), ("404", .appleNotFound, "4040010"),
                ("400", .appleAPIError, "Invalid transaction id."), ("bad", .appleBadResponse, "data is not an array"),
            ] {
                await #expect {
                    _ = try await client.allSubscriptionStatuses(id)
                } throws: { error in
                    (error as? CodedError)?.code == code && "\(error)".contains(words)
                }
            }
        }
    }

    @Test func notificationHistoryPostsTheWindowAndFollowsThePaginationToken() async throws {
        try await withFakeApple({ request in
            guard request.method == "POST", request.path == "/inApps/v1/notifications/history" else {
                return .json(AppleAnswers.error(4040001, "Not found"), status: 404)
            }
            if request.query["paginationToken"] == nil {
                return .json(AppleAnswers.notificationPage(
                    [("p1", [(1_698_148_900_000, "NO_RESPONSE"), (1_698_148_950_000, "SUCCESS")])], token: "t1", hasMore: true))
            }
            return .json(AppleAnswers.notificationPage([("p2", [(1_698_148_800_000, "CIRCULAR_REDIRECT")])], token: nil, hasMore: false))
        }) { client, server, _ in
            let items = try await client.wholeNotificationHistory(
                NotificationHistoryRequest(startDate: 1_698_000_000_000, endDate: 1_698_200_000_000, transactionId: "2000000000000001"))
            #expect(items.map(\.signedPayload) == ["p1", "p2"])
            #expect(items.map(\.undelivered) == [false, true])
            #expect(items.map(\.lastResult) == ["SUCCESS", "CIRCULAR_REDIRECT"])
            let body = try #require(server.requests.first?.body)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
            #expect(json["startDate"] as? Int == 1_698_000_000_000)
            #expect(json["endDate"] as? Int == 1_698_200_000_000)
            #expect(json["transactionId"] as? String == "2000000000000001")
            #expect(server.requests.map { $0.query["paginationToken"] } == [nil, "t1"])
            #expect(server.requests.first?.header("Content-Type") == "application/json")
        }
    }

    @Test func orderLookupAndRefundHistory() async throws {
        try await withFakeApple({ request in
            switch request.path {
            case "/inApps/v1/lookup/MQKKHVJ8PN": return .json(["status": 0, "signedTransactions": ["jws-9"]])
            case "/inApps/v2/refund/lookup/2000000000000001":
                return .json(["signedTransactions": ["jws-r"], "revision": "rr", "hasMore": false] as [String: Any])
            // Look Up Order ID answers an order id it does not know with 200 and status 1 (OrderLookupStatus).
            case let path where path.hasPrefix("/inApps/v1/lookup/"): return .json(["status": 1])
            default: return .json(AppleAnswers.error(4040010, "Transaction id not found."), status: 404)
            }
        }) { client, _, _ in
            let order = try await client.lookUpOrder("MQKKHVJ8PN")
            #expect(order.status == 0)
            #expect(order.signedTransactions == ["jws-9"])
            let unknown = try await client.lookUpOrder("ZZZZZZZZZZ")
            #expect(unknown.status == 1)
            #expect(unknown.signedTransactions.isEmpty)
            let refunds = try await client.refundHistory("2000000000000001")
            #expect(refunds.signedTransactions == ["jws-r"])
            #expect(refunds.revision == "rr")
        }
    }

    @Test func aServerTheClientDoesNotTrustIsUnreachable() async throws {
        let dir = try TemporaryDirectory(prefix: "apple-untrusted")
        defer { dir.remove() }
        let server = try FakeAppStoreServer(directory: dir) { _ in .json([:]) }
        defer { server.shutdown() }
        let key = try OperatorKey(directory: dir)
        var settings = key.settings(for: server, maxRetries: 0)
        settings.trustedCertificates = []  // the system's roots: the test CA is not among them
        let client = try AppStoreServerAPIClient(settings: settings, logger: Self.logger)
        await #expect(throws: CodedError(.appleUnreachable, "")) { _ = try await client.lookUpOrder("X") }
        await client.shutdown()
        #expect(server.requests.isEmpty, "no request, so no token, reached a server that was not trusted")
    }

    @Test func settingsAreReadFromTheConfigurationFile() throws {
        let json = #"""
            {"bundleId": "com.example.app",
             "appStoreServerAPI": {"keyFile": "keys/SubscriptionKey_2X9R4HXF34.p8", "keyId": "2X9R4HXF34",
                                   "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "environment": "Sandbox",
                                   "reconcileEverySeconds": 3600}}
            """#
        let settings = try #require(try AppStoreServerAPISettings.read(configFile: Array(json.utf8), baseDirectory: "/etc/sl"))
        #expect(settings.keyFile == "/etc/sl/keys/SubscriptionKey_2X9R4HXF34.p8")
        #expect(settings.bundleId == "com.example.app")
        #expect(settings.resolvedBaseURL == AppStoreServerAPISettings.sandboxURL)
        #expect(settings.reconcileEverySeconds == 3600)
        #expect(try AppStoreServerAPISettings.read(configFile: Array("{}".utf8), baseDirectory: "/") == nil)
        for bad in [
            #"{"appStoreServerAPI": {"keyId": "K", "issuerId": "I", "bundleId": "B"}}"#,
            #"{"appStoreServerAPI": {"keyFile": "k.p8", "keyId": "K", "issuerId": "I", "bundleId": "B", "baseURL": "http://x"}}"#,
            #"{"appStoreServerAPI": {"keyFile": "k.p8", "keyId": "K", "issuerId": "I", "bundleId": "B", "environment": "Xcode"}}"#,
            #"{"appStoreServerAPI": {"keyFile": "k.p8", "keyId": "K", "issuerId": "I", "bundleId": "B", "reconcileEverySeconds": 1}}"#,
        ] {
            #expect(throws: CodedError(.invalidConfiguration, "")) {
                _ = try AppStoreServerAPISettings.read(configFile: Array(bad.utf8), baseDirectory: "/")
            }
        }
    }
}

/// A thread-safe counter for the fake server's closures.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    /// The value before this call.
    func next() -> Int { lock.withLock { defer { value += 1 }; return value } }
}
