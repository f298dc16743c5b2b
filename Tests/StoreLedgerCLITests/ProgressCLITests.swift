#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LedgerTestSupport
import Testing

/// `verify` and `export` show their progress on stderr when it is a terminal (events done / total, the share, the
/// rate), say nothing there otherwise or with `--quiet`, and write the same stdout either way.
@Suite(.serialized) struct ProgressCLITests {
    /// A pseudo-terminal: the child writes to its secondary side, the test reads the primary side.
    final class Terminal {
        let primary: Int32
        let secondary: FileHandle

        // The pseudo-terminal calls of the C library, which Glibc's Swift module does not declare.
        typealias IntCall = @convention(c) (Int32) -> Int32
        typealias NameCall = @convention(c) (Int32) -> UnsafeMutablePointer<CChar>?
        static func call<T>(_ name: String, as type: T.Type) throws -> T {
            unsafeBitCast(try #require(dlsym(UnsafeMutableRawPointer(bitPattern: 0), name), "\(name)"), to: type)
        }

        init() throws {
            primary = try Self.call("posix_openpt", as: IntCall.self)(O_RDWR | O_NOCTTY)
            try #require(primary >= 0)
            try #require(try Self.call("grantpt", as: IntCall.self)(primary) == 0)
            try #require(try Self.call("unlockpt", as: IntCall.self)(primary) == 0)
            let name = String(cString: try #require(try Self.call("ptsname", as: NameCall.self)(primary)))
            let fd = open(name, O_RDWR | O_NOCTTY)
            try #require(fd >= 0)
            secondary = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            _ = fcntl(primary, F_SETFL, fcntl(primary, F_GETFL) | O_NONBLOCK)
        }

        /// What the child wrote to the terminal so far.
        func written() -> String {
            var out: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(primary, &buffer, buffer.count)
                if n <= 0 { break }
                out += buffer[0..<n]
            }
            return String(decoding: out, as: UTF8.self)
        }

        deinit { close(primary) }
    }

    /// Runs the executable with stderr on `terminal`; returns the status and stdout.
    static func run(_ arguments: [String], stderr terminal: Terminal) throws -> (status: Int32, stdout: Data) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: storeledgerExecutable())
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = terminal.secondary
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = LockedData()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            data.set(out.fileHandleForReading.readDataToEndOfFile())
            done.signal()
        }
        process.waitUntilExit()
        done.wait()
        return (process.terminationStatus, data.get())
    }

    static func ledger(_ dir: TemporaryDirectory, events: Int) throws -> String {
        let file = dir.file("inputs.ndjson")
        try (0..<events).map { transactionLine($0, otids: 7) }.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let ledger = dir.file("ledger")
        let ingest = try runProcess(storeledgerExecutable(), ["ingest", "--data", ledger, "--json", file])
        try #require(ingest.status == 0, "\(ingest.stderr)")
        return ledger
    }

    @Test func verifyShowsProgressOnATerminalOnly() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let ledger = try Self.ledger(dir, events: 40)

        let terminal = try Terminal()
        let shown = try Self.run(["verify", "--data", ledger], stderr: terminal)
        #expect(shown.status == 0)
        let line = terminal.written()
        #expect(line.contains("verifying 40/40 events (100%), "), "\(line.debugDescription)")
        #expect(line.contains(" events/s"), "\(line.debugDescription)")
        #expect(line.utf8.last == UInt8(ascii: "\n"), "the line is ended before the report")
        #expect(line.components(separatedBy: "(100%)").count == 2, "the end is shown once")

        let piped = try runProcess(storeledgerExecutable(), ["verify", "--data", ledger])
        #expect(piped.status == 0 && piped.stderr.isEmpty, "\(piped.stderr.debugDescription)")
        #expect(Data(piped.stdout.utf8) == shown.stdout)

        let quiet = try Terminal()
        let silent = try Self.run(["verify", "--data", ledger, "--quiet"], stderr: quiet)
        #expect(silent.status == 0 && silent.stdout == shown.stdout)
        #expect(quiet.written().isEmpty)
    }

    @Test func exportShowsProgressOnATerminalOnlyAndWritesTheSameBytes() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let ledger = try Self.ledger(dir, events: 25)

        let terminal = try Terminal()
        let shown = try Self.run(["export", "--data", ledger], stderr: terminal)
        #expect(shown.status == 0)
        #expect(shown.stdout.split(separator: UInt8(ascii: "\n")).count == 25)
        let line = terminal.written()
        #expect(line.contains("exporting 25/25 events (100%), "), "\(line.debugDescription)")

        let piped = try runProcess(storeledgerExecutable(), ["export", "--data", ledger])
        #expect(piped.status == 0 && piped.stderr.isEmpty)
        #expect(Data(piped.stdout.utf8) == shown.stdout)

        let quiet = try Terminal()
        let silent = try Self.run(["export", "--data", ledger, "--quiet", "--after", "20"], stderr: quiet)
        #expect(silent.status == 0 && quiet.written().isEmpty)
        let lastFive = shown.stdout.split(separator: UInt8(ascii: "\n")).suffix(5).map { Data($0) + Data([10]) }
        #expect(silent.stdout == lastFive.reduce(Data(), +))
    }
}
