import ArgumentParser
import Foundation
import LedgerAPI
import LedgerAppleAPI
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerErrors

/// `storeledger reconcile`: asks Apple's App Store Server API what it holds, appends what the ledger lacked through
/// the ingest path, records each check, and prints the gap report.
struct Reconcile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fetch Apple's view of purchases (App Store Server API), append what the ledger lacked, report the gaps.",
        discussion: """
            Customer by customer (--original, --user, --active-since, --order: each customer's notification, \
            transaction and refund history and statuses, once per customer), or the whole app at once (--missed: \
            the notifications Apple failed to deliver, for every customer, over a window). Needs the configuration's \
            appStoreServerAPI section (keyFile, keyId, issuerId; see docs/reconcile.md). Exit status 1 when something \
            could not be checked, an order is unknown to Apple, or an item Apple sent was refused.
            """)

    @OptionGroup var ledger: LedgerOptions

    @Option(name: .customLong("original"), help: "Check one subscription (its original transaction id) and its customer's other purchases.")
    var original: String?

    @Option(name: .customLong("user"), help: "Check every subscription bound to this app user.")
    var user: String?

    @Option(
        name: .customLong("active-since"),
        help: "Check every subscription active at or after this instant (ISO-8601 or ms since epoch).")
    var activeSince: String?

    @Option(
        name: .customLong("order"),
        help: "Check the purchases of an order (the order id on the customer's emailed receipt), known to the ledger or not.")
    var order: String?

    @Flag(
        name: .customLong("missed"),
        help: "Ask for the whole app's notifications Apple did not deliver, and append what the ledger lacks.")
    var missed = false

    @Option(
        name: .customLong("since"),
        help: "With --missed: the window's start (default: as far back as Apple keeps notifications, 180 days; 30 in the Sandbox).")
    var since: String?

    @Flag(
        name: .customLong("all-notifications"),
        help: "With --missed: every notification of the window, delivered or not (finds those a proxy acknowledged and lost; more requests).")
    var allNotifications = false

    @Flag(name: .customLong("dry-run"), help: "Report what is missing without writing anything.")
    var dryRun = false

    @Flag(name: .long, help: "One JSON document on stdout.")
    var json = false

    @Flag(name: .long, help: "No progress line.")
    var quiet = false

    func validate() throws {
        let given = [original != nil, user != nil, activeSince != nil, order != nil, missed].filter { $0 }.count
        guard given == 1 else {
            throw ValidationError("give exactly one of --original OTID, --user ID, --active-since T, --order ORDER_ID, --missed")
        }
        if let activeSince { _ = try instantArgument("active-since", activeSince) }
        if let since {
            guard missed else { throw ValidationError("--since goes with --missed (the others: --active-since)") }
            _ = try instantArgument("since", since)
        }
        if allNotifications && !missed { throw ValidationError("--all-notifications goes with --missed") }
        if original?.isEmpty == true || user?.isEmpty == true || order?.isEmpty == true {
            throw ValidationError("an empty id names nothing")
        }
    }

    func run() async throws {
        let scope: Reconciler.Scope
        if let original {
            scope = .original(OriginalTransactionID(rawValue: original))
        } else if let user {
            scope = .user(AppUserID(user))
        } else if let order {
            scope = .order(order)
        } else if missed {
            scope = .missed(since: since.flatMap(Instant.parse), onlyFailures: !allNotifications)
        } else {
            scope = .activeSince(Instant.parse(activeSince!)!)
        }
        let configuration = try ledger.loadConfiguration(json: json)
        let settings = try apiSettings(configuration, json: json)
        let store = try ledger.openLedger(configuration, readOnly: dryRun, json: json)
        defer { store.close() }
        let client: AppStoreServerAPIClient
        do {
            client = try AppStoreServerAPIClient(settings: settings, logger: cliLogger)
        } catch {
            throw CommandFailure(code: error.code, message: error.message, json: json)
        }
        let reconciler = Reconciler(client: client, pipeline: IngestPipeline(ledger: store, configuration: configuration.appStore))
        let unit: String
        switch scope {
        case .missed: unit = "passes"
        case .order: unit = "orders"
        default: unit = "subscriptions"
        }
        let progress = ProgressLine("reconciling", unit: unit, quiet: quiet || json)
        let report: ReconciliationReport
        do {
            report = try await reconciler.run(scope, dryRun: dryRun, progress: { progress.update(UInt64($0), UInt64($1)) })
        } catch {
            progress.finish()
            await client.shutdown()
            let failure = (error as? CodedError).map { ($0.code, $0.message) }
                ?? { let e = LedgerError.from(error); return (e.code, e.message) }()
            throw CommandFailure(code: failure.0, message: failure.1, json: json)
        }
        progress.finish()
        await client.shutdown()

        if json {
            printJSON(ReconciliationReportDocument(report))
        } else {
            printReconciliationReport(report)
        }
        // The report is already on stdout (with --json, its one document): the failure is the stderr line and exit 1.
        if let failure = report.failure {
            throw CommandFailure(code: failure.code, message: failure.message, json: false)
        }
        if let order = report.order, !order.found, let status = order.status {
            throw CommandFailure(
                code: .appleNotFound,
                message: "Apple knows no order \(order.orderId) for this app (Look Up Order ID answered status \(status))",
                json: false)
        }
        // One subscription that could not be checked is the command's failure, with Apple's code.
        if case .original = scope, let failure = report.failures.first?.failure {
            throw CommandFailure(code: failure.code, message: failure.message, json: false)
        }
        let refused = report.allRefused
        if !report.failures.isEmpty || !refused.isEmpty {
            let code = report.failures.first?.failure?.code ?? ErrorCode(refused[0].code)
            throw CommandFailure(
                code: code,
                message: "\(report.failures.count) subscriptions could not be checked, \(refused.count) items were refused",
                json: false)
        }
    }

    /// The configuration's `appStoreServerAPI` section; `invalid_configuration` when it is missing or wrong.
    private func apiSettings(_ configuration: LedgerConfiguration, json: Bool) throws -> AppStoreServerAPISettings {
        guard let source = configuration.source, let data = FileManager.default.contents(atPath: source) else {
            throw CommandFailure(
                code: .invalidConfiguration,
                message: "reconcile needs a configuration file with an appStoreServerAPI section (see docs/reconcile.md)", json: json)
        }
        do {
            guard
                let settings = try AppStoreServerAPISettings.read(
                    configFile: [UInt8](data), baseDirectory: LedgerConfiguration.directory(of: source))
            else {
                throw CodedError(
                    .invalidConfiguration, "\(source) has no appStoreServerAPI section (keyFile, keyId, issuerId; see docs/reconcile.md)")
            }
            return settings
        } catch let error as CodedError {
            throw CommandFailure(error, json: json)
        }
    }
}

// MARK: - The gap report

func printReconciliationReport(_ report: ReconciliationReport) {
    let checked = report.subscriptions.filter { $0.failure == nil }
    let how = report.mode == ReconciliationFact.missedMode ? "the whole app's notification history" : "Apple"
    print(
        (report.dryRun ? "dry run (nothing written): " : "")
            + "\(counted(checked.count, "subscription")) of \(report.environment.rawValue) checked against \(how) at "
            + formatInstant(report.startedAt) + ", \(counted(report.requests, "request"))")
    if let w = report.window {
        print(
            "window \(formatInstant(w.start)) → \(formatInstant(w.end))"
                + (w.onlyFailures ? ", only notifications Apple did not deliver" : ", every notification")
                + ": \(counted(w.notificationsSeen, "notification")) in \(counted(w.pages, "page"))"
                + (w.restarted ? " (the pagination token expired; the pass started again)" : ""))
    }
    if let order = report.order {
        switch order.status {
        case 0?:
            print("order \(order.orderId): \(counted(order.transactionIds.count, "transaction")): " + order.transactionIds.joined(separator: ", "))
        case let status?:
            print("order \(order.orderId): Apple knows no such order for this app (status \(status))")
        case nil:
            print("order \(order.orderId): not looked up")
        }
    }
    if let failure = report.failure { print("not asked: \(failure.code): \(failure.message)") }
    let verb = report.dryRun ? "missing" : "added"
    for s in report.subscriptions {
        if let failure = s.failure {
            print("\n\(s.originalTransactionId.rawValue): " + (s.notAsked ? "not asked" : "not checked") + ": \(failure.code): \(failure.message)")
            continue
        }
        let asked = s.askedWith.map { $0 == s.originalTransactionId.rawValue ? "" : ", its customer asked with \($0)" } ?? ""
        print(
            "\n\(s.originalTransactionId.rawValue): " + (s.complete ? "complete" : "incomplete") + " — "
                + "\(counted(s.transactionsSeen, "transaction")), \(counted(s.notificationsSeen, "notification"))"
                + (s.refundsSeen > 0 ? ", \(counted(s.refundsSeen, "refund"))" : "") + " at Apple"
                + (s.mode == ReconciliationFact.customerMode ? ", history revision \(s.revision ?? "-")" : "") + asked
                + (s.recordedAt.map { ", recorded at seq \($0)" } ?? ""))
        for t in s.transactionsAdded {
            print(
                "  transaction \(t.transactionId) \(verb)" + (t.revision ? " (a revision the ledger lacked)" : "")
                    + ": \(t.productId), purchased \(formatInstant(t.purchaseDate))")
        }
        if s.renewalInfoAdded { print("  renewal info \(verb): Apple's latest differs from the ledger's") }
        for n in s.notificationsAdded { printNotification(n, verb) }
        if !s.notificationsUndelivered.isEmpty {
            print("  Apple never delivered: " + s.notificationsUndelivered.joined(separator: ", "))
        }
        for r in s.refused { print("  refused \(r.what): \(r.code): \(r.message)") }
    }
    if !report.otherNotificationsAdded.isEmpty || !report.refused.isEmpty { print("\nof no subscription:") }
    for n in report.otherNotificationsAdded { printNotification(n, verb) }
    for r in report.refused { print("  refused \(r.what): \(r.code): \(r.message)") }
}

private func printNotification(_ n: SubscriptionCheck.Notification, _ verb: String) {
    print(
        "  notification \(n.uuid) \(verb): \(n.type)" + (n.subtype.map { "/\($0)" } ?? "")
            + " signed \(formatInstant(n.signedDate)); Apple's last attempt: \(n.lastSendAttempt ?? "none")")
}

/// The report as one JSON document (`--json`).
struct ReconciliationReportDocument: JSONDocument {
    let report: ReconciliationReport
    init(_ report: ReconciliationReport) { self.report = report }

    func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("startedAt"); o.number(report.startedAt)
            o.key("dryRun"); o.bool(report.dryRun)
            o.key("environment"); o.string(report.environment.rawValue)
            o.key("mode"); o.string(report.mode)
            o.key("complete"); o.bool(report.complete)
            o.key("requests"); o.number(report.requests)
            if let failure = report.failure {
                o.key("error")
                Self.write(failure, to: &o)
            }
            if let w = report.window {
                o.key("window")
                o.object { o in
                    o.key("start"); o.number(w.start)
                    o.key("end"); o.number(w.end)
                    o.key("onlyFailures"); o.bool(w.onlyFailures)
                    o.key("notificationsSeen"); o.number(w.notificationsSeen)
                    o.key("pages"); o.number(w.pages)
                    o.key("restarted"); o.bool(w.restarted)
                }
            }
            if let order = report.order {
                o.key("order")
                o.object { o in
                    o.key("orderId"); o.string(order.orderId)
                    o.key("status"); o.number(order.status)
                    o.key("found"); o.bool(order.found)
                    o.key("transactionIds"); o.array(order.transactionIds) { $0.string($1) }
                }
            }
            o.key("subscriptions")
            o.array(report.subscriptions) { a, s in
                a.object { o in
                    o.key("originalTransactionId"); o.string(s.originalTransactionId.rawValue)
                    if let failure = s.failure {
                        o.key("error")
                        Self.write(failure, to: &o)
                        o.key("notAsked"); o.bool(s.notAsked)
                        return
                    }
                    o.key("mode"); o.string(s.mode)
                    o.key("askedWith"); o.string(s.askedWith)
                    o.key("windowStart"); o.number(s.windowStart)
                    o.key("complete"); o.bool(s.complete)
                    o.key("revision"); o.string(s.revision)
                    o.key("historyPages"); o.number(s.historyPages)
                    o.key("transactionsSeen"); o.number(s.transactionsSeen)
                    o.key("transactionsAdded")
                    o.array(s.transactionsAdded) { a, t in
                        a.object { o in
                            o.key("transactionId"); o.string(t.transactionId)
                            o.key("productId"); o.string(t.productId)
                            o.key("purchaseDate"); o.number(t.purchaseDate)
                            o.key("revision"); o.bool(t.revision)
                        }
                    }
                    o.key("refundsSeen"); o.number(s.refundsSeen)
                    o.key("renewalInfoAdded"); o.bool(s.renewalInfoAdded)
                    o.key("notificationsSeen"); o.number(s.notificationsSeen)
                    o.key("notificationsAdded")
                    o.array(s.notificationsAdded) { a, n in Self.write(n, to: &a) }
                    o.key("notificationsUndelivered"); o.array(s.notificationsUndelivered) { $0.string($1) }
                    o.key("refused")
                    o.array(s.refused) { a, r in Self.write(r, to: &a) }
                    o.key("appendedEvents"); o.number(s.appendedEvents)
                    o.key("recordedAt"); o.number(s.recordedAt)
                }
            }
            o.key("otherNotificationsAdded")
            o.array(report.otherNotificationsAdded) { a, n in Self.write(n, to: &a) }
            o.key("refused")
            o.array(report.refused) { a, r in Self.write(r, to: &a) }
        }
    }

    private static func write(_ failure: CodedError, to o: inout JSONWriter) {
        o.object { e in
            e.key("code"); e.string(failure.code.rawValue)
            e.key("message"); e.string(failure.message)
        }
    }

    private static func write(_ n: SubscriptionCheck.Notification, to a: inout JSONWriter) {
        a.object { o in
            o.key("notificationUUID"); o.string(n.uuid)
            o.key("notificationType"); o.string(n.type)
            o.key("subtype"); o.string(n.subtype)
            o.key("signedDate"); o.number(n.signedDate)
            o.key("lastSendAttempt"); o.string(n.lastSendAttempt)
        }
    }

    private static func write(_ r: SubscriptionCheck.Refused, to a: inout JSONWriter) {
        a.object { o in
            o.key("what"); o.string(r.what)
            o.key("code"); o.string(r.code)
            o.key("message"); o.string(r.message)
        }
    }
}
