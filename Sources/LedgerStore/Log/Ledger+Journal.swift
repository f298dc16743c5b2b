#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import LMDB
import LedgerCodec
import LedgerErrors
import Logging

/// An open `data.mdb` holding a `flock`: exclusive for a journaled writer (`serve`), shared for other writers, so
/// that nothing writes LMDB behind a journal's back (recovery would not find those commits in it). LMDB itself uses
/// no `flock` and no lock on the data file.
final class DataFileLock: @unchecked Sendable {
    let fd: Int32
    let inode: UInt64

    init(fd: Int32, inode: UInt64) {
        self.fd = fd
        self.inode = inode
    }

    /// Lets other writers in (the ledger is closed); the descriptor stays open until deinit.
    func release() { flock(fd, LOCK_UN) }

    deinit { close(fd) }
}

/// `open(2)` of the data file (`Ledger.open` is another function's name inside `Ledger`).
private func openForWriting(_ path: String) -> Int32 { open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o640) }

/// Opening a ledger that has (or is to have) a journal: the steps around LMDB's own open.
extension Ledger {
    static func journalDirectory(_ directory: String) -> String {
        (directory as NSString).appendingPathComponent("journal")
    }

    /// Before LMDB opens the ledger for writing: takes the data file's lock, and when the last journaled writer did
    /// not close cleanly in an earlier boot, writes the checkpoint's meta page back over LMDB's (whose newest commits
    /// may be torn). Returns the lock and the checkpoint found.
    static func prepareWritableOpen(
        _ directory: String, journaled: Bool, bootID: String, initialize: Bool, logger: Logger
    ) throws -> (DataFileLock, JournalCheckpoint?) {
        let dataPath = (directory as NSString).appendingPathComponent("data.mdb")
        try checkDataFileKept(directory, dataPath: dataPath, initialize: initialize, logger: logger)
        let fd = openForWriting(dataPath)
        guard fd >= 0 else { throw LMDBError(code: errno, operation: "open(\(dataPath))") }
        var st = stat()
        fstat(fd, &st)
        let lock = DataFileLock(fd: fd, inode: UInt64(st.st_ino))
        // Recovery needs the ledger to itself: an exclusive lock first, whoever opens.
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            // Writers without a journal share the lock (the first of them recovered), a journaled one holds it alone.
            guard !journaled, flock(fd, LOCK_SH | LOCK_NB) == 0 else {
                throw LedgerError(
                    code: .ledgerInUse,
                    message: "another process is writing the ledger in \(directory) (storeledger serve?); send inputs "
                        + "through its socket, or stop it first")
            }
            return (lock, nil)
        }
        let found = try JournalCheckpoint.read(journalDirectory(directory))
        guard let checkpoint = found, !checkpoint.clean else {
            if !journaled { flock(fd, LOCK_SH) }
            return (lock, found)
        }
        guard checkpoint.dataInode == lock.inode else {
            throw LedgerError(
                code: .recoveryNeeded,
                message: "\(journalDirectory(directory)) holds the journal of another data file (inode "
                    + "\(checkpoint.dataInode); \(dataPath) is inode \(lock.inode)): remove that directory if this "
                    + "data file is the ledger to keep")
        }
        if checkpoint.bootID != bootID {
            let needed = (checkpoint.meta.lastPage + 1) * checkpoint.meta.bytes.count
            guard Int(st.st_size) >= needed else {
                throw LedgerError.corrupted(
                    "\(dataPath) holds \(st.st_size) bytes, less than the journal's checkpoint names (\(needed))")
            }
            try checkpoint.meta.restore(into: fd)
            logger.notice(
                "the system restarted while the ledger was written: LMDB brought back to its last checkpoint, the journal replays the rest",
                metadata: ["transaction": "\(checkpoint.meta.transactionID)"])
        }
        return (lock, checkpoint)
    }

    /// LMDB makes a new environment of a missing or empty data file. Where a ledger lived (LMDB's lock file, or a
    /// journal, remains), that would be a new, empty ledger over the loss, and it would pass its own checks: refused
    /// as `corrupted`, unless `initialize` (the operator's `--init`), which moves the old journal aside.
    static func checkDataFileKept(_ directory: String, dataPath: String, initialize: Bool, logger: Logger) throws {
        var st = stat()
        let exists = stat(dataPath, &st) == 0
        guard !exists || st.st_size == 0 else { return }
        let journal = journalDirectory(directory)
        var traces: [String] = []
        if FileManager.default.fileExists(atPath: (directory as NSString).appendingPathComponent("lock.mdb")) {
            traces.append("LMDB's lock.mdb")
        }
        if FileManager.default.fileExists(atPath: journal) { traces.append("a journal") }
        guard !traces.isEmpty else { return }
        guard initialize else {
            throw LedgerError.cannotOpen(
                directory,
                LedgerError.corrupted(
                    "\(dataPath) is \(exists ? "empty (0 bytes)" : "missing"), but a ledger lived here ("
                        + traces.joined(separator: " and ") + " remain): its events are gone. Restore a backup "
                        + "(storeledger restore BACKUP --data NEW), or start a new, empty ledger here with --init"))
        }
        if FileManager.default.fileExists(atPath: journal) {
            let aside = journal + ".before-init-\(currentMillis() / 1000)"
            guard rename(journal, aside) == 0 else { throw LMDBError(code: errno, operation: "rename(\(journal))") }
            logger.notice("--init: the earlier journal was moved aside", metadata: ["to": "\(aside)"])
        }
    }

    /// An empty data file holds no ledger, not even a new one (LMDB writes its meta pages when it creates one): for a
    /// reader, LMDB's own error would name a bad file descriptor.
    static func checkDataFileNotEmpty(_ directory: String) throws {
        let dataPath = (directory as NSString).appendingPathComponent("data.mdb")
        var st = stat()
        guard stat(dataPath, &st) == 0, st.st_size == 0 else { return }
        throw LedgerError.cannotOpen(
            directory,
            LedgerError.corrupted(
                "\(dataPath) is empty (0 bytes): its events are gone. Restore a backup (storeledger restore BACKUP --data NEW)"))
    }

    /// A read-only open may not read a ledger whose newest LMDB commits may be torn (its journaled writer stopped
    /// with the system): it must be opened for writing once, which recovers it.
    static func checkNoRecoveryPending(_ directory: String, bootID: String) throws {
        guard let checkpoint = try JournalCheckpoint.read(journalDirectory(directory)), !checkpoint.clean,
            checkpoint.bootID != bootID
        else { return }
        throw LedgerError(
            code: .recoveryNeeded,
            message: "the ledger in \(directory) was being written when the system stopped: open it for writing once "
                + "(storeledger serve) to recover it from its journal")
    }

    /// After LMDB opened for writing: applies the journal's records that LMDB lacks (from the checkpoint's position,
    /// each in a transaction of its own, checked against the log positions the record states), makes LMDB durable,
    /// and writes a new checkpoint. A journaled ledger then gets a fresh segment and a checkpointer; any other writer
    /// leaves the journal empty and the checkpoint clean, and commits durably itself.
    static func recoverJournal(
        _ directory: String, environment: Environment, batch: AppendBatch, checkpoint: JournalCheckpoint?,
        lock: DataFileLock, options: Options, bootID: String, logger: Logger
    ) throws -> (Journal, JournalCheckpointer)? {
        let journalDirectory = journalDirectory(directory)
        guard options.journal || checkpoint?.clean == false else { return nil }
        try FileManager.default.createDirectory(atPath: journalDirectory, withIntermediateDirectories: true)
        Journal.syncDirectory(directory)

        // The snapshot LMDB opened at, durable and pinned before anything is written over it.
        var pin = try environment.pausingWrites { try environment.pinSnapshot() }
        try environment.syncDataFile()
        let start = checkpoint?.position ?? Journal.Position(segment: 0, offset: 0)
        if checkpoint?.clean == false {
            try JournalCheckpoint(
                clean: false, bootID: bootID, dataInode: lock.inode, position: start,
                meta: try environment.pausingWrites { try environment.currentMetaPage() }
            ).write(journalDirectory)
        }

        var applied = 0
        for segment in Journal.segments(in: journalDirectory) where segment.number >= start.segment {
            let from = segment.number == start.segment ? start.offset : 0
            for found in try Journal.records(in: journalDirectory, segment: segment.number, name: segment.name, from: from) {
                let record: JournalRecord
                do {
                    record = try found.payload.withUnsafeBytes { (b) throws(FactDecodingError) in try JournalRecord(decoding: b) }
                } catch {
                    throw LedgerError.corrupted("journal \(segment.name) at \(found.offset): \(error)")
                }
                if try apply(record, environment, batch) { applied += 1 }
            }
        }
        try environment.syncDataFile()

        let segments = Journal.segments(in: journalDirectory)
        let next = max(start.segment, (segments.last?.number ?? 0) + 1)
        let (newPin, meta) = try environment.pausingWrites {
            (try environment.pinSnapshot(), try environment.currentMetaPage())
        }
        try JournalCheckpoint(
            clean: !options.journal, bootID: bootID, dataInode: lock.inode,
            position: Journal.Position(segment: next, offset: 0), meta: meta
        ).write(journalDirectory)
        pin.release()
        pin = newPin
        if applied > 0 {
            logger.notice("applied the journal's records LMDB lacked", metadata: ["groups": "\(applied)"])
        }

        guard options.journal else {
            for segment in segments { unlink((journalDirectory as NSString).appendingPathComponent(segment.name)) }
            pin.release()
            flock(lock.fd, LOCK_SH)
            return nil
        }
        let journal = try Journal(
            directory: journalDirectory, segmentBytes: options.journalSegmentBytes, startingSegment: next,
            exitAfterRecords: options.exitAfterJournalRecords)
        let checkpointer = JournalCheckpointer(
            environment: environment, journal: journal, bootID: bootID, dataInode: lock.inode,
            interval: options.checkpointIntervalSeconds, pin: pin, logger: logger)
        // The first segment is made of the spare, so that its syncs flush no file size either.
        for (index, segment) in segments.enumerated() {
            if index == segments.count - 1 {
                try journal.prepareSpare(recycling: segment.name)
            } else {
                unlink((journalDirectory as NSString).appendingPathComponent(segment.name))
            }
        }
        try journal.prepareSpare(recycling: nil)
        return (journal, checkpointer)
    }

    /// Applies one journal record unless LMDB already holds it; true when it was applied.
    private static func apply(_ record: JournalRecord, _ environment: Environment, _ batch: AppendBatch) throws -> Bool {
        try environment.write { txn in
            let current = try batch.position(txn)
            if record.after.isReached(by: current) { return false }
            guard record.before == current else {
                throw LedgerError.corrupted(
                    "the journal does not continue the ledger: a record starts at \(record.before), LMDB is at \(current)")
            }
            var changes = CommitChanges()  // at open, before any answer is kept
            var seeds: [Int: [UInt8]] = [:]  // none to give: the record holds every seed its run gave
            _ = try batch.run(record.inputs, in: txn, changes: &changes, seeds: &seeds)
            let reached = try batch.position(txn)
            guard reached == record.after else {
                throw LedgerError.corrupted(
                    "a journal record applied again reached \(reached) instead of \(record.after)")
            }
            return true
        }
    }
}
