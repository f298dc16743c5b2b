import Foundation

/// One of the ledger's own threads: the writer, the journal's checkpointer, the metrics follower. Each sleeps until
/// it is woken (`wake`), or until its `interval` passes when it has one, and then takes a turn outside the lock, so
/// that whoever wakes it never waits for its work. `stop` lets the turn under way end, runs one last turn (told it is
/// the last), and returns once the thread is done: the writer drains its queue in it, the others do nothing.
///
/// A wake that comes while a turn runs is kept: another turn follows, so no work is left asleep.
final class LedgerThread: @unchecked Sendable {
    private let name: String
    private let interval: TimeInterval?
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var woken = false
    private var stopping = false
    private var running = false

    init(name: String, interval: TimeInterval? = nil) {
        self.name = name
        self.interval = interval
    }

    /// Starts the thread, which runs `turn` each time it wakes; `last` on the turn `stop` asks for. The thread holds
    /// `turn` (and what it captures) until it is done.
    func start(_ turn: @escaping @Sendable (_ last: Bool) -> Void) {
        condition.lock()
        defer { condition.unlock() }
        guard !running, !stopping else { return }
        running = true
        let thread = Thread { [self] in loop(turn) }
        thread.name = name
        thread.start()
    }

    /// There is work: the thread takes a turn (another one, when it is in a turn now).
    func wake() {
        condition.lock()
        woken = true
        condition.signal()
        condition.unlock()
    }

    /// Whether `stop` was asked: a long turn checks it between its steps.
    var isStopping: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping
    }

    /// Asks the thread to stop and waits for its last turn to end. True for the call that stopped it (a thread never
    /// started is stopped by it too); false for every later call.
    @discardableResult
    func stop() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else {
            while running { condition.wait() }
            return false
        }
        stopping = true
        condition.broadcast()
        while running { condition.wait() }
        return true
    }

    private func loop(_ turn: (_ last: Bool) -> Void) {
        condition.lock()
        while true {
            let deadline = interval.map { Date(timeIntervalSinceNow: $0) }
            while !woken && !stopping {
                if let deadline {
                    if !condition.wait(until: deadline) { break }
                } else {
                    condition.wait()
                }
            }
            woken = false
            let last = stopping
            condition.unlock()
            turn(last)
            condition.lock()
            if last { break }
        }
        running = false
        condition.broadcast()
        condition.unlock()
    }
}
