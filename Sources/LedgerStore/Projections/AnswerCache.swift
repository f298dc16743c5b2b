import LMDB
import LedgerCodec
import LedgerCore
import Synchronization

/// The answers of the hot reads — a customer's entitlements, a subscription's timeline, at the latest knowledge —
/// kept between the commits that change them and for as long as the clock leaves them alone, so that a repeated read
/// costs a lookup instead of reading LMDB, decoding timelines and evaluating entitlements. `Answer` is the reader's
/// own form of it (the server's: the JSON text with the digits of `at` and `asOf` left out); the cache gives it
/// with the `asOf` to show, and the reader puts in `at`.
///
/// Never stale, by four rules:
/// - An answer is kept with the span of instants it holds for (`Entitlements.unchangedSpan`,
///   `Timeline.unchangedSpan`), and given only for an `at` inside: the next expiry, grace period end, revocation or
///   owner change makes it again.
/// - Each commit of the ledger's writer drops the answers of the subscriptions whose timelines it wrote and of the
///   customers who depend on them or whose `by_user` entries it wrote (`CommitChanges`), before any of the appends
///   it holds is acknowledged.
/// - The cache knows the LMDB commit it reflects; it gives answers only while that is the environment's last
///   commit (`Environment.lastCommittedTransactionID`, read per request without a transaction), with the log's last
///   seq at that commit as `asOf`. A commit whose changes are not dropped yet (the writer between its commit and its
///   callback, or a write by another process) sends reads to the store; a commit that does not follow the one the
///   cache reflects (another process wrote in between) drops everything.
/// - An answer is kept only when it was read from the snapshot of the commit the cache reflects.
///
/// Reads with an `asOf` before the last seq (which fold the log anew) are answered from the store and not kept.
/// At most `capacity` answers are kept; beyond, the oldest kept is dropped first.
public final class AnswerCache<Answer: Sendable>: Sendable {
    private let ledger: Ledger
    private let capacity: Int
    private let state: Mutex<State>

    /// What is kept of one answer.
    private struct Entry {
        var answer: Answer
        var span: Range<UnixMillis>
        /// A customer's: the subscriptions its answer read (`by_user`'s values).
        var subscriptions: [[UInt8]]
    }

    private enum Kind { case customer, timeline }

    private struct State {
        /// The LMDB commit the kept answers reflect, and the log's last seq then; nil until the first read or commit.
        var through: Int?
        var lastSeq: UInt64 = 0
        /// By `StoreLayout.userKey`.
        var customers: [[UInt8]: Entry] = [:]
        /// By `StoreLayout.subscriptionKey`.
        var timelines: [[UInt8]: Entry] = [:]
        /// Subscription key → the kept customers whose answers read it.
        var dependents: [[UInt8]: Set<[UInt8]>] = [:]
        /// Keys in the order kept, oldest first from `oldest` (a ring of `capacity`; a slot may name an answer
        /// dropped since, or kept again later).
        var order: [(Kind, [UInt8])] = []
        var oldest = 0

        mutating func dropAll() {
            customers.removeAll()
            timelines.removeAll()
            dependents.removeAll()
            order.removeAll()
            oldest = 0
        }

        mutating func drop(_ kind: Kind, _ key: [UInt8]) {
            switch kind {
            case .timeline:
                timelines[key] = nil
            case .customer:
                guard let entry = customers.removeValue(forKey: key) else { return }
                for subscription in entry.subscriptions {
                    dependents[subscription]?.remove(key)
                    if dependents[subscription]?.isEmpty == true { dependents[subscription] = nil }
                }
            }
        }

        mutating func keep(_ kind: Kind, _ key: [UInt8], _ entry: Entry, capacity: Int) {
            drop(kind, key)
            if order.count < capacity {
                order.append((kind, key))
            } else {
                let (oldKind, oldKey) = order[oldest]
                drop(oldKind, oldKey)
                order[oldest] = (kind, key)
                oldest = (oldest + 1) % capacity
            }
            switch kind {
            case .timeline:
                timelines[key] = entry
            case .customer:
                customers[key] = entry
                for subscription in entry.subscriptions { dependents[subscription, default: []].insert(key) }
            }
        }

        /// Transactions beside the writer that changed nothing kept here, not yet passed by `through`.
        var quiet: Set<Int> = []

        /// After a transaction beside the writer that changed nothing kept here (the maintained metrics' sums).
        mutating func committedQuietly(_ transactionID: Int) {
            quiet.insert(transactionID)
            passQuiet()
        }

        /// Moves `through` past the quiet transactions that follow it.
        mutating func passQuiet() {
            while let t = through, quiet.remove(t + 1) != nil { through = t + 1 }
            if quiet.count > 4_096 { quiet.removeAll() }  // Ids a dropped cache will never reach.
        }

        /// After the writer's commit `transactionID`.
        mutating func committed(_ transactionID: Int, _ changes: CommitChanges) {
            passQuiet()
            if let through, transactionID == through + 1, !changes.everything {
                for subscription in changes.subscriptions {
                    timelines[subscription] = nil
                    for customer in dependents[subscription] ?? [] { drop(.customer, customer) }
                }
                for customer in changes.customers { drop(.customer, customer) }
            } else {
                dropAll()
            }
            through = transactionID
            lastSeq = changes.lastSeq
            // A quiet transaction told before this commit's own notice came.
            passQuiet()
        }
    }

    /// A cache of `ledger`'s answers, at most `capacity` of them, that every later commit of its writer keeps true.
    public init(ledger: Ledger, capacity: Int = 16_384) {
        self.ledger = ledger
        self.capacity = max(1, capacity)
        state = Mutex(State())
        // Weakly: the ledger's observers outlive the cache.
        ledger.observers.add { [weak self] info in
            self?.state.withLock { $0.committed(info.transactionID, info.changes) }
        }
        ledger.observers.addQuiet { [weak self] transactionID in
            self?.state.withLock { $0.committedQuietly(transactionID) }
        }
    }

    /// Answers kept now (for tests and metrics).
    public var count: Int { state.withLock { $0.customers.count + $0.timelines.count } }

    /// `Ledger.customer(_:environment:at:asOf:)` in the caller's form (`answer` makes it from the view), and the
    /// `asOf` it shows; kept or from the store.
    public func customer(
        _ user: AppUserID, environment env: AppStoreEnvironment, at: UnixMillis, asOf: UInt64?,
        answer make: (CustomerView) throws -> Answer
    ) throws -> (answer: Answer, asOf: UInt64) {
        let key = StoreLayout.userKey(env, user)
        if let kept = lookUp(.customer, key, at: at, asOf: asOf) { return kept }
        return try ledger.environment.read { txn in
            let read = try ledger.customer(user, env, at: at, asOf: asOf, txn)
            let answer = try make(read.view)
            if asOf.map({ $0 >= read.lastSeq }) ?? true {
                let span = Entitlements.unchangedSpan(of: read.timelines, grants: read.grants, around: at)
                keep(
                    .customer, key, Entry(answer: answer, span: span, subscriptions: read.subscriptions),
                    snapshot: txn.id, lastSeq: read.lastSeq)
            }
            return (answer, read.view.asOf ?? read.lastSeq)
        }
    }

    /// `Ledger.timeline(_:environment:at:asOf:)` in the caller's form, and the `asOf` it shows; nil when nothing is
    /// known of the subscription (not kept: the next read looks again).
    public func timeline(
        _ otid: OriginalTransactionID, environment env: AppStoreEnvironment, at: UnixMillis, asOf: UInt64?,
        answer make: (TimelineView) throws -> Answer
    ) throws -> (answer: Answer, asOf: UInt64)? {
        let key = StoreLayout.subscriptionKey(env, otid)
        if let kept = lookUp(.timeline, key, at: at, asOf: asOf) { return kept }
        return try ledger.environment.read { txn in
            let last = try ledger.batch.lastSeq(txn)
            guard let (timeline, knownAsOf) = try ledger.timeline(env, otid, asOf: asOf, txn) else { return nil }
            let answer = try make(ledger.view(of: timeline, env, otid, at: at, knownAsOf: knownAsOf, txn))
            if asOf.map({ $0 >= last }) ?? true {
                keep(
                    .timeline, key, Entry(answer: answer, span: timeline.unchangedSpan(around: at), subscriptions: []),
                    snapshot: txn.id, lastSeq: last)
            }
            return (answer, knownAsOf)
        }
    }

    /// The kept answer of `key` for `at`, when the cache reflects the last commit and `asOf` asks for no less.
    private func lookUp(_ kind: Kind, _ key: [UInt8], at: UnixMillis, asOf: UInt64?) -> (answer: Answer, asOf: UInt64)? {
        let committed = ledger.environment.lastCommittedTransactionID
        return state.withLock { state -> (answer: Answer, asOf: UInt64)? in
            guard state.through == committed, asOf.map({ $0 >= state.lastSeq }) ?? true else { return nil }
            let entry = kind == .customer ? state.customers[key] : state.timelines[key]
            guard let entry, entry.span.contains(at) else { return nil }
            return (answer: entry.answer, asOf: state.lastSeq)
        }
    }

    /// Keeps an answer read from the snapshot of commit `snapshot`, if that is the commit the cache reflects (the
    /// first read names it when no commit has yet).
    private func keep(_ kind: Kind, _ key: [UInt8], _ entry: Entry, snapshot: Int, lastSeq: UInt64) {
        guard !entry.span.isEmpty else { return }
        state.withLock { state in
            if state.through == nil {
                state.through = snapshot
                state.lastSeq = lastSeq
            }
            guard state.through == snapshot else { return }
            state.keep(kind, key, entry, capacity: capacity)
        }
    }
}
