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

/// A yearly subscription bought three days ago by an app user whose id is the `appAccountToken` the app attached to
/// the purchase. Apple tried to notify it and never got through; the app never posted it either: the ledger has
/// never heard of it.
struct MissedPurchase {
    static let otid = "2000000000000701"
    static let user = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
    static let uuid = "0f8e2a61-93b4-4c57-a1d2-000000000701"

    let now: Int64
    let transaction: [String: Any]
    let renewal: [String: Any]
    let signedPayload: String

    init(now: Int64) {
        self.now = now
        let day = AppleFixtures.day
        transaction = AppleFixtures.v2Transaction(
            transactionId: Self.otid, originalTransactionId: Self.otid, productId: AppleFixtures.yearly,
            purchaseDate: now - 3 * day, expiresDate: now + 362 * day, signedDate: now - 3 * day,
            webOrderLineItemId: "3000000000000701", appAccountToken: Self.user)
        renewal = AppleFixtures.v2Renewal(
            originalTransactionId: Self.otid, productId: AppleFixtures.yearly, renewalDate: now + 362 * day,
            signedDate: now - 3 * day)
        signedPayload = TestPKI.shared.sign(
            json: AppleFixtures.v2NotificationPayload(
                type: "SUBSCRIBED", subtype: "INITIAL_BUY", notificationUUID: Self.uuid, signedDate: now - 3 * day,
                transaction: transaction, renewal: renewal))
    }

    /// Apple's every attempt failed (Apple retries for days; these are the first few).
    var attempts: [(Int64, String)] {
        let start = now - 3 * AppleFixtures.day
        return [(start + 1_000, "NO_RESPONSE"), (start + 3_600_000, "TIMED_OUT"), (start + 14_400_000, "TLS_ISSUE")]
    }

    /// Apple holding this purchase beside `others`' customer (`ThreePurchases`); the order of the customer's emailed
    /// receipt.
    func fakeApple(beside others: ThreePurchases) -> FakeApple {
        let apple = others.fakeApple()
        let customer = apple.addCustomer(transactions: [transaction], renewals: [renewal])
        apple.addNotification(signedPayload: signedPayload, signedDate: now - 3 * AppleFixtures.day, customer: customer, attempts: attempts)
        apple.addOrder("MLK3Q8V2PZ", transactionIds: [Self.otid])
        return apple
    }
}

/// The purchases reconciliation exists for: those the ledger never heard of, found from Apple's side (the whole
/// app's notification history, an order id), and the modes' other promises.
@Suite struct MissedPurchaseTests {
    static let logger = Logger(label: "test")

    static func timeline(_ ledger: Ledger, _ otid: String, at: Int64) throws -> TimelineView {
        try #require(try ledger.timeline(OriginalTransactionID(rawValue: otid), at: at))
    }

    @Test func thePassOverTheWholeAppFindsAPurchaseNeverDeliveredNorPosted() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-missed")
        defer { dir.remove() }
        let now = currentMillis()
        let others = ThreePurchases(now: now)
        let missed = MissedPurchase(now: now)
        let ledger = try await ReconcileTests.ledger(dir, "ledger", others.ledgerInputs, now: now)
        defer { ledger.close() }
        let user = AppUserID(MissedPurchase.user)

        // Before: the ledger knows nothing of the purchase; the customer has no entitlement.
        #expect(try ledger.timeline(OriginalTransactionID(rawValue: MissedPurchase.otid), at: now) == nil)
        #expect(try ledger.customer(user, at: now).entitlements[AppleFixtures.yearly]?.active != true)
        let before = try ledger.lastSeq()

        try await ReconcileTests.withReconciler(dir, ledger, apple: missed.fakeApple(beside: others).respond) { reconciler, server in
            let report = try await reconciler.run(.missed(since: nil, onlyFailures: true), dryRun: false, now: { now })
            #expect(report.mode == "missed")
            #expect(report.failure == nil)
            // One request, for the whole app: no transactionId, only failures, a startDate Apple accepts.
            #expect(server.requests.count == 1)
            #expect(report.requests == 1)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(server.requests[0].body)) as? [String: Any])
            #expect(body["transactionId"] == nil)
            #expect(body["onlyFailures"] as? Bool == true)
            let window = try #require(report.window)
            #expect(window.onlyFailures)
            #expect(window.start == now - 179 * AppleFixtures.day)
            #expect(window.notificationsSeen == 2, "the other customer's undelivered renewal, and the purchase")

            let check = try #require(report.subscriptions.first { $0.originalTransactionId.rawValue == MissedPurchase.otid })
            #expect(check.mode == "missed")
            #expect(check.askedWith == nil)
            #expect(check.notificationsAdded.map(\.uuid) == [MissedPurchase.uuid])
            #expect(check.notificationsAdded.first?.lastSendAttempt == "TLS_ISSUE")
            #expect(check.notificationsUndelivered == [MissedPurchase.uuid])
            #expect(check.transactionsAdded.map(\.transactionId) == [MissedPurchase.otid])
            #expect(check.renewalInfoAdded)
            #expect(check.appendedEvents > 0)
            let recorded = try #require(check.recordedAt)
            // The other customer's lost renewal is found by the same pass.
            let a = try #require(report.subscriptions.first { $0.originalTransactionId.rawValue == ThreePurchases.a })
            #expect(a.notificationsAdded.map(\.uuid) == [others.renewalUUID])
            #expect(report.subscriptions.count == 2)
            #expect(report.allRefused.isEmpty)

            // The check is in the log, on the subscription's answer.
            let stored = try ledger.log.events(key: "reconciliation:" + MissedPurchase.otid)
            #expect(stored.map(\.event.seq) == [recorded])
            let shown = try #require(try Self.timeline(ledger, MissedPurchase.otid, at: now).reconciliation)
            #expect(shown.seq == recorded)
            #expect(shown.check.mode == "missed")
            #expect(shown.check.windowStart == now - 179 * AppleFixtures.day)
            #expect(shown.check.notificationsAdded == [MissedPurchase.uuid])
            #expect(shown.check.notificationsUndelivered == [MissedPurchase.uuid])
        }

        // The ledger now answers the customer's entitlement, from the purchase on.
        let customer = try ledger.customer(user, at: now)
        let entitlement = try #require(customer.entitlements[AppleFixtures.yearly])
        #expect(entitlement.active)
        #expect(entitlement.originalTransactionId == MissedPurchase.otid)
        #expect(customer.subscriptions == [MissedPurchase.otid])
        #expect(try Self.timeline(ledger, MissedPurchase.otid, at: now).status == "active")
        // The notification is stored as Apple sent it.
        let notification = try #require(try ledger.log.events(key: "notification:" + MissedPurchase.uuid).first)
        #expect(notification.event.metadata.signature == .verified)
        #expect(try ledger.log.raw(of: notification) == AppleFixtures.v2Notification(signedPayload: missed.signedPayload))
        #expect(try ledger.audit.replay(check: true).differences.isEmpty)
        #expect(try ledger.audit.verify().ok)

        // The next pass: Apple still lists it as undelivered; nothing is missing, and nothing new is recorded.
        let afterFirst = try ledger.lastSeq()
        #expect(afterFirst > before)
        try await ReconcileTests.withReconciler(dir, ledger, apple: missed.fakeApple(beside: others).respond) { reconciler, _ in
            let report = try await reconciler.run(.missed(since: nil, onlyFailures: true), dryRun: false, now: { now + 3_600_000 })
            let check = try #require(report.subscriptions.first { $0.originalTransactionId.rawValue == MissedPurchase.otid })
            #expect(check.complete)
            #expect(check.notificationsUndelivered == [MissedPurchase.uuid])
            #expect(check.recordedAt == nil)
        }
        #expect(try ledger.lastSeq() == afterFirst)
    }

    @Test func everyNotificationFindsOnesAppleDeliveredAndTheLedgerLost() async throws {
        // A proxy answered Apple 200 and dropped renewals 3 and 4: Apple says it delivered them.
        let dir = try TemporaryDirectory(prefix: "reconcile-missed-all")
        defer { dir.remove() }
        let now = currentMillis()
        let story = RenewalStory(now: now)
        let gappy = try await ReconcileTests.ledger(dir, "gappy", [story.binding] + Array(story.bodies[0..<3]), now: now)
        defer { gappy.close() }
        try await ReconcileTests.withReconciler(dir, gappy, apple: story.apple(undelivered: [])) { reconciler, server in
            let failures = try await reconciler.run(.missed(since: nil, onlyFailures: true), dryRun: false, now: { now })
            #expect(failures.subscriptions.isEmpty)
            #expect(failures.window?.notificationsSeen == 0)
            let every = try await reconciler.run(.missed(since: now - 100 * AppleFixtures.day, onlyFailures: false), dryRun: false, now: { now })
            #expect(every.window?.start == now - 100 * AppleFixtures.day)
            #expect(every.window?.notificationsSeen == 3, "those signed in the window: renewals 2, 3 and 4")
            let check = try #require(every.subscriptions.first)
            #expect(check.notificationsAdded.map(\.uuid) == Array(story.uuids[3...]))
            #expect(check.notificationsUndelivered.isEmpty)
            #expect(check.recordedAt != nil)
            #expect(server.requests.count == 2)
        }
        #expect(try ReconcileTests.timeline(gappy, at: now - AppleFixtures.day).status == "active")
    }

    @Test func anOrderTheLedgerNeverSawIsFoundByItsId() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-order")
        defer { dir.remove() }
        let now = currentMillis()
        let others = ThreePurchases(now: now)
        let missed = MissedPurchase(now: now)
        let ledger = try await ReconcileTests.ledger(dir, "ledger", others.ledgerInputs, now: now)
        defer { ledger.close() }
        let apple = missed.fakeApple(beside: others)
        apple.addOrder("MQKKHVJ8PN", transactionIds: [ThreePurchases.b])
        try await ReconcileTests.withReconciler(dir, ledger, apple: apple.respond) { reconciler, server in
            // The non-consumable the app never posted, from the other customer's receipt: found with the rest of
            // that customer's purchases.
            let report = try await reconciler.run(.order("MQKKHVJ8PN"), dryRun: false, now: { now })
            let order = try #require(report.order)
            #expect(order.found)
            #expect(order.transactionIds == [ThreePurchases.b])
            #expect(report.subscriptions.first?.originalTransactionId.rawValue == ThreePurchases.b)
            #expect(Set(report.subscriptions.map(\.originalTransactionId.rawValue)) == [ThreePurchases.a, ThreePurchases.b, ThreePurchases.c])
            #expect(report.subscriptions.allSatisfy { $0.askedWith == ThreePurchases.b })
            let b = try #require(report.subscriptions.first)
            #expect(b.transactionsAdded.map(\.transactionId) == [ThreePurchases.b])
            #expect(report.requests == 5, "the lookup, then the customer's four")
            #expect(server.requests.first?.path == "/inApps/v1/lookup/MQKKHVJ8PN")
        }
        #expect(try !ledger.log.events(key: ThreePurchases.b).isEmpty)
        #expect(try Self.timeline(ledger, ThreePurchases.b, at: now).periods.first?.productId == ThreePurchases.lifetime)

        // An order Apple does not know: 200 and status 1; reported, nothing written.
        let before = try ledger.lastSeq()
        try await ReconcileTests.withReconciler(dir, ledger, apple: apple.respond) { reconciler, server in
            let report = try await reconciler.run(.order("ZZZZZZZZZZ"), dryRun: false, now: { now })
            #expect(report.order?.status == 1)
            #expect(report.order?.found == false)
            #expect(!report.complete)
            #expect(report.subscriptions.isEmpty)
            #expect(server.requests.count == 1)
        }
        #expect(try ledger.lastSeq() == before)
    }

    @Test func aCustomerCheckCountsRefundsAndSaysHowAppleWasAsked() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-refunds")
        defer { dir.remove() }
        let now = currentMillis()
        let story = ThreePurchases(now: now)
        let ledger = try await ReconcileTests.ledger(dir, "ledger", story.ledgerInputs, now: now)
        defer { ledger.close() }
        try await ReconcileTests.withReconciler(dir, ledger, apple: story.fakeApple().respond) { reconciler, _ in
            let report = try await reconciler.run(.original(OriginalTransactionID(rawValue: ThreePurchases.c)), dryRun: false, now: { now })
            #expect(report.requests == 4)
            #expect(report.subscriptions.allSatisfy { $0.askedWith == ThreePurchases.c && $0.mode == "customer" })
            let c = try #require(report.subscriptions.first)
            #expect(c.originalTransactionId.rawValue == ThreePurchases.c)
            #expect(c.refundsSeen == 1)
            #expect(c.windowStart == now - 179 * AppleFixtures.day)
        }
        let shown = try #require(try Self.timeline(ledger, ThreePurchases.c, at: now).reconciliation)
        #expect(shown.check.mode == "customer")
        #expect(shown.check.refundsSeen == 1)
        #expect(shown.check.transactionsAdded == [ThreePurchases.c])
    }

    @Test func theRestOfAStoppedRunIsMarkedNotAsked() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-not-asked")
        defer { dir.remove() }
        let now = currentMillis()
        let (apple, bodies) = ReadingAppleTests.threeCustomers(now: now)
        var failing = FakeAppStoreServer.Response.json(AppleAnswers.error(5_000_000, "An unknown error occurred."), status: 500)
        failing.headers.append(("Retry-After", "0"))
        apple.inject(failing, times: 100)
        let ledger = try await ReconcileTests.ledger(dir, "ledger", bodies, now: now)
        defer { ledger.close() }
        try await ReconcileTests.withReconciler(dir, ledger, apple: apple.respond) { reconciler, server in
            let report = try await reconciler.run(.activeSince(now - 30 * AppleFixtures.day), dryRun: false, now: { now })
            #expect(report.subscriptions.map(\.notAsked) == [false, true, true])
            #expect(report.subscriptions.allSatisfy { $0.failure?.code == .appleUnavailable })
            // The first request and its three retries (maxRetries 3), nothing after.
            #expect(server.requests.count == 4)
        }
    }

    @Test func theSandboxWindowIsThirtyDays() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-sandbox")
        defer { dir.remove() }
        let key = try OperatorKey(directory: dir)
        let settings = AppStoreServerAPISettings(
            keyFile: key.path, keyId: OperatorKey.keyId, issuerId: OperatorKey.issuerId, bundleId: AppleFixtures.bundleId,
            environment: .sandbox)
        let client = try AppStoreServerAPIClient(settings: settings, logger: Self.logger)
        let ledger = try Ledger(directory: dir.file("ledger"), logger: Self.logger)
        defer { ledger.close() }
        let reconciler = Reconciler(client: client, pipeline: IngestPipeline(ledger: ledger, configuration: ReconcileTests.configuration))
        #expect(reconciler.earliestWindowStart(now: 100 * AppleFixtures.day) == 71 * AppleFixtures.day)
        #expect(client.settings.resolvedBaseURL == "https://api.storekit-sandbox.apple.com")
        await client.shutdown()
    }

    @Test func servesPeriodicJobRunsTheWholeAppPass() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-periodic")
        defer { dir.remove() }
        let now = currentMillis()
        let others = ThreePurchases(now: now)
        let missed = MissedPurchase(now: now)
        let ledger = try await ReconcileTests.ledger(dir, "ledger", others.ledgerInputs, now: now)
        defer { ledger.close() }
        try await ReconcileTests.withReconciler(dir, ledger, apple: missed.fakeApple(beside: others).respond) { reconciler, server in
            let started = currentMillis()
            let job = reconciler.startPeriodic(every: 0.2, window: 7 * 86_400, modes: [.missed], logger: Self.logger)
            // Until the pass has recorded its check: a condition, bounded only against a job that never runs.
            var found = false
            let deadline = ContinuousClock.now + .seconds(120)
            while !found && ContinuousClock.now < deadline {
                try await Task.sleep(nanoseconds: 100_000_000)
                found = try !ledger.log.events(key: "reconciliation:" + MissedPurchase.otid).isEmpty
            }
            let stopped = currentMillis()
            job.cancel()
            await job.value
            #expect(found)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(server.requests[0].body)) as? [String: Any])
            #expect(body["onlyFailures"] as? Bool == true)
            #expect(body["transactionId"] == nil)
            // The window is the job's: a week back from when its pass ran (between the job's start and the check
            // found), within the 180 days Apple keeps.
            let startDate = Int64(body["startDate"] as? Int ?? 0)
            let week = 7 * AppleFixtures.day
            #expect(startDate >= started - week && startDate <= stopped - week, "\(startDate) in \(started)...\(stopped) - 7 d")
        }
        #expect(try ledger.customer(AppUserID(MissedPurchase.user), at: now).entitlements[AppleFixtures.yearly]?.active == true)
        // The renewal of the other customer, signed 10 days ago, is outside the week: not found.
        #expect(try ledger.log.events(key: "notification:" + others.renewalUUID).isEmpty)
    }

    @Test func thePeriodicModesAreConfigured() throws {
        func read(_ section: String) throws -> AppStoreServerAPISettings? {
            try AppStoreServerAPISettings.read(
                configFile: Array(#"{"bundleId": "com.example.app", "appStoreServerAPI": {"keyFile": "k.p8", "keyId": "K", "issuerId": "I"\#(section)}}"#.utf8),
                baseDirectory: "/etc/sl")
        }
        let defaults = try #require(try read(""))
        #expect(defaults.reconcileModes == [.missed, .active])
        #expect(defaults.reconcileOnlyFailures)
        let chosen = try #require(try read(#", "reconcileModes": ["active"], "reconcileOnlyFailures": false"#))
        #expect(chosen.reconcileModes == [.active])
        #expect(!chosen.reconcileOnlyFailures)
        for bad in [#", "reconcileModes": []"#, #", "reconcileModes": ["everything"]"#, #", "reconcileOnlyFailures": "yes""#] {
            #expect(throws: CodedError(.invalidConfiguration, "")) { _ = try read(bad) }
        }
    }
}
