import Foundation
import LedgerAppStore
import LedgerAppleAPI
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerTestSupport
import LedgerErrors
import Logging
import Testing

/// One customer (one Apple ID) with three purchases in the app, told through `FakeApple`:
/// - A, a monthly subscription bought 40 days ago and renewed 10 days ago; Apple delivered the purchase's
///   notification and never the renewal's;
/// - B, a non-consumable bought 200 days ago that the app never posted (its notification is older than the 180 days
///   Apple keeps);
/// - C, a consumable bought 250 days ago, posted by the app for u1, and refunded 190 days ago (the refund's
///   notification is gone from Apple's history too: only the transaction history and the refund history say it).
struct ThreePurchases {
    static let a = "2000000000000101"
    static let b = "2000000000000201"
    static let c = "2000000000000301"
    static let lifetime = "com.example.lifetime"
    static let gems = "com.example.gems60"

    let now: Int64
    let a1: [String: Any]
    let a2: [String: Any]
    let aRenewal: [String: Any]
    let b1: [String: Any]
    let c1: [String: Any]
    let c1Refunded: [String: Any]
    let purchaseNotification: String
    let renewalNotification: String
    let purchaseUUID = "5b1a0c2e-7d3f-4e8a-9c6b-000000000101"
    let renewalUUID = "5b1a0c2e-7d3f-4e8a-9c6b-000000000102"

    init(now: Int64) {
        self.now = now
        let day = AppleFixtures.day
        a1 = AppleFixtures.v2Transaction(
            transactionId: Self.a, originalTransactionId: Self.a, purchaseDate: now - 40 * day,
            expiresDate: now - 10 * day, signedDate: now - 40 * day, webOrderLineItemId: "3000000000000101")
        a2 = AppleFixtures.v2Transaction(
            transactionId: "2000000000000102", originalTransactionId: Self.a, purchaseDate: now - 10 * day,
            originalPurchaseDate: now - 40 * day, expiresDate: now + 20 * day, signedDate: now - 10 * day,
            webOrderLineItemId: "3000000000000102", transactionReason: "RENEWAL")
        aRenewal = AppleFixtures.v2Renewal(originalTransactionId: Self.a, renewalDate: now + 20 * day, signedDate: now - 10 * day)
        b1 = AppleFixtures.v2Transaction(
            transactionId: Self.b, originalTransactionId: Self.b, productId: Self.lifetime, purchaseDate: now - 200 * day,
            signedDate: now - 200 * day, type: "Non-Consumable")
        c1 = AppleFixtures.v2Transaction(
            transactionId: Self.c, originalTransactionId: Self.c, productId: Self.gems, purchaseDate: now - 250 * day,
            signedDate: now - 250 * day, type: "Consumable")
        c1Refunded = AppleFixtures.v2Transaction(
            transactionId: Self.c, originalTransactionId: Self.c, productId: Self.gems, purchaseDate: now - 250 * day,
            signedDate: now - 190 * day, type: "Consumable", revocationDate: now - 190 * day, revocationReason: 0,
            revocationType: "REFUND_FULL")
        purchaseNotification = TestPKI.shared.sign(
            json: AppleFixtures.v2NotificationPayload(
                type: "SUBSCRIBED", subtype: "INITIAL_BUY", notificationUUID: purchaseUUID, signedDate: now - 40 * day,
                transaction: a1,
                renewal: AppleFixtures.v2Renewal(originalTransactionId: Self.a, renewalDate: now - 10 * day, signedDate: now - 40 * day)))
        renewalNotification = TestPKI.shared.sign(
            json: AppleFixtures.v2NotificationPayload(
                type: "DID_RENEW", subtype: nil, notificationUUID: renewalUUID, signedDate: now - 10 * day,
                transaction: a2, renewal: aRenewal))
    }

    /// What the ledger holds: u1's claim of A, A's purchase notification, and C as the app posted it for u1.
    var ledgerInputs: [[UInt8]] {
        [
            AppleFixtures.binding(appUserId: "u1", originalTransactionId: Self.a, claimedAt: now - 40 * AppleFixtures.day),
            AppleFixtures.v2Notification(signedPayload: purchaseNotification),
            AppleFixtures.envelope(type: "transaction", appUserId: "u1", jws: TestPKI.shared.sign(json: c1)),
        ]
    }

    /// Apple as it holds this customer.
    func fakeApple() -> FakeApple {
        let apple = FakeApple()
        let customer = apple.addCustomer(transactions: [a1, a2, b1, c1Refunded], renewals: [aRenewal])
        let day = AppleFixtures.day
        apple.addNotification(
            signedPayload: purchaseNotification, signedDate: now - 40 * day, customer: customer,
            attempts: [(now - 40 * day + 1000, "SUCCESS")])
        apple.addNotification(
            signedPayload: renewalNotification, signedDate: now - 10 * day, customer: customer,
            attempts: [(now - 10 * day + 1000, "NO_RESPONSE"), (now - 10 * day + 3_600_000, "TIMED_OUT")])
        return apple
    }
}

/// How each of Apple's answers is read: what is retried, what stops a run, what a request is scoped to, what an
/// unreadable item costs.
@Suite struct ReadingAppleTests {
    static let logger = Logger(label: "test")

    /// Runs `body` with a client of `apple` (retries and waits kept short).
    func withClient(
        _ apple: FakeApple, maxRetries: Int = 2,
        _ body: (AppStoreServerAPIClient, FakeAppStoreServer) async throws -> Void
    ) async throws {
        let dir = try TemporaryDirectory(prefix: "reading-apple")
        defer { dir.remove() }
        let server = try FakeAppStoreServer(directory: dir, respond: apple.respond)
        defer { server.shutdown() }
        let key = try OperatorKey(directory: dir)
        let client = try AppStoreServerAPIClient(
            settings: key.settings(for: server, maxRetries: maxRetries, maxRetryWaitSeconds: 2), logger: Self.logger)
        do {
            try await body(client, server)
        } catch {
            await client.shutdown()
            throw error
        }
        await client.shutdown()
    }

    static func timeline(_ ledger: Ledger, _ otid: String, at: Int64) throws -> TimelineView {
        try #require(try ledger.timeline(OriginalTransactionID(rawValue: otid), at: at))
    }

    static func error(_ code: Int64, _ message: String, status: Int) -> FakeAppStoreServer.Response {
        .json(AppleAnswers.error(code, message), status: status)
    }

    // MARK: - Retryable 404s

    @Test(arguments: [Int64(4_040_002), 4_040_004, 4_040_006])
    func aNotFoundAppleCallsRetryableIsTriedAgain(code: Int64) async throws {
        let story = ThreePurchases(now: currentMillis())
        let apple = story.fakeApple()
        apple.inject(Self.error(code, "Not found, but you can try again.", status: 404))
        try await withClient(apple) { client, server in
            let history = try await client.wholeTransactionHistory(ThreePurchases.a)
            #expect(history.signedTransactions.count == 4)
            #expect(server.requests.count == 2, "the 404 and the request tried again")
        }
    }

    @Test func aNotFoundAppleDoesNotCallRetryableFailsAtOnce() async throws {
        try await withClient(ThreePurchases(now: currentMillis()).fakeApple()) { client, server in
            await #expect {
                _ = try await client.wholeTransactionHistory("2999999999999999")
            } throws: { error in
                (error as? CodedError)?.code == .appleNotFound && "\(error)".contains("4040010")
            }
            #expect(server.requests.count == 1)
        }
    }

    // MARK: - An outage is not a bad request

    @Test func anOutageHasItsOwnCodeAndABadRequestKeepsApples() async throws {
        let apple = ThreePurchases(now: currentMillis()).fakeApple()
        try await withClient(apple, maxRetries: 1) { client, server in
            // 5000001, GeneralInternalRetryableError: tried again, then an outage.
            apple.inject(Self.error(5_000_001, "An unknown error occurred, try again.", status: 500), times: 2)
            await #expect {
                _ = try await client.allSubscriptionStatuses(ThreePurchases.a)
            } throws: { error in
                (error as? CodedError)?.code == ErrorCode("apple_unavailable") && "\(error)".contains("5000001")
            }
            #expect(server.requests.count == 2)
            // A 503 without Apple's error document: the same.
            apple.inject(FakeAppStoreServer.Response(status: 503, body: []), times: 2)
            await #expect {
                _ = try await client.allSubscriptionStatuses(ThreePurchases.a)
            } throws: { error in
                (error as? CodedError)?.code == ErrorCode("apple_unavailable")
            }
            #expect(server.requests.count == 4)
            // 4000006, an invalid transaction id: a request to fix, refused at once.
            await #expect {
                _ = try await client.allSubscriptionStatuses("not-a-transaction-id")
            } throws: { error in
                (error as? CodedError)?.code == .appleAPIError && "\(error)".contains("4000006")
            }
            #expect(server.requests.count == 5)
            // Apple back: answered.
            let statuses = try await client.allSubscriptionStatuses(ThreePurchases.a)
            #expect(statuses.data.flatMap(\.lastTransactions).map(\.originalTransactionId) == [ThreePurchases.a])
        }
    }

    // MARK: - A run stops when every later request would fail the same way

    /// Three customers, a monthly subscription each, active; the ledger holds each purchase's notification.
    static func threeCustomers(now: Int64) -> (apple: FakeApple, bodies: [[UInt8]]) {
        let apple = FakeApple()
        var bodies: [[UInt8]] = []
        for i in 1...3 {
            let otid = String(2_000_000_000_000_500 + i)
            let t = AppleFixtures.v2Transaction(
                transactionId: otid, originalTransactionId: otid, purchaseDate: now - 10 * AppleFixtures.day,
                expiresDate: now + 20 * AppleFixtures.day, signedDate: now - 10 * AppleFixtures.day,
                webOrderLineItemId: String(3_000_000_000_000_500 + i))
            let r = AppleFixtures.v2Renewal(originalTransactionId: otid, signedDate: now - 10 * AppleFixtures.day)
            let payload = TestPKI.shared.sign(
                json: AppleFixtures.v2NotificationPayload(
                    type: "SUBSCRIBED", subtype: "INITIAL_BUY", notificationUUID: "7c2d9e41-0b6a-4f3e-8d1c-00000000050\(i)",
                    signedDate: now - 10 * AppleFixtures.day, transaction: t, renewal: r))
            let customer = apple.addCustomer(transactions: [t], renewals: [r])
            apple.addNotification(
                signedPayload: payload, signedDate: now - 10 * AppleFixtures.day, customer: customer,
                attempts: [(now - 10 * AppleFixtures.day, "SUCCESS")])
            bodies.append(AppleFixtures.v2Notification(signedPayload: payload))
        }
        return (apple, bodies)
    }

    @Test func aRefusedKeyStopsTheRun() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-unauthorized")
        defer { dir.remove() }
        let now = currentMillis()
        let (apple, bodies) = Self.threeCustomers(now: now)
        apple.inject(.json([:], status: 401), times: 100)
        let ledger = try await ReconcileTests.ledger(dir, "ledger", bodies, now: now)
        defer { ledger.close() }
        let before = try ledger.lastSeq()
        try await ReconcileTests.withReconciler(dir, ledger, apple: apple.respond) { reconciler, server in
            let report = try await reconciler.run(.activeSince(now - 30 * AppleFixtures.day), dryRun: false, now: { now })
            #expect(server.requests.count == 1, "one refused request, none after it")
            #expect(report.subscriptions.count == 3, "every subscription is reported")
            #expect(report.subscriptions.allSatisfy { $0.failure?.code == .appleUnauthorized })
            #expect(report.subscriptions.dropFirst().allSatisfy { $0.failure?.message.contains("not asked") == true })
        }
        #expect(try ledger.lastSeq() == before)
    }

    @Test func aRateLimitBeyondTheLongestWaitStopsTheRun() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-rate-limited")
        defer { dir.remove() }
        let now = currentMillis()
        let (apple, bodies) = Self.threeCustomers(now: now)
        // Retry-After: the UNIX time in milliseconds Apple accepts requests again, an hour away.
        var limited = Self.error(4_290_000, "Rate limit exceeded.", status: 429)
        limited.headers.append(("Retry-After", String(now + 3_600_000)))
        apple.inject(limited, times: 100)
        let ledger = try await ReconcileTests.ledger(dir, "ledger", bodies, now: now)
        defer { ledger.close() }
        try await ReconcileTests.withReconciler(dir, ledger, apple: apple.respond) { reconciler, server in
            let report = try await reconciler.run(.activeSince(now - 30 * AppleFixtures.day), dryRun: false, now: { now })
            #expect(server.requests.count == 1)
            #expect(report.subscriptions.count == 3)
            #expect(report.subscriptions.allSatisfy { $0.failure?.code == .appleRateLimited })
            #expect(report.subscriptions.dropFirst().allSatisfy { $0.failure?.message.contains("not asked") == true })
        }
    }

    @Test func aRateLimitWithinTheLongestWaitIsWaitedOut() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-rate-wait")
        defer { dir.remove() }
        let now = currentMillis()
        let (apple, bodies) = Self.threeCustomers(now: now)
        let ledger = try await ReconcileTests.ledger(dir, "ledger", bodies, now: now)
        defer { ledger.close() }
        // Apple accepts requests again 1.5 s from now (within the 5 s the reconciler may wait).
        let retryAt = currentMillis() + 1_500
        var limited = Self.error(4_290_000, "Rate limit exceeded.", status: 429)
        limited.headers.append(("Retry-After", String(retryAt)))
        apple.inject(limited)
        try await ReconcileTests.withReconciler(dir, ledger, apple: apple.respond) { reconciler, server in
            let report = try await reconciler.run(.activeSince(now - 30 * AppleFixtures.day), dryRun: false, now: { now })
            #expect(report.failures.isEmpty)
            #expect(report.subscriptions.count == 3)
            let requests = server.requests
            #expect(requests.count > 1)
            #expect(requests[1].receivedAt.timeIntervalSince1970 * 1000 >= Double(retryAt), "waited for Retry-After")
        }
    }

    // MARK: - Everything Apple returns for the customer, once

    @Test func everythingAppleHoldsOfTheCustomerIsKeptAndReportedOnce() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-customer")
        defer { dir.remove() }
        let now = currentMillis()
        let story = ThreePurchases(now: now)
        let ledger = try await ReconcileTests.ledger(dir, "ledger", story.ledgerInputs, now: now)
        defer { ledger.close() }
        #expect(try ledger.log.events(key: ThreePurchases.b).isEmpty)
        #expect(try Self.timeline(ledger, ThreePurchases.c, at: now).periods.first?.revokedAt == nil)
        try await ReconcileTests.withReconciler(dir, ledger, apple: story.fakeApple().respond) { reconciler, server in
            let report = try await reconciler.run(.original(OriginalTransactionID(rawValue: ThreePurchases.a)), dryRun: false, now: { now })
            let otids = report.subscriptions.map(\.originalTransactionId.rawValue)
            #expect(otids.first == ThreePurchases.a)
            #expect(Set(otids) == [ThreePurchases.a, ThreePurchases.b, ThreePurchases.c])
            #expect(otids.count == 3, "each once")
            #expect(report.failures.isEmpty)
            let a = try #require(report.subscriptions.first { $0.originalTransactionId.rawValue == ThreePurchases.a })
            let b = try #require(report.subscriptions.first { $0.originalTransactionId.rawValue == ThreePurchases.b })
            let c = try #require(report.subscriptions.first { $0.originalTransactionId.rawValue == ThreePurchases.c })
            // A's notifications are A's; the renewal Apple never delivered is filled.
            #expect(a.notificationsSeen == 2)
            #expect(a.notificationsAdded.map(\.uuid) == [story.renewalUUID])
            #expect(a.notificationsUndelivered == [story.renewalUUID])
            #expect(a.transactionsSeen == 2)
            #expect(a.transactionsAdded.map(\.transactionId) == ["2000000000000102"])
            // B, which the app never posted, is kept; C's refund, which only the histories say, too.
            #expect(b.notificationsSeen == 0)
            #expect(b.transactionsAdded.map(\.transactionId) == [ThreePurchases.b])
            #expect(c.transactionsAdded.map(\.transactionId) == [ThreePurchases.c])
            #expect(c.transactionsAdded.first?.revision == true)
            #expect(report.subscriptions.allSatisfy { $0.recordedAt != nil && $0.refused.isEmpty })
            // Notification history, transaction history, statuses, refund history: once each for the customer.
            #expect(server.requests.count == 4)
        }
        #expect(try !ledger.log.events(key: ThreePurchases.b).isEmpty)
        #expect(try ledger.log.events(key: "reconciliation:" + ThreePurchases.b).count == 1)
        #expect(try Self.timeline(ledger, ThreePurchases.c, at: now).periods.first?.revokedAt == now - 190 * AppleFixtures.day)
        #expect(try Self.timeline(ledger, ThreePurchases.a, at: now).status == "active")
        #expect(try ledger.audit.replay(check: true).differences.isEmpty)
    }

    @Test func aUsersPurchasesAreAskedAboutOncePerCustomer() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-user")
        defer { dir.remove() }
        let now = currentMillis()
        let story = ThreePurchases(now: now)
        let ledger = try await ReconcileTests.ledger(dir, "ledger", story.ledgerInputs, now: now)
        defer { ledger.close() }
        #expect(Set(try ledger.customer(AppUserID("u1"), at: now).subscriptions) == [ThreePurchases.a, ThreePurchases.c])
        try await ReconcileTests.withReconciler(dir, ledger, apple: story.fakeApple().respond) { reconciler, server in
            let report = try await reconciler.run(.user(AppUserID("u1")), dryRun: false, now: { now })
            #expect(report.failures.isEmpty)
            let otids = report.subscriptions.map(\.originalTransactionId.rawValue)
            #expect(otids.count == 3 && Set(otids) == [ThreePurchases.a, ThreePurchases.b, ThreePurchases.c])
            let a = try #require(report.subscriptions.first { $0.originalTransactionId.rawValue == ThreePurchases.a })
            #expect(a.notificationsSeen == 2, "credited once, to A")
            let paths = server.requests.map(\.path)
            #expect(paths.count == 4, "\(paths)")
            #expect(paths.filter { $0 == "/inApps/v1/notifications/history" }.count == 1)
            #expect(paths.filter { $0.hasPrefix("/inApps/v2/history/") }.count == 1)
            #expect(paths.filter { $0.hasPrefix("/inApps/v1/subscriptions/") }.count == 1)
            #expect(paths.filter { $0.hasPrefix("/inApps/v2/refund/lookup/") }.count == 1)
        }
    }

    // MARK: - Pages

    @Test func anExpiredPaginationTokenStartsThePassAgainOnce() async throws {
        let now = currentMillis()
        let story = RenewalStory(now: now)
        let request = NotificationHistoryRequest(
            startDate: now - 179 * AppleFixtures.day, endDate: now, transactionId: RenewalStory.otid)
        let apple = story.fakeApple()
        apple.expireNextPaginationToken()
        try await withClient(apple) { client, server in
            let items = try await client.wholeNotificationHistory(request)
            #expect(items.map(\.signedPayload) == story.signedPayloads)
            #expect(server.requests.map { $0.query["paginationToken"] == nil } == [true, false, true, false])
        }
        // A second expiry in the same pass is Apple's refusal.
        let twice = story.fakeApple()
        twice.expireNextPaginationToken()
        twice.expireNextPaginationToken()
        try await withClient(twice) { client, _ in
            await #expect {
                _ = try await client.wholeNotificationHistory(request)
            } throws: { error in
                (error as? CodedError)?.code == .appleAPIError && "\(error)".contains("4000017")
            }
        }
    }

    @Test func aHistoryItemWithoutSignedPayloadIsReportedAndSkipped() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-no-payload")
        defer { dir.remove() }
        let now = currentMillis()
        let story = RenewalStory(now: now)
        let apple = story.fakeApple()
        // Apple's model makes signedPayload optional (NotificationHistoryResponseItem).
        apple.addNotification(
            signedPayload: nil, signedDate: story.starts[2] + 1000, customer: 0, attempts: [(story.starts[2] + 2000, "SUCCESS")])
        let gappy = try await ReconcileTests.ledger(dir, "gappy", [story.binding] + Array(story.bodies[0..<3]), now: now)
        defer { gappy.close() }
        try await ReconcileTests.withReconciler(dir, gappy, apple: apple.respond) { reconciler, _ in
            let report = try await reconciler.run(.original(OriginalTransactionID(rawValue: RenewalStory.otid)), dryRun: false, now: { now })
            let check = try #require(report.subscriptions.first)
            #expect(check.failure == nil)
            #expect(check.notificationsSeen == 5)
            #expect(check.notificationsAdded.map(\.uuid) == Array(story.uuids[3...]))
            #expect(check.refused.map(\.code) == ["apple_bad_response"])
            #expect(check.refused.first?.message.contains("signedPayload") == true)
            #expect(check.recordedAt != nil)
        }
        #expect(try ReconcileTests.timeline(gappy, at: now - AppleFixtures.day).status == "active")
    }

    // MARK: - Hosts

    @Test func theDefaultHostsAreTheOnesAppleRecommends() {
        #expect(AppStoreServerAPISettings.productionURL == "https://api.storekit.apple.com")
        #expect(AppStoreServerAPISettings.sandboxURL == "https://api.storekit-sandbox.apple.com")
        var settings = AppStoreServerAPISettings(keyFile: "k.p8", keyId: "K", issuerId: "I", bundleId: "B")
        #expect(settings.resolvedBaseURL == "https://api.storekit.apple.com")
        settings.environment = .sandbox
        #expect(settings.resolvedBaseURL == "https://api.storekit-sandbox.apple.com")
    }

    // MARK: - The fake answers as Apple documents

    @Test func theFakeScopesAndBoundsAsAppleDocuments() async throws {
        let now = currentMillis()
        let story = ThreePurchases(now: now)
        try await withClient(story.fakeApple()) { client, _ in
            // Any transaction of the customer, of any product: the customer's notifications, all of them.
            for id in [ThreePurchases.a, "2000000000000102", ThreePurchases.b, ThreePurchases.c] {
                let items = try await client.wholeNotificationHistory(
                    NotificationHistoryRequest(startDate: now - 179 * AppleFixtures.day, endDate: now + 60_000, transactionId: id))
                #expect(items.map(\.signedPayload) == [story.purchaseNotification, story.renewalNotification])
                let history = try await client.wholeTransactionHistory(id)
                #expect(history.signedTransactions.count == 4)
            }
            // The whole app's, only those never delivered.
            let failed = try await client.wholeNotificationHistory(
                NotificationHistoryRequest(startDate: now - 30 * AppleFixtures.day, endDate: now, onlyFailures: true))
            #expect(failed.map(\.signedPayload) == [story.renewalNotification])
            // A startDate more than 180 days back is refused, whatever the window's length.
            await #expect {
                _ = try await client.wholeNotificationHistory(
                    NotificationHistoryRequest(startDate: now - 181 * AppleFixtures.day, endDate: now - 170 * AppleFixtures.day))
            } throws: { error in
                (error as? CodedError)?.code == .appleAPIError && "\(error)".contains("4000012")
            }
            // An order Apple does not know: 200 and status 1.
            let order = try await client.lookUpOrder("MQKKHVJ8PN")
            #expect(order.status == 1)
            #expect(order.signedTransactions.isEmpty)
        }
    }
}
