import Foundation

/// Callbacks run after each commit.
final class CommitObservers: @unchecked Sendable {
    private let lock = NSLock()
    private var observers: [@Sendable (Writer.CommitInfo) -> Void] = []

    func add(_ o: @escaping @Sendable (Writer.CommitInfo) -> Void) {
        lock.lock()
        observers.append(o)
        lock.unlock()
    }

    private var quietObservers: [@Sendable (Int) -> Void] = []

    /// `o` learns the id of each write transaction made beside the writer that changed nothing a commit observer
    /// keeps (the maintained metrics' sums), so that a gap in the writer's transaction ids is not taken for a change.
    func addQuiet(_ o: @escaping @Sendable (Int) -> Void) {
        lock.lock()
        quietObservers.append(o)
        lock.unlock()
    }

    func committedQuietly(_ transactionID: Int) {
        lock.lock()
        let current = quietObservers
        lock.unlock()
        for o in current { o(transactionID) }
    }

    func committed(_ info: Writer.CommitInfo) {
        lock.lock()
        let current = observers
        lock.unlock()
        for o in current { o(info) }
    }
}
