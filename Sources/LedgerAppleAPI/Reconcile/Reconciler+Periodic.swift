import LedgerCore
import LedgerIngest
import LedgerStore
import Logging

extension Reconciler {
    /// What the periodic job runs each time, in this order.
    public enum PeriodicMode: String, Sendable, Hashable, CaseIterable {
        /// The whole app's notification history over the window (`Scope.missed`).
        case missed
        /// Every subscription active in the window, customer by customer (`Scope.activeSince`).
        case active
    }

    /// Every `interval` seconds, until the task is cancelled (`serve` cancels it when it stops): each of `modes`
    /// over the last `window` seconds. Off unless `appStoreServerAPI.reconcileEverySeconds` is set. Each run is
    /// logged in one line (notice when something was missing or could not be checked); a run that fails as a whole
    /// (the ledger refusing writes) is logged and the next one is tried at its time.
    public func startPeriodic(
        every interval: Double, window: Double, modes: [PeriodicMode] = PeriodicMode.allCases, onlyFailures: Bool = true,
        logger: Logger
    ) -> Task<Void, Never> {
        Task {
            while !Task.isCancelled {
                do {
                    try await Task.sleep(nanoseconds: UInt64(interval * 1_000_000_000))
                } catch {
                    break
                }
                let since = currentMillis() - Int64(window * 1000)
                for mode in modes {
                    let scope: Scope =
                        mode == .missed ? .missed(since: since, onlyFailures: onlyFailures) : .activeSince(since)
                    do {
                        let report = try await run(scope, dryRun: false)
                        Self.log(report, mode: mode, logger: logger)
                    } catch {
                        logger.error("reconciliation failed", metadata: ["mode": "\(mode.rawValue)", "error": "\(error)"])
                    }
                }
            }
        }
    }

    static func log(_ report: ReconciliationReport, mode: PeriodicMode, logger: Logger) {
        let added = report.subscriptions.reduce(report.otherNotificationsAdded.count) {
            $0 + $1.transactionsAdded.count + $1.notificationsAdded.count
        }
        let level: Logger.Level = report.complete && report.allRefused.isEmpty ? .info : .notice
        var metadata: Logger.Metadata = [
            "mode": "\(mode.rawValue)", "subscriptions": "\(report.subscriptions.count)", "missing": "\(added)",
            "notChecked": "\(report.failures.count)", "requests": "\(report.requests)",
            "undelivered": "\(report.subscriptions.reduce(0) { $0 + $1.notificationsUndelivered.count })",
        ]
        if let failure = report.failure ?? report.failures.first?.failure { metadata["error"] = "\(failure)" }
        logger.log(level: level, "reconciled with Apple", metadata: metadata)
    }
}
