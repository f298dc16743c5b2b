import Crypto
import Foundation
import LMDB
import LedgerCodec
import LedgerCore
import LedgerErrors

// MARK: - Replay: every projection rebuilt from the events alone

extension LedgerAudit {
    /// What a replay found or did.
    public struct ReplayReport: Sendable, Hashable, Codable {
        /// Subscriptions folded.
        public var subscriptions: Int
        /// Events folded.
        public var events: Int
        /// Subscriptions whose stored projection differs from the replay (only with `check`).
        public var differences: [String]
        /// The seq the replay stopped at.
        public var untilSeq: UInt64
        /// Whether the stored projections were replaced.
        public var rewrote: Bool
        /// SHA-256 (hex) over every rebuilt projection in key order (in chunks of `LedgerAudit.replayChunkSize`
        /// subscriptions): two replays of the same log to the same seq give the same digest on any machine.
        public var projectionsDigest: String
        /// The projections rebuilt (`ReplayProjections.names`): the digest is over these.
        public var projections: [String]
    }

    /// Which projections a replay rebuilds: both unless asked otherwise. Each can be checked alone: the timelines
    /// (what every access answer is read from) in a fraction of the time the lifecycle stream takes, which is
    /// derived input by input.
    public struct ReplayProjections: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Each subscription's timeline.
        public static let timelines = ReplayProjections(rawValue: 1)
        /// The lifecycle stream: the typed events each input said (`GET /v1/lifecycle`, the webhook).
        public static let lifecycle = ReplayProjections(rawValue: 2)
        public static let all: ReplayProjections = [.timelines, .lifecycle]

        /// The projections named `name` ("timelines", "lifecycle"; "all" for both), or nil.
        public init?(name: String) {
            switch name {
            case "timelines": self = .timelines
            case "lifecycle": self = .lifecycle
            case "all": self = .all
            default: return nil
            }
        }

        /// Their names, in the order above.
        public var names: [String] {
            (contains(.timelines) ? ["timelines"] : []) + (contains(.lifecycle) ? ["lifecycle"] : [])
        }
    }

    /// Subscriptions per read or write transaction of a replay (also the unit of the projections digest). Small
    /// enough that a few thousand long histories still make enough chunks to keep every core busy.
    static let replayChunkSize = 500

    /// Rebuilds every timeline from the events alone, with facts up to `until` (default: all).
    ///
    /// With `check: true` nothing is written: each rebuilt projection is compared byte for byte with the stored one.
    /// A replay of the whole log without `check` replaces the stored projections, in batches of write transactions,
    /// so a running server keeps appending meanwhile. A replay to an earlier `until` only reports (the stored
    /// projections reflect the whole log and stay). Reading replays use every core: chunks of subscriptions are
    /// folded by several threads, each taking the next chunk when done, each chunk in its own short read transaction.
    /// `projections` narrows what is rebuilt (and checked, and digested) to the timelines or the lifecycle stream.
    public func replay(
        until: UInt64? = nil, check: Bool, projections: ReplayProjections = .all, progress: ProgressHandler? = nil
    ) throws -> ReplayReport {
        // A replay that only reads (a check, or a report up to `until`) reads every event: the file is walked first.
        // A rewriting replay runs in a writer, which walked it when it opened.
        if check || until != nil { _ = try ledger.checkDataFile() }
        return try replay(
            until: until, check: check, projections: projections, validatingIndexes: false, progress: progress
        ).report
    }

    /// `replay(until:check:projections:progress:)`; with `validatingIndexes` (and `check`), every `by_otid` entry
    /// read is also checked against the event it names (`indexFault`, the first one in key order).
    func replay(
        until: UInt64?, check: Bool, projections: ReplayProjections = .all, validatingIndexes: Bool,
        progress: ProgressHandler?
    ) throws -> (report: ReplayReport, indexFault: String?) {
        let last = try ledger.lastSeq()
        let limit = min(until ?? last, last)
        let mode: ReplayMode = check ? .check : (limit == last ? .rewrite : .report)
        // Where each chunk starts: after the last key of the chunk before (nil: from the first key).
        let (starts, subscriptions) = try environment.read { txn in try chunkStarts(txn) }
        let total = UInt64(subscriptions)
        let workers = mode == .rewrite ? 1 : max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8))
        let results = ReplayResults(progress: progress, total: total)
        if mode == .rewrite && projections.contains(.lifecycle) {
            // The lifecycle events up to `limit` are derived again below; those after it (a server appending
            // meanwhile) stay.
            try environment.write { txn in try self.clearLifecycle(upTo: limit, txn) }
        }

        let body: @Sendable (Int) -> Void = { _ in
            do {
                while let index = results.nextChunk(of: starts.count) {
                    let work = { (txn: Transaction) in
                        try self.replayChunk(
                            after: starts[index], through: index + 1 < starts.count ? starts[index + 1] : nil,
                            limit: limit, mode: mode, projections: projections,
                            rules: self.history.rules(asOf: limit, self.layout, txn),
                            validatingIndexes: validatingIndexes && check, txn)
                    }
                    let chunk = mode == .rewrite ? try self.environment.write(work) : try self.environment.read(work)
                    results.add(chunk, at: index)
                }
            } catch {
                results.fail(error)
            }
        }
        if workers == 1 {
            body(0)
        } else {
            DispatchQueue.concurrentPerform(iterations: workers, execute: body)
        }
        var report = try results.report(untilSeq: limit, rewrote: mode == .rewrite, projections: projections.names)
        if mode == .rewrite && projections.contains(.timelines) {
            // The metrics summed by day start over from the rebuilt timelines.
            try environment.write { txn in try MetricDays.reset(layout, txn) }
            try ledger.catchUpMetrics()
        }
        if check {
            // A stored projection the log knows nothing of is a difference too (checked only when nothing was
            // appended meanwhile: a live server adds subscriptions the chunks above did not see).
            let (stored, now) = try environment.read { txn in
                (try txn.statistics(layout.timelines).entries, try batch.lastSeq(txn))
            }
            let orphans = stored - results.storedFound
            if projections.contains(.timelines) && now == last && orphans > 0 {
                report.differences.append("\(orphans) stored timelines have no events")
            }
            // The metrics summed by day must be what the stored timelines sum to (checked when the timelines
            // themselves are right: a wrong timeline's sums are its consequence, not another fault).
            if projections.contains(.timelines) && now == last && report.differences.isEmpty,
                let difference = try environment.read({ txn in try MetricDays.firstDifference(layout, txn) })
            {
                report.differences.append(difference)
            }
            // Every stored lifecycle event up to `limit` must be one the replay derived (each derived one was
            // looked up by its key, so more stored ones are events no input said).
            let storedSaid =
                projections.contains(.lifecycle) ? try environment.read { txn in try self.lifecycleCount(upTo: limit, txn) } : 0
            if storedSaid > results.lifecycleEvents {
                report.differences.append("\(storedSaid - results.lifecycleEvents) stored lifecycle events were said by no input")
            }
        }
        return (report, results.firstIndexFault)
    }

    /// Every stored projection against a replay; with `validatingIndexes`, every `by_otid` entry against the event
    /// it names too (a wrong entry is named before any projection that differs).
    func compareProjectionsWithReplay(validatingIndexes: Bool = false, progress: ProgressHandler?) throws
        -> (compared: Int, firstDifference: String?)
    {
        let (report, indexFault) = try replay(until: nil, check: true, validatingIndexes: validatingIndexes, progress: progress)
        return (report.subscriptions, indexFault ?? report.differences.first.map { "projection of \($0) differs from a replay" })
    }

    // MARK: - Chunks

    /// Folds the subscriptions after the key `resume` (from the first when nil) through the key `last` (to the end
    /// when nil): the chunk's keys when the chunks were laid out, and any a server appending meanwhile put among
    /// them. Bounded by keys, not by a count: a count would push the chunk's last keys out when new ones sort
    /// before them, and the next chunk, starting after its own first key, would never fold them.
    private func replayChunk(
        after resume: [UInt8]?, through last: [UInt8]?, limit: UInt64, mode: ReplayMode, projections: ReplayProjections,
        rules: FoldRules, validatingIndexes: Bool, _ txn: Transaction
    ) throws -> ReplayChunk {
        let cursor = try txn.cursor(layout.byOTID)
        var entry = try position(cursor, after: resume)
        var chunk = ReplayChunk()
        var digest = SHA256()
        // Buffers reused from one subscription to the next: the events read, and the rebuilt projection's bytes.
        var scan = SubscriptionScan(inKeyOrder: txn, layout)
        var rebuilt = BinaryWriter(capacity: 4096)
        var lifecycleBytes = BinaryWriter(capacity: 512)
        // The stored projections, in the same key order: looked up going forward through their own cursor.
        let stored = mode == .check ? try txn.cursor(layout.timelines) : nil
        // A subscription's claims that named no environment may have joined it in an environment where its first
        // event came after `limit`: it is seen as claims alone unless nothing was appended since.
        let wholeLog = validatingIndexes ? try batch.lastSeq(txn) == limit : false
        while let e = entry {
            let key = e.key  // Valid until the cursor moves on to the next subscription.
            if let last, key.withUnsafeBytes({ last.lexicographicallyPrecedes($0) }) { break }
            guard let (env, otid) = StoreLayout.decodeSubscriptionKey(key) else {
                throw LedgerError.corrupted("by_otid key is malformed")
            }
            if validatingIndexes {
                // Verifying: what a replay reports as corruption (an entry naming an event that is missing, or that
                // does not decode, or is not the key's) is a fault of the indexes or the events, named as the first.
                do {
                    try scan.read(e, cursor, upTo: limit, metadata: .forFold, checkingKeys: true, layout, txn)
                } catch let error as LedgerError where error.code == .corrupted {
                    if chunk.indexFault == nil { chunk.indexFault = error.message }
                    chunk.keys += 1
                    entry = try cursor.nextKey()
                    continue
                }
                if chunk.indexFault == nil {
                    chunk.indexFault = Self.indexFault(scan.events, of: env, otid, wholeLog: wholeLog)
                }
            } else {
                try scan.read(e, cursor, upTo: limit, metadata: .forFold, layout, txn)
            }
            chunk.events += scan.events.count
            chunk.keys += 1
            if !scan.events.isEmpty && projections.contains(.timelines) {
                let timeline = Timeline.fold(
                    scan.events, originalTransactionId: otid, environment: env, rules: rules, ties: .canonical)
                rebuilt.removeAll()
                StoredTimeline.encode(timeline, into: &rebuilt)
                let different = try rebuilt.withBytes { bytes in
                    let bytes = UnsafeRawBufferPointer(bytes)
                    return try key.withUnsafeBytes { key in
                        digest.update(length: key.count)
                        digest.update(bufferPointer: key)
                        digest.update(length: bytes.count)
                        digest.update(bufferPointer: bytes)
                        switch mode {
                        case .check:
                            guard let found = try stored?.findForward(key) else { return true }
                            chunk.storedFound += 1
                            return !found.value.hasSameBytes(as: bytes)
                        case .rewrite:
                            // A copy of the key: what LMDB returns is valid only until the next write.
                            try Array(key).withUnsafeBytes { k in try txn.put(layout.timelines, key: k, value: bytes) }
                            return false
                        case .report:
                            return false
                        }
                    }
                }
                if different { chunk.differences.append("\(env.rawValue)/\(otid)") }
            }
            if !scan.events.isEmpty && projections.contains(.lifecycle) {
                if try replayLifecycle(
                    scan.events, env, otid, rules, mode: mode, into: &chunk, digest: &digest, encoding: &lifecycleBytes, txn)
                {
                    chunk.differences.append("lifecycle events of \(env.rawValue)/\(otid)")
                }
            }
            entry = try cursor.nextKey()
        }
        chunk.digest = Array(digest.finalize())
        return chunk
    }

    /// Derives the lifecycle events of one subscription again (`LifecycleReplay`), digests them, and compares them
    /// with the stored ones (`check`, true when one differs or is missing) or writes them (`rewrite`).
    private func replayLifecycle(
        _ events: [LedgerEvent], _ env: AppStoreEnvironment, _ otid: OriginalTransactionID, _ rules: FoldRules,
        mode: ReplayMode, into chunk: inout ReplayChunk, digest: inout SHA256, encoding: inout BinaryWriter,
        _ txn: Transaction
    ) throws -> Bool {
        let inputs = try LifecycleReplay.inputs(of: events, layout, txn)
        var different = false
        for entry in LifecycleReplay.entries(events, inputs: inputs, otid: otid, environment: env, rules: rules) {
            encoding.removeAll()
            entry.event.encode(into: &encoding)
            chunk.lifecycleEvents += 1
            let same = try encoding.withBytes { bytes in
                let bytes = UnsafeRawBufferPointer(bytes)
                digest.update(length: entry.key.count)
                entry.key.withUnsafeBytes { digest.update(bufferPointer: $0) }
                digest.update(length: bytes.count)
                digest.update(bufferPointer: bytes)
                switch mode {
                case .check:
                    guard let found = try txn.get(layout.lifecycle, key: entry.key) else { return false }
                    return found.hasSameBytes(as: bytes)
                case .rewrite:
                    try entry.key.withUnsafeBytes { k in try txn.put(layout.lifecycle, key: k, value: bytes) }
                    return true
                case .report:
                    return true
                }
            }
            if !same { different = true }
        }
        return different
    }

    /// Deletes the stored lifecycle events said at seqs up to `limit`.
    private func clearLifecycle(upTo limit: UInt64, _ txn: Transaction) throws {
        let cursor = try txn.cursor(layout.lifecycle)
        while let e = try cursor.first(),
            try BigEndian.uint64(key: e.key, of: "lifecycle", length: StoreLayout.lifecycleKeyLength) <= limit
        {
            try cursor.deleteCurrent()
        }
    }

    /// How many lifecycle events are stored at seqs up to `limit`.
    func lifecycleCount(upTo limit: UInt64, _ txn: Transaction) throws -> Int {
        if try batch.lastSeq(txn) <= limit { return try txn.statistics(layout.lifecycle).entries }
        let cursor = try txn.cursor(layout.lifecycle)
        var count = 0
        var entry = try cursor.first()
        while let e = entry,
            try BigEndian.uint64(key: e.key, of: "lifecycle", length: StoreLayout.lifecycleKeyLength) <= limit
        {
            count += 1
            entry = try cursor.next()
        }
        return count
    }

    /// What is wrong with the `by_otid` entries of one subscription, which name `events`: each must name an event of
    /// that subscription in that environment, or a claim of it that named no environment; and unless the entries
    /// read stop short of the log's end (`wholeLog` false), at least one of them must be of the subscription's own.
    static func indexFault(
        _ events: [LedgerEvent], of env: AppStoreEnvironment, _ otid: OriginalTransactionID, wholeLog: Bool
    ) -> String? {
        var own = false
        for e in events {
            if case .binding(let claim) = e.fact, claim.everyEnvironment {
                guard claim.originalTransactionId == otid else {
                    return "by_otid entry of \(otid) in \(env.rawValue) names claim \(e.seq), which is of \(claim.originalTransactionId)"
                }
            } else {
                guard e.fact.environment == env, e.fact.originalTransactionId == otid else {
                    return "by_otid entry of \(otid) in \(env.rawValue) names event \(e.seq), which is of another subscription"
                }
                own = true
            }
        }
        if wholeLog, !own, let first = events.first {
            return "by_otid holds claim \(first.seq) of \(otid) in \(env.rawValue), where the subscription has no events"
        }
        return nil
    }

    /// The key each chunk of `replayChunkSize` subscriptions starts after (nil for the first chunk): one pass over
    /// the `by_otid` keys, skipping their values.
    private func chunkStarts(_ txn: Transaction) throws -> (starts: [[UInt8]?], subscriptions: Int) {
        let cursor = try txn.cursor(layout.byOTID)
        var starts: [[UInt8]?] = []
        var lastOfChunk: [UInt8]? = nil
        var count = 0
        var entry = try cursor.first()
        while let e = entry {
            if count % Self.replayChunkSize == 0 { starts.append(lastOfChunk) }
            count += 1
            if count % Self.replayChunkSize == 0 { lastOfChunk = Array(e.key) }
            entry = try cursor.nextKey()
        }
        return (starts, count)
    }

    private func position(_ cursor: Cursor, after resume: [UInt8]?) throws -> Cursor.Entry? {
        guard let resume else { return try cursor.first() }
        var entry = try cursor.seek(resume)
        if let e = entry, e.key.hasSameBytes(as: resume) { entry = try cursor.nextKey() }
        return entry
    }
}

fileprivate extension SHA256 {
    /// A length, as eight big-endian bytes (what frames each part of the projections digest).
    mutating func update(length: Int) {
        withUnsafeBytes(of: UInt64(length).bigEndian) { update(bufferPointer: $0) }
    }
}
