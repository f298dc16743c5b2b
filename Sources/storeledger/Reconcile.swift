import ArgumentParser
import Foundation
import LedgerAPI
import LedgerAppleAPI
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerWire

/// `storeledger reconcile`: asks Apple's App Store Server API what it holds, appends what the ledger lacked through
/// the ingest path, records each check, and prints the gap report.
struct Reconcile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fetch Apple's view of subscriptions (App Store Server API), append what the ledger lacked, report the gaps.",
        discussion: """
            Needs the configuration's appStoreServerAPI section (keyFile, keyId, issuerId; see docs/reconcile.md). Exit status 1 \
            when a subscription could not be checked or an item Apple sent was refused.
            """)

    @OptionGroup var ledger: LedgerOptions

    @Option(name: .customLong("original"), help: "Check one subscription (its original transaction id).")
    var original: String?

    @Option(name: .customLong("user"), help: "Check every subscription bound to this app user.")
    var user: String?

    @Option(
        name: .customLong("active-since"),
        help: "Check every subscription active at or after this instant (ISO-8601 or ms since epoch).")
    var activeSince: String?

    @Flag(name: .customLong("dry-run"), help: "Report what is missing without writing anything.")
    var dryRun = false

    @Flag(name: .long, help: "One JSON document on stdout.")
    var json = false

    @Flag(name: .long, help: "No progress line.")
    var quiet = false

    func validate() throws {
        let given = [original != nil, user != nil, activeSince != nil].filter { $0 }.count
        guard given == 1 else { throw ValidationError("give exactly one of --original OTID, --user ID, --active-since T") }
        if let activeSince { _ = try instantArgument("active-since", activeSince) }
        if original?.isEmpty == true || user?.isEmpty == true { throw ValidationError("an empty id names nothing") }
    }

    func run() async throws {
        let scope: Reconciler.Scope
        if let original {
            scope = .original(OriginalTransactionID(rawValue: original))
        } else if let user {
            scope = .user(AppUserID(user))
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
        let progress = ProgressLine("reconciling", unit: "subscriptions", quiet: quiet || json)
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
        // One subscription that could not be checked is the command's failure, with Apple's code.
        if case .original = scope, let failure = report.failures.first?.failure {
            throw CommandFailure(code: failure.code, message: failure.message, json: false)
        }
        let refused = report.subscriptions.flatMap(\.refused)
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
                    configFile: [UInt8](data), baseDirectory: (source as NSString).deletingLastPathComponent)
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
    print(
        (report.dryRun ? "dry run (nothing written): " : "")
            + "\(counted(checked.count, "subscription")) of \(report.environment.rawValue) checked against Apple at "
            + formatInstant(report.startedAt))
    for s in report.subscriptions {
        if let failure = s.failure {
            print("\n\(s.originalTransactionId.rawValue): not checked: \(failure.code): \(failure.message)")
            continue
        }
        let verb = report.dryRun ? "missing" : "added"
        print(
            "\n\(s.originalTransactionId.rawValue): " + (s.complete ? "complete" : "incomplete") + " — "
                + "\(counted(s.transactionsSeen, "transaction")), \(counted(s.notificationsSeen, "notification")) at Apple"
                + ", history revision \(s.revision ?? "-")" + (s.recordedAt.map { ", recorded at seq \($0)" } ?? ""))
        for t in s.transactionsAdded {
            print(
                "  transaction \(t.transactionId) \(verb)" + (t.revision ? " (a revision the ledger lacked)" : "")
                    + ": \(t.productId), purchased \(formatInstant(t.purchaseDate))")
        }
        if s.renewalInfoAdded { print("  renewal info \(verb): Apple's latest differs from the ledger's") }
        for n in s.notificationsAdded {
            print(
                "  notification \(n.uuid) \(verb): \(n.type)" + (n.subtype.map { "/\($0)" } ?? "")
                    + " signed \(formatInstant(n.signedDate)); Apple's last attempt: \(n.lastSendAttempt ?? "none")")
        }
        if !s.notificationsUndelivered.isEmpty {
            print("  Apple never delivered: " + s.notificationsUndelivered.joined(separator: ", "))
        }
        for r in s.refused { print("  refused \(r.what): \(r.code): \(r.message)") }
    }
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
            o.key("complete"); o.bool(report.complete)
            o.key("subscriptions")
            o.array(report.subscriptions) { a, s in
                a.object { o in
                    o.key("originalTransactionId"); o.string(s.originalTransactionId.rawValue)
                    if let failure = s.failure {
                        o.key("error")
                        o.object { e in
                            e.key("code"); e.string(failure.code.rawValue)
                            e.key("message"); e.string(failure.message)
                        }
                        return
                    }
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
                    o.key("renewalInfoAdded"); o.bool(s.renewalInfoAdded)
                    o.key("notificationsSeen"); o.number(s.notificationsSeen)
                    o.key("notificationsAdded")
                    o.array(s.notificationsAdded) { a, n in
                        a.object { o in
                            o.key("notificationUUID"); o.string(n.uuid)
                            o.key("notificationType"); o.string(n.type)
                            o.key("subtype"); o.string(n.subtype)
                            o.key("signedDate"); o.number(n.signedDate)
                            o.key("lastSendAttempt"); o.string(n.lastSendAttempt)
                        }
                    }
                    o.key("notificationsUndelivered"); o.array(s.notificationsUndelivered) { $0.string($1) }
                    o.key("refused")
                    o.array(s.refused) { a, r in
                        a.object { o in
                            o.key("what"); o.string(r.what)
                            o.key("code"); o.string(r.code)
                            o.key("message"); o.string(r.message)
                        }
                    }
                    o.key("appendedEvents"); o.number(s.appendedEvents)
                    o.key("recordedAt"); o.number(s.recordedAt)
                }
            }
        }
    }
}
