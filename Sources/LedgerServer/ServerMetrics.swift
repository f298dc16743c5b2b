import CoreMetrics
import Foundation
import LedgerStore
import Metrics
import Prometheus

// MARK: - ServerMetrics

/// The server's metrics, recorded through swift-metrics into a Prometheus registry of its own (so several servers in
/// one process, as in tests, never share counters) and exposed as text on `GET /metrics`.
public final class ServerMetrics: Sendable {
    /// The registry `GET /metrics` renders.
    public let registry: PrometheusCollectorRegistry
    let factory: PrometheusMetricsFactory

    private let appended: CoreMetrics.Counter
    private let duplicate: CoreMetrics.Counter
    private let rejected: CoreMetrics.Counter
    private let commitInputs: CoreMetrics.Recorder
    private let commitDuration: CoreMetrics.Timer
    private let queueDepth: CoreMetrics.Gauge
    private let lastSeq: CoreMetrics.Gauge
    private let ledgerBytes: CoreMetrics.Gauge
    private let events: CoreMetrics.Gauge
    private let rejectedStored: CoreMetrics.Gauge
    private let followers: CoreMetrics.Gauge
    private let connections: CoreMetrics.Gauge
    private let connectionsRefused: CoreMetrics.Counter
    private let connectionsClosed: [ConnectionCloseReason: CoreMetrics.Counter]
    private let requestTimers = LockedDictionary<RequestKey, CoreMetrics.Timer>()

    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(25), .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500),
            .milliseconds(1), .milliseconds(2.5), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5),
        ]
        factory.valueHistogramBuckets["storeledger_commit_batch_inputs"] = [
            1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096,
        ]
        self.factory = factory
        appended = CoreMetrics.Counter(label: "storeledger_appends_total", dimensions: [("status", "appended")], factory: factory)
        duplicate = CoreMetrics.Counter(label: "storeledger_appends_total", dimensions: [("status", "duplicate")], factory: factory)
        rejected = CoreMetrics.Counter(label: "storeledger_appends_total", dimensions: [("status", "rejected")], factory: factory)
        commitInputs = CoreMetrics.Recorder(label: "storeledger_commit_batch_inputs", factory: factory)
        commitDuration = CoreMetrics.Timer(label: "storeledger_commit_duration_seconds", factory: factory)
        queueDepth = CoreMetrics.Gauge(label: "storeledger_queue_depth", factory: factory)
        lastSeq = CoreMetrics.Gauge(label: "storeledger_last_seq", factory: factory)
        ledgerBytes = CoreMetrics.Gauge(label: "storeledger_ledger_bytes", factory: factory)
        events = CoreMetrics.Gauge(label: "storeledger_events", factory: factory)
        rejectedStored = CoreMetrics.Gauge(label: "storeledger_rejected_inputs", factory: factory)
        followers = CoreMetrics.Gauge(label: "storeledger_event_followers", factory: factory)
        connections = CoreMetrics.Gauge(label: "storeledger_connections", factory: factory)
        connectionsRefused = CoreMetrics.Counter(label: "storeledger_connections_refused_total", factory: factory)
        var closed: [ConnectionCloseReason: CoreMetrics.Counter] = [:]
        for reason in ConnectionCloseReason.allCases {
            closed[reason] = CoreMetrics.Counter(
                label: "storeledger_connections_closed_total", dimensions: [("reason", reason.rawValue)], factory: factory)
        }
        connectionsClosed = closed
    }

    // MARK: - Connections

    /// Why the server closed a connection on its own.
    enum ConnectionCloseReason: String, CaseIterable, Sendable {
        case headerTimeout = "header_timeout"
        case idleTimeout = "idle_timeout"
        case bodyStalled = "body_stalled"
        case badRequest = "bad_request"
        case requestTimeout = "request_timeout"
        /// Its place was taken by a new connection while it waited with no request in progress.
        case evicted
    }

    func setConnections(_ n: Int) { connections.record(n) }
    func connectionRefused() { connectionsRefused.increment() }
    func connectionClosed(_ reason: ConnectionCloseReason) { connectionsClosed[reason]?.increment() }

    // MARK: - Recording

    /// Counts the outcome of every input of a request.
    func record(_ results: [AppendResult]) {
        var counts = (0, 0, 0)
        for r in results {
            switch r.status {
            case .appended: counts.0 += 1
            case .duplicate: counts.1 += 1
            case .rejected: counts.2 += 1
            }
        }
        if counts.0 > 0 { appended.increment(by: counts.0) }
        if counts.1 > 0 { duplicate.increment(by: counts.1) }
        if counts.2 > 0 { rejected.increment(by: counts.2) }
    }

    /// One group commit of the writer (called on the writer thread).
    func recordCommit(inputs: Int, lastSeq seq: UInt64?, nanoseconds: UInt64, queueDepth depth: Int) {
        commitInputs.record(inputs)
        commitDuration.recordNanoseconds(Int64(clamping: nanoseconds))
        queueDepth.record(depth)
        if let seq { lastSeq.record(Int64(clamping: seq)) }
    }

    /// The latency histogram of one (method, route, status), made once: the registry's lookup (name sanitising,
    /// label matching under its lock) costs more than the recording itself.
    func requestTimer(method: String, route: String, status: Int) -> CoreMetrics.Timer {
        let key = RequestKey(method: method, route: route, status: status)
        if let timer = requestTimers.withLock({ $0[key] }) { return timer }
        let timer = CoreMetrics.Timer(
            label: "storeledger_request_duration_seconds",
            dimensions: [("method", method), ("route", route), ("status", String(status))], factory: factory)
        requestTimers.withLock { $0[key] = timer }
        return timer
    }

    private struct RequestKey: Hashable {
        var method: String
        var route: String
        var status: Int
    }

    func setFollowers(_ n: Int) { followers.record(n) }

    /// Refreshes the ledger gauges and renders every metric as Prometheus text.
    func render(_ ledger: Ledger) -> [UInt8] {
        queueDepth.record(ledger.queueDepth)
        if let s = try? ledger.statistics() {
            lastSeq.record(Int64(clamping: s.lastSeq))
            ledgerBytes.record(s.bytes)
            events.record(s.events)
            rejectedStored.record(s.rejected)
        }
        return registry.emitToBuffer()
    }
}

/// A dictionary behind a lock.
final class LockedDictionary<Key: Hashable, Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Key: Value] = [:]

    func withLock<T>(_ body: (inout [Key: Value]) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&storage)
    }
}
