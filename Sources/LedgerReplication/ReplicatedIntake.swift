import Foundation
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerErrors
import Logging
import NATSClient

/// The replicated intake (`storeledger serve --intake nats://…`): every accepted input is published to a JetStream
/// stream (replicated on three NATS servers in a cluster), and every ledger replica appends the stream's messages in
/// the stream's order, with the stream's timestamp as `receivedAt` unless the caller named one. Each replica
/// therefore computes the same seqs, the same chain head and byte-identical projections; the caller is answered
/// once JetStream stored the input and this replica appended it.
///
/// The replica's place in the stream (the last stream sequence it appended) is kept beside the ledger in
/// `intake-position`, written after each commit. The durable consumer is only a cursor: it is made again from that
/// place whenever the replica starts or sees a gap, so messages are appended exactly in stream order, never
/// skipped. After a crash between a commit and the position's write, the last messages are appended again: their
/// facts are known, so they are duplicates and change nothing (the ledger is idempotent by transaction id).
///
/// An erasure (`forget`) travels through the stream like an input. Once every replica has appended it
/// (`ReplicaPositions`), the stream is purged up to it, so the inputs that named the person, as received, are not
/// kept there either. From then on a new replica starts from a backup of another one with its `intake-position`,
/// never from an empty directory: a replica refuses to start when the stream no longer holds the messages after its
/// place.
public final class ReplicatedIntake: Intake, @unchecked Sendable {
    public struct Settings: Sendable {
        public var servers: [NATSServer]
        /// This replica's name: its durable consumer is `ledger-<node>`. Unique per ledger replica.
        public var node: String
        public var stream = "STORELEDGER"
        /// Subjects are `<prefix>.<partition>`.
        public var subjectPrefix = "storeledger.intake"
        public var partitioning = Partitioning()
        /// Stream replicas; default 3 when the server is in a cluster, else 1.
        public var replicas: Int?
        /// How long a caller waits for the stream's acknowledgement and then for the local append.
        public var publishTimeout: Duration = .seconds(10)
        public var applyTimeout: Duration = .seconds(30)
        /// Messages per pull request (the replica appends what has arrived as it arrives, in one write
        /// transaction per run, so this bounds a run too).
        public var pullBatch = 1_000
        /// How long one pull request stays open. Messages are appended as they are delivered, whatever this is: it
        /// only sets how often an idle replica asks again (an empty round trip).
        public var pullExpires: Duration = .seconds(2)

        public init(servers: [NATSServer], node: String) {
            self.servers = servers
            self.node = node
        }

        var consumer: String { "ledger-" + node }
    }

    public let settings: Settings
    let ledger: Ledger
    let pipeline: IngestPipeline
    let logger: Logger
    let connection: NATSConnection
    let jetStream: JetStream
    let positionPath: String
    let positions: ReplicaPositions

    private let lock = NSLock()
    // Guarded by `lock`.
    private var applied: UInt64
    private var recent: [UInt64: [AppendResult]] = [:]
    private var waiters: [UInt64: [CheckedContinuation<[AppendResult]?, Never>]] = [:]
    private var stopped = false
    private var consumerTask: Task<Void, Never>?
    /// The stream sequence of the last erasure this replica appended or learned of from the others' records.
    private var lastErasure: UInt64 = 0
    /// Whether the stream may hold messages every replica has appended before an erasure: checked after each round.
    private var purgePending = true

    /// How many appended messages' results are kept for callers whose acknowledgement arrives after the append.
    static let recentResults = 100_000

    /// Connects, makes the stream when missing, and starts appending from this replica's place in it.
    public static func start(
        ledger: Ledger, pipeline: IngestPipeline, settings: Settings, logger: Logger
    ) async throws -> ReplicatedIntake {
        let connection = try await NATSConnection.connect(to: settings.servers, name: "storeledger-" + settings.node)
        let jetStream = JetStream(connection)
        let replicas = settings.replicas ?? (connection.isClustered ? 3 : 1)
        let config = JetStream.StreamConfig(
            name: settings.stream, subjects: [settings.subjectPrefix + ".>"], numReplicas: replicas)
        let info = try await retrying(for: .seconds(30)) { try await jetStream.addStream(config) }
        let intake = ReplicatedIntake(
            ledger: ledger, pipeline: pipeline, settings: settings, logger: logger, connection: connection,
            jetStream: jetStream)
        try intake.checkStreamHoldsWhatFollows(info.state, start: intake.appliedSequence + 1)
        try await retrying(for: .seconds(30)) { try await intake.positions.prepare(replicas: replicas) }
        try await retrying(for: .seconds(30)) { try await intake.recordPosition() }
        logger.info(
            "replicated intake",
            metadata: [
                "stream": "\(settings.stream)", "replicas": "\(info.config.numReplicas)", "streamLastSeq": "\(info.state.lastSeq)",
                "applied": "\(intake.appliedSequence)", "consumer": "\(settings.consumer)",
                "server": "\(connection.server?.description ?? "-")",
            ])
        intake.consumerTask = Task { await intake.consume() }
        return intake
    }

    init(
        ledger: Ledger, pipeline: IngestPipeline, settings: Settings, logger: Logger, connection: NATSConnection,
        jetStream: JetStream
    ) {
        self.ledger = ledger
        self.pipeline = pipeline
        self.settings = settings
        self.logger = logger
        self.connection = connection
        self.jetStream = jetStream
        self.positionPath = (ledger.directory as NSString).appendingPathComponent("intake-position")
        self.applied = Self.readPosition(positionPath)
        self.positions = ReplicaPositions(
            jetStream: jetStream, intakeStream: settings.stream, intakeSubjectPrefix: settings.subjectPrefix)
    }

    /// The last stream sequence this replica appended.
    public var appliedSequence: UInt64 { lock.withLock { applied } }

    /// Stops consuming (the ledger stays open; its owner closes it) and closes the connection.
    public func stop() async {
        let (task, pending) = lock.withLock { () -> (Task<Void, Never>?, [CheckedContinuation<[AppendResult]?, Never>]) in
            stopped = true
            let pending = waiters.values.flatMap { $0 }
            waiters = [:]
            return (consumerTask, pending)
        }
        for waiter in pending { waiter.resume(returning: nil) }
        task?.cancel()
        await task?.value
        await connection.close()
    }

    // MARK: - The caller's side

    public func append(_ inputs: [LedgerInput], raws: [ArraySlice<UInt8>], options: IngestPipeline.Options)
        async throws -> [AppendResult]
    {
        var results = [AppendResult?](repeating: nil, count: inputs.count)
        // Refused here (not decodable, not verified, or of a partition held elsewhere): kept in this server's own
        // `rejected` store, as without an intake; nothing is published.
        var refused: [(index: Int, input: LedgerInput)] = []
        var published: [(index: Int, subject: String, message: IntakeMessage)] = []
        for (index, input) in inputs.enumerated() {
            switch input {
            case .rejected:
                refused.append((index, input))
            case .facts(let facts, let metadata, _, _):
                let partition = settings.partitioning.partition(of: facts)
                if !settings.partitioning.holds(partition) {
                    let message =
                        "the input belongs to partition \(partition) of \(settings.partitioning.count), which this server does not hold"
                    refused.append(
                        (index, .rejected(RejectedInput(
                            raw: Array(raws[index]), code: .wrongPartition, message: message,
                            receivedAt: metadata.receivedAt))))
                } else {
                    published.append(
                        (index, "\(settings.subjectPrefix).\(partition)", IntakeMessage(raw: Array(raws[index]), options: options)))
                }
            }
        }
        if !refused.isEmpty {
            let local = try await appendLocally(refused.map(\.input))
            for (offset, item) in refused.enumerated() { results[item.index] = local[offset] }
        }
        try await withThrowingTaskGroup(of: (Int, AppendResult).self) { group in
            for item in published {
                group.addTask { (item.index, try await self.publishAndWait(item.subject, item.message)) }
            }
            for try await (index, result) in group { results[index] = result }
        }
        return results.map { $0! }
    }

    private func appendLocally(_ inputs: [LedgerInput]) async throws -> [AppendResult] {
        do {
            return try await ledger.append(inputs)
        } catch let error as LedgerError {
            throw CodedError(error.code, error.message)
        }
    }

    /// Forgets `user` on every replica: the erasure is published to the stream under the pseudonym this replica's
    /// log knows them by (never the id), and answered once this replica applied it in its place.
    public func forget(_ user: AppUserID, requestedBy: String, reason: String?, at instant: UnixMillis) async throws
        -> ForgetReport
    {
        let pseudonym = try ledger.privacy.pseudonymToForget(user, requestedBy: requestedBy, reason: reason)
        let message = IntakeMessage(
            erasure: IntakeMessage.ErasureRequest(
                pseudonym: pseudonym, requestedBy: requestedBy, reason: reason, requestedAt: instant))
        let result = try await publishAndWait(settings.subjectPrefix + ".erasure", message)
        if let error = result.error { throw LedgerError(code: error.code, message: error.message) }
        guard let seq = result.seq else { throw LedgerError(code: .notFound, message: "the erasure was applied before") }
        return try ledger.privacy.forgetReport(seq: seq)
    }

    /// Applies an erasure read from the stream: its result as an append's (the erasure event's seq, or the refusal:
    /// `not_found` when the person was forgotten already, as when the message is applied again after a restart).
    private func forgetting(_ erasure: IntakeMessage.ErasureRequest) async -> AppendResult {
        do {
            let report = try await ledger.privacy.forget(
                pseudonym: erasure.pseudonym, requestedBy: erasure.requestedBy, reason: erasure.reason,
                at: erasure.requestedAt)
            return .erasure(seq: report.seq)
        } catch {
            let failure = LedgerError.from(error)
            return .rejected(code: failure.code, message: failure.message)
        }
    }

    /// Publishes one input (again on a lost connection or a timeout: the message id makes that safe), then waits
    /// for this replica to append it.
    func publishAndWait(_ subject: String, _ message: IntakeMessage) async throws -> AppendResult {
        let ack: JetStream.PubAck
        let attempts = Attempts()
        do {
            ack = try await Self.retrying(for: settings.publishTimeout) {
                attempts.count()
                return try await self.jetStream.publish(subject, payload: message.payload, messageId: message.messageId)
            }
        } catch {
            throw CodedError(.intakeUnavailable, "the intake's stream did not store the input: \(error)")
        }
        guard let results = await waitApplied(ack.seq) else {
            throw CodedError(
                .intakeUnavailable,
                "the stream stored the input (stream seq \(ack.seq)) but this replica has not appended it yet; sending it again is safe")
        }
        guard let result = results.first else {
            // Appended by a replica that does not hold its partition: cannot happen for one published here.
            return .duplicate
        }
        // Stored before (the same bytes within the duplicate window): as the ledger answers an input sent again. Not
        // when this call published more than once: an earlier attempt of its own may have been stored before its
        // answer was lost (a server killed), and the results at `ack.seq` are then this input's own.
        if ack.duplicate == true && attempts.value == 1 && result.status != .rejected { return .duplicate }
        return result
    }

    /// The results of the message at `seq` once this replica appended it; nil after `applyTimeout` or on stop.
    /// An empty array when the results were appended too long ago to be kept.
    private func waitApplied(_ seq: UInt64) async -> [AppendResult]? {
        let deadline = Task { [weak self] in
            try? await Task.sleep(for: self?.settings.applyTimeout ?? .seconds(30))
            self?.expire(seq)
        }
        defer { deadline.cancel() }
        return await withCheckedContinuation { (continuation: CheckedContinuation<[AppendResult]?, Never>) in
            lock.lock()
            if applied >= seq {
                let results = recent[seq] ?? [.duplicate]
                lock.unlock()
                continuation.resume(returning: results)
            } else if stopped {
                lock.unlock()
                continuation.resume(returning: nil)
            } else {
                waiters[seq, default: []].append(continuation)
                lock.unlock()
            }
        }
    }

    private func expire(_ seq: UInt64) {
        let expired = lock.withLock { waiters.removeValue(forKey: seq) ?? [] }
        for waiter in expired { waiter.resume(returning: nil) }
    }

    // MARK: - The replica's side

    /// Appends the stream's messages as they are delivered, in stream order, until stopped; a lost connection, a lost consumer or a gap makes the
    /// consumer again from the last appended sequence.
    func consume() async {
        var recreate = true
        var backoff = Duration.milliseconds(100)
        var pull: PullConsumer?
        defer { pull?.close() }
        while !Task.isCancelled && !lock.withLock({ stopped }) {
            do {
                if recreate {
                    pull?.close()
                    pull = nil
                    let start = appliedSequence + 1
                    if let info = try await jetStream.streamInfo(settings.stream) {
                        try checkStreamHoldsWhatFollows(info.state, start: start)
                    }
                    try await jetStream.deleteConsumer(stream: settings.stream, name: settings.consumer)
                    try await jetStream.addConsumer(
                        stream: settings.stream,
                        .init(durableName: settings.consumer, startSequence: start,
                              filterSubject: settings.subjectPrefix + ".>",
                              maxAckPending: settings.pullBatch * 4))
                    logger.info("intake consumer from stream seq \(start)", metadata: ["consumer": "\(settings.consumer)"])
                    recreate = false
                }
                if pull == nil {
                    pull = jetStream.pull(
                        stream: settings.stream, consumer: settings.consumer, batch: settings.pullBatch,
                        expires: settings.pullExpires)
                }
                let messages = try await pull!.next()
                var next = appliedSequence + 1
                var batch: [JetStreamMessage] = []
                for message in messages {
                    if message.streamSequence < next {
                        try? jetStream.ack(message)  // delivered again after its append
                    } else if message.streamSequence == next {
                        batch.append(message)
                        next += 1
                    } else {
                        logger.notice(
                            "gap in the intake's deliveries: the consumer is made again",
                            metadata: ["expected": "\(next)", "got": "\(message.streamSequence)"])
                        recreate = true
                        break
                    }
                }
                if !batch.isEmpty { try await apply(batch) }
                if lock.withLock({ purgePending }) { await purgeWhatEveryReplicaAppended() }
                backoff = .milliseconds(100)
            } catch let error as StreamTooShort {
                if Task.isCancelled { return }
                logger.error("intake: \(error.message)", metadata: ["applied": "\(appliedSequence)"])
                recreate = true
                try? await Task.sleep(for: .seconds(10))
            } catch {
                if Task.isCancelled { return }
                logger.warning("intake: \(error)", metadata: ["applied": "\(appliedSequence)"])
                recreate = true
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(2))
            }
        }
    }

    /// Appends a run of consecutive messages in one call (one group commit), records their results, moves the
    /// position, then acknowledges them. An erasure among them (`forget`) is applied in its place: the inputs before
    /// it are appended first, those after it in a call of their own.
    func apply(_ messages: [JetStreamMessage]) async throws {
        var perMessage: [(UInt64, [AppendResult])] = []
        var inputs: [LedgerInput] = []
        var counts: [(UInt64, Int)] = []
        var erasureSeq: UInt64?
        func appendPending() async throws {
            // A failure (disk full, closing) appends nothing: the caller re-creates the consumer at the same place.
            let results = inputs.isEmpty ? [] : try await ledger.append(inputs)
            var offset = 0
            for (seq, count) in counts {
                perMessage.append((seq, Array(results[offset..<(offset + count)])))
                offset += count
            }
            inputs = []
            counts = []
        }
        for message in messages {
            let streamMillis = message.timestamp / 1_000_000
            guard let decoded = IntakeMessage(payload: message.payload) else {
                // Not ours: kept as a refusal so the replicas stay in step and the auditor sees it.
                inputs.append(
                    .rejected(RejectedInput(
                        raw: message.payload, code: .invalidBody,
                        message: "intake message \(message.streamSequence) is not a ledger input", receivedAt: streamMillis)))
                counts.append((message.streamSequence, 1))
                continue
            }
            if let erasure = decoded.erasure {
                try await appendPending()
                perMessage.append((message.streamSequence, [await forgetting(erasure)]))
                erasureSeq = message.streamSequence
                continue
            }
            if let partition = Int(message.subject.split(separator: ".").last ?? ""),
                !settings.partitioning.holds(partition)
            {
                counts.append((message.streamSequence, 0))  // another ledger's partition
                continue
            }
            inputs.append(pipeline.prepare(decoded.raw, options: decoded.options(streamMillis: streamMillis), now: streamMillis))
            counts.append((message.streamSequence, 1))
        }
        try await appendPending()
        let last = messages.last!.streamSequence
        let woken = lock.withLock { () -> [(CheckedContinuation<[AppendResult]?, Never>, [AppendResult])] in
            applied = last
            if let erasureSeq {
                lastErasure = max(lastErasure, erasureSeq)
                purgePending = true
            }
            var woken: [(CheckedContinuation<[AppendResult]?, Never>, [AppendResult])] = []
            for (seq, results) in perMessage {
                recent[seq] = results
                for waiter in waiters.removeValue(forKey: seq) ?? [] { woken.append((waiter, results)) }
            }
            if recent.count > Self.recentResults * 2 {
                let floor = last - UInt64(Self.recentResults)
                recent = recent.filter { $0.key > floor }
            }
            return woken
        }
        for (waiter, results) in woken { waiter.resume(returning: results) }
        Self.writePosition(positionPath, last)
        for message in messages { try? jetStream.ack(message) }
    }

    // MARK: - The stream forgets what every replica appended before an erasure

    /// The messages from `start` on are not all in the stream any more (purged after an erasure, or dropped by a
    /// retention limit): appending what is left would skip inputs the other replicas appended.
    struct StreamTooShort: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    func checkStreamHoldsWhatFollows(_ state: JetStream.StreamState, start: UInt64) throws {
        guard state.firstSeq > start else { return }
        let message =
            "this replica has appended the intake stream up to sequence \(start - 1), but the stream now begins at "
            + "\(state.firstSeq) (what every replica had appended before an erasure was purged, or a retention limit "
            + "dropped it): start this replica from a backup of another one, with that one's intake-position beside "
            + "it (docs/scaling.md)"
        throw StreamTooShort(message: message)
    }

    /// Records this replica's place and the last erasure it knows of, its own or another's (so that an erasure
    /// stays known while every replica that appended it restarts before the purge).
    private func recordPosition() async throws {
        let (applied, erasure) = lock.withLock { (self.applied, lastErasure) }
        let known = try await positions.all().map(\.erasure).max() ?? 0
        try await positions.record(.init(node: settings.node, applied: applied, erasure: max(erasure, known)))
    }

    /// Records this replica's place; then, when every replica recorded has appended the last erasure, purges the
    /// stream up to and including it. A replica still behind does it when it passes the erasure. A failure leaves
    /// the purge pending for the next round.
    func purgeWhatEveryReplicaAppended() async {
        do {
            lock.withLock { purgePending = false }
            try await recordPosition()
            // Read again after recording: of two replicas that pass the erasure at once, the one that records last
            // then sees the other's record, so one of them purges.
            guard let (erasure, behind) = ReplicaPositions.lastErasure(of: try await positions.all()) else { return }
            guard behind.isEmpty else {
                logger.notice(
                    "the intake stream keeps the messages before erasure \(erasure) until every replica has appended it",
                    metadata: ["behind": "\(behind.map { "\($0.node) at \($0.applied)" }.joined(separator: ", "))"])
                return
            }
            guard let info = try await jetStream.streamInfo(settings.stream), info.state.firstSeq <= erasure else { return }
            let purged = try await jetStream.purge(stream: settings.stream, below: erasure + 1)
            logger.info(
                "the intake stream forgot what every replica appended before an erasure",
                metadata: ["below": "\(erasure + 1)", "purged": "\(purged)"])
        } catch {
            lock.withLock { purgePending = true }
            logger.warning("intake: the stream's purge after an erasure waits: \(error)")
        }
    }

    // MARK: - The position file

    static func readPosition(_ path: String) -> UInt64 {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return 0 }
        return UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    static func writePosition(_ path: String, _ seq: UInt64) {
        try? Data("\(seq)\n".utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// Runs `body` until it succeeds or `limit` passes, again after a lost connection or a timeout (JetStream's
    /// answers to a publish and to stream creation are idempotent); a JetStream refusal ends it at once.
    static func retrying<T: Sendable>(for limit: Duration, _ body: @Sendable () async throws -> T) async throws -> T {
        let deadline = ContinuousClock.now + limit
        while true {
            do {
                return try await body()
            } catch let error as NATSError {
                switch error {
                case .notConnected, .timeout, .noResponders:
                    if ContinuousClock.now + .milliseconds(100) >= deadline { throw error }
                    try await Task.sleep(for: .milliseconds(100))
                case .jetStream(let code, _, _) where code == 503:
                    // JetStream has no leader (a stream or meta election in progress): it answers again soon.
                    if ContinuousClock.now + .milliseconds(100) >= deadline { throw error }
                    try await Task.sleep(for: .milliseconds(100))
                default:
                    throw error
                }
            }
        }
    }
}

/// How many times a publish was attempted (`retrying` runs its body again on a lost connection or a timeout).
private final class Attempts: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func count() { lock.withLock { n += 1 } }
    var value: Int { lock.withLock { n } }
}
