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

/// A monthly subscription bought 140 days ago and renewed four times; Apple sent a V2 notification for each, signed
/// by the test chain. In the ledger that missed some, reconciliation must leave the ledger that received everything.
struct RenewalStory {
    static let otid = "2000000000000001"
    let now: Int64
    /// Purchase and renewals 1…4: their instants.
    let starts: [Int64]
    /// The five notifications as Apple sent them (`{"signedPayload": …}` bodies) and their payload JWS.
    let bodies: [[UInt8]]
    let signedPayloads: [String]
    let uuids: [String]
    let transactions: [[String: Any]]
    let renewal: [String: Any]

    init(now: Int64) {
        self.now = now
        let day = AppleFixtures.day
        let base = now - 140 * day
        starts = (0..<5).map { base + Int64($0) * 30 * day }
        var transactions: [[String: Any]] = []
        var payloads: [String] = []
        var uuids: [String] = []
        for (i, start) in starts.enumerated() {
            let t = AppleFixtures.v2Transaction(
                transactionId: String(2_000_000_000_000_001 + i), originalTransactionId: Self.otid, purchaseDate: start,
                originalPurchaseDate: base, expiresDate: start + 30 * day, signedDate: start,
                webOrderLineItemId: String(3_000_000_000_000_001 + i), transactionReason: i == 0 ? "PURCHASE" : "RENEWAL")
            let r = AppleFixtures.v2Renewal(
                originalTransactionId: Self.otid, renewalDate: start + 30 * day, signedDate: start)
            let uuid = String(format: "9d3a5f0e-1c2b-4e6f-8a7b-%012d", i + 1)
            let payload = AppleFixtures.v2NotificationPayload(
                type: i == 0 ? "SUBSCRIBED" : "DID_RENEW", subtype: i == 0 ? "INITIAL_BUY" : nil,
                notificationUUID: uuid, signedDate: start, transaction: t, renewal: r)
            transactions.append(t)
            payloads.append(TestPKI.shared.sign(json: payload))
            uuids.append(uuid)
        }
        self.transactions = transactions
        signedPayloads = payloads
        bodies = payloads.map { AppleFixtures.v2Notification(signedPayload: $0) }
        self.uuids = uuids
        renewal = AppleFixtures.v2Renewal(originalTransactionId: Self.otid, renewalDate: starts[4] + 30 * day, signedDate: starts[4])
    }

    /// The claim that makes u1 the owner (the app's backend, at purchase).
    var binding: [UInt8] { AppleFixtures.binding(appUserId: "u1", originalTransactionId: Self.otid, claimedAt: starts[0]) }

    /// Apple as it holds this customer: the five notifications (the last two sends failed, as Apple reports them),
    /// the five transactions and the renewal info, which Apple signs again when it answers. Pages are made small
    /// (notifications 3, history 2) so the story is paged through: notification history over two pages, transaction
    /// history over three.
    func fakeApple(undelivered: Set<Int> = [3, 4]) -> FakeApple {
        let apple = FakeApple(historyPageSize: 2, notificationPageSize: 3)
        let customer = apple.addCustomer(transactions: transactions, renewals: [renewal])
        for (i, payload) in signedPayloads.enumerated() {
            apple.addNotification(
                signedPayload: payload, signedDate: starts[i], customer: customer,
                attempts: undelivered.contains(i)
                    ? [(starts[i] + 1000, "NO_RESPONSE"), (starts[i] + 3_600_000, "TIMED_OUT")]
                    : [(starts[i] + 1000, "SUCCESS")])
        }
        return apple
    }

    /// `fakeApple`'s answers.
    func apple(undelivered: Set<Int> = [3, 4]) -> @Sendable (FakeAppStoreServer.Request) -> FakeAppStoreServer.Response {
        fakeApple(undelivered: undelivered).respond
    }
}

@Suite struct ReconcileTests {
    static let logger = Logger(label: "test")

    static var configuration: AppStoreConfiguration {
        AppStoreConfiguration(
            bundleId: AppleFixtures.bundleId, trustedRootsDER: [TestPKI.shared.rootDER], requireSignatures: true)
    }

    /// A ledger in `dir` fed `bodies` through the ingest path.
    static func ledger(_ dir: TemporaryDirectory, _ name: String, _ bodies: [[UInt8]], now: Int64) async throws -> Ledger {
        let ledger = try Ledger(directory: dir.file(name), logger: logger)
        let pipeline = IngestPipeline(ledger: ledger, configuration: configuration)
        for body in bodies {
            let results = try await pipeline.ingest(body: body, options: .init(receivedAt: now - AppleFixtures.day), now: now)
            #expect(results.allSatisfy { $0.status == .appended }, "\(results)")
        }
        return ledger
    }

    /// Runs `body` with a fake Apple telling `story`, and a reconciler of `ledger` that asks it.
    static func withReconciler(
        _ dir: TemporaryDirectory, _ ledger: Ledger, apple: @escaping @Sendable (FakeAppStoreServer.Request) -> FakeAppStoreServer.Response,
        _ body: (Reconciler, FakeAppStoreServer) async throws -> Void
    ) async throws {
        let server = try FakeAppStoreServer(directory: dir, respond: apple)
        defer { server.shutdown() }
        let key = try OperatorKey(directory: dir)
        let client = try AppStoreServerAPIClient(settings: key.settings(for: server), logger: logger)
        let reconciler = Reconciler(client: client, pipeline: IngestPipeline(ledger: ledger, configuration: configuration))
        do {
            try await body(reconciler, server)
        } catch {
            await client.shutdown()
            throw error
        }
        await client.shutdown()
        #expect(server.requests.allSatisfy { key.problem(with: $0) == nil }, "every request carried a valid token")
    }

    static func timeline(_ ledger: Ledger, at: Int64) throws -> TimelineView {
        try #require(try ledger.timeline(OriginalTransactionID(rawValue: RenewalStory.otid), at: at))
    }

    /// The answers without what differs by construction: the reconciliation and the log position they are read at.
    static func comparable(_ view: TimelineView) -> TimelineView {
        var v = view
        v.reconciliation = nil
        v.asOf = nil
        return v
    }

    /// Every lifecycle event the ledger has said, in stream order.
    static func lifecycle(_ ledger: Ledger) throws -> [LifecycleEvent] {
        try ledger.lifecycleEvents(after: 0, limit: 10_000).events
    }

    @Test func renewalsThreeAndFourNeverArriveAndReconciliationFillsThem() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-story")
        defer { dir.remove() }
        let now = currentMillis()
        let story = RenewalStory(now: now)
        let complete = try await Self.ledger(dir, "complete", [story.binding] + story.bodies, now: now)
        defer { complete.close() }
        let gappy = try await Self.ledger(dir, "gappy", [story.binding] + Array(story.bodies[0..<3]), now: now)
        defer { gappy.close() }

        // Before: the ledger believes the subscription lapsed after renewal 2.
        let at = now - AppleFixtures.day
        #expect(try Self.timeline(gappy, at: at).status == "expired")
        #expect(try Self.timeline(complete, at: at).status == "active")
        #expect(try Self.timeline(gappy, at: at).reconciliation == nil)
        let lastBefore = try gappy.lastSeq()

        try await Self.withReconciler(dir, gappy, apple: story.apple()) { reconciler, server in
            let report = try await reconciler.run(.original(OriginalTransactionID(rawValue: RenewalStory.otid)), dryRun: false, now: { now })
            let check = try #require(report.subscriptions.first)
            #expect(check.failure == nil)
            #expect(check.transactionsSeen == 5)
            #expect(check.historyPages == 3)
            #expect(check.revision == "rev-c")
            #expect(check.transactionsAdded.map(\.transactionId) == ["2000000000000004", "2000000000000005"])
            #expect(check.notificationsSeen == 5)
            #expect(check.notificationsAdded.map(\.uuid) == Array(story.uuids[3...]))
            #expect(check.notificationsAdded.map(\.lastSendAttempt) == ["TIMED_OUT", "TIMED_OUT"])
            #expect(check.notificationsUndelivered == Array(story.uuids[3...]))
            // The ledger's latest renewal info was renewal 2's; the status's is the last notification's, re-signed,
            // so it is reported missing but not appended (the notification brings it as first signed).
            #expect(check.renewalInfoAdded)
            #expect(check.refused.isEmpty, "\(check.refused)")
            // The two notifications (each a notification, its transaction and its renewal info), then the check.
            #expect(check.appendedEvents == 6)
            #expect(check.recordedAt == lastBefore + 7)
            #expect(server.requests.map(\.path).filter { $0.hasPrefix("/inApps/v2/history") }.count == 3)
        }

        // The timeline and the entitlements are those of the ledger that received everything.
        for instant in story.starts + [at, now + 20 * AppleFixtures.day] {
            #expect(Self.comparable(try Self.timeline(gappy, at: instant)) == Self.comparable(try Self.timeline(complete, at: instant)))
            var a = try gappy.customer(AppUserID("u1"), at: instant)
            var b = try complete.customer(AppUserID("u1"), at: instant)
            a.asOf = nil
            b.asOf = nil
            #expect(a == b)
        }
        #expect(try Self.timeline(gappy, at: at).status == "active")
        #expect(try gappy.customer(AppUserID("u1"), at: at).entitlements[AppleFixtures.monthly]?.active == true)

        // The lifecycle answers: the same events, with the same ids and statements, as the ledger that received
        // everything. By design they differ only where the log does: each event's `seq` (the position of the input
        // that said it, here the reconciliation's appends), and nothing is corrected or retracted, since the filled
        // renewals come after everything the gappy ledger had said.
        let said = try Self.lifecycle(gappy), heard = try Self.lifecycle(complete)
        #expect(said.map(\.id) == heard.map(\.id))
        #expect(said.map(\.statement) == heard.map(\.statement))
        #expect(said.map(\.appUserId) == heard.map(\.appUserId))
        #expect(said.map(\.entitlements) == heard.map(\.entitlements))
        #expect(said.filter { $0.type == .renewal }.count == 4)
        #expect(said.allSatisfy { $0.corrects == nil && !$0.retracted })
        #expect(said.suffix(2).allSatisfy { $0.seq > lastBefore }, "the filled renewals are said by the reconciliation's appends")

        // The check is on the subscription's answer: when, up to which revision, what was found.
        let shown = try #require(try Self.timeline(gappy, at: at).reconciliation)
        #expect(shown.seq == lastBefore + 7)
        #expect(shown.check.checkedAt == now)
        #expect(shown.check.revision == "rev-c")
        #expect(shown.check.transactionsAdded == ["2000000000000004", "2000000000000005"])
        #expect(shown.check.notificationsAdded == Array(story.uuids[3...]))
        #expect(!shown.check.complete)
        // As known before the check, there was none.
        #expect(try gappy.timeline(OriginalTransactionID(rawValue: RenewalStory.otid), at: at, asOf: lastBefore)?.reconciliation == nil)

        // The log replays to the same projections, and verifies.
        let replay = try gappy.audit.replay(check: true)
        #expect(replay.differences.isEmpty, "\(replay.differences)")
        #expect(try gappy.audit.verify().ok)

        // Reconciling again finds nothing missing and writes only the check.
        let lastAfter = try gappy.lastSeq()
        try await Self.withReconciler(dir, gappy, apple: story.apple()) { reconciler, _ in
            let report = try await reconciler.run(.original(OriginalTransactionID(rawValue: RenewalStory.otid)), dryRun: false, now: { now + 60_000 })
            let check = try #require(report.subscriptions.first)
            #expect(check.complete)
            #expect(check.appendedEvents == 0)
            #expect(check.notificationsUndelivered == Array(story.uuids[3...]), "Apple still says it never delivered them")
            #expect(check.recordedAt == lastAfter + 1)
        }
        #expect(try gappy.lastSeq() == lastAfter + 1)
        let second = try #require(try Self.timeline(gappy, at: at).reconciliation)
        #expect(second.check.complete)
        #expect(second.check.checkedAt == now + 60_000)
        #expect(try gappy.audit.replay(check: true).differences.isEmpty)
    }

    @Test func aDryRunReportsTheGapsAndWritesNothing() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-dry")
        defer { dir.remove() }
        let now = currentMillis()
        let story = RenewalStory(now: now)
        let gappy = try await Self.ledger(dir, "gappy", [story.binding] + Array(story.bodies[0..<3]), now: now)
        defer { gappy.close() }
        let before = try gappy.statistics()
        try await Self.withReconciler(dir, gappy, apple: story.apple()) { reconciler, _ in
            let report = try await reconciler.run(.user(AppUserID("u1")), dryRun: true, now: { now })
            #expect(report.dryRun)
            #expect(!report.complete)
            let check = try #require(report.subscriptions.first)
            #expect(check.originalTransactionId.rawValue == RenewalStory.otid)
            #expect(check.transactionsAdded.map(\.transactionId) == ["2000000000000004", "2000000000000005"])
            #expect(check.notificationsAdded.map(\.uuid) == Array(story.uuids[3...]))
            #expect(check.renewalInfoAdded)
            #expect(check.recordedAt == nil)
            #expect(check.appendedEvents == 0)
        }
        let after = try gappy.statistics()
        #expect(after.lastSeq == before.lastSeq)
        #expect(after.chainHead == before.chainHead)
        #expect(try gappy.log.rejectedInputs().isEmpty)
        #expect(try Self.timeline(gappy, at: now - AppleFixtures.day).reconciliation == nil)
    }

    @Test func aNotificationApplesHistoryHoldsIsFoundAndFilled() async throws {
        // Only the last notification is missing; Apple says it delivered it (the proxy lost it after answering).
        let dir = try TemporaryDirectory(prefix: "reconcile-notification")
        defer { dir.remove() }
        let now = currentMillis()
        let story = RenewalStory(now: now)
        let gappy = try await Self.ledger(dir, "gappy", [story.binding] + Array(story.bodies[0..<4]), now: now)
        defer { gappy.close() }
        #expect(try gappy.log.events(key: "notification:" + story.uuids[4]).isEmpty)
        // As the ledger knows it, the subscription's last period (renewal 3) ended 20 days ago: a window of 10 days
        // does not take it in, one of 30 does.
        #expect(try gappy.subscriptions(environment: .production, activeSince: now - 10 * AppleFixtures.day).isEmpty)
        #expect(try gappy.subscriptions(environment: .production, activeSince: now - 30 * AppleFixtures.day).map(\.rawValue) == [RenewalStory.otid])
        try await Self.withReconciler(dir, gappy, apple: story.apple(undelivered: [])) { reconciler, _ in
            let report = try await reconciler.run(.activeSince(now - 30 * AppleFixtures.day), dryRun: false, now: { now })
            let check = try #require(report.subscriptions.first)
            #expect(report.subscriptions.count == 1)
            #expect(check.notificationsAdded.map(\.uuid) == [story.uuids[4]])
            #expect(check.notificationsAdded.first?.lastSendAttempt == "SUCCESS")
            #expect(check.notificationsAdded.first?.type == "DID_RENEW")
            #expect(check.notificationsUndelivered.isEmpty)
            #expect(check.transactionsAdded.map(\.transactionId) == ["2000000000000005"])
        }
        let stored = try gappy.log.events(key: "notification:" + story.uuids[4])
        #expect(stored.count == 1)
        #expect(stored.first?.event.metadata.signature == .verified)
        // The raw input is the signedPayload exactly as Apple sent it.
        let first = try #require(stored.first)
        let raw = try #require(try gappy.log.raw(of: first))
        #expect(raw == AppleFixtures.v2Notification(signedPayload: story.signedPayloads[4]))
    }

    @Test func aSubscriptionAppleDoesNotKnowIsReportedWithItsCode() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-unknown")
        defer { dir.remove() }
        let now = currentMillis()
        let story = RenewalStory(now: now)
        let ledger = try await Self.ledger(dir, "ledger", [story.binding], now: now)
        defer { ledger.close() }
        let before = try ledger.lastSeq()
        try await Self.withReconciler(dir, ledger, apple: story.apple()) { reconciler, _ in
            let report = try await reconciler.run(.original(OriginalTransactionID(rawValue: "999")), dryRun: false, now: { now })
            #expect(report.failures.first?.failure?.code == .appleNotFound)
            #expect(!report.complete)
        }
        #expect(try ledger.lastSeq() == before, "a check that failed records nothing")
    }
}
