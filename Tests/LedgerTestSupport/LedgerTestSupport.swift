#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

// MARK: - Temporary directories and the built executable

/// A fresh directory under the system's temp dir; removed by `remove()`.
public struct TemporaryDirectory: Sendable {
    public let path: String

    public init(prefix: String = "storeledger") throws {
        path = NSTemporaryDirectory() + prefix + "-" + UUID().uuidString.prefix(8).lowercased()
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    public func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    public func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// Where `swift build` put the `storeledger` executable (the test bundle sits in the same directory).
public func storeledgerExecutable(file: String = #filePath) -> String {
    // Next to the test bundle: .build/<triple>/debug/StoreLedgerPackageTests.xctest → .build/<triple>/debug/storeledger.
    let bundleDir = Bundle.main.bundleURL.deletingLastPathComponent().path
    for dir in [bundleDir, (CommandLine.arguments.first.map { ($0 as NSString).deletingLastPathComponent } ?? "")] {
        let candidate = (dir as NSString).appendingPathComponent("storeledger")
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    // Fall back to the package's .build/debug.
    let root = URL(fileURLWithPath: file).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    return root.appendingPathComponent(".build/debug/storeledger").path
}

/// What a finished child process said.
public struct ProcessOutput: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    /// False when a signal ended the process (`status` is then the signal), or `runProcess`'s deadline killed it.
    public var exited: Bool = true
    /// True when the deadline passed and the process was killed.
    public var killed: Bool = false
}

/// Starts `process`. Foundation's `Process.run` is not safe to call from two threads at once on Linux: the suite
/// crashed inside it (a copy from freed memory) while another thread was in the middle of launching its own, so every
/// test starts its processes through here, one at a time.
///
/// A process with no environment of its own gets the one this process had when it first launched one: without
/// one, `Process.run` copies the live environment (`ProcessInfo.processInfo.environment`), and the suite crashed in
/// that copy (a read past freed memory) while another thread changed it.
public func launch(_ process: Process) throws {
    launching.lock()
    defer { launching.unlock() }
    if process.environment == nil { process.environment = inheritedEnvironment }
    try process.run()
}

private let launching = NSLock()
/// Read once, under `launching`.
private let inheritedEnvironment = ProcessInfo.processInfo.environment

/// Runs `executable` with `arguments`, feeding `input` on stdin, and waits for it; with `deadline`, kills it (SIGKILL)
/// after that many seconds.
///
/// Started with `posix_spawn` itself rather than Foundation's `Process`: `Process.run` crashed the suite now and then
/// (a copy from unmapped memory inside it, with launches already serialized and the environment passed in), and this
/// is the helper most tests start processes through. The child gets the three pipes and no other descriptor of this
/// process (as `Process` arranges), and the environment this process had when it first launched one.
public func runProcess(
    _ executable: String, _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
    deadline: Double? = nil
) throws -> ProcessOutput {
    let child = try SpawnedChild(executable, arguments, environment: environment ?? launchEnvironment())
    // Read both pipes while the child runs, so a large output cannot block it.
    let outData = LockedData(), errData = LockedData()
    let group = DispatchGroup()
    for (fd, sink) in [(child.stdout, outData), (child.stderr, errData)] {
        group.enter()
        DispatchQueue.global().async {
            sink.set(readToEnd(fd))
            group.leave()
        }
    }
    if let input {
        input.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = write(child.stdin, bytes.baseAddress! + offset, bytes.count - offset)
                if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { break }
            }
        }
    }
    close(child.stdin)
    var killed = false
    if let deadline {
        let end = Date().addingTimeInterval(deadline)
        while child.process.isRunning && Date() < end { Thread.sleep(forTimeInterval: 0.02) }
        if child.process.isRunning {
            kill(child.process.processIdentifier, SIGKILL)
            killed = true
        }
    }
    child.process.waitUntilExit()
    group.wait()
    close(child.stdout)
    close(child.stderr)
    return ProcessOutput(
        status: child.process.terminationStatus, stdout: String(decoding: outData.get(), as: UTF8.self),
        stderr: String(decoding: errData.get(), as: UTF8.self), exited: child.process.exited && !killed, killed: killed)
}

/// The environment a launched process gets when its test gives none (read once, under the launch lock).
func launchEnvironment() -> [String: String] {
    launching.lock()
    defer { launching.unlock() }
    return inheritedEnvironment
}

/// A child started with `posix_spawn`: the process, and this side of its three pipes.
struct SpawnedChild {
    let process: ChildProcess
    let stdin: Int32
    let stdout: Int32
    let stderr: Int32

    init(_ executable: String, _ arguments: [String], environment: [String: String]) throws {
        // Pipes whose ends are closed on exec: the child keeps only what dup2 puts at 0, 1 and 2.
        var pipes: [[Int32]] = []
        for _ in 0..<3 {
            var fds: [Int32] = [0, 0]
            // Under the launch lock, so no other launch inherits these ends between pipe and FD_CLOEXEC.
            launching.lock()
            defer { launching.unlock() }
            guard pipe(&fds) == 0 else { throw SpawnError(description: "pipe: errno \(errno)") }
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            pipes.append(fds)
        }
        do {
            let pid = try spawn(executable, arguments, environment: environment) { actions in
                posix_spawn_file_actions_adddup2(&actions, pipes[0][0], 0)
                posix_spawn_file_actions_adddup2(&actions, pipes[1][1], 1)
                posix_spawn_file_actions_adddup2(&actions, pipes[2][1], 2)
            }
            process = ChildProcess(pid: pid)
        } catch {
            for fds in pipes { for fd in fds { close(fd) } }
            throw error
        }
        close(pipes[0][0])
        close(pipes[1][1])
        close(pipes[2][1])
        stdin = pipes[0][1]
        stdout = pipes[1][0]
        stderr = pipes[2][0]
    }

}

struct SpawnError: Error, CustomStringConvertible {
    var description: String
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does not declare.
private let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
    guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
    return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
}()

/// Starts `executable` with `posix_spawn`, in a process group of its own, with the file actions `redirect` adds for
/// descriptors 0, 1 and 2, and every other descriptor of this process closed in the child (as Foundation's `Process`
/// arranges); its pid.
func spawn(
    _ executable: String, _ arguments: [String], environment: [String: String],
    redirect: (inout posix_spawn_file_actions_t) -> Void
) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    redirect(&actions)
    if let addCloseFrom { _ = addCloseFrom(&actions, 3) }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        for p in argv { free(p) }
        for p in envp { free(p) }
    }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
    guard result == 0 else { throw SpawnError(description: "posix_spawn \(executable): errno \(result)") }
    return pid
}

/// A long-running child (a server, a proxy) started with `posix_spawn`: stdin from /dev/null, stdout and stderr
/// appended to files (or /dev/null); the parts of Foundation's `Process` the tests use.
public final class ChildProcess: @unchecked Sendable {
    public let processIdentifier: pid_t
    /// The wait status, once it has been reaped here.
    private let exitStatus = Mutex<Int32?>(nil)

    init(pid: pid_t) { processIdentifier = pid }

    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdout: String? = nil,
        stderr: String? = nil
    ) throws {
        processIdentifier = try spawn(executable, arguments, environment: environment ?? launchEnvironment()) { actions in
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
            posix_spawn_file_actions_addopen(&actions, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        }
    }

    /// The wait status once it has ended (reaped here); nil while it runs.
    private func poll() -> Int32? {
        if let status = exitStatus.withLock({ $0 }) { return status }
        var status: Int32 = 0
        guard waitpid(processIdentifier, &status, WNOHANG) == processIdentifier else { return nil }
        exitStatus.withLock { $0 = status }
        return status
    }

    public var isRunning: Bool { poll() == nil }

    public func waitUntilExit() {
        if exitStatus.withLock({ $0 }) != nil { return }
        var status: Int32 = 0
        while waitpid(processIdentifier, &status, 0) == -1 && errno == EINTR {}
        exitStatus.withLock { $0 = status }
    }

    /// Its exit status, or the signal that ended it (after `waitUntilExit`, or once `isRunning` is false).
    public var terminationStatus: Int32 {
        let status = exitStatus.withLock { $0 } ?? 0
        return status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
    }

    /// Whether it exited rather than being ended by a signal.
    public var exited: Bool { (exitStatus.withLock { $0 } ?? 0) & 0x7f == 0 }

    public var terminationReason: Process.TerminationReason { exited ? .exit : .uncaughtSignal }
}

/// Everything `fd` gives until its end, a read interrupted by a signal retried. (FileHandle's `readDataToEndOfFile`
/// traps on EINTR, which the suite's process tests cause: every child that exits sends a SIGCHLD.)
public func readToEnd(_ fd: Int32) -> Data {
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n > 0 {
            data.append(buffer, count: n)
        } else if n < 0 && errno == EINTR {
            continue
        } else {
            return data
        }
    }
}

/// Bytes handed from a reading thread to the waiting one.
public final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    public init() {}
    public func set(_ d: Data) {
        lock.lock()
        data = d
        lock.unlock()
    }
    public func get() -> Data {
        lock.lock()
        defer { lock.unlock() }
        return data
    }
}

// MARK: - A tiny filesystem, for disk-full tests

/// A tmpfs of `megabytes` MiB mounted on a fresh directory under /tmp (root only), for tests that fill a disk.
public final class TinyFilesystem: @unchecked Sendable {
    public let path: String

    /// Mounts one; nil when this process may not mount (not root, or a sandbox without the capability).
    public init?(megabytes: Int) {
        var template = Array("/tmp/sl-full-XXXXXX".utf8CString)
        guard let p = mkdtemp(&template) else { return nil }
        path = String(cString: p)
        let mount = try? runProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", path])
        guard mount?.status == 0 else {
            rmdir(path)
            return nil
        }
    }

    /// Whether tmpfs mounts work here (probed once).
    public static let available: Bool = {
        guard getuid() == 0, let probe = TinyFilesystem(megabytes: 1) else { return false }
        probe.unmount()
        return true
    }()

    /// Fills `megabytes` MiB with a file that `free()` removes later.
    public func reserve(megabytes: Int) throws {
        try Data(repeating: 0x5A, count: megabytes << 20).write(to: URL(fileURLWithPath: path + "/reserve"))
    }

    /// Frees what `reserve` took.
    public func free() throws { try FileManager.default.removeItem(atPath: path + "/reserve") }

    public func unmount() {
        _ = try? runProcess("/bin/umount", ["-l", path])
        rmdir(path)
    }
}

// MARK: - Threads of their own for tests that serve

/// Threads of their own (GCD's, not Swift's cooperative pool) for in-process servers and the tests that drive or
/// wait for servers. Across the whole suite, long synchronous tests (CPU-bound property tests, CLI tests waiting
/// for processes) can hold both cooperative threads of a two-core machine for tens of seconds; a server whose
/// handlers, or a test whose polling loop, waits for those threads then "does not start" or "does not answer".
public final class TestExecutor: TaskExecutor {
    public static let shared = TestExecutor()
    private let queue = DispatchQueue(label: "storeledger.test-executor", attributes: .concurrent)

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
