import LMDB
import LedgerCodec
import LedgerCore

// MARK: - The lifecycle stream

extension Ledger {
    /// A page of the lifecycle stream.
    public struct LifecyclePage: Sendable {
        /// In stream order: seq, then environment, then the order the input said them.
        public var events: [LifecycleEvent]
        /// The seq to read on after: the last event's when the page was cut at its limit, else the log's last seq
        /// when it was read (every event said up to there is in the page), so a follower waits for later commits.
        public var next: UInt64
    }

    /// The lifecycle events said by inputs after log seq `after`, at most `limit`, never splitting the events of one
    /// seq (a page may hold the rest of its last seq's events beyond `limit`), so resuming after a seq is exact.
    public func lifecycleEvents(after: UInt64, limit: Int) throws -> LifecyclePage {
        try environment.read { txn in
            let cursor = try txn.cursor(layout.lifecycle)
            var out: [LifecycleEvent] = []
            let names = try IdentityNames(identities, layout, txn)
            var entry = try cursor.seek(BigEndian.bytes(after &+ 1))
            while let e = entry {
                let seq = try BigEndian.uint64(key: e.key, of: "lifecycle", length: StoreLayout.lifecycleKeyLength)
                if out.count >= limit, let last = out.last, last.seq != seq {
                    return LifecyclePage(events: out, next: last.seq)
                }
                do {
                    let event = try e.value.withUnsafeBytes { (bytes) throws(FactDecodingError) in
                        try LifecycleEvent(decoding: bytes)
                    }
                    out.append(try names.shown(event))
                } catch let error as FactDecodingError {
                    throw LedgerError.corrupted("the lifecycle event at seq \(seq) does not decode: \(error)")
                }
                entry = try cursor.next()
            }
            return LifecyclePage(events: out, next: max(after, try batch.lastSeq(txn)))
        }
    }
}

// MARK: - One subscription's lifecycle events

extension Ledger {
    /// The lifecycle events said about one subscription, in stream order: derived from its events as a replay derives
    /// them (`LifecycleReplay`), so the same as the stream's, without reading the whole stream.
    /// - Complexity: O(the subscription's events).
    public func lifecycleEvents(of otid: OriginalTransactionID, environment env: AppStoreEnvironment) throws
        -> [LifecycleEvent]
    {
        try environment.read { txn in
            let events = try SubscriptionScan.events(layout, env, otid, upTo: nil, metadata: .forFold, txn)
            guard !events.isEmpty else { return [] }
            let inputs = try LifecycleReplay.inputs(of: events, layout, txn)
            let rules = try history.rules(asOf: try batch.lastSeq(txn), layout, txn)
            let names = try IdentityNames(identities, layout, txn)
            return try LifecycleReplay.entries(events, inputs: inputs, otid: otid, environment: env, rules: rules)
                .map { try names.shown($0.event) }
        }
    }
}
