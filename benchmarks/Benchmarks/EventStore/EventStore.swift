import Benchmark
import Foundation
import LedgerCore
import LedgerStore
import Logging

// MARK: - Synthetic facts

/// Renewals spread over `subscriptions` OTIDs, each later than everything known of its OTID (the common case).
struct RenewalStream {
    var next = 0
    let subscriptions: Int
    static let day: Int64 = 86_400_000

    mutating func input() -> LedgerInput {
        let i = next
        next += 1
        let purchase = 1_600_000_000_000 + Int64(i / subscriptions) * 30 * Self.day
        // 16-digit ids, like Apple's (too long for a String's inline storage).
        var t = TransactionFact(
            transactionId: TransactionID(String(2_000_000_400_000_000 + i)),
            originalTransactionId: OriginalTransactionID(String(2_000_000_300_000_000 + i % subscriptions)),
            productId: "com.example.premium.monthly", purchaseDate: purchase)
        t.expiresDate = purchase + 30 * Self.day
        t.webOrderLineItemId = String(2_000_000_500_000_000 + i)
        t.signedDate = purchase
        t.type = .autoRenewable
        t.bundleId = "com.example.app"
        let raw = Array("{\"transactionId\":\"\(i)\"}".utf8)
        return .facts([.transaction(t)], metadata: FactMetadata(source: .decodedJSON, receivedAt: purchase), raw: raw)
    }

    mutating func inputs(_ n: Int) -> [LedgerInput] { (0..<n).map { _ in input() } }
}

func temporaryLedger(_ name: String, noSync: Bool = false) throws -> Ledger {
    let dir = NSTemporaryDirectory() + "bench-\(name)-" + UUID().uuidString.prefix(8)
    var options = Ledger.Options()
    options.initialMapSize = 8 << 30
    options.unsafeNoSync = noSync
    return try Ledger(directory: dir, options: options, logger: Logger(label: "bench"))
}

func remove(_ ledger: Ledger) {
    ledger.close()
    try? FileManager.default.removeItem(atPath: ledger.directory)
}

/// A ledger holding `events` renewals over `subscriptions` OTIDs, built without fsync (fast), then reopened durable
/// unless `durable` is false; and the stream that continues its renewals.
func populatedLedger(events: Int, subscriptions: Int, durable: Bool = true) throws -> (Ledger, RenewalStream) {
    let fast = try temporaryLedger("populated-\(events)", noSync: true)
    var stream = RenewalStream(subscriptions: subscriptions)
    var left = events
    while left > 0 {
        let n = min(4_000, left)
        _ = try fast.appendAndWait(stream.inputs(n))
        left -= n
    }
    guard durable else { return (fast, stream) }
    fast.close()
    // Written without fsync: flushed before anything is timed, so that the kernel's writeback of a gigabyte of dirty
    // pages does not run during the measurement (it did: a replay row of the larger ledgers varied 1.5x in a run).
    sync()
    var options = Ledger.Options()
    options.initialMapSize = 8 << 30
    return (try Ledger(directory: fast.directory, options: options, logger: Logger(label: "bench")), stream)
}

/// Measures one `appendAndWait` of `inputs` (one write transaction), nothing else.
func measureAppend(_ benchmark: Benchmark, _ ledger: Ledger, _ inputs: [LedgerInput]) throws {
    benchmark.startMeasurement()
    _ = try ledger.appendAndWait(inputs)
    benchmark.stopMeasurement()
}

// MARK: - Benchmarks

// The benchmark closures run once per sample; the ledger under test lives across samples.
nonisolated(unsafe) var ledgerUnderTest: Ledger!
nonisolated(unsafe) var stream = RenewalStream(subscriptions: 100_000)

func freshLedger(_ name: String) -> @Sendable () async throws -> Void {
    {
        ledgerUnderTest = try temporaryLedger(name)
        stream = RenewalStream(subscriptions: 100_000)
    }
}

let dropLedger: @Sendable () async throws -> Void = { remove(ledgerUnderTest) }

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration.maxDuration = .seconds(4)
    Benchmark.defaultConfiguration.maxIterations = 100_000
    Benchmark.defaultConfiguration.metrics = [.wallClock, .throughput, .cpuTotal]

    // Durable appends (fsync on every commit), with every index and projection: one sample is one write
    // transaction of N facts. With N = 1000 the figures are per fact (scaling factor kilo).
    Benchmark(
        "Durable append, 1 per commit",
        configuration: .init(setup: freshLedger("append1"), teardown: dropLedger)
    ) { benchmark in
        try measureAppend(benchmark, ledgerUnderTest, stream.inputs(1))
    }

    Benchmark(
        "Durable append, 100 per commit (figures per commit)",
        configuration: .init(setup: freshLedger("append100"), teardown: dropLedger)
    ) { benchmark in
        try measureAppend(benchmark, ledgerUnderTest, stream.inputs(100))
    }

    Benchmark(
        "Durable append, 1000 per commit (figures per fact)",
        configuration: .init(scalingFactor: .kilo, setup: freshLedger("append1000"), teardown: dropLedger)
    ) { benchmark in
        try measureAppend(benchmark, ledgerUnderTest, stream.inputs(benchmark.scaledIterations.count))
    }

    // Replay: every projection rebuilt from the log and compared byte for byte (`storeledger replay --check`), over
    // ledgers of 1M events in three shapes. Figures per event. Each shape twice: the timelines alone (`--only
    // timelines`: the work every replay row measured before the lifecycle stream existed, so these rows compare with
    // older builds' "Replay --check" rows), and every projection, the lifecycle stream too (derived input by input).
    nonisolated(unsafe) var replayLedger: Ledger!
    func replayBenchmark(
        _ name: String, subscriptions: Int, iterations: Int = 10, projections: Ledger.ReplayProjections = .all
    ) {
        Benchmark(
            name,
            configuration: .init(
                metrics: [.wallClock, .throughput, .cpuTotal, .peakMemoryResident], scalingFactor: .mega,
                maxDuration: .seconds(20), maxIterations: iterations,
                setup: { replayLedger = try populatedLedger(events: 1_000_000, subscriptions: subscriptions).0 },
                teardown: { remove(replayLedger) })
        ) { benchmark in
            let report = try replayLedger.replay(check: true, projections: projections)
            precondition(report.events == 1_000_000 && report.differences.isEmpty)
        }
    }
    // 200k subscriptions × 5 renewals.
    replayBenchmark(
        "Replay --check --only timelines, 1M events (figures per event)", subscriptions: 200_000,
        projections: .timelines)
    replayBenchmark("Replay --check, 1M events (figures per event)", subscriptions: 200_000)
    // Long histories: 10k subscriptions × 100 monthly renewals (a subscription's life over eight years), so the
    // per-subscription work (cursor, timeline encoding, digest, comparison) is spread over more events.
    replayBenchmark(
        "Replay --check --only timelines, 1M events in 10k subscriptions of 100 (figures per event)",
        subscriptions: 10_000, projections: .timelines)
    replayBenchmark("Replay --check, 1M events in 10k subscriptions of 100 (figures per event)", subscriptions: 10_000)
    // The full rebuild the incremental update is compared with: 1M subscriptions of one event each (the ledger the
    // incremental benchmarks below update), so the per-subscription work weighs the most.
    replayBenchmark(
        "Replay --check --only timelines, 1M events in 1M subscriptions (figures per event)", subscriptions: 1_000_000,
        iterations: 5, projections: .timelines)
    replayBenchmark(
        "Replay --check, 1M events in 1M subscriptions (figures per event)", subscriptions: 1_000_000, iterations: 5)

    // One incremental update in a ledger of 1M subscriptions: a renewal after everything known of its OTID, in its
    // own write transaction. Without fsync, so the figure is the CPU cost (durable commits add ~0.3–0.9 ms of I/O).
    nonisolated(unsafe) var bigLedger: Ledger!
    nonisolated(unsafe) var bigStream = RenewalStream(subscriptions: 1_000_000)
    Benchmark(
        "One incremental update, 1M OTIDs (no fsync)",
        configuration: .init(
            metrics: [.wallClock, .cpuTotal, .throughput], maxDuration: .seconds(5),
            setup: { (bigLedger, bigStream) = try populatedLedger(events: 1_000_000, subscriptions: 1_000_000, durable: false) },
            teardown: { remove(bigLedger) })
    ) { benchmark in
        try measureAppend(benchmark, bigLedger, bigStream.inputs(1))
    }

    // The same, durable and in group commit (1000 renewals of distinct OTIDs per write transaction): the cost of one
    // incremental update as the writer pays it under load. Figures per event.
    Benchmark(
        "Incremental updates, 1M OTIDs, durable, 1000 per commit (figures per event)",
        configuration: .init(
            metrics: [.wallClock, .cpuTotal, .throughput], scalingFactor: .kilo, maxDuration: .seconds(5),
            setup: { (bigLedger, bigStream) = try populatedLedger(events: 1_000_000, subscriptions: 1_000_000) },
            teardown: { remove(bigLedger) })
    ) { benchmark in
        try measureAppend(benchmark, bigLedger, bigStream.inputs(benchmark.scaledIterations.count))
    }
}
