import Foundation

// MARK: - CommitSignal

/// Wakes the followers of `GET /v1/events?follow=true` when the writer commits, and ends them when the server shuts
/// down. Commits are signalled from the writer thread; followers wait in Swift concurrency, never blocking a thread.
final class CommitSignal: @unchecked Sendable {
    private enum Waiter {
        /// Registered, not parked yet.
        case pending
        case parked(CheckedContinuation<Void, Never>)
        /// Woken before it parked: parking returns at once.
        case woken
    }

    // Guarded by `lock`.
    private let lock = NSLock()
    private var lastSeq: UInt64
    private var closed = false
    private var waiters: [UInt64: Waiter] = [:]
    private var nextID: UInt64 = 0

    init(lastSeq: UInt64) { self.lastSeq = lastSeq }

    /// Whether the server is shutting down (followers end).
    var isClosed: Bool { lock.withLock { closed } }

    /// Number of followers waiting right now.
    var waiting: Int { lock.withLock { waiters.count } }

    /// The writer committed up to `seq`.
    func committed(_ seq: UInt64?) {
        let woken: [CheckedContinuation<Void, Never>] = lock.withLock {
            if let seq, seq > lastSeq { lastSeq = seq }
            return wakeAll()
        }
        for c in woken { c.resume() }
    }

    /// Ends every follower, now and later.
    func close() {
        let woken: [CheckedContinuation<Void, Never>] = lock.withLock {
            closed = true
            return wakeAll()
        }
        for c in woken { c.resume() }
    }

    /// Returns when something after `seq` is committed, the signal is closed, or `timeout` passes.
    func wait(after seq: UInt64, timeout: Duration) async {
        let id: UInt64? = lock.withLock {
            guard !closed, lastSeq <= seq else { return nil }
            nextID += 1
            waiters[nextID] = .pending
            return nextID
        }
        guard let id else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.park(id) }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
            // Whoever finished first, the parked continuation (if any) must be resumed exactly once.
            let parked: CheckedContinuation<Void, Never>? = self.lock.withLock {
                if case .parked(let c) = self.waiters.removeValue(forKey: id) { return c }
                return nil
            }
            parked?.resume()
        }
    }

    private func park(_ id: UInt64) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let resumeNow: Bool = lock.withLock {
                guard case .pending = waiters[id] else { return true }
                waiters[id] = .parked(c)
                return false
            }
            if resumeNow { c.resume() }
        }
    }

    /// Marks every waiter woken; returns the parked continuations to resume outside the lock.
    private func wakeAll() -> [CheckedContinuation<Void, Never>] {
        var out: [CheckedContinuation<Void, Never>] = []
        for (id, w) in waiters {
            switch w {
            case .parked(let c):
                out.append(c)
                waiters[id] = .woken
            case .pending:
                waiters[id] = .woken
            case .woken:
                break
            }
        }
        return out
    }
}
