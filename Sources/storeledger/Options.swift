import ArgumentParser
import Foundation
import LedgerAPI
import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerErrors
import Logging

/// Options every command takes: where the ledger lives and how it is configured.
struct LedgerOptions: ParsableArguments {
    @Option(name: .long, help: "Ledger directory (default: $STORELEDGER_DATA or ./ledger-data).")
    var data: String?

    @Option(name: .long, help: "Configuration file (default: DIR/config.json when it exists).")
    var config: String?

    @Flag(
        name: .customLong("init"),
        help: "Writers: start a new, empty ledger in DIR although its data file is missing or empty where a ledger lived (its lock file or journal remains); without it that is refused as corrupted.")
    var initialize = false

    @Flag(
        name: .long,
        help: "Writers: a new ledger names people (app user ids, appAccountTokens) by pseudonyms and keeps their values apart, so that `storeledger forget` can erase them (docs/privacy.md). A ledger keeps the choice it was made with.")
    var pseudonyms = false

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

    /// Opens the ledger; read-only commands do not start a writer. `journal`: inputs are made durable in the
    /// write-ahead journal (`serve`), and no other process may write meanwhile.
    ///
    /// Two variables stand in for what only an OS crash can do, for the tests of recovery:
    /// `STORELEDGER_TEST_BOOT_ID` replaces the kernel's boot id (a journal from "another boot" is recovered as after
    /// a power loss), and `STORELEDGER_TEST_EXIT_AFTER_JOURNAL_RECORDS=N` ends the process, as `kill -9` would, right
    /// after its Nth journal record is durable and before that group commits.
    ///
    /// The rules every command folds with are the ones the ledger's log records (the built-in defaults where it
    /// records none), never a file's: a writer records a configuration's rules as the first event of a new ledger,
    /// and refuses to start with rules that differ from the log's (`rules_differ`, naming the difference), unless
    /// `adoptingRules` is false (`rules apply` records a change; `import` writes a log that carries its own). A
    /// reader whose configuration states other rules says, on stderr, which ones it folded with.
    func openLedger(
        _ configuration: LedgerConfiguration, readOnly: Bool, json: Bool, journal: Bool = false,
        adoptingRules: Bool = true
    ) throws -> Ledger {
        try Self.openLedger(
            directory: directory, initialize: initialize, configuration, readOnly: readOnly, json: json,
            journal: journal, adoptingRules: adoptingRules, pseudonyms: pseudonyms)
    }

    /// `openLedger` for a directory given otherwise than by these options (`demo`). `rulesRecordedAt`: when a new
    /// ledger's rules are recorded as applied (default: now), so that a ledger made from fixed inputs is the same
    /// bytes on every run.
    static func openLedger(
        directory: String, initialize: Bool = false, _ configuration: LedgerConfiguration, readOnly: Bool, json: Bool,
        journal: Bool = false, adoptingRules: Bool = true, rulesRecordedAt: UnixMillis? = nil, pseudonyms: Bool = false
    ) throws -> Ledger {
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
        options.journal = journal && !readOnly
        options.initialize = initialize
        options.pseudonyms = pseudonyms
        options.readsStoredReceipts(with: configuration)
        let environment = ProcessInfo.processInfo.environment
        options.bootID = environment["STORELEDGER_TEST_BOOT_ID"]
        options.exitAfterJournalRecords = environment["STORELEDGER_TEST_EXIT_AFTER_JOURNAL_RECORDS"].flatMap { Int($0) }
        let store: Ledger
        do {
            // A writer passes the file's rules: an upgrade of a ledger an earlier build wrote records them as its
            // initial rules (that build folded with them). Readers fold with the log's alone.
            store = try Ledger(
                directory: directory, rules: readOnly ? FoldRules() : configuration.rules, options: options,
                logger: cliLogger)
        } catch {
            let failure = LedgerError.from(error)  // Ledger.init names the directory and the cause
            throw CommandFailure(code: failure.code, message: failure.message, json: json)
        }
        guard configuration.statesRules else { return store }
        do {
            if readOnly {
                let recorded = try store.rulesInLog.recorded()
                let inForce = recorded?.rules ?? FoldRules()
                let configured = configuration.rules(over: inForce)
                if inForce != configured {
                    let whose = recorded.map { "the rules its log recorded at seq \($0.seq)" } ?? "the built-in defaults (its log records no rules)"
                    FileHandle.standardError.write(
                        Data("note: the ledger folds with \(whose), not \(configuration.source ?? "the configuration")'s, which differ: \(WhatIfDocument.ruleChanges(inForce, configured).joined(separator: "; "))\n".utf8))
                }
                return store
            }
            guard adoptingRules else { return store }
            // The part of the rules the file does not state is the ledger's own (a new ledger's: the defaults).
            let configured = configuration.rules(over: try store.rulesInLog.inForce())
            let raw = (try? JSONWriter.bytes(encoding: configured, sortedKeys: true)) ?? []
            switch try store.rulesInLog.adopt(configured, raw: raw, at: rulesRecordedAt ?? currentMillis()) {
            case .inForce, .recorded: return store
            case .differs(let inForce, let seq):
                store.close()
                let file = configuration.source ?? "the configuration"
                let whose = seq.map { "the rules the ledger recorded at seq \($0)" } ?? "the built-in defaults the ledger was written with (its log records no rules)"
                throw CommandFailure(
                    code: .rulesDiffer,
                    message: "\(file)'s products/bindingPolicy differ from \(whose): \(WhatIfDocument.ruleChanges(inForce, configured).joined(separator: "; ")). Review the change with `storeledger replay --what-if \(file)` and record it with `storeledger rules apply \(file)`, or start with the ledger's own rules (a configuration without products and bindingPolicy)",
                    json: json)
            }
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            store.close()
            let failure = LedgerError.from(error)
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
        try checkSeqArgument("as-of", asOf)
        _ = try appStoreEnvironment()
    }

    func instant() throws -> UnixMillis {
        guard let at else { return currentMillis() }
        return try instantArgument("at", at)
    }

    func appStoreEnvironment() throws -> AppStoreEnvironment {
        guard let e = AppStoreEnvironment(appleName: environment) else {
            throw ValidationError("--environment must be Production, Sandbox, Xcode or LocalTesting")
        }
        return e
    }
}

/// The value `text` of the flag `--name` as an instant a caller may ask about (`Instant.queryRange`); a usage error
/// naming the flag and the range otherwise.
func instantArgument(_ name: String, _ text: String, timeZone: TimeZone = Instant.utc) throws -> UnixMillis {
    guard let ms = Instant.parse(text, timeZone: timeZone) else {
        throw ValidationError(
            "--\(name) '\(text)' is neither milliseconds since epoch, ISO-8601 nor a date YYYY-MM-DD")
    }
    guard Instant.queryRange.contains(ms) else {
        throw ValidationError("--\(name) '\(text)' is outside \(Instant.queryRangeText)")
    }
    return ms
}

/// Refuses a log sequence number given to `--name` beyond `QuerySeq.max` with a usage error naming the range.
func checkSeqArgument(_ name: String, _ value: UInt64?) throws {
    guard let value, value > QuerySeq.max else { return }
    throw ValidationError("--\(name) \(value) is outside \(QuerySeq.rangeText)")
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

/// Shows progress on stderr, and only where someone watches: when stderr is a terminal (never in a pipe, a file or a
/// test) and no `--quiet` was given, once the work has lasted half a second (a short command prints nothing), then at
/// most five times a second: done / total, the share done, and the rate since the start.
final class ProgressLine: @unchecked Sendable {
    private let label: String
    private let unit: String?
    private let enabled: Bool
    private let started = DispatchTime.now().uptimeNanoseconds
    private var last: UInt64 = 0
    private var lastDone: UInt64?
    private var shown = false
    private let lock = NSLock()

    static let delay: UInt64 = 500_000_000
    static let interval: UInt64 = 200_000_000

    /// A line for `label` (`verifying`), its rate in `unit`s per second (`events`; a bare number without one).
    init(_ label: String, unit: String? = nil, quiet: Bool = false) {
        self.label = label
        self.unit = unit
        self.enabled = !quiet && isatty(STDERR_FILENO) != 0
    }

    /// Whether anything is shown at all: the caller may skip work done only for the display (counting inputs).
    var isEnabled: Bool { enabled }

    func update(_ done: UInt64, _ total: UInt64) {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        let now = DispatchTime.now().uptimeNanoseconds
        guard now - started >= Self.delay,
            !shown || now - last >= Self.interval || (done == total && done != lastDone)
        else { return }
        last = now
        lastDone = done
        shown = true
        let pct = total > 0 ? Double(done) * 100 / Double(total) : 100
        let rate = Double(done) / (Double(now - started) / 1e9)
        // Cleared to the end: a shorter line leaves nothing of the one before.
        let line = String(format: "\r%@ %llu/%llu (%.0f%%), ", label, done, total, pct) + Self.short(rate)
            + (unit.map { " " + $0 } ?? "") + "/s\u{1B}[K"
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// Ends the line, if one was shown.
    func finish() {
        lock.lock()
        defer { lock.unlock() }
        guard shown else { return }
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

/// A byte count as people read it: `512 B`, `1.2 MiB` (binary units, one decimal).
func humanSize(_ bytes: some BinaryInteger) -> String {
    let units = ["KiB", "MiB", "GiB", "TiB", "PiB"]
    guard bytes >= 1024 else { return "\(bytes) B" }
    var value = Double(bytes) / 1024
    var unit = 0
    while value >= 1024 && unit < units.count - 1 {
        value /= 1024
        unit += 1
    }
    // 1023.96 KiB rounds to "1024.0 KiB"; say the next unit instead.
    if (value * 10).rounded() >= 10240 && unit < units.count - 1 {
        value /= 1024
        unit += 1
    }
    return String(format: "%.1f %@", value, units[unit])
}

extension Ledger.Options {
    /// Gives the store Apple's parsing of the receipts an older build stored (`Ledger.Options.receiptCreationDates`),
    /// with the configuration's limits.
    mutating func readsStoredReceipts(with configuration: LedgerConfiguration) {
        let decoder = InputDecoder(configuration: configuration.appStore)
        receiptCreationDates = { raw in decoder.receiptCreationDates(raw) }
    }
}
