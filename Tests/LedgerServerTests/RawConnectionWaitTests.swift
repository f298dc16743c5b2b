import Foundation
import LedgerTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

// MARK: - A raw client's wait for an answer

/// `RawConnection.waitReadable`, the wait of the raw clients here and of the FuzzQuery harness's two connections.
/// libFuzzer's `-timeout` arms a SIGALRM every `timeout / 2 + 1` seconds, which Linux hands to the fuzzer's main
/// thread, the one waiting for the server's answer: a wait that ends at the signal takes an answer still on its
/// way for one that never comes.
@Suite("Waiting for an answer", .serialized, .timeLimit(.minutes(1)), .blocking)
struct RawConnectionWaitTests {
    /// A signal that interrupts the wait does not end it: the answer that comes after is seen.
    @Test func aSignalDuringTheWaitDoesNotEndIt() throws {
        #if os(Linux)
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer {
            close(fds[0])
            close(fds[1])
        }
        // A handler that returns at once, as libFuzzer's alarm handler does while no input has run past `-timeout`;
        // `poll` is never restarted after a handler, whatever its flags.
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        var previous = sigaction()
        try #require(sigaction(SIGUSR2, &action, &previous) == 0)
        defer { sigaction(SIGUSR2, &previous, nil) }

        let waiter = Waiter(fd: fds[0])
        Thread { waiter.run() }.start()
        let tid = try #require(waiter.threadID(within: 10), "the waiting thread did not start")

        // Five signals, each sent while the waiter is blocked in `poll`; then the answer.
        var signals = 0
        let deadline = Date().addingTimeInterval(20)
        while signals < 5 && !waiter.finished.isSet && Date() < deadline {
            if Waiter.isPolling(tid) {
                pthread_kill(waiter.pthread.value, SIGUSR2)
                signals += 1
            }
            usleep(5_000)
        }
        _ = write(fds[1], "x", 1)
        try #require(waiter.finished.wait(seconds: 10), "the wait did not end after the answer")
        #expect(signals == 5, "the wait ended after \(signals) signals, before the answer")
        #expect(waiter.readable.value == true)
        #endif
    }
}

#if os(Linux)
/// A thread that waits for `fd` to become readable, as a client waits for an answer.
private final class Waiter: @unchecked Sendable {
    let fd: Int32
    let pthread = Locked<pthread_t>(pthread_t())
    /// The kernel's id of the thread (`/proc/thread-self` names it).
    let tid = Locked<String?>(nil)
    let readable = Locked<Bool?>(nil)
    let finished = Flag()

    init(fd: Int32) { self.fd = fd }

    func run() {
        // Threads may inherit a mask that blocks the signal; libFuzzer's main thread blocks none.
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        sigaddset(&unblocked, SIGUSR2)
        pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
        pthread.value = pthread_self()
        tid.value = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"))?
            .split(separator: "/").last.map(String.init)
        readable.value = RawConnection.waitReadable(fd, seconds: 30)
        finished.set()
    }

    /// The thread's kernel id, once it runs.
    func threadID(within seconds: Double) -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let tid = tid.value { return tid }
            usleep(1_000)
        }
        return nil
    }

    /// Whether the thread is blocked in `poll` or `ppoll` (its current system call's number).
    static func isPolling(_ tid: String) -> Bool {
        guard let text = try? String(contentsOfFile: "/proc/self/task/\(tid)/syscall", encoding: .utf8),
            let number = text.split(separator: " ").first.flatMap({ Int($0) })
        else { return false }
        #if arch(x86_64)
        return number == 7 || number == 271
        #elseif arch(arm64)
        return number == 73
        #else
        return false
        #endif
    }
}

/// A value read and written from two threads.
private final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var _value: Value

    init(_ value: Value) { _value = value }

    var value: Value {
        get { lock.withLock { _value } }
        set { lock.withLock { _value = newValue } }
    }
}

/// Set once, waited for.
private final class Flag: @unchecked Sendable {
    private let condition = NSCondition()
    private var done = false

    var isSet: Bool { condition.withLock { done } }

    func set() {
        condition.withLock {
            done = true
            condition.broadcast()
        }
    }

    func wait(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        return condition.withLock {
            while !done { if !condition.wait(until: deadline) { return done } }
            return true
        }
    }
}
#endif
