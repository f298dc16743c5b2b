import ArgumentParser
import Foundation
import LedgerAPI
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerErrors

/// `storeledger events`: the raw event history.
struct Events: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show stored events, by transaction, subscription or position.")

    @OptionGroup var ledger: LedgerOptions
    @Option(name: .long, help: "Every revision recorded for one transaction id (or synthetic key).") var transaction: String?
    @Option(name: .long, help: "Every event of one original transaction id.") var original: String?
    @Option(name: .long, help: "Events after this sequence number.") var after: UInt64 = 0
    @Option(name: .long, help: "Production (default), Sandbox, Xcode or LocalTesting (with --original).")
    var environment: String = "Production"
    @Option(name: .long, help: "At most this many events; when more follow, a note says how to go on (--after).")
    var limit: Int = 100
    @Flag(name: .long, help: "One JSON document on stdout (\"more\": true and \"nextAfter\" when more events follow).")
    var json = false

    func validate() throws {
        if transaction != nil && original != nil { throw ValidationError("give --transaction or --original, not both") }
        if limit <= 0 { throw ValidationError("--limit must be positive") }
        try checkSeqArgument("after", after)
    }

    func run() throws {
        let store = try ledger.openLedger(try ledger.loadConfiguration(json: json), readOnly: true, json: json)
        var events: [StoredEvent]
        if let transaction {
            events = try store.log.events(key: transaction)
        } else if let original {
            guard let env = AppStoreEnvironment(appleName: environment) else { throw ValidationError("unknown --environment") }
            let seqs = try store.log.events(original: OriginalTransactionID(original), environment: env).map(\.seq)
            events = try seqs.compactMap { try store.log.event(seq: $0) }
        } else {
            // One more than shown, to know whether more follow.
            events = try store.log.events(after: after, limit: limit == .max ? limit : limit + 1)
        }
        events = events.filter { $0.event.seq > after }
        let more = events.count > limit
        if more { events = Array(events.prefix(limit)) }
        // Where to go on from: the same command with `--after` the last seq shown (as `GET /v1/events?after=` pages).
        let nextAfter = more ? events.last?.event.seq : nil
        if json {
            struct Doc: Encodable {
                var events: [EventDocument]
                var more: Bool
                var nextAfter: UInt64?
            }
            try printJSON(encoding: Doc(events: events.map { EventDocument($0) }, more: more, nextAfter: nextAfter))
            return
        }
        print(pad("SEQ", 8) + pad("KIND", 13) + pad("KEY", 30) + pad("OTID", 20) + pad("ENV", 11) + pad("SOURCE", 18) + "RECEIVED")
        for s in events {
            let e = s.event
            print(
                pad("\(e.seq)", 8) + pad(e.fact.kind.rawValue, 13) + pad(e.fact.eventKey, 30)
                    + pad(e.fact.originalTransactionId?.rawValue ?? "-", 20) + pad(e.fact.environment.rawValue, 11)
                    + pad(e.metadata.source.rawValue, 18) + formatInstant(e.metadata.receivedAt))
        }
        if events.isEmpty { print("(no events)") }
        if let nextAfter {
            FileHandle.standardError.write(
                Data("note: more events follow; showing the first \(limit): go on with --after \(nextAfter)\n".utf8))
        }
    }
}

/// `storeledger export`: NDJSON of events with their raw inputs (docs/backup.md, "The export format").
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write every event (with its raw input, base64) as NDJSON.",
        discussion: """
            One line per event, in log order: its fields, its raw input and its stored bytes (base64), its raw key \
            and its chain hash. With --complete, a first line names the format, every refused input follows the \
            events (one line each), then one end line states the last seq, the chain head and the refused inputs' \
            count and chain head: what `storeledger import` needs to rebuild the same ledger and to tell a file cut \
            short.
            """)

    @OptionGroup var ledger: LedgerOptions
    @Option(name: .long, help: "Only events after this sequence number.") var after: UInt64 = 0
    @Flag(
        name: .long,
        help: "Also a first line, every refused input and an end line (what `storeledger import` needs); not with --after.")
    var complete = false
    @Flag(name: .long, help: "No progress line on a terminal (stderr).") var quiet = false

    func validate() throws {
        if complete && after > 0 {
            throw ValidationError("--complete exports the whole ledger; it cannot be combined with --after")
        }
        try checkSeqArgument("after", after)
    }

    func run() throws {
        let store = try ledger.openLedger(try ledger.loadConfiguration(json: false), readOnly: true, json: false)
        let progress = ProgressLine("exporting", unit: "events", quiet: quiet)
        defer { progress.finish() }
        if complete {
            FileHandle.standardOutput.write(
                Data(try JSONWriter.bytes(encoding: ExportBeginLine(), sortedKeys: true) + [UInt8(ascii: "\n")]))
        }
        let events = try EventExport.write(store, after: after, to: STDOUT_FILENO, progress: progress.update)
        guard complete else { return }
        var refusals = RefusalChainHead()
        while true {
            let page = try store.audit.exportedRefusals(after: refusals.last, limit: 1_000)
            guard !page.isEmpty else { break }
            var out = Data()
            for exported in page {
                out += try JSONWriter.bytes(encoding: ExportRefusalLine(exported), sortedKeys: true)
                out += Data("\n".utf8)
                refusals.add(exported.record)
            }
            FileHandle.standardOutput.write(out)
        }
        let end = ExportEndLine(
            .init(
                lastSeq: events.lastSeq, chainHead: lowercaseHex(events.chainHead ?? [UInt8](repeating: 0, count: 32)),
                rejected: refusals.last, rejectedHead: refusals.hexLink))
        FileHandle.standardOutput.write(Data(try JSONWriter.bytes(encoding: end, sortedKeys: true) + [UInt8(ascii: "\n")]))
    }
}

/// `storeledger stats`.
struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Counts, sizes, last sequence and chain head.")

    @OptionGroup var ledger: LedgerOptions
    @Flag(name: .long, help: "One JSON document on stdout.") var json = false

    func run() throws {
        let store = try ledger.openLedger(try ledger.loadConfiguration(json: json), readOnly: true, json: json)
        let s = try store.statistics()
        if json {
            try printJSON(encoding: s)
            return
        }
        print("ledger        \(ledger.directory)")
        print("last seq      \(s.lastSeq)")
        print("events        \(s.events)")
        print("rejected      \(s.rejected)")
        print("subscriptions \(s.subscriptions)")
        print("users         \(s.users)")
        print("raw inputs    \(s.rawInputs)")
        print("chain head    \(s.chainHead)")
        print("bytes         \(humanSize(s.bytes)) in use (\(s.bytes) bytes), map \(humanSize(s.mapSize))")
    }
}

/// `storeledger verify`.
struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the hash chain, every index against the log, and projections against a replay.")

    @OptionGroup var ledger: LedgerOptions
    @Flag(name: .long, help: "One JSON document on stdout.") var json = false
    @Flag(name: .long, help: "No progress line on a terminal (stderr).") var quiet = false

    func run() throws {
        let store = try ledger.openLedger(try ledger.loadConfiguration(json: json), readOnly: true, json: json)
        let progress = ProgressLine("verifying", unit: "events", quiet: quiet)
        let report: VerificationReport
        do {
            report = try store.audit.verify(progress: progress.update)
        } catch {
            progress.finish()
            // A read that fails (a damaged page, a full disk) has its own code; anything else failed the check.
            let failure = LedgerError.from(error)
            throw CommandFailure(
                code: failure.code == .failed ? .verificationFailed : failure.code, message: failure.message, json: json)
        }
        progress.finish()
        if json { try printJSON(encoding: report) }
        if let fault = report.fault {
            if !json { FileHandle.standardError.write(Data("error: \(ErrorCode.verificationFailed): \(fault)\n".utf8)) }
            throw ExitCode(1)
        }
        if !json {
            print(
                "ok: \(counted(report.events, "event")) chained to \(report.chainHead), indexes match, "
                    + "\(counted(report.rejected, "refused input")) intact, "
                    + "\(counted(report.projections, "projection")) \(report.projections == 1 ? "matches" : "match") a replay")
        }
    }
}

/// `storeledger replay`.
struct Replay: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Rebuild every projection from the log alone.")

    @OptionGroup var ledger: LedgerOptions
    @Option(name: .long, help: "Fold only events up to this sequence number (reports, writes nothing).") var until: UInt64?
    @Flag(name: .long, help: "Compare with the stored projections; exit 1 on any difference.") var check = false
    @Option(
        name: .long,
        help: "Only these projections: 'timelines' (what access answers are read from) or 'lifecycle' (the typed events each input said). Default: both.")
    var only: String?
    @Flag(name: .long, help: "One JSON document on stdout.") var json = false
    @Option(
        name: .customLong("what-if"),
        help: "Fold the log under this configuration file's catalog and binding policy too, and print the customers whose entitlements would differ (writes nothing).")
    var whatIf: String?
    @Option(name: .long, help: "With --what-if: the instant the customers are compared at (default: now).") var at: String?

    func validate() throws {
        if whatIf != nil && check { throw ValidationError("--what-if compares other rules; it cannot be combined with --check") }
        if whatIf == nil && at != nil { throw ValidationError("--at is for --what-if") }
        if let only {
            guard LedgerAudit.ReplayProjections(name: only) != nil else {
                throw ValidationError("--only '\(only)' is neither 'timelines' nor 'lifecycle'")
            }
            if whatIf != nil { throw ValidationError("--only is for a replay; --what-if compares timelines alone") }
        }
        if let at { _ = try instantArgument("at", at) }
        try checkSeqArgument("until", until)
    }

    func run() throws {
        let configuration = try ledger.loadConfiguration(json: json)
        if let whatIf {
            try runWhatIf(configuration, whatIf)
            return
        }
        let store = try ledger.openLedger(configuration, readOnly: check || until != nil, json: json)
        defer { store.close() }
        let progress = ProgressLine("replaying", unit: "subscriptions")
        let projections = only.flatMap(LedgerAudit.ReplayProjections.init(name:)) ?? .all
        let report = try store.audit.replay(until: until, check: check, projections: projections, progress: progress.update)
        progress.finish()
        if json {
            try printJSON(encoding: report)
        } else {
            print(
                "\(counted(report.subscriptions, "subscription")), \(counted(report.events, "event")) folded up to seq "
                    + "\(report.untilSeq)" + (projections == .all ? "" : " (\(report.projections.joined()) only)") + "; "
                    + (report.rewrote ? "projections rewritten" : "nothing written"))
            print("projections digest \(report.projectionsDigest)")
        }
        if check, !report.differences.isEmpty {
            FileHandle.standardError.write(
                Data("error: \(ErrorCode.replayMismatch): \(report.differences.count) projection(s) differ, first \(report.differences[0])\n".utf8))
            throw ExitCode(1)
        }
        if check && !json {
            let what =
                switch projections {
                case .timelines: "stored timeline"
                case .lifecycle: "stored lifecycle event"
                default: "stored projection"
                }
            print("ok: every \(what) is byte-identical to the replay")
        }
    }
}

extension Replay {
    /// `replay --what-if FILE`: the customers whose entitlements would differ under FILE's rules.
    func runWhatIf(_ configuration: LedgerConfiguration, _ path: String) throws {
        let (other, _) = try Rules.readFile(path, json: json)
        let store = try ledger.openLedger(configuration, readOnly: true, json: json)
        defer { store.close() }
        // The file's rules as a change of those in force at the position asked: the part it does not state stays.
        let inForce = try store.rulesInLog.inForce(asOf: until)
        let alternative = other.rules(over: inForce)
        let report = try store.audit.whatIf(alternative, at: at.flatMap(Instant.parse) ?? currentMillis(), asOf: until)
        if json {
            printJSON(WhatIfDocument(report: report, before: inForce, after: alternative))
            return
        }
        for line in WhatIfDocument.ruleChanges(inForce, alternative) { print("what if: \(line)") }
        Self.printDifferences(report)
    }

    /// The what-if report in words: how many were compared, and each customer's entitlement that would differ.
    static func printDifferences(_ report: LedgerAudit.WhatIfReport) {
        print(
            "at \(formatInstant(report.at)), as of seq \(report.asOf): \(counted(report.subscriptions, "subscription")), "
                + "\(counted(report.customers, "customer")) compared; "
                + "\(counted(Set(report.differences.map { $0.environment + "/" + $0.appUserId }).count, "customer")) would differ")
        guard !report.differences.isEmpty else { return }
        print("\n  " + pad("USER", 24) + pad("ENV", 11) + pad("ENTITLEMENT", 24) + pad("NOW", 40) + "WOULD BE")
        for d in report.differences {
            print(
                "  " + pad(d.appUserId, 24) + pad(d.environment, 11) + pad(d.entitlement, 24)
                    + pad(Self.stateText(d.before), 40) + Self.stateText(d.after))
        }
    }

    static func stateText(_ state: EntitlementState?) -> String {
        guard let state else { return "never had it" }
        if state.active { return "active until \(formatInstant(state.expiresAt))" + " (\(state.originalTransactionId))" }
        return "inactive since \(formatInstant(state.expiresAt))"
    }
}

func pad(_ s: String, _ width: Int) -> String {
    s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count)
}

/// "1 event", "2 events".
func counted(_ n: some BinaryInteger, _ noun: String) -> String { n == 1 ? "1 \(noun)" : "\(n) \(noun)s" }
