import Foundation
import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerErrors

/// Asks Apple what it holds and gives the ledger what it lacked (`storeledger reconcile`, and the periodic job of
/// `serve`), in one of two modes.
///
/// **Customer by customer** (`--original`, `--user`, `--active-since`, `--order`). Apple's answers are per customer,
/// not per subscription: Get Notification History with a `transactionId`, Get Transaction History, Get All
/// Subscription Statuses and Get Refund History each take any transaction id of the customer and answer with
/// everything of that customer (every subscription, every one-time purchase). So each customer is asked once, with
/// one of its transaction ids, and everything Apple returns is kept and reported once, under the subscription (the
/// original transaction id) it belongs to; a subscription in scope that an earlier customer's answer already covered
/// is not asked about again.
///
/// **The whole app** (`--missed`). Get Notification History without a `transactionId` lists the app's notifications
/// over a window (the last 180 days at most, 30 in the Sandbox), optionally only those Apple failed to deliver
/// (`onlyFailures`): one pass finds purchases the ledger never heard of (their notifications lost, the app never
/// posting them) for every customer at once, in a page per 20 notifications.
///
/// Every signed item is decoded and verified by the ingest path (`IngestPipeline.prepare`, the same decoder as the
/// socket's); what the ledger lacks is appended through it, followed by the check itself (`ReconciliationFact`,
/// one per subscription), so an auditor sees what was checked, how, up to which history revision, and what was
/// found.
///
/// What counts as lacking: a notification whose UUID the ledger has never stored; a transaction or renewal info for
/// which no stored revision (nor one just taken from a notification) states the same fields. Apple signs its
/// answers when it makes them, so a transaction it returns again differs from the stored one in `signedDate` alone;
/// such a copy says nothing new and is not appended (a revision that changes anything else, a refund say, is).
/// Notifications go first because they carry the transactions as Apple first signed them, so a ledger that missed
/// them ends up with the very facts it would have received. A dry run decides the same and writes nothing.
public struct Reconciler: Sendable {
    public let client: AppStoreServerAPIClient
    public let pipeline: IngestPipeline

    public init(client: AppStoreServerAPIClient, pipeline: IngestPipeline) {
        self.client = client
        self.pipeline = pipeline
    }

    /// What to check.
    public enum Scope: Sendable, Hashable {
        /// One subscription, and everything else Apple holds of its customer.
        case original(OriginalTransactionID)
        /// Every subscription bound to an app user, customer by customer.
        case user(AppUserID)
        /// Every subscription the ledger knows that may have been active at or after an instant.
        case activeSince(UnixMillis)
        /// The purchases of one order (the order id on the customer's emailed receipt), found with Look Up Order ID
        /// whether or not the ledger ever saw them, and everything else Apple holds of their customer.
        case order(String)
        /// The whole app's notifications since an instant (nil: as far back as Apple keeps them), or only those
        /// Apple failed to deliver.
        case missed(since: UnixMillis?, onlyFailures: Bool)
    }

    /// The environment reconciled: the one the client asks.
    public var environment: AppStoreEnvironment { client.settings.environment }

    /// How many days of notification history a request may reach back: Apple keeps 180 days in production and 30 in
    /// the Sandbox (Get Notification History) and refuses a `startDate` earlier (StartDateTooFarInPastError), so the
    /// window starts a day inside, leaving room for the clocks to differ.
    public var notificationHistoryDays: Int64 { environment == .sandbox ? 29 : 179 }

    /// The earliest `startDate` a request made at `now` may ask for.
    public func earliestWindowStart(now: UnixMillis) -> UnixMillis { now - notificationHistoryDays * 86_400_000 }

    /// Failures that say nothing of one customer but of Apple, the way to it or the key: every later request of the
    /// run would fail the same way, so the run stops and the rest are reported as not asked.
    static let stopsTheRun: Set<ErrorCode> = [.appleUnauthorized, .appleRateLimited, .appleUnavailable, .appleUnreachable]

    /// Ledgers' commits of one run are at most about this many inputs (a subscription's inputs and its check are
    /// never split).
    static let inputsPerCommit = 1_000

    /// The subscriptions `scope` names, as the ledger knows them (none for an order or a `missed` pass, which start
    /// from Apple's side).
    public func subscriptions(_ scope: Scope, now: UnixMillis) throws -> [OriginalTransactionID] {
        switch scope {
        case .original(let otid):
            return [otid]
        case .user(let user):
            return try pipeline.ledger.customer(user, environment: environment, at: now).subscriptions
                .map(OriginalTransactionID.init(rawValue:))
        case .activeSince(let since):
            return try pipeline.ledger.subscriptions(environment: environment, activeSince: since)
        case .order, .missed:
            return []
        }
    }

    /// Checks what `scope` names; `progress` is told after each customer (done, total). A subscription Apple cannot
    /// answer for is reported with its error and the others are still checked, unless the failure is one every
    /// later request would share (`stopsTheRun`): then the rest are reported not asked, with that error.
    public func run(
        _ scope: Scope, dryRun: Bool, now: @Sendable () -> UnixMillis = currentMillis,
        progress: (_ done: Int, _ total: Int) -> Void = { _, _ in }
    ) async throws -> ReconciliationReport {
        let started = now()
        switch scope {
        case .missed(let since, let onlyFailures):
            progress(0, 1)
            defer { progress(1, 1) }
            return try await missed(since: since, onlyFailures: onlyFailures, dryRun: dryRun, now: started)
        case .order(let orderId):
            progress(0, 1)
            defer { progress(1, 1) }
            return try await order(orderId, dryRun: dryRun, now: started)
        case .original, .user, .activeSince:
            var windowStart = earliestWindowStart(now: started)
            if case .activeSince(let since) = scope { windowStart = max(windowStart, since) }
            var report = ReconciliationReport(startedAt: started, dryRun: dryRun, environment: environment)
            let anchors = try subscriptions(scope, now: started)
            try await checkCustomers(
                anchors, windowStart: windowStart, dryRun: dryRun, now: now, report: &report, progress: progress)
            return report
        }
    }

    // MARK: - Customer by customer

    /// Checks the customer of each of `anchors` in turn, skipping those an earlier customer's answer covered.
    func checkCustomers(
        _ anchors: [OriginalTransactionID], windowStart: UnixMillis, dryRun: Bool, now: @Sendable () -> UnixMillis,
        report: inout ReconciliationReport, progress: (_ done: Int, _ total: Int) -> Void
    ) async throws {
        var reported = Set<OriginalTransactionID>()
        var stop: (error: CodedError, at: OriginalTransactionID)?
        progress(0, anchors.count)
        for (i, anchor) in anchors.enumerated() {
            defer { progress(i + 1, anchors.count) }
            guard !reported.contains(anchor) else { continue }
            reported.insert(anchor)
            if let stop {
                var check = SubscriptionCheck(
                    originalTransactionId: anchor,
                    failure: CodedError(
                        stop.error.code,
                        "not asked: the run stopped when Apple answered \(stop.at.rawValue)'s request with "
                            + "\(stop.error.code): \(stop.error.message)"))
                check.notAsked = true
                report.subscriptions.append(check)
                continue
            }
            do {
                let found = try await checkCustomer(
                    askingWith: anchor.rawValue, anchor: anchor, windowStart: windowStart, dryRun: dryRun,
                    now: now())
                report.requests += found.requests
                for check in found.checks where check.originalTransactionId == anchor
                    || !reported.contains(check.originalTransactionId)
                {
                    reported.insert(check.originalTransactionId)
                    report.subscriptions.append(check)
                }
                report.otherNotificationsAdded += found.otherNotifications
            } catch let error as CodedError {
                report.subscriptions.append(SubscriptionCheck(originalTransactionId: anchor, failure: error))
                if Self.stopsTheRun.contains(error.code) { stop = (error, anchor) }
            } catch let error as LedgerError {
                // The ledger failing (a full disk) ends the run: every later subscription would fail the same way.
                throw error
            }
        }
    }

    /// What one customer's check found: a check per subscription (the anchor's first), and the requests it took.
    struct CustomerFindings {
        var checks: [SubscriptionCheck]
        var otherNotifications: [SubscriptionCheck.Notification]
        var requests: Int
    }

    /// Asks Apple everything it holds of the customer `transactionId` belongs to (Get Notification History for the
    /// customer over the window, Get Transaction History, Get All Subscription Statuses, Get Refund History), each
    /// once whatever the customer's number of purchases, and appends what the ledger lacked. `anchor`, when given,
    /// is reported first and checked even when Apple's answer holds nothing of it; `orderTransactions` are an
    /// order's signed transactions (Look Up Order ID), considered like the history's.
    func checkCustomer(
        askingWith transactionId: String, anchor: OriginalTransactionID?, orderTransactions: [String] = [],
        windowStart: UnixMillis, dryRun: Bool, now checkedAt: UnixMillis
    ) async throws -> CustomerFindings {
        let notifications = try await client.notificationHistoryPass(
            NotificationHistoryRequest(startDate: windowStart, endDate: checkedAt, transactionId: transactionId))
        let history = try await client.wholeTransactionHistory(transactionId)
        let statuses = try await client.allSubscriptionStatuses(transactionId)
        let refunds = try await client.wholeRefundHistory(transactionId)

        var found = Findings(
            reconciler: self, mode: ReconciliationFact.customerMode, windowStart: windowStart, checkedAt: checkedAt,
            anchor: anchor)
        found.askedWith = transactionId
        found.revision = history.revision
        found.historyPages = history.pages
        for item in notifications.items { try found.notification(item) }
        found.withoutPayload(notifications.itemsWithoutPayload)
        for jws in orderTransactions { try found.transaction(jws, from: "an order's transaction") }
        for jws in history.signedTransactions { try found.transaction(jws, from: "a history transaction") }
        for jws in refunds.signedTransactions { try found.transaction(jws, from: "a refunded transaction", refund: true) }
        for item in statuses.data.flatMap(\.lastTransactions) {
            if let jws = item.signedTransactionInfo { try found.transaction(jws, from: "a subscription status") }
            if let jws = item.signedRenewalInfo { try found.renewal(jws) }
        }
        let checks = try await found.settle(recordingEvery: true, dryRun: dryRun)
        return CustomerFindings(
            checks: checks, otherNotifications: found.otherNotifications,
            requests: notifications.pages + history.pages + 1 + refunds.pages)
    }

    // MARK: - An order

    /// Look Up Order ID, then the customer of the order's transactions. An order Apple does not know is answered
    /// with `status` 1 (not a 404): reported as `apple_not_found`-worthy in `report.order`, nothing written.
    func order(_ orderId: String, dryRun: Bool, now started: UnixMillis) async throws -> ReconciliationReport {
        var report = ReconciliationReport(startedAt: started, dryRun: dryRun, environment: environment)
        report.order = OrderCheck(orderId: orderId)
        let lookup: OrderLookup
        do {
            lookup = try await client.lookUpOrder(orderId)
            report.requests += 1
        } catch {
            report.failure = error
            return report
        }
        report.order?.status = lookup.status
        guard lookup.status == 0 else { return report }
        var anchor: (transactionId: String, otid: OriginalTransactionID)?
        for jws in lookup.signedTransactions {
            let input = pipeline.prepare(Array(jws.utf8), options: .init(receivedAt: started), now: started)
            guard case .facts(let facts, _, _, _) = input, case .transaction(let t)? = facts.first else {
                report.refused.append(Self.refusal(input, what: "a transaction of order \(orderId)"))
                continue
            }
            report.order?.transactionIds.append(t.transactionId.rawValue)
            if anchor == nil { anchor = (t.transactionId.rawValue, t.originalTransactionId) }
        }
        guard let anchor else { return report }
        do {
            let found = try await checkCustomer(
                askingWith: anchor.transactionId, anchor: anchor.otid, orderTransactions: lookup.signedTransactions,
                windowStart: earliestWindowStart(now: started), dryRun: dryRun, now: started)
            report.requests += found.requests
            report.subscriptions = found.checks
            report.otherNotificationsAdded = found.otherNotifications
        } catch let error as CodedError {
            report.subscriptions.append(SubscriptionCheck(originalTransactionId: anchor.otid, failure: error))
        }
        return report
    }

    // MARK: - The whole app

    /// One pass over the whole app's notification history from `since` (at most as far back as Apple keeps it) to
    /// now. What the ledger lacked is appended, and a check is recorded for each subscription the pass found
    /// something about (a notification the ledger lacked, or one Apple never delivered); a subscription whose
    /// notifications the ledger all holds gets no record, so an hourly pass does not write one per customer.
    func missed(since: UnixMillis?, onlyFailures: Bool, dryRun: Bool, now started: UnixMillis) async throws
        -> ReconciliationReport
    {
        var report = ReconciliationReport(
            startedAt: started, dryRun: dryRun, environment: environment, mode: ReconciliationFact.missedMode)
        let start = max(since ?? .min, earliestWindowStart(now: started))
        report.window = NotificationWindow(start: start, end: started, onlyFailures: onlyFailures)
        let pass: NotificationHistory
        do {
            pass = try await client.notificationHistoryPass(
                NotificationHistoryRequest(startDate: start, endDate: started, onlyFailures: onlyFailures))
        } catch {
            report.failure = error
            return report
        }
        report.window?.pages = pass.pages
        report.window?.restarted = pass.restarted
        report.window?.notificationsSeen = pass.items.count
        report.requests = pass.pages
        var found = Findings(
            reconciler: self, mode: ReconciliationFact.missedMode, windowStart: start, checkedAt: started, anchor: nil)
        for item in pass.items { try found.notification(item) }
        found.withoutPayload(pass.itemsWithoutPayload)
        report.subscriptions = try await found.settle(recordingEvery: false, dryRun: dryRun)
        report.otherNotificationsAdded = found.otherNotifications
        report.refused = found.unattributed
        return report
    }

    // MARK: - Recording

    /// The reconciliation as the input the ledger stores: the fact, and as its raw bytes its JSON (keys sorted), so
    /// the raw store keeps a readable statement of the check like every other input's bytes.
    static func record(_ fact: ReconciliationFact) -> LedgerInput {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let raw = (try? encoder.encode(fact)).map { [UInt8]($0) } ?? Array("{}".utf8)
        // The digest is the store's to set, when it keeps `raw`.
        let metadata = FactMetadata(
            source: .reconciliation, signature: .unsigned, receivedAt: fact.checkedAt, observedAt: fact.checkedAt)
        return .facts([.reconciliation(fact)], metadata: metadata, raw: raw)
    }

    /// True when a stored revision of `t` (or one about to be appended) states the same fields but `signedDate`.
    func known(_ t: TransactionFact, pending: [Fact]) throws -> Bool {
        func same(_ other: TransactionFact) -> Bool {
            var copy = t
            copy.signedDate = other.signedDate
            return copy == other
        }
        for case .transaction(let p) in pending where p.transactionId == t.transactionId && same(p) { return true }
        for stored in try pipeline.ledger.log.events(key: t.transactionId.rawValue) {
            if case .transaction(let s) = stored.event.fact, s.environment == t.environment, same(s) { return true }
        }
        return false
    }

    /// True when the latest renewal info known (stored, or about to be appended) states the same fields but
    /// `signedDate`, or a later one is known.
    func known(_ r: RenewalInfoFact, pending: [Fact]) throws -> Bool {
        var latest: RenewalInfoFact?
        func consider(_ other: RenewalInfoFact) {
            guard other.environment == r.environment, other.originalTransactionId == r.originalTransactionId else { return }
            if latest == nil || (other.signedDate ?? 0) >= (latest!.signedDate ?? 0) { latest = other }
        }
        for stored in try pipeline.ledger.log.events(key: Fact.renewal(r).eventKey) {
            if case .renewal(let s) = stored.event.fact { consider(s) }
        }
        for case .renewal(let p) in pending { consider(p) }
        guard let latest else { return false }
        if (latest.signedDate ?? 0) > (r.signedDate ?? 0) { return true }
        var copy = r
        copy.signedDate = latest.signedDate
        return copy == latest
    }

    static func refusal(_ input: LedgerInput, what: String) -> SubscriptionCheck.Refused {
        guard case .rejected(let r) = input else { return .init(what: what, code: "no_facts", message: "") }
        return .init(what: what, code: r.code.rawValue, message: r.message)
    }

    static func describe(_ input: LedgerInput) -> String {
        guard case .facts(let facts, _, _, _) = input, let first = facts.first else { return "an input" }
        switch first {
        case .notification(let n): return "notification \(n.notificationUUID)"
        case .transaction(let t): return "transaction \(t.transactionId.rawValue)"
        case .renewal(let r): return "renewal info of \(r.originalTransactionId.rawValue)"
        default: return first.eventKey
        }
    }
}
