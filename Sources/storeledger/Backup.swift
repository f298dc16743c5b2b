import ArgumentParser
import Foundation
import LedgerAPI
import LedgerCore
import LedgerStore
import LedgerErrors

/// What `backup` and `restore` report (`--json`).
struct CopyReport: Encodable {
    /// The directory written (the backup, or the restored ledger).
    var directory: String
    var lastSeq: UInt64
    var events: Int
    var rejected: Int
    var chainHead: String
    /// Size of the copy's data file.
    var bytes: Int
    /// Projections that matched a replay when the copy was verified.
    var projections: Int
    /// Whether a `config.json` was copied with the ledger.
    var config: Bool
}

/// Opens the ledger in `directory`, verifies it whole (hash chain, indexes, raw inputs, refused inputs, projections
/// against a replay) and returns its statistics and the projections compared; `verification_failed` otherwise.
private func verifiedCopy(
    _ directory: String, configuration: LedgerConfiguration, readOnly: Bool, quiet: Bool, json: Bool, what: String
) throws -> (LedgerStatistics, Int) {
    var options = Ledger.Options()
    options.readOnly = readOnly
    let copy: Ledger
    do {
        // The log's rules (`openLedger`); a writable open of a backup an earlier build wrote records the file's as
        // its initial rules.
        copy = try Ledger(
            directory: directory, rules: readOnly ? FoldRules() : configuration.rules, options: options, logger: cliLogger)
    } catch {
        let failure = LedgerError.from(error)
        throw CommandFailure(code: failure.code, message: "\(what): \(failure.message)", json: json)
    }
    defer { copy.close() }
    let progress = quiet ? nil : ProgressLine("verifying \(what)")
    let report: VerificationReport
    do {
        report = try copy.audit.verify(progress: progress?.update)
    } catch {
        progress?.finish()
        let failure = LedgerError.from(error)
        throw CommandFailure(
            code: failure.code == .failed ? .verificationFailed : failure.code, message: "\(what): \(failure.message)",
            json: json)
    }
    progress?.finish()
    if let fault = report.fault {
        throw CommandFailure(code: .verificationFailed, message: "\(what) does not verify: \(fault)", json: json)
    }
    let stats = try copy.statistics()
    guard report.chainHead == stats.chainHead else {
        throw CommandFailure(
            code: .verificationFailed,
            message: "\(what): the chain head in its meta (\(stats.chainHead)) is not its log's (\(report.chainHead))",
            json: json)
    }
    return (stats, report.projections)
}

private func printCopyReport(_ report: CopyReport, headline: String, json: Bool, quiet: Bool) throws {
    if json { return try printJSON(encoding: report) }
    guard !quiet else { return }
    print(
        "\(headline): \(counted(report.events, "event")) (last seq \(report.lastSeq)), "
            + "\(counted(report.rejected, "refused input")), \(humanSize(report.bytes))"
            + (report.config ? ", with its config.json" : ""))
    print("chain head \(report.chainHead)")
    print(
        "ok: hash chain, indexes and raw inputs, \(counted(report.rejected, "refused input")), "
            + "\(counted(report.projections, "projection")) checked against a replay")
}

// MARK: - storeledger backup

/// `storeledger backup DEST`: a hot, consistent, compacted copy of the ledger, checked before it is reported.
struct Backup: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy the ledger into DEST while it is in use (LMDB's compacting copy), and check the copy.",
        discussion: """
            The copy is one consistent snapshot: taken in a read transaction, it holds every event committed before \
            it began and nothing after, so `serve` keeps appending meanwhile. DEST is created if missing and refused \
            if not empty; it receives data.mdb (and DIR's config.json, if there is one). The copy is then opened and \
            verified (hash chain, indexes, raw inputs, refused inputs, projections against a replay), and its chain \
            head checked against the ledger's own link at the copy's last seq, before success is reported. On any \
            failure what was written to DEST is removed. Install a backup with `storeledger restore DEST --data DIR`.
            """)

    @OptionGroup var ledger: LedgerOptions

    @Argument(help: "The backup's directory: created if missing, refused if not empty.")
    var destination: String

    @Flag(name: .long, help: "One JSON document on stdout.") var json = false
    @Flag(name: .long, help: "Print nothing but errors.") var quiet = false

    func run() throws {
        let configuration = try ledger.loadConfiguration(json: json)
        let state = directoryState(destination)
        switch state {
        case .notADirectory:
            throw CommandFailure(code: .invalidPath, message: "\(destination) exists and is not a directory", json: json)
        case .notEmpty(let entries):
            throw CommandFailure(
                code: .destinationNotEmpty,
                message: "\(destination) is not empty (\(entries.prefix(3).joined(separator: ", "))"
                    + (entries.count > 3 ? ", …" : "") + "): a backup goes into a new or empty directory",
                json: json)
        case .missing, .empty:
            break
        }
        let source = try ledger.openLedger(configuration, readOnly: true, json: json)
        do {
            try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: true)
        } catch {
            throw CommandFailure(
                code: .invalidPath, message: "cannot create \(destination): \(error.localizedDescription)", json: json)
        }
        var written: [String] = []
        do {
            let report = try copy(source, configuration, written: &written)
            try printCopyReport(report, headline: "backup of \(ledger.directory) in \(destination)", json: json, quiet: quiet)
        } catch {
            for file in written { try? FileManager.default.removeItem(atPath: file) }
            if state == .missing, directoryState(destination) == .empty {
                try? FileManager.default.removeItem(atPath: destination)
            }
            if let failure = error as? CommandFailure { throw failure }
            let failure = LedgerError.from(error)
            throw CommandFailure(code: failure.code, message: "backup into \(destination): \(failure.message)", json: json)
        }
    }

    /// Copies, checks, and returns what was copied; `written` names every file made in DEST, for the cleanup.
    private func copy(_ source: Ledger, _ configuration: LedgerConfiguration, written: inout [String]) throws -> CopyReport {
        let dataFile = (destination as NSString).appendingPathComponent("data.mdb")
        let lockFile = (destination as NSString).appendingPathComponent("lock.mdb")
        written += [dataFile, lockFile, (destination as NSString).appendingPathComponent("identity.key")]
        try source.copy(to: destination, compact: true)
        syncFile(dataFile)
        let sourceConfig = (ledger.directory as NSString).appendingPathComponent("config.json")
        let withConfig = FileManager.default.fileExists(atPath: sourceConfig)
        if withConfig {
            let copiedConfig = (destination as NSString).appendingPathComponent("config.json")
            written.append(copiedConfig)
            try FileManager.default.copyItem(atPath: sourceConfig, toPath: copiedConfig)
            syncFile(copiedConfig)
        }

        let (stats, projections) = try verifiedCopy(
            destination, configuration: configuration, readOnly: true, quiet: quiet || json, json: json, what: "the backup")
        // The copy must be the ledger's own log up to its last seq: its head is the ledger's link there.
        if stats.lastSeq > 0 {
            guard let event = try source.log.event(seq: stats.lastSeq), lowercaseHex(event.chainHash) == stats.chainHead else {
                throw CommandFailure(
                    code: .verificationFailed,
                    message: "the backup's chain head at seq \(stats.lastSeq) is not the ledger's link there", json: json)
            }
        }
        // The lock file is the copy's open readers' table, made by the check above; a backup is its data file.
        try? FileManager.default.removeItem(atPath: lockFile)
        syncFile(destination)
        return CopyReport(
            directory: destination, lastSeq: stats.lastSeq, events: stats.events, rejected: stats.rejected,
            chainHead: stats.chainHead, bytes: fileSize(dataFile), projections: projections, config: withConfig)
    }
}

// MARK: - storeledger restore

/// `storeledger restore BACKUP --data DIR`: installs a backup into a directory that holds no ledger, checked first.
struct Restore: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Install a backup (storeledger backup, or mdb_copy) as the ledger of an empty --data DIR, checked first.",
        discussion: """
            BACKUP is a directory holding data.mdb (what `storeledger backup` or `mdb_copy` writes), or such a data \
            file itself; it is only read (a directory with a lock.mdb, a ledger that may be in use, is copied through \
            LMDB in one read transaction, as `backup` copies). DIR must hold no ledger (other files, such as a config.json, may be there). \
            The data file is copied into a hidden directory inside DIR, opened (a ledger of an older schema is \
            upgraded, its projections rebuilt) and verified whole; only then is it moved into DIR. A config.json in \
            BACKUP is installed too when DIR has none and --config is not given, and is the configuration the check \
            uses. An export (NDJSON) is rebuilt with `storeledger import FILE` instead.
            """)

    @OptionGroup var ledger: LedgerOptions

    @Argument(help: "The backup: a directory holding data.mdb, or a data.mdb file.")
    var backup: String

    @Flag(name: .long, help: "One JSON document on stdout.") var json = false
    @Flag(name: .long, help: "Print nothing but errors.") var quiet = false

    func run() throws {
        let dataFile = try backupDataFile()
        let target = ledger.directory
        try requireNoLedger(target, json: json)
        let targetConfig = (target as NSString).appendingPathComponent("config.json")
        var backupConfig: String? = nil
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: backup, isDirectory: &isDirectory), isDirectory.boolValue {
            let candidate = (backup as NSString).appendingPathComponent("config.json")
            if ledger.config == nil, !FileManager.default.fileExists(atPath: targetConfig),
                FileManager.default.fileExists(atPath: candidate)
            {
                backupConfig = candidate
            }
        }
        let configuration: LedgerConfiguration
        if let backupConfig {
            do {
                configuration = try LedgerConfiguration(contentsOf: backupConfig)
            } catch {
                throw CommandFailure(code: .invalidConfiguration, message: "\(backupConfig): \(error)", json: json)
            }
        } else {
            configuration = try ledger.loadConfiguration(json: json)
        }

        let staged = try StagedLedger(target: target, json: json)
        let stats: LedgerStatistics
        let projections: Int
        do {
            try copyBackup(dataFile, into: staged.path, configuration: configuration)
            (stats, projections) = try verifiedCopy(
                staged.path, configuration: configuration, readOnly: false, quiet: quiet || json, json: json,
                what: "the backup \(backup)")
            try staged.install(json: json)
        } catch {
            staged.discard()
            throw error
        }
        if let backupConfig {
            try? FileManager.default.copyItem(atPath: backupConfig, toPath: targetConfig)
            syncFile(targetConfig)
        }
        let report = CopyReport(
            directory: target, lastSeq: stats.lastSeq, events: stats.events, rejected: stats.rejected,
            chainHead: stats.chainHead, bytes: fileSize((target as NSString).appendingPathComponent("data.mdb")),
            projections: projections, config: backupConfig != nil)
        try printCopyReport(report, headline: "restored \(backup) into \(target)", json: json, quiet: quiet)
    }

    /// Copies the backup's data file into `staging`. A directory with a lock file has been opened as a ledger and may
    /// be in use (a ledger directory given as the backup): it is copied through LMDB, in one read transaction, as
    /// `backup` does, since a plain copy of a file being written could be torn.
    private func copyBackup(_ dataFile: String, into staging: String, configuration: LedgerConfiguration) throws {
        let lockFile = ((dataFile as NSString).deletingLastPathComponent as NSString).appendingPathComponent("lock.mdb")
        if directoryState(backup) != .notADirectory, FileManager.default.fileExists(atPath: lockFile) {
            var options = Ledger.Options()
            options.readOnly = true
            do {
                let source = try Ledger(directory: backup, options: options, logger: cliLogger)
                try source.copy(to: staging, compact: true)
            } catch {
                let failure = LedgerError.from(error)
                throw CommandFailure(code: failure.code, message: "the backup \(backup): \(failure.message)", json: json)
            }
            return
        }
        do {
            try FileManager.default.copyItem(
                atPath: dataFile, toPath: (staging as NSString).appendingPathComponent("data.mdb"))
            let key = ((dataFile as NSString).deletingLastPathComponent as NSString).appendingPathComponent("identity.key")
            if FileManager.default.fileExists(atPath: key) {
                try FileManager.default.copyItem(
                    atPath: key, toPath: (staging as NSString).appendingPathComponent("identity.key"))
            }
        } catch {
            throw CommandFailure(
                code: .unreadableFile, message: "cannot copy \(dataFile): \(error.localizedDescription)", json: json)
        }
    }

    /// The backup's data file; `not_a_ledger` for anything else (an export names the command that reads it).
    private func backupDataFile() throws -> String {
        switch directoryState(backup) {
        case .missing:
            throw CommandFailure(code: .unreadableFile, message: "\(backup) does not exist", json: json)
        case .empty, .notEmpty:
            let file = (backup as NSString).appendingPathComponent("data.mdb")
            guard FileManager.default.fileExists(atPath: file) else {
                throw CommandFailure(
                    code: .notALedger, message: "\(backup) holds no data.mdb: not a backup of a ledger", json: json)
            }
            return file
        case .notADirectory:
            guard let handle = FileHandle(forReadingAtPath: backup) else {
                throw CommandFailure(code: .unreadableFile, message: "cannot read \(backup)", json: json)
            }
            let head = (try? handle.read(upToCount: 64)) ?? Data()
            try? handle.close()
            if let first = head.first(where: { !InputSpace.contains($0) }), first == UInt8(ascii: "{") {
                throw CommandFailure(
                    code: .notALedger,
                    message: "\(backup) is JSON, not an LMDB data file: an export is rebuilt with "
                        + "`storeledger import \(backup) --data DIR`",
                    json: json)
            }
            return backup
        }
    }
}

/// JSON's whitespace bytes.
private enum InputSpace {
    static func contains(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 }
}
