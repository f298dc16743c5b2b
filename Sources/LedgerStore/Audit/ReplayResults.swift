import Crypto
import Foundation

/// What a replay does with the projections it rebuilds.
enum ReplayMode: Sendable {
    /// Compare with the stored projections.
    case check
    /// Replace the stored projections.
    case rewrite
    /// Only compute (and digest) them.
    case report
}

/// What one chunk of a replay found.
struct ReplayChunk: Sendable {
    var keys = 0
    var events = 0
    /// Subscriptions whose stored projection was found (only with `check`).
    var storedFound = 0
    var differences: [String] = []
    var digest: [UInt8] = []
    /// Lifecycle events derived.
    var lifecycleEvents = 0
    /// The first `by_otid` entry that names the wrong event (only when validating them).
    var indexFault: String?
}

/// Chunks from every worker, put back in key order.
final class ReplayResults: @unchecked Sendable {
    private let lock = NSLock()
    private var chunks: [Int: ReplayChunk] = [:]
    private var error: (any Error)?
    private var done: UInt64 = 0
    private var taken = 0
    private let progress: ProgressHandler?
    private let total: UInt64

    init(progress: ProgressHandler?, total: UInt64) {
        self.progress = progress
        self.total = total
    }

    /// The index of the next chunk nobody has taken, or nil when all `count` are taken.
    func nextChunk(of count: Int) -> Int? {
        lock.lock()
        defer { lock.unlock() }
        guard error == nil, taken < count else { return nil }
        taken += 1
        return taken - 1
    }

    func add(_ chunk: ReplayChunk, at index: Int) {
        lock.lock()
        chunks[index] = chunk
        done += UInt64(chunk.keys)
        let (d, t) = (done, max(total, done))
        lock.unlock()
        progress?(d, t)
    }

    func fail(_ e: any Error) {
        lock.lock()
        if error == nil { error = e }
        lock.unlock()
    }

    /// How many subscriptions' stored projections the chunks found (with `check`).
    var storedFound: Int {
        lock.lock()
        defer { lock.unlock() }
        return chunks.values.reduce(0) { $0 + $1.storedFound }
    }

    /// How many lifecycle events the chunks derived.
    var lifecycleEvents: Int {
        lock.lock()
        defer { lock.unlock() }
        return chunks.values.reduce(0) { $0 + $1.lifecycleEvents }
    }

    /// The first `by_otid` fault of the chunks, in key order.
    var firstIndexFault: String? {
        lock.lock()
        defer { lock.unlock() }
        return chunks.keys.sorted().lazy.compactMap { self.chunks[$0]!.indexFault }.first
    }

    func report(untilSeq: UInt64, rewrote: Bool, projections: [String]) throws -> LedgerAudit.ReplayReport {
        lock.lock()
        defer { lock.unlock() }
        if let error { throw error }
        var report = LedgerAudit.ReplayReport(
            subscriptions: 0, events: 0, differences: [], untilSeq: untilSeq, rewrote: rewrote, projectionsDigest: "",
            projections: projections)
        var digest = SHA256()
        for index in chunks.keys.sorted() {
            let c = chunks[index]!
            report.subscriptions += c.keys
            report.events += c.events
            report.differences += c.differences
            digest.update(data: c.digest)
        }
        report.projectionsDigest = hex(digest.finalize())
        return report
    }
}
