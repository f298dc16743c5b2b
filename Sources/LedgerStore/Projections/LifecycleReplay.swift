import LMDB
import LedgerCodec
import LedgerCore

/// The lifecycle events of one subscription derived again from its events alone, input by input, as the projection
/// engine derived them when they were appended (`ProjectionEngine.apply`): the same runs, the same timelines before
/// and after each, so the same events, ids included. A replay compares them byte for byte with the stored ones.
struct LifecycleReplay {
    /// One derived event and its `lifecycle` key.
    struct Entry {
        var key: [UInt8]
        var event: LifecycleEvent
    }

    /// The events `events` (the subscription's, in log order; `inputs[i]` the input of `events[i]`) said.
    ///
    /// The timeline is held decoded from one input to the next and each input goes the store's way: the tail path
    /// when it applies (`Timeline.applyOnTail`: the timelines before and after it hold only the latest period and
    /// those the input added, and the earlier ones stay where they are), else `apply` on the whole timeline (the
    /// copy kept as "before" then costs a copy of every period), else a refold.
    /// - Complexity: O(events) steps and one derivation per input, each O(what the input changed) on the tail path.
    static func entries(
        _ events: [LedgerEvent], inputs: [UInt64], otid: OriginalTransactionID, environment: AppStoreEnvironment,
        rules: FoldRules
    ) -> [Entry] {
        var out: [Entry] = []
        var timeline: Timeline?
        var end = 0
        for run in ProjectionEngine.inputRuns(Array(zip(events, inputs).map { (event: $0.0, input: $0.1) })) {
            end += run.count
            let seq = run[run.count - 1].seq
            func fold() -> Timeline {
                Timeline.fold(
                    Array(events[..<end]), originalTransactionId: otid, environment: environment, rules: rules,
                    ties: .canonical)
            }
            let said: [LifecycleEvent]
            if var current = timeline {
                // Let go of the held copy, so that the tail path takes the new periods in place.
                timeline = nil
                if let tail = current.applyOnTail(contentsOf: run, rules: rules) {
                    said = Lifecycle.events(before: tail.before, after: tail.after, seq: seq, rules: rules)
                    timeline = current
                } else {
                    var after = current
                    if !after.apply(contentsOf: run, rules: rules) { after = fold() }
                    said = Lifecycle.events(before: current, after: after, seq: seq, rules: rules)
                    timeline = after
                }
            } else {
                // New: claims that named no environment say nothing until the subscription's own first event.
                if run.allSatisfy({ ProjectionEngine.namesNoEnvironment($0) }) { continue }
                let after = fold()
                said = Lifecycle.events(before: nil, after: after, seq: seq, rules: rules)
                timeline = after
            }
            for (i, e) in said.enumerated() {
                out.append(Entry(key: StoreLayout.lifecycleKey(seq: seq, environment, index: i), event: e))
            }
        }
        return out
    }

    /// The input of each event: its `log` record's raw key (the seq of the input's first event).
    static func inputs(of events: [LedgerEvent], _ layout: StoreLayout, _ txn: Transaction) throws -> [UInt64] {
        try events.map { e in
            guard let record = try txn.get(layout.log, key: StoreLayout.logKey(e.seq)), record.count > 40 else {
                throw LedgerError.corrupted("the log has no record of event \(e.seq)")
            }
            return record.withUnsafeBytes { BigEndian.uint64($0, at: 32) }  // measured above
        }
    }
}
