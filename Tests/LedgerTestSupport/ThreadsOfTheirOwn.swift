import Foundation
import Testing

// MARK: - Tests that hold their thread

/// A suite whose tests hold their thread for long: they wait for child processes (`runProcess`, a server's exit),
/// read sockets with blocking calls, sleep, or compute for seconds. Each of its tests runs on a thread of its own
/// (the cases of a parameterized one one after another), never on Swift's cooperative pool.
///
/// Why: the pool has one thread per core, two on the machines this suite runs on, and everything asynchronous in the
/// test process runs on it: the in-process servers' handlers, the HTTP clients' continuations, every polling loop
/// with a deadline. Two synchronous tests waiting for processes held both threads for tens of seconds; meanwhile a
/// TLS answer sat unread until the client's read timeout counted the wait as the server's silence, and servers
/// "did not start" within deadlines that had passed while nothing could run.
///
/// At most `BlockingTests.limit` such tests run at once (the rest wait without holding a thread), so that a few
/// hundred of them do not start together.
public struct BlockingTests: SuiteTrait, TestTrait, TestScoping {
    /// Tests of blocking suites running at once: as many as the pool has threads, and as many again, since most of
    /// them wait for a child process rather than compute.
    public static let limit = 2 * max(1, ProcessInfo.processInfo.activeProcessorCount)

    static let places = Places(limit)

    public var isRecursive: Bool { true }

    /// A scope for each test function (not for the suites, whose scope would hold one thread for all their tests).
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> BlockingTests? {
        test.isSuite ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // A test of a blocking suite within a blocking suite: it has its thread already.
        if Self.onItsOwnThread { return try await function() }
        await Self.places.take()
        let thread = ThreadExecutor(name: test.name)
        defer {
            thread.finish()
            Self.places.give()
        }
        try await withTaskExecutorPreference(thread) {
            try await Self.$onItsOwnThread.withValue(true) { try await function() }
        }
    }

    @TaskLocal static var onItsOwnThread = false

    /// A counting semaphore that waits without holding a thread, first come first served.
    final class Places: @unchecked Sendable {
        private let lock = NSLock()
        private var free: Int
        private var waiting: [CheckedContinuation<Void, Never>] = []

        init(_ count: Int) { free = count }

        func take() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now: Bool = lock.withLock {
                    guard free > 0 else {
                        waiting.append(continuation)
                        return false
                    }
                    free -= 1
                    return true
                }
                if now { continuation.resume() }
            }
        }

        func give() {
            let next: CheckedContinuation<Void, Never>? = lock.withLock {
                guard !waiting.isEmpty else {
                    free += 1
                    return nil
                }
                return waiting.removeFirst()
            }
            next?.resume()
        }
    }
}

extension Trait where Self == BlockingTests {
    /// The suite's tests hold their thread for long: each runs on a thread of its own (`BlockingTests`).
    public static var blocking: Self { BlockingTests() }
}

/// One thread that runs the jobs of the tasks that prefer it, in order. Once finished, jobs still sent to it (a task
/// the test left behind) run on GCD's threads instead, so that none is lost. One per test: a few hundred
/// small objects kept for the process's life.
public final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var next = 0
    private var finished = false

    public init(name: String) {
        // Never freed: a task may name it as its executor after its test (its preference is unowned).
        _ = Unmanaged.passRetained(self)
        let thread = Thread { [unowned self] in
            Thread.current.threadDictionary[Self.testKey] = name
            self.run()
        }
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// The test case the calling thread runs, when it is a `ThreadExecutor`'s thread; nil on any other.
    public static var currentTest: String? { Thread.current.threadDictionary[testKey] as? String }

    private static let testKey = "storeledger.test-case"

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        if finished {
            condition.unlock()
            let executor = asUnownedTaskExecutor()
            DispatchQueue.global().async { job.runSynchronously(on: executor) }
            return
        }
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Ends the thread once the jobs sent so far have run.
    public func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        let executor = asUnownedTaskExecutor()
        condition.lock()
        while true {
            while next == jobs.count && !finished { condition.wait() }
            if next == jobs.count { break }
            let job = jobs[next]
            next += 1
            if next == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                next = 0
            }
            condition.unlock()
            job.runSynchronously(on: executor)
            condition.lock()
        }
        condition.unlock()
    }
}
