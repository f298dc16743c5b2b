import ArgumentParser
import Foundation
import LedgerAPI
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerWire
import Logging

/// Options every command takes: where the ledger lives and how it is configured.
struct LedgerOptions: ParsableArguments {
    @Option(name: .long, help: "Ledger directory (default: $STORELEDGER_DATA or ./ledger-data).")
    var data: String?

    @Option(name: .long, help: "Configuration file (default: DIR/config.json when it exists).")
    var config: String?

    var directory: String {
        data ?? ProcessInfo.processInfo.environment["STORELEDGER_DATA"] ?? "./ledger-data"
    }

    /// The configuration file's contents, or the defaults when there is none.
    func loadConfiguration(json: Bool) throws -> LedgerConfiguration {
        let path = config ?? (directory as NSString).appendingPathComponent("config.json")
        guard config != nil || FileManager.default.fileExists(atPath: path) else { return LedgerConfiguration() }
        do {
            return try LedgerConfiguration(contentsOf: path)
        } catch {
            throw CommandFailure(code: .invalidConfiguration, message: "\(error)", json: json)
        }
    }

    /// Opens the ledger; read-only commands do not start a writer.
    func openLedger(_ configuration: LedgerConfiguration, readOnly: Bool, json: Bool) throws -> Ledger {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory)
        // A path that is not a directory is for `Ledger` to name; a directory without a data file holds no ledger.
        if readOnly, !exists || isDirectory.boolValue,
            !FileManager.default.fileExists(atPath: (directory as NSString).appendingPathComponent("data.mdb"))
        {
            throw CommandFailure(code: .noLedger, message: "no ledger in \(directory) (use --data DIR)", json: json)
        }
        var options = Ledger.Options()
        options.readOnly = readOnly
        options.maxQueuedInputs = configuration.limits.maxQueuedInputs
        do {
            return try Ledger(directory: directory, rules: configuration.rules, options: options, logger: cliLogger)
        } catch {
            let failure = LedgerError.from(error)  // Ledger.init names the directory and the cause
            throw CommandFailure(code: failure.code, message: failure.message, json: json)
        }
    }
}

let cliLogger: Logger = {
    var logger = Logger(label: "storeledger")
    logger.logLevel = ProcessInfo.processInfo.environment["STORELEDGER_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
    return logger
}()

/// Options of the commands that read projections: the two clocks and the environment.
struct ClockOptions: ParsableArguments {
    @Option(name: .long, help: "Valid time: ISO-8601 (2020-11-13T04:59:30Z) or milliseconds since epoch (default: now).")
    var at: String?

    @Option(name: .customLong("as-of"), help: "Knowledge time: a log sequence number (default: latest).")
    var asOf: UInt64?

    @Option(name: .long, help: "Production (default), Sandbox, Xcode or LocalTesting.")
    var environment: String = "Production"

    func validate() throws {
        _ = try instant()
        _ = try appStoreEnvironment()
    }

    func instant() throws -> UnixMillis {
        guard let at else { return currentMillis() }
        guard let ms = Instant.parse(at) else {
            throw ValidationError("--at '\(at)' is neither ISO-8601 nor milliseconds since epoch")
        }
        return ms
    }

    func appStoreEnvironment() throws -> AppStoreEnvironment {
        guard let e = AppStoreEnvironment(appleName: environment) else {
            throw ValidationError("--environment must be Production, Sandbox, Xcode or LocalTesting")
        }
        return e
    }
}


/// ISO-8601 text of an instant, for tables.
func formatInstant(_ ms: UnixMillis?) -> String {
    guard let ms else { return "-" }
    let f = ISO8601DateFormatter()
    return f.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
}

/// Prints a document as one line of JSON, every object's keys sorted so the output is stable.
func printJSON(_ document: some JSONDocument) {
    printLine(JSONWriter.bytes(of: document, sortedKeys: true))
}

/// Prints a value's `Codable` form as one line of JSON, every object's keys sorted so the output is stable.
func printJSON(encoding value: some Encodable) throws {
    printLine(try JSONWriter.bytes(encoding: value, sortedKeys: true))
}

private func printLine(_ bytes: [UInt8]) {
    FileHandle.standardOutput.write(Data(bytes + [UInt8(ascii: "\n")]))
}

/// Shows progress on a terminal (stderr), at most a few times per second: done / total, the share done and the rate
/// since the start. Silent when stderr is not a TTY, or when asked to be (`--quiet`).
final class ProgressLine: @unchecked Sendable {
    private let label: String
    private let unit: String
    private let enabled: Bool
    private let started = DispatchTime.now().uptimeNanoseconds
    private var last: UInt64 = 0
    private var lastDone: UInt64?
    private var shown = false
    private let lock = NSLock()

    /// A line for `label` (`verifying`), counting `unit`s.
    init(_ label: String, unit: String = "events", quiet: Bool = false) {
        self.label = label
        self.unit = unit
        enabled = !quiet && isatty(STDERR_FILENO) != 0
    }

    func update(_ done: UInt64, _ total: UInt64) {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        let now = DispatchTime.now().uptimeNanoseconds
        guard now - last > 200_000_000 || (done == total && done != lastDone) else { return }
        last = now
        lastDone = done
        shown = true
        let pct = total > 0 ? Double(done) * 100 / Double(total) : 100
        let seconds = Double(now - started) / 1e9
        let rate = seconds > 0 ? Double(done) / seconds : 0
        let line = String(format: "\r%@ %llu/%llu %@ (%.0f%%), %@ %@/s\u{1B}[K", label, done, total, unit, pct, Self.short(rate), unit)
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// Ends the line (when one was shown), so that what follows starts on a line of its own.
    func finish() {
        lock.lock()
        defer { lock.unlock() }
        guard enabled, shown else { return }
        shown = false
        FileHandle.standardError.write(Data("\n".utf8))
    }

    /// 950, 12.3k, 1.24M.
    static func short(_ value: Double) -> String {
        if value >= 1e6 { return String(format: "%.2fM", value / 1e6) }
        if value >= 1e4 { return String(format: "%.0fk", value / 1e3) }
        if value >= 1e3 { return String(format: "%.1fk", value / 1e3) }
        return String(format: "%.0f", value)
    }
}
