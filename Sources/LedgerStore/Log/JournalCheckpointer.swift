import Foundation
import LMDB
import Logging

/// Makes a journaled ledger's LMDB durable in the background and lets the journal go: every `interval`, when
/// something was committed since the last time,
///
/// 1. with no write transaction in flight, pins the snapshot of the last commit (a read transaction, so no later
///    commit reuses its pages) and notes its meta page and the journal's position after its record;
/// 2. `fdatasync`s the data file: that snapshot is on disk;
/// 3. writes the checkpoint (`JournalCheckpoint`) naming it, durably;
/// 4. releases the previous pin (until then the previous checkpoint's snapshot was intact on disk), and recycles the
///    journal segments before the position as the next spare.
///
/// A failure leaves the previous checkpoint and its pin in place (still a valid recovery point) and is tried again
/// at the next interval; meanwhile the journal keeps every record since.
final class JournalCheckpointer: @unchecked Sendable {
    private let environment: Environment
    private let journal: Journal
    private let bootID: String
    private let dataInode: UInt64
    private let logger: Logger

    /// One checkpoint at a time; guards `pin` and `lastPosition`.
    private let checkpointLock = NSLock()
    private var pin: PinnedSnapshot?
    private var lastPosition: Journal.Position?

    private let thread: LedgerThread

    init(
        environment: Environment, journal: Journal, bootID: String, dataInode: UInt64, interval: Double,
        pin: PinnedSnapshot?, logger: Logger
    ) {
        self.environment = environment
        self.journal = journal
        self.bootID = bootID
        self.dataInode = dataInode
        self.thread = LedgerThread(name: "storeledger-checkpointer", interval: interval)
        self.pin = pin
        self.logger = logger
    }

    /// Starts the background checkpoints.
    func start() {
        thread.start { [self] last in
            guard !last else { return }
            do {
                try checkpoint(clean: false)
            } catch {
                logger.warning("journal checkpoint failed; retried shortly", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Stops the background checkpoints; with `clean`, writes the last checkpoint (the writer must be stopped):
    /// LMDB synced, the journal empty.
    func stop(clean: Bool) {
        guard thread.stop(), clean else { return }
        do {
            try checkpoint(clean: true)
        } catch {
            logger.error("the last journal checkpoint failed; the next open recovers from the journal", metadata: ["error": "\(error)"])
        }
    }

    /// One checkpoint (see the type's comment). `clean` only with the writer stopped.
    func checkpoint(clean: Bool) throws {
        checkpointLock.lock()
        defer { checkpointLock.unlock() }
        let (newPin, meta, position) = try environment.pausingWrites {
            (try environment.pinSnapshot(), try environment.currentMetaPage(), journal.position)
        }
        if !clean, position == lastPosition {
            newPin.release()
            try journal.prepareSpare(recycling: nil)
            return
        }
        do {
            try environment.syncDataFile()
        } catch {
            newPin.release()
            throw LedgerError.storage(error)
        }
        // Clean: everything is in LMDB; recovery would start after every segment written so far.
        let start = clean ? Journal.Position(segment: position.segment + 1, offset: 0) : position
        do {
            try JournalCheckpoint(clean: clean, bootID: bootID, dataInode: dataInode, position: start, meta: meta)
                .write(journal.directory)
        } catch {
            newPin.release()
            throw error
        }
        pin?.release()
        pin = newPin
        lastPosition = position
        let obsolete = Journal.segments(in: journal.directory).filter { $0.number < start.segment }
        for (index, segment) in obsolete.enumerated() {
            if clean || index < obsolete.count - 1 {
                unlink(journal.path(segment.name))
            } else {
                try journal.prepareSpare(recycling: segment.name)
            }
        }
        if clean {
            pin?.release()
            pin = nil
        } else if obsolete.isEmpty {
            try journal.prepareSpare(recycling: nil)
        }
    }

    /// A checkpoint after an erasure, that also leaves no record before it readable: with writes paused, LMDB is
    /// synced, the checkpoint written at the journal's position, the current segment overwritten with zeros
    /// (every record in it is before the checkpoint, which recovery starts from), the segments before it and the
    /// spare (perhaps a recycled segment) deleted; a spare of zeros is made after. Holds the writer for one sync of
    /// the data file and the zeroing of a segment: an erasure is rare.
    func scrub() throws {
        checkpointLock.lock()
        defer { checkpointLock.unlock() }
        let (newPin, position) = try environment.pausingWrites {
            let newPin = try environment.pinSnapshot()
            do {
                let meta = try environment.currentMetaPage()
                let position = journal.position
                try environment.syncDataFile()
                try JournalCheckpoint(clean: false, bootID: bootID, dataInode: dataInode, position: position, meta: meta)
                    .write(journal.directory)
                try journal.zeroCurrentSegment()
                try journal.discardSpare()
                return (newPin, position)
            } catch {
                newPin.release()
                throw LedgerError.from(error)
            }
        }
        pin?.release()
        pin = newPin
        lastPosition = position
        for segment in Journal.segments(in: journal.directory) where segment.number < position.segment {
            unlink(journal.path(segment.name))
        }
        Journal.syncDirectory(journal.directory)
        try journal.prepareSpare(recycling: nil)
    }
}
