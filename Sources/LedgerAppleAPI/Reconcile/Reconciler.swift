import Crypto
import Foundation
import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerWire
import Logging

/// Asks Apple what it holds of a subscription and gives the ledger what it lacked (`storeledger reconcile`, and the
/// periodic job of `serve`).
///
/// For each subscription: Get Notification History for it (the last 180 days, Apple's limit, or the window asked),
/// then Get Transaction History (every page), then Get All Subscription Statuses. Every signed item is decoded and
/// verified by the ingest path (`IngestPipeline.prepare`, the same decoder as the socket's); what the ledger lacks is
/// appended through it in one commit, followed by the check itself (`ReconciliationFact`), so an auditor sees what
/// was checked, up to which history revision, and what was found.
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
        /// One subscription.
        case original(OriginalTransactionID)
        /// Every subscription bound to an app user.
        case user(AppUserID)
        /// Every subscription the ledger knows that may have been active at or after an instant.
        case activeSince(UnixMillis)
    }

    /// Apple keeps notification history for 180 days; a window starting earlier is refused, so it starts a little
    /// later.
    static let notificationHistoryDays: Int64 = 179

    /// The environment reconciled: the one the client asks.
    public var environment: AppStoreEnvironment { client.settings.environment }

    /// The subscriptions `scope` names, as the ledger knows them.
    public func subscriptions(_ scope: Scope, now: UnixMillis) throws -> [OriginalTransactionID] {
        switch scope {
        case .original(let otid):
            return [otid]
        case .user(let user):
            return try pipeline.ledger.customer(user, environment: environment, at: now).subscriptions
                .map(OriginalTransactionID.init(rawValue:))
        case .activeSince(let since):
            return try pipeline.ledger.subscriptions(environment: environment, activeSince: since)
        }
    }

    /// Checks every subscription of `scope`; `progress` is told after each (done, total). A subscription Apple
    /// cannot answer for is reported with its error, and the others are still checked.
    public func run(
        _ scope: Scope, dryRun: Bool, now: @Sendable () -> UnixMillis = currentMillis,
        progress: (_ done: Int, _ total: Int) -> Void = { _, _ in }
    ) async throws -> ReconciliationReport {
        let started = now()
        let otids = try subscriptions(scope, now: started)
        var windowStart = started - Self.notificationHistoryDays * 86_400_000
        if case .activeSince(let since) = scope { windowStart = max(windowStart, since) }
        var report = ReconciliationReport(startedAt: started, dryRun: dryRun, environment: environment)
        progress(0, otids.count)
        for (i, otid) in otids.enumerated() {
            do {
                report.subscriptions.append(
                    try await reconcile(otid, notificationsFrom: windowStart, dryRun: dryRun, now: now()))
            } catch let error as CodedError {
                report.subscriptions.append(SubscriptionCheck(originalTransactionId: otid, failure: error))
            } catch let error as LedgerError {
                // The ledger failing (a full disk) ends the run: every later subscription would fail the same way.
                throw error
            }
            progress(i + 1, otids.count)
        }
        return report
    }

    /// Checks one subscription.
    public func reconcile(
        _ otid: OriginalTransactionID, notificationsFrom windowStart: UnixMillis, dryRun: Bool, now checkedAt: UnixMillis
    ) async throws -> SubscriptionCheck {
        var check = SubscriptionCheck(originalTransactionId: otid)
        let options = IngestPipeline.Options(receivedAt: checkedAt)
        var pending: [LedgerInput] = []
        var pendingFacts: [Fact] = []
        let ledger = pipeline.ledger

        // 1. Notifications: what Apple sent, or tried to.
        let notifications = try await client.wholeNotificationHistory(
            NotificationHistoryRequest(startDate: windowStart, endDate: checkedAt, transactionId: otid.rawValue))
        for item in notifications {
            let raw = Array(("{\"signedPayload\":" + APITokenSigner.quoted(item.signedPayload) + "}").utf8)
            let input = pipeline.prepare(raw, options: options, now: checkedAt)
            guard case .facts(let facts, _, _) = input else {
                check.refused.append(Self.refusal(input, what: "a notification"))
                continue
            }
            guard case .notification(let n)? = facts.first(where: { $0.kind == .notification }) else { continue }
            check.notificationsSeen += 1
            if item.undelivered { check.notificationsUndelivered.append(n.notificationUUID) }
            guard try ledger.events(key: Fact.notification(n).eventKey).isEmpty,
                !pendingFacts.contains(where: { $0.eventKey == Fact.notification(n).eventKey })
            else { continue }
            pending.append(input)
            pendingFacts += facts
            check.notificationsAdded.append(
                .init(uuid: n.notificationUUID, type: n.notificationType, subtype: n.subtype,
                      signedDate: n.signedDate, lastSendAttempt: item.lastResult))
        }

        /// A transaction of Apple's answer: reported when the ledger lacked it (no stored revision states its
        /// fields), appended unless a notification of this check already brings it as Apple first signed it.
        func consider(_ t: TransactionFact, _ input: LedgerInput, _ facts: [Fact]) throws {
            guard try !known(t, pending: []),
                !check.transactionsAdded.contains(where: { $0.transactionId == t.transactionId.rawValue })
            else { return }
            check.transactionsAdded.append(
                .init(transactionId: t.transactionId.rawValue, productId: t.productId, purchaseDate: t.purchaseDate,
                      revision: try !ledger.events(key: t.transactionId.rawValue).isEmpty))
            if try known(t, pending: pendingFacts) { return }
            pending.append(input)
            pendingFacts += facts
        }

        // 2. Transactions: the customer's history, this subscription's part of it.
        let history = try await client.wholeTransactionHistory(otid.rawValue)
        check.revision = history.revision
        check.historyPages = history.pages
        for jws in history.signedTransactions {
            let input = pipeline.prepare(Array(jws.utf8), options: options, now: checkedAt)
            guard case .facts(let facts, _, _) = input else {
                check.refused.append(Self.refusal(input, what: "a history transaction"))
                continue
            }
            guard case .transaction(let t)? = facts.first, t.originalTransactionId == otid else { continue }
            check.transactionsSeen += 1
            try consider(t, input, facts)
        }

        // 3. The latest renewal info (and transaction) of the subscription.
        let statuses = try await client.allSubscriptionStatuses(otid.rawValue)
        for item in statuses.data.flatMap(\.lastTransactions) where item.originalTransactionId == otid.rawValue {
            for jws in [item.signedTransactionInfo, item.signedRenewalInfo].compactMap({ $0 }) {
                let input = pipeline.prepare(Array(jws.utf8), options: options, now: checkedAt)
                guard case .facts(let facts, _, _) = input else {
                    check.refused.append(Self.refusal(input, what: "a subscription status"))
                    continue
                }
                switch facts.first {
                case .transaction(let t)? where t.originalTransactionId == otid:
                    try consider(t, input, facts)
                case .renewal(let r)? where r.originalTransactionId == otid:
                    // Lacking when the ledger's latest renewal info differs; appended unless a notification of this
                    // check brings the same.
                    guard try !known(r, pending: []) else { continue }
                    check.renewalInfoAdded = true
                    if try known(r, pending: pendingFacts) { continue }
                    pending.append(input)
                    pendingFacts += facts
                default:
                    continue
                }
            }
        }

        let fact = ReconciliationFact(
            originalTransactionId: otid, environment: client.settings.environment, checkedAt: checkedAt,
            revision: check.revision, transactionsSeen: Int64(check.transactionsSeen),
            transactionsAdded: check.transactionsAdded.map(\.transactionId),
            notificationsSeen: Int64(check.notificationsSeen), notificationsAdded: check.notificationsAdded.map(\.uuid),
            notificationsUndelivered: check.notificationsUndelivered, renewalInfoAdded: check.renewalInfoAdded)
        guard !dryRun else { return check }

        // 4. What was missing, then the check itself, in one commit.
        let record = Self.record(fact)
        let results = try await pipeline.append(pending + [record])
        for (input, result) in zip(pending, results) where result.status == .rejected {
            check.refused.append(
                .init(what: Self.describe(input), code: result.error?.code ?? "rejected", message: result.error?.message ?? ""))
        }
        check.appendedEvents = results.dropLast().reduce(0) { $0 + $1.events.count }
        check.recordedAt = results.last?.seq
        return check
    }

    /// The reconciliation as the input the ledger stores: the fact, and as its raw bytes its JSON (keys sorted), so
    /// the raw store keeps a readable statement of the check like every other input's bytes.
    static func record(_ fact: ReconciliationFact) -> LedgerInput {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let raw = (try? encoder.encode(fact)).map { [UInt8]($0) } ?? Array("{}".utf8)
        let metadata = FactMetadata(
            source: .reconciliation, signature: .unsigned, receivedAt: fact.checkedAt, observedAt: fact.checkedAt,
            rawDigest: Array(SHA256.hash(data: raw)))
        return .facts([.reconciliation(fact)], metadata: metadata, raw: raw)
    }

    /// True when a stored revision of `t` (or one about to be appended) states the same fields but `signedDate`.
    private func known(_ t: TransactionFact, pending: [Fact]) throws -> Bool {
        func same(_ other: TransactionFact) -> Bool {
            var copy = t
            copy.signedDate = other.signedDate
            return copy == other
        }
        for case .transaction(let p) in pending where p.transactionId == t.transactionId && same(p) { return true }
        for stored in try pipeline.ledger.events(key: t.transactionId.rawValue) {
            if case .transaction(let s) = stored.event.fact, s.environment == t.environment, same(s) { return true }
        }
        return false
    }

    /// True when the latest renewal info known (stored, or about to be appended) states the same fields but
    /// `signedDate`, or a later one is known.
    private func known(_ r: RenewalInfoFact, pending: [Fact]) throws -> Bool {
        var latest: RenewalInfoFact?
        func consider(_ other: RenewalInfoFact) {
            guard other.environment == r.environment, other.originalTransactionId == r.originalTransactionId else { return }
            if latest == nil || (other.signedDate ?? 0) >= (latest!.signedDate ?? 0) { latest = other }
        }
        for stored in try pipeline.ledger.events(key: Fact.renewal(r).eventKey) {
            if case .renewal(let s) = stored.event.fact { consider(s) }
        }
        for case .renewal(let p) in pending { consider(p) }
        guard let latest else { return false }
        if (latest.signedDate ?? 0) > (r.signedDate ?? 0) { return true }
        var copy = r
        copy.signedDate = latest.signedDate
        return copy == latest
    }

    private static func refusal(_ input: LedgerInput, what: String) -> SubscriptionCheck.Refused {
        guard case .rejected(let r) = input else { return .init(what: what, code: "no_facts", message: "") }
        return .init(what: what, code: r.code, message: r.message)
    }

    private static func describe(_ input: LedgerInput) -> String {
        guard case .facts(let facts, _, _) = input, let first = facts.first else { return "an input" }
        switch first {
        case .notification(let n): return "notification \(n.notificationUUID)"
        case .transaction(let t): return "transaction \(t.transactionId.rawValue)"
        case .renewal(let r): return "renewal info of \(r.originalTransactionId.rawValue)"
        default: return first.eventKey
        }
    }
}

// MARK: - The periodic job of `serve`

extension Reconciler {
    /// Reconciles every subscription active in the last `window` seconds, every `interval` seconds, until the task
    /// is cancelled (`serve` cancels it when it stops). Off unless `appStoreServerAPI.reconcileEverySeconds` is set.
    /// Each run is logged in one line (notice when something was missing or could not be checked); a run that fails
    /// as a whole (the ledger refusing writes) is logged and the next one is tried at its time.
    public func startPeriodic(every interval: Double, window: Double, logger: Logger) -> Task<Void, Never> {
        Task {
            while !Task.isCancelled {
                do {
                    try await Task.sleep(nanoseconds: UInt64(interval * 1_000_000_000))
                } catch {
                    break
                }
                let since = currentMillis() - Int64(window * 1000)
                do {
                    let report = try await run(.activeSince(since), dryRun: false)
                    let added = report.subscriptions.reduce(0) {
                        $0 + $1.transactionsAdded.count + $1.notificationsAdded.count
                    }
                    let level: Logger.Level = report.complete ? .info : .notice
                    logger.log(
                        level: level, "reconciled with Apple",
                        metadata: [
                            "subscriptions": "\(report.subscriptions.count)", "missing": "\(added)",
                            "notChecked": "\(report.failures.count)",
                            "undelivered": "\(report.subscriptions.reduce(0) { $0 + $1.notificationsUndelivered.count })",
                        ])
                } catch {
                    logger.error("reconciliation failed", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
