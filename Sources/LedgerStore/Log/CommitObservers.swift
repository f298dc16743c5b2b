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

    func committed(_ info: Writer.CommitInfo) {
        lock.lock()
        let current = observers
        lock.unlock()
        for o in current { o(info) }
    }
}
