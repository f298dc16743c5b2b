#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import Foundation
import LedgerAPI
import LedgerCore
import LedgerStore
import LedgerErrors

/// `storeledger import FILE`: rebuilds a ledger from `storeledger export` output, into a directory that holds none.
struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rebuild a ledger from `storeledger export` output: the same events, seqs, raw inputs and chain head.",
        discussion: """
            FILE is read twice. First it is checked whole, writing nothing: every line is an export line, the events \
            run from seq 1 without a gap, each stored event chains to the link its line states, each raw input has \
            the SHA-256 its event records, the refused inputs are numbered without a gap, and the end line (written \
            by `export --complete`) matches what came before it. The first line that fails is named, and nothing is \
            written. Then the events are written back byte for byte into a new ledger (made in a hidden directory \
            inside DIR), the projections brought up to date as appends would, the refused inputs after them; the \
            result is verified whole (hash chain, indexes, raw inputs, refused inputs, projections against a \
            replay) and only then moved into DIR. DIR must hold no ledger: an import never appends. A plain \
            `export` (without --complete) carries no refused inputs and no end line, so a file cut short at a line \
            end cannot be told from a whole one: prefer `export --complete`. Progress goes to stderr on a terminal. \
            With --pseudonyms, an export of a ledger made without them is rewritten instead (docs/privacy.md): each \
            input checked as above, then appended again under pseudonyms, so every event keeps its seq but the chain \
            is new; the report names the export's head, which ties the two for an auditor.
            """)

    @OptionGroup var ledger: LedgerOptions

    @Argument(help: "The export (NDJSON), as `storeledger export --complete` writes it.")
    var file: String

    @Flag(name: .long, help: "One JSON document on stdout.") var json = false
    @Flag(name: .long, help: "No progress and no report; errors only.") var quiet = false

    /// What `import --json` prints.
    struct Report: Encodable {
        var directory: String
        var lastSeq: UInt64
        var events: UInt64
        var rejected: UInt64
        var chainHead: String
        var rejectedHead: String
        var projections: Int
        var bytes: Int
        /// Whether the export had its end line (`export --complete`): refused inputs included, the file whole.
        var complete: Bool
        /// A rewrite under pseudonyms: the export's own chain head, which the new chain replaces.
        var sourceChainHead: String?
    }

    /// What the first pass found: the export's totals.
    private struct Checked {
        var check = ImportCheck()
        /// Whether the export began with the line `export --complete` writes first (an end line must follow).
        var begun = false
        var complete = false
        var lines = 0
        /// Whether an event names people by pseudonyms (`people`): the ledger is made with them.
        var pseudonyms = false
    }

    /// Events, and the bytes they hold, per write transaction.
    private static let batchEvents = 4_096
    private static let batchBytes = 64 << 20

    func run() throws {
        let configuration = try ledger.loadConfiguration(json: json)
        let target = ledger.directory
        try requireNoLedger(target, json: json)
        let checked = try checkExport()

        let staged = try StagedLedger(target: target, json: json)
        let report: Report
        do {
            report = try rebuild(into: staged, configuration: configuration, checked: checked)
            try staged.install(json: json)
        } catch {
            staged.discard()
            throw error
        }
        if json { return try printJSON(encoding: report) }
        guard !quiet else { return }
        print(
            "imported \(file) into \(target): \(counted(report.events, "event"))"
                + (report.events > 0 ? " (seq 1–\(report.lastSeq))" : "")
                + ", \(counted(report.rejected, "refused input")), \(humanSize(report.bytes))")
        if let source = report.sourceChainHead {
            print("rewritten under pseudonyms: every event at its seq; chain head \(report.chainHead), the export's \(source)")
        } else {
            print("chain head \(report.chainHead), as the export states")
        }
        print(
            "ok: hash chain, indexes and raw inputs, \(counted(report.rejected, "refused input")), "
                + "\(counted(report.projections, "projection")) checked against a replay")
        if !report.complete {
            print(
                "note: a plain export carries no refused inputs and no end line; `storeledger export --complete` "
                    + "writes both")
        }
    }

    // MARK: - First pass: check, write nothing

    private func checkExport() throws -> Checked {
        let reader = try openFile()
        let progress = quiet || json ? nil : ProgressLine("checking \(file)")
        defer { progress?.finish() }
        let lines = ExportLineReader()
        var checked = Checked()
        var sawRefusal = false
        while let (number, line) = try reader.next() {
            progress?.update(reader.consumed, reader.size)
            checked.lines += 1
            do {
                if checked.complete {
                    throw LedgerError(code: .invalidExport, message: "a line follows the end line")
                }
                switch try lines.read(line) {
                case .begin:
                    guard checked.lines == 1 else {
                        throw LedgerError(code: .invalidExport, message: "the first line of an export appears again")
                    }
                    checked.begun = true
                case .event(let event, let fields):
                    if sawRefusal {
                        throw LedgerError(code: .invalidExport, message: "an event follows the refused inputs")
                    }
                    let decoded = try checked.check.check(event)
                    if !event.people.isEmpty { checked.pseudonyms = true }
                    if let difference = fields.disagreement(with: decoded) {
                        throw LedgerError(code: .verificationFailed, message: "the line of seq \(event.seq) was altered: \(difference)")
                    }
                case .refusal(let refusal, let fields):
                    sawRefusal = true
                    let decoded = try checked.check.check(refusal)
                    if decoded.contentDigest != nil { checked.pseudonyms = true }
                    if let difference = fields.disagreement(with: decoded) {
                        throw LedgerError(
                            code: .verificationFailed,
                            message: "the line of refused input \(refusal.number) was altered: \(difference)")
                    }
                case .end(let end):
                    try checkEnd(end, checked.check)
                    checked.complete = true
                }
            } catch let error as LedgerError {
                throw CommandFailure(
                    code: error.code, message: "\(file) line \(number): \(error.message); nothing was written", json: json)
            }
        }
        if (checked.begun || sawRefusal) && !checked.complete {
            throw CommandFailure(
                code: .invalidExport,
                message: "\(file) ends without the end line `export --complete` writes last: the file was cut short; "
                    + "nothing was written",
                json: json)
        }
        if checked.lines == 0 {
            throw CommandFailure(
                code: .invalidExport, message: "\(file) holds no line of an export; nothing was written", json: json)
        }
        return checked
    }

    /// The end line must state what the lines before it hold.
    private func checkEnd(_ end: ExportEndLine.Summary, _ check: ImportCheck) throws(LedgerError) {
        guard end.lastSeq == check.lastSeq, end.rejected == check.refusals.last else {
            throw LedgerError(
                code: .invalidExport,
                message: "the end line states \(counted(end.lastSeq, "event")) and \(counted(end.rejected, "refused input")) "
                    + "but the export holds \(check.lastSeq) and \(check.refusals.last): lines are missing")
        }
        guard end.chainHead.lowercased() == check.chainHeadHex else {
            throw LedgerError(
                code: .verificationFailed,
                message: "the end line states chain head \(end.chainHead) but the events chain to \(check.chainHeadHex)")
        }
        guard end.rejectedHead.lowercased() == check.refusals.hexLink else {
            throw LedgerError(
                code: .verificationFailed,
                message: "the end line states rejected head \(end.rejectedHead) but the refused inputs chain to "
                    + check.refusals.hexLink)
        }
    }

    // MARK: - Second pass: write, verify

    private func rebuild(into staged: StagedLedger, configuration: LedgerConfiguration, checked: Checked) throws -> Report {
        var options = Ledger.Options()
        // One fsync at the end (`finish`) instead of one per batch: until the ledger is moved into DIR, a crash
        // loses nothing but the hidden directory.
        options.unsafeNoSync = true
        // An export of a ledger with pseudonyms makes one: its events name people by them. With --pseudonyms, an
        // export of a ledger without them is rewritten under them.
        let rewriting = ledger.pseudonyms && !checked.pseudonyms
        options.pseudonyms = checked.pseudonyms || rewriting
        // An export of a ledger an older build wrote: its receipts are read again.
        options.readsStoredReceipts(with: configuration)
        let store: Ledger
        do {
            // The exported log carries its own rules: the configuration's are not the imported ledger's.
            store = try Ledger(directory: staged.path, options: options, logger: cliLogger)
        } catch {
            let failure = LedgerError.from(error)
            throw CommandFailure(code: failure.code, message: failure.message, json: json)
        }
        defer { store.close() }
        if rewriting { return try rewrite(into: store, staged: staged, checked: checked) }
        let importer = try LedgerImport(into: store)
        let reader = try openFile()
        let lines = ExportLineReader()
        let progress = quiet || json ? nil : ProgressLine("importing")
        let total = checked.check.lastSeq
        var events: [ImportedEvent] = []
        var refusals: [ImportedRefusal] = []
        var bytes = 0
        func flush() throws {
            try importer.write(events)
            try importer.write(refusals)
            events.removeAll(keepingCapacity: true)
            refusals.removeAll(keepingCapacity: true)
            bytes = 0
            progress?.update(importer.written.lastSeq, total)
        }
        do {
            while let (number, line) = try reader.next() {
                do {
                    switch try lines.read(line) {
                    case .event(let event, _):
                        bytes += event.bytes.count + (event.raw?.count ?? 0)
                        events.append(event)
                    case .refusal(let refusal, _):
                        bytes += refusal.record.count
                        refusals.append(refusal)
                    case .begin, .end:
                        break
                    }
                    if events.count + refusals.count >= Self.batchEvents || bytes >= Self.batchBytes { try flush() }
                } catch let error as LedgerError {
                    throw CommandFailure(
                        code: error.code,
                        message: "\(file) line \(number), on the second reading (did the file change?): \(error.message)",
                        json: json)
                }
            }
            try flush()
            progress?.finish()
            let written = importer.written
            guard written.lastSeq == checked.check.lastSeq, written.chainHead == checked.check.chainHead,
                written.refusals == checked.check.refusals
            else {
                throw CommandFailure(
                    code: .invalidExport, message: "\(file) changed while it was imported; nothing was written", json: json)
            }
            try importer.finish()
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            let failure = LedgerError.from(error)
            throw CommandFailure(code: failure.code, message: "writing \(staged.path): \(failure.message)", json: json)
        }

        let verifyProgress = quiet || json ? nil : ProgressLine("verifying")
        let verification: VerificationReport
        do {
            verification = try store.audit.verify(progress: verifyProgress?.update)
        } catch {
            verifyProgress?.finish()
            let failure = LedgerError.from(error)
            throw CommandFailure(code: failure.code, message: failure.message, json: json)
        }
        verifyProgress?.finish()
        if let fault = verification.fault {
            throw CommandFailure(
                code: .verificationFailed, message: "the imported ledger does not verify: \(fault); nothing was written",
                json: json)
        }
        guard verification.chainHead == checked.check.chainHeadHex else {
            throw CommandFailure(
                code: .verificationFailed,
                message: "the imported ledger chains to \(verification.chainHead), the export to \(checked.check.chainHeadHex)",
                json: json)
        }
        return Report(
            directory: ledger.directory, lastSeq: checked.check.lastSeq, events: checked.check.lastSeq,
            rejected: checked.check.refusals.last, chainHead: checked.check.chainHeadHex,
            rejectedHead: checked.check.refusals.hexLink, projections: verification.projections,
            bytes: fileSize((staged.path as NSString).appendingPathComponent("data.mdb")), complete: checked.complete)
    }

    /// `--pseudonyms` on an export of a ledger made without them: each input checked, then appended again under
    /// pseudonyms (`LedgerRewrite`); the result verified whole.
    private func rewrite(into store: Ledger, staged: StagedLedger, checked: Checked) throws -> Report {
        let rewriter: LedgerRewrite
        do {
            rewriter = try LedgerRewrite(into: store)
        } catch {
            let failure = LedgerError.from(error)
            throw CommandFailure(code: failure.code, message: failure.message, json: json)
        }
        let reader = try openFile()
        let lines = ExportLineReader()
        let progress = quiet || json ? nil : ProgressLine("rewriting")
        var events: [ImportedEvent] = []
        do {
            while let (number, line) = try reader.next() {
                do {
                    switch try lines.read(line) {
                    case .event(let event, _):
                        events.append(event)
                        if events.count >= Self.batchEvents {
                            try rewriter.write(events)
                            events.removeAll(keepingCapacity: true)
                            progress?.update(rewriter.sourceChainHead.seq, checked.check.lastSeq)
                        }
                    case .refusal(let refusal, _):
                        try rewriter.write(events)
                        events.removeAll(keepingCapacity: true)
                        try rewriter.write([refusal])
                    case .begin, .end:
                        break
                    }
                } catch let error as LedgerError {
                    throw CommandFailure(
                        code: error.code,
                        message: "\(file) line \(number), on the second reading (did the file change?): \(error.message)",
                        json: json)
                }
            }
            try rewriter.write(events)
            try rewriter.finish()
            progress?.finish()
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            let failure = LedgerError.from(error)
            throw CommandFailure(code: failure.code, message: "writing \(staged.path): \(failure.message)", json: json)
        }
        guard rewriter.sourceChainHead.link == checked.check.chainHead else {
            throw CommandFailure(
                code: .invalidExport, message: "\(file) changed while it was rewritten; nothing was written", json: json)
        }
        let verification: VerificationReport
        do {
            verification = try store.audit.verify()
        } catch {
            let failure = LedgerError.from(error)
            throw CommandFailure(code: failure.code, message: failure.message, json: json)
        }
        if let fault = verification.fault {
            throw CommandFailure(
                code: .verificationFailed, message: "the rewritten ledger does not verify: \(fault); nothing was written",
                json: json)
        }
        let stats = try store.statistics()
        return Report(
            directory: ledger.directory, lastSeq: checked.check.lastSeq, events: checked.check.lastSeq,
            rejected: UInt64(stats.rejected), chainHead: verification.chainHead, rejectedHead: "",
            projections: verification.projections,
            bytes: fileSize((staged.path as NSString).appendingPathComponent("data.mdb")), complete: checked.complete,
            sourceChainHead: checked.check.chainHeadHex)
    }

    private func openFile() throws -> LineReader {
        guard let reader = LineReader(path: file) else {
            throw CommandFailure(code: .unreadableFile, message: "cannot read \(file)", json: json)
        }
        return reader
    }
}

// MARK: - Reading a file line by line

/// The lines of a file, read in blocks: memory stays bounded by the longest line, whatever the file's size.
final class LineReader {
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var start = 0
    private var scanned = 0
    private var atEnd = false
    private var number = 0
    /// The file's size when opened, and the bytes of the lines returned so far (for progress).
    let size: UInt64
    private(set) var consumed: UInt64 = 0

    init?(path: String) {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        self.handle = handle
        size = UInt64(fileSize(path))
    }

    deinit { try? handle.close() }

    /// The next line that is not blank, with its 1-based number, without its line end.
    func next() throws -> (Int, ArraySlice<UInt8>)? {
        while true {
            if let newline = nextNewline() {
                let line = trimmed(buffer[start..<newline])
                consumed += UInt64(newline + 1 - start)
                start = newline + 1
                scanned = start
                number += 1
                if line.isEmpty { continue }
                return (number, line)
            }
            scanned = buffer.count
            if atEnd {
                guard start < buffer.count else { return nil }
                let line = trimmed(buffer[start...])
                consumed += UInt64(buffer.count - start)
                start = buffer.count
                number += 1
                return line.isEmpty ? nil : (number, line)
            }
            // Keep only the unfinished line before reading more.
            if start > 0 {
                buffer.removeFirst(start)
                scanned -= start
                start = 0
            }
            let chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            if chunk.isEmpty { atEnd = true } else { buffer.append(contentsOf: chunk) }
        }
    }

    /// The index of the next line end in the buffer, from `scanned` on.
    private func nextNewline() -> Int? {
        buffer.withUnsafeBytes { bytes in
            guard scanned < bytes.count, let base = bytes.baseAddress,
                let found = memchr(base + scanned, Int32(UInt8(ascii: "\n")), bytes.count - scanned)
            else { return nil }
            return base.distance(to: UnsafeRawPointer(found))
        }
    }

    private func trimmed(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var line = line
        while let last = line.last, last == 0x0D || last == 0x20 || last == 0x09 { line.removeLast() }
        while let first = line.first, first == 0x20 || first == 0x09 { line.removeFirst() }
        return line
    }
}
