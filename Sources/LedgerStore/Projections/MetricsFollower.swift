import Foundation
import LMDB
import Logging

/// Sums the subscriptions the write path marked into the maintained metrics (`MetricDays.catchUp`), on a thread of
/// its own, after each commit: a few subscriptions per write transaction, so that an append waits at most for one
/// such transaction.
final class MetricsFollower: Sendable {
    /// Subscriptions summed per write transaction.
    static let chunk = 32

    private let environment: Environment
    private let layout: StoreLayout
    private let observers: CommitObservers
    private let logger: Logger
    private let thread = LedgerThread(name: "storeledger-metrics")

    init(environment: Environment, layout: StoreLayout, observers: CommitObservers, logger: Logger) {
        self.environment = environment
        self.observers = observers
        self.layout = layout
        self.logger = logger
    }

    /// Starts the thread, whose first turn sums what an earlier process left marked.
    func start() {
        thread.wake()
        thread.start { [self] last in if !last { sumMarked() } }
    }

    /// Something was committed: there may be subscriptions to sum.
    func poke() { thread.wake() }

    /// Stops after the transaction under way; returns once the thread is done.
    func stop() { thread.stop() }

    /// One write transaction summing up to `limit` marked subscriptions; how many. Its id is told to the commit
    /// observers as quiet (it changes no timeline and no customer) before the writer can commit after it.
    static func catchUp(limit: Int, _ environment: Environment, _ layout: StoreLayout, _ observers: CommitObservers) throws
        -> Int
    {
        var done = 0
        try environment.write(
            { txn in done = try MetricDays.catchUp(limit: limit, layout, txn) },
            // A transaction that wrote nothing commits no new id: the writer's next one takes it.
            committed: { id in if done > 0 { observers.committedQuietly(id) } })
        return done
    }

    /// Sums the marked subscriptions, a chunk per write transaction, until none is left or the follower stops.
    private func sumMarked() {
        do {
            while try Self.catchUp(limit: Self.chunk, environment, layout, observers) == Self.chunk, !thread.isStopping {}
        } catch {
            // The marks stay: the next commit tries again, and reads correct for them meanwhile.
            logger.error("summing the metrics failed", metadata: ["error": "\(error)"])
        }
    }
}
