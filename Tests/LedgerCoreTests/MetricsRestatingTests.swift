import LedgerCodec
import LedgerCore
import LedgerTestSupport
import Testing

/// The maintained metrics restate a subscription's changes only from where a write changed it: the changes of its
/// earlier timeline dated before the window (but those stated whole), with the window restated from the new
/// timeline, must be exactly the new timeline's changes, on random histories delivered event by event, for the
/// instant `Metrics.firstChange` finds between whole timelines and between the tail path's partial ones (what the
/// write path compares), and for the earliest of several writes' instants (what a mark keeps until summed).
@Suite struct MetricsRestatingTests {
    static let day: Int64 = 86_400_000

    /// The store's rounding: the first instant of the UTC day.
    static func startOfDay(_ instant: UnixMillis) -> UnixMillis {
        let (q, r) = instant.quotientAndRemainder(dividingBy: day)
        return (r < 0 ? q - 1 : q) * day
    }

    /// Changes summed by (day, product, counter), zero sums left out.
    struct Sums: Equatable {
        var byKey: [String: Int64] = [:]
        mutating func add(_ instant: UnixMillis, _ product: String?, _ counter: MetricCounter, _ delta: Int64) {
            let key = "\(startOfDay(instant)) \(product ?? "-") \(counter)"
            byKey[key, default: 0] += delta
            if byKey[key] == 0 { byKey[key] = nil }
        }
    }

    static func whole(_ t: Timeline) -> (sums: Sums, changes: [(UnixMillis, String?, MetricCounter, Int64)]) {
        var sums = Sums()
        var changes: [(UnixMillis, String?, MetricCounter, Int64)] = []
        Metrics.contributions(of: t) { instant, product, counter, delta in
            sums.add(instant, product, counter, delta)
            changes.append((instant, product, counter, delta))
        }
        return (sums, changes)
    }

    /// `after`'s changes as the store makes them from `before`'s and the instant `from`; and where the window began.
    static func restated(_ before: Timeline, _ after: Timeline, from: UnixMillis) -> (Sums, UnixMillis) {
        var sums = Sums()
        let start = Metrics.contributions(of: after, restatingFrom: from, roundedDown: startOfDay) {
            sums.add($0, $1, $2, $3)
        }
        if start != .min {
            for (instant, product, counter, delta) in whole(before).changes
            where !counter.isStatedWhole && startOfDay(instant) < start {
                sums.add(instant, product, counter, delta)
            }
        }
        return (sums, start)
    }

    @Test func restatingFromTheFirstChangeGivesTheWholeTimelinesChanges() throws {
        var windows = 0, unchanged = 0, tails = 0, steps = 0
        for seed in UInt64(1)...150 {
            let (facts, rules) = FoldPropertyTests.history(seed: seed)
            let events = FoldPropertyTests.events(facts)
            var timelines = [FoldPropertyTests.fold([], rules)]
            var cuts: [UnixMillis?] = [nil]
            for k in 1...events.count {
                let before = timelines[k - 1]
                let after = FoldPropertyTests.fold(Array(events.prefix(k)), rules)
                timelines.append(after)
                var cut = Metrics.firstChange(before, after)
                // The tail path compares partial timelines: its instant must serve as well.
                let stored = before.encoded()
                if let tail = try stored.withUnsafeBytes({
                    try Timeline.appendingWithTimelines([events[k - 1]], toEncoded: $0, rules: rules)
                }) {
                    let tailCut = Metrics.firstChange(tail.before, tail.after)
                    tails += 1
                    if let tailCut { cut = min(cut ?? tailCut, tailCut) } else {
                        #expect(
                            Self.whole(before).sums == Self.whole(after).sums,
                            "seed \(seed), event \(k): the tail path finds no change, the metrics do")
                    }
                }
                cuts.append(cut)
                steps += 1
                guard let cut else {
                    unchanged += 1
                    #expect(Self.whole(before).sums == Self.whole(after).sums, "seed \(seed), event \(k): no change found, but one made")
                    continue
                }
                let (sums, start) = Self.restated(before, after, from: cut)
                if start != .min { windows += 1 }
                #expect(start <= cut)
                #expect(sums == Self.whole(after).sums, "seed \(seed), event \(k): restated from \(cut) (window \(start))")
                // Several writes before the follower sums: the earliest of their instants.
                if k >= 3, let earliest = cuts[(k - 2)...k].compactMap({ $0 }).min() {
                    let (over, _) = Self.restated(timelines[k - 3], after, from: earliest)
                    #expect(over == Self.whole(after).sums, "seed \(seed), events \(k - 2)...\(k) restated from \(earliest)")
                }
            }
        }
        // The histories exercise every case: windows that spare earlier days, writes that change no figure, the
        // tail path.
        #expect(windows > steps / 4, "\(windows) of \(steps) steps restated from a window")
        #expect(unchanged > 0)
        #expect(tails > steps / 4)
    }
}
