import Foundation
import LMDB
import LedgerCore
import LedgerErrors
import Logging

/// A ledger directory: the event log, its indexes and projections in one LMDB environment, and its single writer.
///
/// Thread-safe. Writes go through one writer thread with group commit (`append`); reads run in short read
/// transactions on the caller's thread.
public final class Ledger: Sendable {
    /// How to open a ledger.
    public struct Options: Sendable {
        /// Initial map size; LMDB files are sparse, and the map grows when full.
        public var initialMapSize = 1 << 30
        public var maxMapSize = 1 << 40
        /// Inputs waiting for the writer beyond which `append` fails with `overloaded`.
        public var maxQueuedInputs = 100_000
        /// Inputs per write transaction at most.
        public var maxBatchInputs = 4_096
        /// Open without a writer (auditors, `events`, `verify`).
        public var readOnly = false
        /// Skip fsync on commit. Benchmarks of CPU cost only: acknowledged writes may be lost.
        public var unsafeNoSync = false
        /// Make inputs durable in the write-ahead journal (`DIR/journal/`, one small sequential `fdatasync` per group
        /// commit) instead of LMDB's own sync, which a background checkpoint does about every
        /// `checkpointIntervalSeconds` (docs/storage.md). Only one journaled writer may have the ledger open, and no
        /// other writer meanwhile (`ledger_in_use`). Whatever this says, opening for writing recovers a journal left
        /// by an earlier writer first.
        public var journal = false
        /// How often the checkpointer syncs LMDB and lets the journal go (when anything was committed since).
        public var checkpointIntervalSeconds = 1.0
        /// The size of a journal segment, preallocated with zeros so that a record's sync flushes only its bytes.
        public var journalSegmentBytes = 8 << 20
        /// Stands in for the kernel's boot id (tests of recovery after an OS crash: a checkpoint of another boot means
        /// the page cache was lost). nil: `/proc/sys/kernel/random/boot_id`.
        public var bootID: String?
        /// Test hook: the process exits (as `kill -9` would end it) right after this many journal records were made
        /// durable, before the transaction of the last one commits.
        public var exitAfterJournalRecords: Int?
        /// Start a new, empty ledger even where one lived before: a directory whose data file is missing or empty
        /// while LMDB's lock file or a journal remains is otherwise refused as `corrupted` (its events are gone, and
        /// a new ledger opened over them would pass its own checks). The old journal is moved aside, not deleted.
        public var initialize = false
        /// A new ledger names people by pseudonyms and keeps their values apart, so that it can forget them
        /// (`forget`, docs/privacy.md). Read when the ledger is made; a ledger keeps the choice it was made with.
        public var pseudonyms = false
        /// Apple's parsing, for the store that knows no Apple format: the receipt creation date each `in_app` copy
        /// of a stored verifyReceipt response speaks from, by transaction id (LedgerAppStore's
        /// `InputDecoder.receiptCreationDates`). Read when a ledger an older build wrote is upgraded, and by an
        /// import (`ReceiptCreationDates`); nil: such receipts keep speaking from their request date.
        public var receiptCreationDates: (@Sendable (_ raw: [UInt8]) -> [TransactionID: UnixMillis])?
        public init() {}
    }

    public let directory: String
    /// The rules of the configuration file: what the ledger folds with until its log records a change of rules
    /// (`rulesInLog.apply`); from then on the log's rules are in force (`rulesInLog.inForce(asOf:)`).
    public let rules: FoldRules
    /// The rules at each log position.
    let history: RulesHistory
    let environment: Environment
    let layout: StoreLayout
    let batch: AppendBatch
    /// The personal values behind the log's pseudonyms.
    let identities: Identities
    /// Apple's parsing of a stored receipt, for an import (`Options.receiptCreationDates`).
    let receiptCreationDates: (@Sendable (_ raw: [UInt8]) -> [TransactionID: UnixMillis])?
    private let writer: Writer?
    let observers = CommitObservers()
    /// One `forget` at a time: each makes the next key generation.
    let forgetting = NSLock()
    /// The data file's lock (writers only); released after the environment closes.
    private let dataFileLock: DataFileLock?
    /// The background checkpoints of a journaled ledger.
    let checkpointer: JournalCheckpointer?
    /// Sums the subscriptions each commit changed into the maintained metrics (writable ledgers).
    private let metricsFollower: MetricsFollower?
    /// The last walk of the data file (`checkDataFile`), first the one at open.
    private let lastWalk: LastWalk

    /// Opens (creating if needed) the ledger in `directory`.
    ///
    /// Throws `LedgerError` when it cannot: `corrupted` (garbage or damaged LMDB files), `permission_denied`,
    /// `invalid_path` (the directory or a ledger file of the wrong kind), `storage_full`, `schema_mismatch`,
    /// `storage_error`.
    public init(directory: String, rules: FoldRules = FoldRules(), options: Options = Options(), logger: Logger) throws {
        self.directory = directory
        self.rules = rules
        self.receiptCreationDates = options.receiptCreationDates
        let bootID = JournalCheckpoint.bootID(override: options.bootID)
        var lock: DataFileLock?
        var checkpoint: JournalCheckpoint?
        do {
            if options.readOnly {
                try Self.checkNoRecoveryPending(directory, bootID: bootID)
                try Self.checkDataFileNotEmpty(directory)
            } else {
                try Self.makeDirectory(directory)
                let prepared = try Self.prepareWritableOpen(
                    directory, journaled: options.journal, bootID: bootID, initialize: options.initialize,
                    logger: logger)
                lock = prepared.0
                checkpoint = prepared.1
            }
        } catch let error as LedgerError {
            throw error
        } catch {
            throw LedgerError.cannotOpen(directory, error)
        }
        dataFileLock = lock
        let history = RulesHistory(configured: rules)
        self.history = history
        let identities: Identities
        do {
            identities = try Identities(directory: directory)
        } catch {
            throw LedgerError.cannotOpen(directory, error)
        }
        self.identities = identities
        let (environment, layout, upgrade, walked) = try Self.open(directory, options, identities)
        self.environment = environment
        lastWalk = LastWalk(walked)
        if environment.staleReadersCleared > 0 {
            logger.notice("cleared stale LMDB readers", metadata: ["count": "\(environment.staleReadersCleared)"])
        }
        self.layout = layout
        let batch = AppendBatch(
            layout: layout, projections: ProjectionEngine(layout: layout, history: history),
            identities: identities)
        self.batch = batch
        var journal: Journal?
        if let lock {
            do {
                let recovered = try Self.recoverJournal(
                    directory, environment: environment, batch: batch, checkpoint: checkpoint, lock: lock,
                    options: options, bootID: bootID, logger: logger)
                journal = recovered?.0
                checkpointer = recovered?.1
            } catch {
                throw LedgerError.cannotOpen(directory, error)
            }
        } else {
            checkpointer = nil
        }
        if options.readOnly {
            writer = nil
            metricsFollower = nil
        } else {
            let follower = MetricsFollower(environment: environment, layout: layout, observers: observers, logger: logger)
            metricsFollower = follower
            observers.add { _ in follower.poke() }
            observers.add { info in identities.remember(info.changes.identities) }
            let observers = self.observers
            writer = Writer(
                environment: environment, batch: batch, journal: journal, logger: logger,
                maxQueuedInputs: options.maxQueuedInputs, maxBatchInputs: options.maxBatchInputs,
                onCommit: { info in observers.committed(info) })
        }
        if let found = upgrade {
            // Rules in the log since schema 6: a ledger whose rules came from a configuration file records them as
            // its initial rules, so that every reader folds it with them, with or without that file.
            if found < 6, rules != FoldRules(), try !rulesInLog.changes().contains(where: { $0.change.initial }) {
                let initial = RulesChange(rules: rules, appliedAt: currentMillis(), initial: true)
                _ = try rulesInLog.append(initial)
                logger.notice("recorded the configuration's rules as the ledger's initial rules")
            }
            // Receipts stored before schema 6 speak from their creation once it is read again from their bytes.
            if found < 6 {
                if let parse = options.receiptCreationDates {
                    let count = try deriveReceiptCreationDates(parse, logger: logger)
                    logger.notice("read the creation dates of stored receipts again", metadata: ["in_app copies": "\(count)"])
                } else {
                    logger.notice("receipts stored before schema 6 keep speaking from their request date: no receipt parser was given")
                }
            }
            // An older schema: the events are unchanged; the projections are rebuilt by this build's fold.
            let report = try audit.replay(check: false)
            try environment.write { txn in
                try txn.put(layout.meta, key: StoreLayout.metaSchema, value: BigEndian.bytes(StoreLayout.schemaVersion))
            }
            // Journaled, LMDB commits without a sync of its own: the rebuilt projections are made durable now.
            try checkpointer?.checkpoint(clean: false)
            logger.notice(
                "upgraded the ledger to schema \(StoreLayout.schemaVersion): projections rebuilt",
                metadata: ["subscriptions": "\(report.subscriptions)", "events": "\(report.events)"])
        }
        if !options.readOnly { try finishAnInterruptedErasure() }
        checkpointer?.start()
        metricsFollower?.start()
    }

    /// A `forget` that stopped before its last step (destroying the key generation before the erasure's) leaves two
    /// in `identity.key`, and perhaps the journal unscrubbed: the journal is emptied of its records (the spare too,
    /// which may be a recycled segment), then the generation the ledger seals with is kept and the other destroyed.
    private func finishAnInterruptedErasure() throws {
        guard let inForce = try environment.read({ txn in try identities.generation(layout, txn) }),
            try IdentityKeyFile.read(directory).keys.contains(where: { $0 != inForce.number })
        else { return }
        if let checkpointer {
            try checkpointer.scrub()
        } else {
            // Opened without the journal: recovery has applied and deleted its segments; a spare may remain.
            unlink((Self.journalDirectory(directory) as NSString).appendingPathComponent("spare"))
        }
        try identities.keepOnly(inForce.number)
    }

    deinit { close() }

    /// Creates the ledger's directory; a path of another kind is `invalid_path`.
    private static func makeDirectory(_ directory: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), !isDirectory.boolValue {
            throw LedgerError.cannotOpen(
                directory, LedgerError(code: .invalidPath, message: "\(directory) is not a directory"))
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw LedgerError.cannotOpen(
                directory,
                LedgerError(code: .invalidPath, message: "cannot create \(directory): \(error.localizedDescription)"))
        }
    }

    /// The environment, its databases, and whether the schema needs an upgrade; every failure as a `LedgerError`.
    private static func open(_ directory: String, _ options: Options, _ identities: Identities) throws
        -> (Environment, StoreLayout, UInt64?, Structure)
    {
        do {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), !isDirectory.boolValue {
                throw LedgerError(code: .invalidPath, message: "\(directory) is not a directory")
            }
            if !options.readOnly {
                do {
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                } catch {
                    throw LedgerError(code: .invalidPath, message: "cannot create \(directory): \(error.localizedDescription)")
                }
            }
            var envOptions = Environment.Options()
            envOptions.mapSize = options.initialMapSize
            envOptions.maxMapSize = options.maxMapSize
            envOptions.readOnly = options.readOnly
            // Journaled, a group is durable once its journal record is; LMDB is synced by the checkpoints.
            envOptions.unsafeNoSync = options.unsafeNoSync || options.journal
            let environment = try Environment(path: directory, options: envOptions)
            // LMDB trusts every page it reaches: on a damaged one it may fault, search without end, or (a writer)
            // build a tree that holds the damage. The whole file is walked once, before LMDB reads any of it.
            let walked = try environment.checkStructure()
            let layout: StoreLayout
            do {
                // Read-only, the schema first: a ledger of an older schema may lack databases this build opens
                // (it is refused as schema_mismatch, with the way to upgrade it).
                if options.readOnly {
                    try checkSchema(environment, try environment.openDatabase("meta"), readOnly: true)
                }
                layout = try StoreLayout(environment: environment)
            } catch let error as LMDBError where error == .notFound {
                throw LedgerError(
                    code: .notALedger,
                    message: "\(directory) holds an LMDB environment without the ledger's databases (not a ledger, or its catalog page is damaged)")
            }
            let upgrade =
                options.readOnly
                ? nil
                : try checkSchema(
                    environment, layout.meta, readOnly: false, identities: options.pseudonyms ? identities : nil)
            return (environment, layout, upgrade, walked)
        } catch let error as LMDBError {
            // LMDB names the directory, not which of its files is of the wrong kind.
            for file in ["data.mdb", "lock.mdb"] {
                var isDirectory: ObjCBool = false
                let path = (directory as NSString).appendingPathComponent(file)
                if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
                    throw LedgerError(
                        code: .invalidPath,
                        message: "cannot open the ledger in \(directory): \(path) is a directory, not a file (\(error.reason))")
                }
            }
            throw LedgerError.cannotOpen(directory, error)
        } catch {
            throw LedgerError.cannotOpen(directory, error)
        }
    }

    /// Checks the ledger's schema version; the version found when it is an older schema opened for writing, to be
    /// upgraded, else nil.
    @discardableResult
    /// A new ledger (no schema yet) is made here, naming people by pseudonyms from its first event: the first
    /// generation of `identity.key` is written before the transaction that records it, so a crash between the two
    /// leaves a ledger that is still new.
    private static func checkSchema(
        _ env: Environment, _ meta: Database, readOnly: Bool, identities: Identities? = nil
    ) throws -> UInt64? {
        let found = try env.read { txn in
            try txn.get(meta, key: StoreLayout.metaSchema).map { v throws(LedgerError) in
                try BigEndian.uint64(value: v, of: "meta", name: "key `schema`")
            }
        }
        if let found {
            if found == StoreLayout.schemaVersion { return nil }
            guard found < StoreLayout.schemaVersion, !readOnly else { throw LedgerError.schemaMismatch(found: found) }
            return found
        } else if !readOnly {
            let generation = try identities.map { try $0.newGeneration(after: nil, keeping: []) }
            try env.write { txn in
                try txn.put(meta, key: StoreLayout.metaSchema, value: BigEndian.bytes(StoreLayout.schemaVersion))
                if let generation {
                    try txn.put(meta, key: StoreLayout.metaIdentityGeneration, value: BigEndian.bytes(generation.number))
                }
            }
        }
        return nil
    }

    /// Stops the writer after every queued input is committed. Later appends fail with `shuttingDown`. Journaled, the
    /// last checkpoint then syncs LMDB and empties the journal.
    public func close() {
        writer?.stop()
        metricsFollower?.stop()
        checkpointer?.stop(clean: true)
        dataFileLock?.release()
    }

    // MARK: - Appending

    /// Appends inputs; returns one result per input, in order, once they are durable.
    ///
    /// Throws `LedgerError` when the whole batch could not be written (queue full, storage error, closing):
    /// then nothing of it was acknowledged.
    public func append(_ inputs: [LedgerInput]) async throws -> [AppendResult] {
        guard let writer else { throw LedgerError.readOnly }
        return try await withCheckedThrowingContinuation { continuation in
            writer.submit(inputs) { continuation.resume(with: $0) }
        }
    }

    /// `append` with a completion handler, for an event loop that must not wait: `completion` runs on the writer's
    /// thread once the inputs are durable, or with the `LedgerError` that kept the whole batch from being written.
    public func append(
        _ inputs: [LedgerInput], completion: @escaping @Sendable (Result<[AppendResult], LedgerError>) -> Void
    ) {
        guard let writer else { return completion(.failure(.readOnly)) }
        writer.submit(inputs, completion: completion)
    }

    /// Blocking form of `append`, for command-line tools and threads outside Swift concurrency.
    public func appendAndWait(_ inputs: [LedgerInput]) throws -> [AppendResult] {
        guard let writer else { throw LedgerError.readOnly }
        let box = ResultBox()
        writer.submit(inputs) { box.set($0) }
        return try box.wait().get()
    }

    /// Inputs waiting for the writer right now.
    public var queueDepth: Int { writer?.queueDepth ?? 0 }

    /// Called after every commit with the number of inputs and the last seq written (metrics, followers).
    public func observeCommits(_ observer: @escaping @Sendable (_ inputs: Int, _ lastSeq: UInt64?, _ nanoseconds: UInt64) -> Void) {
        observers.add { observer($0.inputs, $0.lastSeq, $0.durationNanoseconds) }
    }

    // MARK: - Backups

    /// Writes a consistent copy of the ledger into the directory `path` (which must exist and be empty): a hot
    /// backup, safe while the writer runs.
    /// The file is walked first (`checkDataFile`): LMDB's copy reads every page it reaches without a check, and a
    /// backup must not carry damage, or fault on it.
    ///
    /// A ledger with pseudonyms gets its `identity.key` beside the copy, holding the generation the copy seals with
    /// (and no other): the copy's data file alone cannot tell anyone's values.
    public func copy(to path: String, compact: Bool = false) throws {
        _ = try checkDataFile()
        let keysBefore = try IdentityKeyFile.read(directory)
        try environment.copy(to: path, compact: compact)
        guard let generation = try Self.identityGeneration(ofDataFileIn: path) else { return }
        // Read again: a `forget` of a server writing meanwhile may have made the copy's generation since.
        let keys = keysBefore.merging(try IdentityKeyFile.read(directory)) { a, _ in a }
        guard let key = keys[generation] else {
            throw LedgerError(
                code: .identityKeyMissing,
                message: "the copy seals its identities with key generation \(generation), which "
                    + "\(IdentityKeyFile.path(directory)) no longer holds (an erasure ran during the copy): copy again")
        }
        try IdentityKeyFile.write(path, [(generation, key)])
    }

    /// The identity key generation the ledger whose data file is in `directory` seals with; nil without pseudonyms.
    static func identityGeneration(ofDataFileIn directory: String) throws -> UInt64? {
        var options = Environment.Options()
        options.readOnly = true
        let env = try Environment(path: directory, options: options)
        let meta = try env.openDatabase("meta")
        return try env.read { txn in
            try txn.get(meta, key: StoreLayout.metaIdentityGeneration).map { v throws(LedgerError) in
                try BigEndian.uint64(value: v, of: "meta", name: "key `identity_generation`")
            }
        }
    }

    // MARK: - The data file's structure

    /// What a walk of the data file found: pages in the databases' trees, pages free for reuse, named databases.
    struct DataFileStructure: Sendable, Equatable {
        public var pages: Int
        public var freePages: Int
        public var databases: Int
    }

    /// Walks every page of the data file's newest snapshot, as LMDB would reach it, before LMDB reads any of it
    /// (`Environment.checkStructure`). Every open does it; `verify`, `replay --check` and backups again before they
    /// read the whole file, since a server's ledger stays open for days, unless nothing was committed since the last
    /// walk (a command that opens the ledger and verifies it walks once). Throws `corrupted` naming the first damaged
    /// page.
    func checkDataFile() throws -> DataFileStructure {
        do {
            let walked = try lastWalk.unlessCommitted(since: environment.lastCommittedTransactionID) {
                try environment.checkStructure()
            }
            return DataFileStructure(
                pages: walked.branchPages + walked.leafPages + walked.overflowPages, freePages: walked.freePages,
                databases: walked.databases)
        } catch {
            throw LedgerError.from(error)
        }
    }
}

/// The structure the last walk found, and the commit it walked.
private final class LastWalk: Sendable {
    private let lock = NSLock()
    nonisolated(unsafe) private var structure: Structure

    init(_ structure: Structure) { self.structure = structure }

    /// The last walk's structure when it walked commit `latest`, else `walk()`'s, kept.
    func unlessCommitted(since latest: Int, _ walk: () throws -> Structure) rethrows -> Structure {
        lock.lock()
        defer { lock.unlock() }
        if structure.transactionID == latest { return structure }
        structure = try walk()
        return structure
    }
}

/// Progress of a long operation (`replay`, `verify`): done so far, and the total when known.
public typealias ProgressHandler = @Sendable (_ done: UInt64, _ total: UInt64) -> Void

/// A role of the ledger that is a type of its own (`LedgerAudit`, `LedgerPrivacy`, `LedgerOutbox`): it works on the
/// ledger's environment and databases as `Ledger`'s own extensions do.
protocol LedgerRole: Sendable {
    var ledger: Ledger { get }
}

extension LedgerRole {
    var environment: Environment { ledger.environment }
    var layout: StoreLayout { ledger.layout }
    var batch: AppendBatch { ledger.batch }
    var identities: Identities { ledger.identities }
    var history: RulesHistory { ledger.history }
}
