import LedgerCodec
import LedgerCore
import LedgerTestSupport
import Testing

/// The lifecycle stream as a model: for seeded random histories (FoldPropertyTests' generator: renewals, trials and
/// offers of every type, refunds full, prorated and reversed, upgrades, restores, renewal infos, notifications,
/// claims), delivered shuffled, redelivered and grouped into inputs, the stream derived the store's way (the tail
/// path on stored bytes, else a whole decode and `apply`, else a refold) equals the one a full replay derives (a
/// fold of everything delivered before and after each input), ids included; and so does the stream a replay derives
/// holding the timeline decoded (`Timeline.applyOnTail`, else `apply`, else a refold), whose timeline stays the
/// store's.
@Suite(.blocking) struct LifecyclePropertyTests {
    static let otid: OriginalTransactionID = "9000"

    /// True when the fact is about the timeline under test (Production, OTID 9000), claims that name no environment
    /// included.
    static func concerns(_ fact: Fact) -> Bool {
        if case .binding(let b) = fact { return b.originalTransactionId == otid && b.applies(to: .production) }
        return fact.originalTransactionId == otid && fact.environment == .production
    }

    static func namesNoEnvironment(_ fact: Fact) -> Bool {
        if case .binding(let b) = fact { return b.everyEnvironment }
        return false
    }

    @Test func incrementalAppendsSayWhatAFullReplaySaysIdsIncluded() throws {
        var tailHits = 0, heldTailHits = 0, refolds = 0, said = 0, late = 0, corrections = 0
        var types = Set<LifecycleEventType>()
        for seed in UInt64(1)...300 {
            let (facts, rules) = FoldPropertyTests.history(seed: seed)
            var rng = SplitMix64(seed: seed &* 0x9E37_79B9)
            var delivery = facts
            for _ in 0..<rng.below(4) { delivery.append(facts[rng.below(facts.count)]) }
            if rng.chance(70) { delivery.shuffle(using: &rng) }
            // Inputs of one to four facts, numbered in delivery order.
            var inputs: [[LedgerEvent]] = []
            var seq: UInt64 = 0
            var i = 0
            while i < delivery.count {
                let n = min(1 + rng.below(4), delivery.count - i)
                inputs.append(
                    delivery[i..<(i + n)].map { f in
                        seq += 1
                        return LedgerEvent(
                            seq: seq, fact: f.0, metadata: FactMetadata(source: .decodedJSON, receivedAt: f.1, observedAt: f.1))
                    })
                i += n
            }
            func fold(_ events: [LedgerEvent]) -> Timeline {
                Timeline.fold(events, originalTransactionId: Self.otid, environment: .production, rules: rules, ties: .canonical)
            }

            var delivered: [LedgerEvent] = []
            var stored: [UInt8]?
            var replayBefore: Timeline?
            var incremental: [LifecycleEvent] = []
            var replayed: [LifecycleEvent] = []
            var held: Timeline?
            var heldStream: [LifecycleEvent] = []
            for input in inputs {
                let run = input.filter { Self.concerns($0.fact) }
                let before = delivered
                delivered += input
                guard let last = run.last else { continue }
                if stored == nil && run.allSatisfy({ Self.namesNoEnvironment($0.fact) }) { continue }
                // A full replay: everything delivered before and after the input, folded.
                let replayAfter = fold(delivered)
                let said = Lifecycle.events(before: replayBefore.map { _ in fold(before) }, after: replayAfter, seq: last.seq, rules: rules)
                // Only the statements from the first difference on are compared; every statement compared says
                // the same.
                let everything = Lifecycle.events(
                    before: replayBefore.map { _ in fold(before) }, after: replayAfter, seq: last.seq, rules: rules,
                    everything: true)
                #expect(said == everything, "seed \(seed), input ending at seq \(last.seq)")
                replayed += said
                replayBefore = replayAfter
                // A replay's way: the timeline held decoded.
                if var current = held {
                    held = nil
                    if let tail = current.applyOnTail(contentsOf: run, rules: rules) {
                        heldTailHits += 1
                        heldStream += Lifecycle.events(before: tail.before, after: tail.after, seq: last.seq, rules: rules)
                        held = current
                    } else {
                        var t = current
                        if !t.apply(contentsOf: run, rules: rules) { t = fold(delivered) }
                        heldStream += Lifecycle.events(before: current, after: t, seq: last.seq, rules: rules)
                        held = t
                    }
                } else {
                    held = fold(delivered)
                    heldStream += Lifecycle.events(before: nil, after: held!, seq: last.seq, rules: rules)
                }
                defer {
                    // What the replay holds is what the store stores.
                    #expect(held?.encoded() == stored, "seed \(seed), input ending at seq \(last.seq): held timeline differs")
                }
                // The store's way.
                guard let bytes = stored else {
                    let t = fold(delivered)
                    incremental += Lifecycle.events(before: nil, after: t, seq: last.seq, rules: rules)
                    stored = t.encoded()
                    continue
                }
                if let tail = try bytes.withUnsafeBytes({ b in
                    try Timeline.appendingWithTimelines(run, toEncoded: b, rules: rules)
                }) {
                    tailHits += 1
                    incremental += Lifecycle.events(before: tail.before, after: tail.after, seq: last.seq, rules: rules)
                    stored = tail.bytes
                    continue
                }
                let previous = try bytes.withUnsafeBytes { try Timeline(decoding: $0) }
                var t = previous
                if !t.apply(contentsOf: run, rules: rules) {
                    refolds += 1
                    t = fold(delivered)
                }
                incremental += Lifecycle.events(before: previous, after: t, seq: last.seq, rules: rules)
                stored = t.encoded()
            }
            #expect(incremental == replayed, "seed \(seed): the incremental stream differs from a full replay's")
            #expect(heldStream == replayed, "seed \(seed): the stream of a held timeline differs from a full replay's")
            if incremental != replayed {
                for (a, b) in zip(incremental, replayed) where a != b {
                    Issue.record("seed \(seed): first difference:\n\(a)\n\(b)")
                    break
                }
            }
            // A correction always names something said before it.
            for (k, e) in incremental.enumerated() where e.corrects != nil {
                #expect(incremental[..<k].contains { $0.id == e.corrects }, "seed \(seed): \(e.id) corrects nothing said")
            }
            said += incremental.count
            late += incremental.filter(\.late).count
            corrections += incremental.filter { $0.type == .correction }.count
            for e in incremental { types.insert(e.statement.type) }
        }
        // The histories exercise every path and most kinds of event, or the comparison above proves little.
        #expect(tailHits > 300 && heldTailHits >= tailHits && refolds > 100 && late > 100 && corrections > 10, "\(tailHits) \(refolds) \(late) \(corrections)")
        #expect(said > 3_000)
        let expected: Set<LifecycleEventType> = [
            .initialPurchase, .renewal, .trialStarted, .trialConverted, .cancellation, .uncancellation, .billingIssue,
            .billingRecovered, .gracePeriodStarted, .productChange, .expiration, .refund, .refundReversed, .transfer,
        ]
        #expect(expected.subtracting(types).isEmpty, "never said: \(expected.subtracting(types))")
    }
}
