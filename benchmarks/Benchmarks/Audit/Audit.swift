import AuditWorkload
import Benchmark
import Foundation
import LedgerAPI
import LedgerStore
import Logging

#if canImport(Glibc)
import Glibc
#endif

// MARK: - verify and export on the audit ledger

// `storeledger verify` and `storeledger export` as the CLI runs them (`Ledger.verify`, `EventExport.write` to
// /dev/null), on the cached audit ledger of a million events (AuditWorkload: made on the first run, kept under
// /tmp). Beside them, in the same run, the machine's limits for the same bytes: reading `data.mdb` (what `cat` does)
// and SHA-256 over it, so the figures compare as ratios across machines and loads.

let eventsPerSecond = BenchmarkMetric.custom("events/s", polarity: .prefersLarger, useScalingFactor: false)
let megabytesPerSecond = BenchmarkMetric.custom("MB/s", polarity: .prefersLarger, useScalingFactor: false)

nonisolated(unsafe) var auditLedger: Ledger!
nonisolated(unsafe) var auditEvents: UInt64 = 0

let openAuditLedger: @Sendable () async throws -> Void = {
    let events = Int(ProcessInfo.processInfo.environment["AUDIT_EVENTS"] ?? "") ?? 1_000_000
    let dir = try AuditLedger.directory(events: events) { print($0) }
    var options = Ledger.Options()
    options.readOnly = true
    auditLedger = try Ledger(directory: dir, options: options, logger: Logger(label: "audit"))
    auditEvents = try auditLedger.lastSeq()
}

let closeAuditLedger: @Sendable () async throws -> Void = { auditLedger.close() }

/// Seconds since `start`.
func seconds(since start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration.maxDuration = .seconds(30)
    Benchmark.defaultConfiguration.maxIterations = 5
    Benchmark.defaultConfiguration.metrics = [.wallClock, .cpuTotal, eventsPerSecond, megabytesPerSecond]

    let audit = Benchmark.Configuration(setup: openAuditLedger, teardown: closeAuditLedger)

    // Every check `storeledger verify` makes: chain, indexes, raw digests, the rejected store, projections.
    // MB/s: of data.mdb.
    Benchmark("verify, audit ledger", configuration: audit) { benchmark in
        let size = try FileManager.default.attributesOfItem(atPath: auditLedger.directory + "/data.mdb")[.size] as! Int
        let start = ContinuousClock.now
        let report = try auditLedger.verify()
        let s = seconds(since: start)
        precondition(report.ok && report.events == auditEvents, "verify failed: \(report.fault ?? "")")
        benchmark.measurement(eventsPerSecond, Int(Double(auditEvents) / s))
        benchmark.measurement(megabytesPerSecond, Int(Double(size) / s / 1e6))
    }

    // `storeledger export > /dev/null`. MB/s: of the NDJSON written.
    Benchmark("export, audit ledger", configuration: audit) { benchmark in
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let start = ContinuousClock.now
        let written = try EventExport.write(auditLedger, after: 0, to: devNull)
        let s = seconds(since: start)
        precondition(written.events == auditEvents, "export wrote \(written.events) events")
        benchmark.measurement(eventsPerSecond, Int(Double(written.events) / s))
        benchmark.measurement(megabytesPerSecond, Int(Double(written.bytes) / s / 1e6))
    }

    // The walk of every page a writer, `verify`, `replay --check` and `backup` make before they read
    // (`Ledger.checkDataFile`). MB/s: of data.mdb, to set beside the read limit below.
    Benchmark("walk of data.mdb, audit ledger", configuration: audit) { benchmark in
        let size = try FileManager.default.attributesOfItem(atPath: auditLedger.directory + "/data.mdb")[.size] as! Int
        let start = ContinuousClock.now
        let walked = try auditLedger.checkDataFile()
        let s = seconds(since: start)
        precondition(walked.pages > 0, "nothing walked")
        benchmark.measurement(megabytesPerSecond, Int(Double(size) / s / 1e6))
    }

    // The limits: data.mdb read whole (`cat data.mdb > /dev/null`), and SHA-256 over it (`sha256sum`).
    Benchmark("limit: read data.mdb", configuration: audit) { benchmark in
        let start = ContinuousClock.now
        let bytes = readWhole(auditLedger.directory + "/data.mdb")
        benchmark.measurement(megabytesPerSecond, Int(Double(bytes) / seconds(since: start) / 1e6))
    }

    Benchmark("limit: SHA-256 of data.mdb", configuration: audit) { benchmark in
        let start = ContinuousClock.now
        let bytes = hashWhole(auditLedger.directory + "/data.mdb")
        benchmark.measurement(megabytesPerSecond, Int(Double(bytes) / seconds(since: start) / 1e6))
    }
}
