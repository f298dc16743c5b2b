import Crypto
import LMDB
import LedgerCore

// MARK: - Queries on the projections (two clocks: `at` = valid time, `asOf` = knowledge, a log seq)

extension Ledger {
    /// One subscription's timeline evaluated at instant `at`, as known after log seq `asOf` (default: everything).
    ///
    /// The latest knowledge is read from the stored projection; an earlier `asOf` folds only the facts with
    /// seq ≤ asOf (no stored history of projections is needed). Nil when nothing is known of the subscription.
    public func timeline(
        _ otid: OriginalTransactionID, environment env: AppStoreEnvironment = .production, at: UnixMillis,
        asOf: UInt64? = nil
    ) throws -> TimelineView? {
        try environment.read { txn in
            guard let (timeline, knownAsOf) = try timeline(env, otid, asOf: asOf, txn) else { return nil }
            return timeline.view(at: at, asOf: knownAsOf, rules: rules)
        }
    }

    /// One app user's entitlements, subscriptions and binding history at `at`, as known after `asOf`.
    public func customer(
        _ user: AppUserID, environment env: AppStoreEnvironment = .production, at: UnixMillis, asOf: UInt64? = nil
    ) throws -> CustomerView {
        try environment.read { txn in
            let last = try batch.lastSeq(txn)
            let knownAsOf = min(asOf ?? last, last)
            var timelines: [Timeline] = []
            let cursor = try txn.cursor(layout.byUser)
            var entry = try cursor.find(StoreLayout.userKey(env, user))
            while let e = entry {
                if let (_, otid) = StoreLayout.decodeSubscriptionKey(e.value),
                    let (timeline, _) = try timeline(env, otid, asOf: asOf, txn)
                {
                    timelines.append(timeline)
                }
                entry = try cursor.nextDuplicate()
            }
            return Entitlements.customer(
                user: user, environment: env, timelines: timelines, at: at, asOf: knownAsOf, rules: rules)
        }
    }

    /// The timeline of (env, otid) as known after `asOf`, and the seq it reflects.
    func timeline(_ env: AppStoreEnvironment, _ otid: OriginalTransactionID, asOf: UInt64?, _ txn: Transaction) throws
        -> (Timeline, UInt64)?
    {
        let key = StoreLayout.subscriptionKey(env, otid)
        guard let stored = try txn.get(layout.timelines, key: key) else { return nil }
        let last = try batch.lastSeq(txn)
        if asOf == nil || asOf! >= last {
            return (try batch.projections.decodeTimeline(stored, key), last)
        }
        let events = try subscriptionEvents(env, otid, upTo: asOf, txn)
        guard !events.isEmpty else { return nil }
        return (Timeline.fold(events, rules: rules), asOf!)
    }

    // MARK: - Replay

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
        /// SHA-256 (hex) over every rebuilt projection in key order: two replays of the same log to the same seq
        /// give the same digest on any machine.
        public var projectionsDigest: String
    }

    /// Rebuilds every timeline from the events alone, with facts up to `until` (default: all).
    ///
    /// With `check: true` nothing is written: each rebuilt projection is compared byte for byte with the stored one.
    /// A replay of the whole log without `check` replaces the stored projections, in batches of write transactions,
    /// so a running server keeps appending meanwhile. A replay to an earlier `until` only reports (the stored
    /// projections reflect the whole log and stay).
    public func replay(until: UInt64? = nil, check: Bool, progress: ProgressHandler? = nil) throws -> ReplayReport {
        let last = try lastSeq()
        let limit = min(until ?? last, last)
        let rewrite = !check && limit == last
        var report = ReplayReport(
            subscriptions: 0, events: 0, differences: [], untilSeq: limit, rewrote: rewrite, projectionsDigest: "")
        var digest = SHA256()
        let total = try environment.read { txn in UInt64(try txn.statistics(layout.timelines).entries) }
        var resume: [UInt8]? = nil
        while true {
            // One chunk of subscriptions per transaction; the closure may run twice (map growth), so it only
            // returns what it found and the totals are added up outside.
            let chunk = { (txn: Transaction) throws -> (keys: Int, events: Int, differences: [String], last: [UInt8]?, more: Bool, rebuilt: [[UInt8]]) in
                let cursor = try txn.cursor(self.layout.byOTID)
                var entry: Entry?
                if let resume {
                    entry = try cursor.seek(resume)
                    if let e = entry, e.key.elementsEqual(resume) { entry = try cursor.nextKey() }
                } else {
                    entry = try cursor.first()
                }
                var keys = 0, events = 0
                var differences: [String] = []
                var last: [UInt8]? = nil
                var rebuiltAll: [[UInt8]] = []
                while let e = entry, keys < 2_000 {
                    let key = Array(e.key)
                    guard let (env, otid) = StoreLayout.decodeSubscriptionKey(e.key) else {
                        throw LedgerError.corrupted("by_otid key is malformed")
                    }
                    let folded = try self.subscriptionEvents(env, otid, upTo: limit, txn)
                    events += folded.count
                    keys += 1
                    last = key
                    if !folded.isEmpty {
                        let rebuilt = ProjectionEngine.stamped(Timeline.fold(folded, rules: self.rules))
                        rebuiltAll.append(key)
                        rebuiltAll.append(rebuilt)
                        if check {
                            let stored = try txn.get(self.layout.timelines, key: key).map(Array.init)
                            if stored != rebuilt { differences.append("\(env.rawValue)/\(otid)") }
                        } else if rewrite {
                            try txn.put(self.layout.timelines, key: key, value: rebuilt)
                        }
                    }
                    entry = try cursor.nextKey()
                }
                return (keys, events, differences, last, entry != nil, rebuiltAll)
            }
            let result = rewrite ? try environment.write(chunk) : try environment.read(chunk)
            for part in result.rebuilt {
                digest.update(data: UInt64(part.count).bigEndianBytes)
                digest.update(data: part)
            }
            report.subscriptions += result.keys
            report.events += result.events
            report.differences += result.differences
            resume = result.last
            progress?(UInt64(report.subscriptions), max(total, UInt64(report.subscriptions)))
            if !result.more { break }
        }
        report.projectionsDigest = hex(digest.finalize())
        if check {
            // A stored projection the log knows nothing of is a difference too.
            let stored = try environment.read { txn in try txn.statistics(layout.timelines).entries }
            if stored != report.subscriptions {
                report.differences.append("\(stored - report.subscriptions) stored timelines have no events")
            }
        }
        return report
    }

    func compareProjectionsWithReplay(progress: ProgressHandler?) throws -> (compared: Int, firstDifference: String?) {
        let report = try replay(check: true, progress: progress)
        return (report.subscriptions, report.differences.first.map { "projection of \($0) differs from a replay" })
    }
}
