import Benchmark
import FoldWorkload
import LedgerCodec
import LedgerCore

// The pure fold's hot paths, as the store drives them: `Timeline.fold` (replay, verify, refolds), one incremental
// update of a stored timeline (decode + `apply` + encode, per touched OTID per write transaction), and decoding
// stored events. The workload is in Sources/FoldWorkload.

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration.maxDuration = .seconds(3)
    Benchmark.defaultConfiguration.maxIterations = 1_000_000
    Benchmark.defaultConfiguration.metrics = [.wallClock, .throughput, .cpuTotal, .mallocCountTotal]

    // 1000 timelines of 100 events (40 renewals, 30 renewal infos, 30 notifications), in seq order as replay reads
    // them. One scaled iteration is one event: figures are per event, throughput in events/s.
    let timelines = (0..<1_000).map { history(otid: $0, periods: 40, events: 100) }
    Benchmark("Fold 100-event timelines (per event)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        var k = 0
        for _ in 0..<(benchmark.scaledIterations.count / 100) {
            blackHole(Timeline.fold(timelines[k % timelines.count], rules: rules, ties: .canonical))
            k += 1
        }
    }

    // The same histories delivered shuffled (restores, retries and redeliveries arrive out of order).
    var rng = SystemRandomNumberGenerator()
    let shuffled = timelines.prefix(100).map { $0.shuffled(using: &rng) }
    Benchmark("Fold 100-event timelines, shuffled (per event)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        var k = 0
        for _ in 0..<(benchmark.scaledIterations.count / 100) {
            blackHole(Timeline.fold(shuffled[k % shuffled.count], rules: rules, ties: .canonical))
            k += 1
        }
    }

    // One incremental update at the tail of a stored timeline of 5 and of 100 periods, as the store does it.
    for periods in [5, 100] {
        let events = history(otid: 7, periods: periods, events: periods)
        let stored = Timeline.fold(events, rules: rules, ties: .canonical).encoded()
        let next = nextRenewal(after: events)
        Benchmark(
            "Incremental update at the tail, \(periods) periods (\(stored.count) B)",
            configuration: .init(scalingFactor: .kilo)
        ) { benchmark in
            for _ in benchmark.scaledIterations { blackHole(update(stored: stored, with: next, all: events)) }
        }
    }

    // The same updates with the lifecycle events they say (a RENEWAL), as the store derives them:
    // the cost of the derivation per appended event is the difference with the rows above, measured in one run.
    for periods in [5, 100] {
        let events = history(otid: 7, periods: periods, events: periods)
        let stored = Timeline.fold(events, rules: rules, ties: .canonical).encoded()
        let next = nextRenewal(after: events)
        precondition(updateSayingLifecycle(stored: stored, with: next, all: events).1.count == 1, "one RENEWAL said")
        Benchmark(
            "Incremental update at the tail with its lifecycle events, \(periods) periods",
            configuration: .init(scalingFactor: .kilo)
        ) { benchmark in
            for _ in benchmark.scaledIterations { blackHole(updateSayingLifecycle(stored: stored, with: next, all: events)) }
        }
    }

    // A timeline with stated changes too (40 periods, 30 renewal infos toggling auto-renew, 30 notifications): the
    // derivation compares every stated change, so this is its dearer case.
    do {
        let events = timelines[1]
        let stored = Timeline.fold(events, rules: rules, ties: .canonical).encoded()
        let next = nextRenewal(after: events)
        Benchmark("Incremental update at the tail, 100 events (40 periods)", configuration: .init(scalingFactor: .kilo)) {
            benchmark in
            for _ in benchmark.scaledIterations { blackHole(update(stored: stored, with: next, all: events)) }
        }
        Benchmark(
            "Incremental update at the tail with its lifecycle events, 100 events (40 periods)",
            configuration: .init(scalingFactor: .kilo)
        ) { benchmark in
            for _ in benchmark.scaledIterations { blackHole(updateSayingLifecycle(stored: stored, with: next, all: events)) }
        }
    }

    // One update in the past of a 100-event timeline: apply refuses, the OTID refolds from its 101 events.
    do {
        let events = timelines[0]
        let stored = Timeline.fold(events, rules: rules, ties: .canonical).encoded()
        let refund = pastRefund(in: events)
        Benchmark("Incremental update in the past, 100 events (refold)") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(update(stored: stored, with: refund, all: events)) }
        }
    }

    // Decoding stored events (what replay and refolds read from the log). Figures per event.
    let encodedEvents = timelines.prefix(10).flatMap { $0 }.map { ($0.seq, LedgerEvent.encode(fact: $0.fact, metadata: $0.metadata)) }
    Benchmark("LedgerEvent decode (per event)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        var k = 0
        for _ in benchmark.scaledIterations {
            let (seq, bytes) = encodedEvents[k % encodedEvents.count]
            blackHole(try! LedgerEvent(seq: seq, decoding: bytes))
            k += 1
        }
    }

    // Encoding facts (the idempotency key hashes these bytes; appends store them). Figures per fact.
    let facts = timelines.prefix(10).flatMap { $0 }.map(\.fact)
    Benchmark("Fact encode (per fact)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        var k = 0
        for _ in benchmark.scaledIterations {
            blackHole(facts[k % facts.count].encoded())
            k += 1
        }
    }
}

/// `update(stored:with:all:)` as the store runs it: the same path, handing back the timeline before
/// and after, then the lifecycle events the update said (`Lifecycle.events`), encoded as the store writes them.
/// Kept here, not in FoldWorkload: `instructions.sh` builds that workload against older checkouts too, which lack this path.
func updateSayingLifecycle(stored: [UInt8], with event: LedgerEvent, all: [LedgerEvent]) -> ([UInt8], [[UInt8]]) {
    if let tail = try! stored.withUnsafeBytes({
        try Timeline.appendingWithTimelines([event], toEncoded: $0, rules: rules)
    }) {
        let said = Lifecycle.events(before: tail.before, after: tail.after, seq: event.seq, rules: rules)
        return (tail.bytes, said.map { $0.encoded() })
    }
    let before = try! Timeline(decoding: stored)
    var timeline = before
    if !timeline.apply(event, rules: rules) { timeline = fold(all + [event]) }
    let said = Lifecycle.events(before: before, after: timeline, seq: event.seq, rules: rules)
    return (timeline.encoded(), said.map { $0.encoded() })
}
