import Foundation
import LMDB
import LedgerCore
import Logging

/// The single writer thread with group commit: inputs queue up while a commit is in flight, and the next write
/// transaction takes all of them (up to `maxBatchInputs`), so many requests share one fsync. A request is answered
/// only after its transaction committed.
///
/// With a journal, the group's record is written and synced inside the transaction, after the batch ran and before
/// LMDB commits (without a sync of its own): a reader sees the group only once it is durable, and the answer follows
/// the commit, so a reader sees every input it was told is stored.
final class Writer: @unchecked Sendable {
    typealias Completion = @Sendable (Result<[AppendResult], LedgerError>) -> Void

    private struct Request {
        var inputs: [LedgerInput]
        /// The SHA-256 of each input's raw bytes (empty for a refusal), made on the caller's thread.
        var digests: [[UInt8]]
        var completion: Completion
    }

    private let environment: Environment
    private let batch: AppendBatch
    private let journal: Journal?
    private let logger: Logger
    private let maxQueuedInputs: Int
    private let maxBatchInputs: Int
    private let onCommit: @Sendable (CommitInfo) -> Void

    private let thread = LedgerThread(name: "storeledger-writer")
    // Guarded by `lock`.
    private let lock = NSLock()
    private var queue: [Request] = []
    private var queuedInputs = 0
    private var stopping = false

    /// What one commit did (for metrics, followers and the answer cache).
    struct CommitInfo: Sendable {
        var inputs: Int
        var lastSeq: UInt64?
        var durationNanoseconds: UInt64
        /// The LMDB id of the committed transaction (`Transaction.id`).
        var transactionID: Int
        var changes: CommitChanges
    }

    init(
        environment: Environment, batch: AppendBatch, journal: Journal?, logger: Logger, maxQueuedInputs: Int,
        maxBatchInputs: Int, onCommit: @escaping @Sendable (CommitInfo) -> Void
    ) {
        self.environment = environment
        self.batch = batch
        self.journal = journal
        self.logger = logger
        self.maxQueuedInputs = maxQueuedInputs
        self.maxBatchInputs = maxBatchInputs
        self.onCommit = onCommit
        // The thread keeps the writer alive until `stop()` returns; its last turn drains the queue.
        thread.start { [self] _ in commitQueued() }
    }

    /// Number of inputs waiting for the writer.
    var queueDepth: Int {
        lock.lock()
        defer { lock.unlock() }
        return queuedInputs
    }

    /// Queues inputs; `completion` runs on the writer thread once they are durable (or failed). Their raw bytes are
    /// hashed here, on the caller's thread, so that the one writer thread does only the transaction.
    func submit(_ inputs: [LedgerInput], completion: @escaping Completion) {
        let digests = inputs.map { input -> [UInt8] in
            if case .facts(_, _, let raw, _) = input { sha256(raw) } else { [] }
        }
        lock.lock()
        if stopping {
            lock.unlock()
            completion(.failure(.shuttingDown))
            return
        }
        // One oversized request may still go through alone; otherwise the queue is bounded.
        if queuedInputs > 0 && queuedInputs + inputs.count > maxQueuedInputs {
            let depth = queuedInputs
            lock.unlock()
            completion(.failure(.overloaded(depth)))
            return
        }
        queue.append(Request(inputs: inputs, digests: digests, completion: completion))
        queuedInputs += inputs.count
        lock.unlock()
        thread.wake()
    }

    /// Stops taking inputs, lets the queue drain, and waits for the thread to finish.
    func stop() {
        lock.lock()
        stopping = true
        lock.unlock()
        thread.stop()
    }

    /// Commits what is queued, a group of up to `maxBatchInputs` per write transaction, until the queue is empty.
    private func commitQueued() {
        while true {
            lock.lock()
            var taken: [Request] = []
            var count = 0
            while let first = queue.first, taken.isEmpty || count + first.inputs.count <= maxBatchInputs {
                taken.append(queue.removeFirst())
                count += first.inputs.count
            }
            queuedInputs -= count
            lock.unlock()
            if taken.isEmpty { return }
            commit(taken, inputCount: count)
        }
    }

    /// The batch, and with a journal its record, durable before the transaction commits. A group that stores nothing
    /// (duplicates only) needs no record: what it found is already durable.
    private func run(
        _ inputs: [LedgerInput], digests: [[UInt8]], in txn: Transaction, changes: inout CommitChanges
    ) throws -> [AppendResult] {
        var seeds: [Int: [UInt8]] = [:]
        guard let journal else { return try batch.run(inputs, digests: digests, in: txn, changes: &changes, seeds: &seeds) }
        let before = try batch.position(txn)
        let results = try batch.run(inputs, digests: digests, in: txn, changes: &changes, seeds: &seeds)
        let after = try batch.position(txn)
        if after != before { try journal.write(JournalRecord(before: before, after: after, inputs: inputs, seeds: seeds)) }
        return results
    }

    private func commit(_ requests: [Request], inputCount: Int) {
        let inputs = requests.flatMap(\.inputs)
        let digests = requests.flatMap(\.digests)
        let start = DispatchTime.now().uptimeNanoseconds
        let outcome: Result<[AppendResult], LedgerError>
        // Of the attempt that committed (`write` runs the body again after growing the map).
        var transactionID = 0
        var changes = CommitChanges()
        do {
            outcome = .success(
                try environment.write { txn in
                    transactionID = txn.id
                    changes = CommitChanges()
                    return try run(inputs, digests: digests, in: txn, changes: &changes)
                })
            journal?.committed()
        } catch let error as LedgerError {
            journal?.discard()
            outcome = .failure(error)
        } catch {
            journal?.discard()
            // Every waiting caller gets the error and reports it (the server logs it, the CLI prints its one line).
            logger.debug("write transaction failed", metadata: ["error": "\(error)", "inputs": "\(inputCount)"])
            outcome = .failure(.storage(error))
        }
        let elapsed = DispatchTime.now().uptimeNanoseconds - start
        switch outcome {
        case .success(let results):
            // Before any caller hears of it: an acknowledged append is seen by every read that follows.
            onCommit(
                CommitInfo(
                    inputs: inputCount, lastSeq: results.compactMap(\.seq).max(), durationNanoseconds: elapsed,
                    transactionID: transactionID, changes: changes))
            var offset = 0
            for request in requests {
                request.completion(.success(Array(results[offset..<(offset + request.inputs.count)])))
                offset += request.inputs.count
            }
        case .failure(let error):
            for request in requests { request.completion(.failure(error)) }
        }
    }
}
