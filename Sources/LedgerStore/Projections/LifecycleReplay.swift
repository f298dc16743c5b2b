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
    /// Between inputs the timeline is kept encoded, as the store keeps it, and each input goes the store's way: the
    /// tail path when it applies (only the latest period decoded; the timelines before and after it hold only that
    /// period, and the earlier ones are copied as bytes), else a whole decode and `apply`, else a refold. Keeping a
    /// decoded timeline instead would copy every period at each input (the copy kept as "before" shares them).
    /// - Complexity: O(events) steps and one derivation per input, each O(what the input changed) but for copying
    ///   the encoding.
    static func entries(
        _ events: [LedgerEvent], inputs: [UInt64], otid: OriginalTransactionID, environment: AppStoreEnvironment,
        rules: FoldRules
    ) throws -> [Entry] {
        var out: [Entry] = []
        var stored: [UInt8]?
        var end = 0
        let runs = ProjectionEngine.inputRuns(Array(zip(events, inputs).map { (event: $0.0, input: $0.1) }))
        for (r, run) in runs.enumerated() {
            end += run.count
            let seq = run[run.count - 1].seq
            let last = r == runs.count - 1
            func fold() -> Timeline {
                Timeline.fold(
                    Array(events[..<end]), originalTransactionId: otid, environment: environment, rules: rules,
                    ties: .canonical)
            }
            let said: [LifecycleEvent]
            do {
                if let bytes = stored {
                    if let tail = try bytes.withUnsafeBytes({ b throws(FactDecodingError) in
                        try Timeline.appendingWithTimelines(run, toEncoded: b, rules: rules)
                    }) {
                        said = Lifecycle.events(before: tail.before, after: tail.after, seq: seq, rules: rules)
                        stored = tail.bytes
                    } else {
                        let before = try Timeline(decoding: bytes)
                        var after = before
                        if !after.apply(contentsOf: run, rules: rules) { after = fold() }
                        said = Lifecycle.events(before: before, after: after, seq: seq, rules: rules)
                        stored = last ? nil : after.encoded()
                    }
                } else {
                    if run.allSatisfy({ ProjectionEngine.namesNoEnvironment($0) }) { continue }
                    let after = fold()
                    said = Lifecycle.events(before: nil, after: after, seq: seq, rules: rules)
                    stored = last ? nil : after.encoded()
                }
            } catch {
                throw LedgerError.corrupted("the timeline of \(environment.rawValue)/\(otid) does not decode: \(error)")
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
            return record.withUnsafeBytes { BigEndian.uint64($0, at: 32) }
        }
    }
}
