import ArgumentParser
import Foundation
import LedgerErrors

// MARK: - loadgen

/// Drives a running `storeledger serve` over its Unix socket with synthetic App Store traffic and reports offered vs
/// accepted load and latency percentiles, ending with a markdown table row for benchmarks/README.md.
@main
struct LoadGen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "loadgen",
        abstract: "Synthetic App Store traffic against storeledger serve over its Unix socket.",
        discussion: """
            Modes: single (one input per POST /v1/events), batch (NDJSON of --batch-size inputs per POST), read \
            (GET /v1/customers/{user} after filling the ledger with --users purchases). Closed loop by default (each \
            connection sends its next request when the previous one is answered); --rate R makes it open loop: R \
            requests/s in total on a fixed schedule, latency measured from the scheduled instant, so a slow server \
            shows as latency instead of as fewer requests. Bounded by --duration and --requests.
            """)

    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case single, batch, read
    }

    @Option(name: .long, help: "The server's socket.") var socket = "./ledger-data/ledger.sock"
    @Option(name: .long, help: "single, batch or read.") var mode: Mode = .single
    @Option(name: .long, help: "Connections, one thread each.") var connections = 32
    @Option(name: .long, help: "Inputs per NDJSON batch (batch mode).") var batchSize = 100
    @Option(name: .long, help: "Seconds to run at most.") var duration: Double = 10
    @Option(name: .long, help: "Requests to send at most (all connections).") var requests: Int?
    @Option(name: .long, help: "Open loop: requests per second in total.") var rate: Double?
    @Option(name: .long, help: "Users (subscriptions) per connection.") var users = 500
    @Option(name: .long, help: "Seed of the synthetic traffic.") var seed: UInt64 = 1
    @Flag(name: .long, help: "Print only the markdown table row.") var quiet = false
    @Flag(name: .long, help: "Print only one JSON object (for scripts: benchmarks/peers/run.sh).") var json = false
    @Flag(
        name: .long,
        help: "Read mode: fill the ledger with the users' purchases and exit (the C read client, benchmarks/peers/readgen.c, then reads them).")
    var fillOnly = false

    func validate() throws {
        guard connections > 0, connections <= 1024 else { throw ValidationError("--connections must be 1…1024") }
        guard batchSize > 0 else { throw ValidationError("--batch-size must be positive") }
        guard duration > 0, duration <= 3600 else { throw ValidationError("--duration must be 0…3600 seconds") }
        if let rate, rate <= 0 { throw ValidationError("--rate must be positive") }
        if let requests, requests <= 0 { throw ValidationError("--requests must be positive") }
        if fillOnly && mode != .read { throw ValidationError("--fill-only is for --mode read") }
    }

    func run() throws {
        let plan = Plan(
            socket: socket, mode: mode, connections: connections, batchSize: mode == .batch ? batchSize : 1,
            duration: duration, requests: requests, rate: rate, users: users, seed: seed)
        if mode == .read {
            if !quiet && !json { print("filling the ledger with \(connections * users) purchases…") }
            try plan.fill()
            if fillOnly { return }
        }
        let workers = (0..<connections).map { Worker(plan: plan, index: $0) }
        let group = DispatchGroup()
        let start = Clock.now() + 50_000_000  // every connection starts on the same instant
        for worker in workers {
            group.enter()
            let thread = Thread {
                worker.run(start: start)
                group.leave()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        group.wait()
        let report = Report(plan: plan, workers: workers, elapsed: Double(workers.map(\.finished).max()! - start) / 1e9)
        if json {
            print(report.json)
            return
        }
        if !quiet { report.printSummary() }
        print(Report.tableHeader)
        print(report.tableRow)
    }
}

// MARK: - Plan

/// What every connection does.
struct Plan: Sendable {
    var socket: String
    var mode: LoadGen.Mode
    var connections: Int
    var batchSize: Int
    var duration: Double
    var requests: Int?
    var rate: Double?
    var users: Int
    var seed: UInt64

    /// Read mode: every connection's users get their purchase first (batches of 500), so reads find customers.
    func fill() throws {
        let client = Connection(socketPath: socket, timeoutSeconds: 60)
        for connection in 0..<connections {
            var traffic = Traffic(seed: seed, connection: connection, users: users)
            let docs = traffic.initialPurchases(users)
            var start = 0
            while start < docs.count {
                let end = min(start + 500, docs.count)
                let body = Array(docs[start..<end].joined(separator: "\n").utf8)
                let status = try client.request(
                    method: "POST", path: "/v1/events", body: body, contentType: "application/x-ndjson")
                guard status == 200 || status == 207 else { throw ValidationError("filling failed: \(status)") }
                start = end
            }
        }
    }
}

// MARK: - Worker

/// One connection on its own thread with one blocking `Connection`.
final class Worker: @unchecked Sendable {
    let plan: Plan
    let index: Int
    // Written by the worker's thread only, read after it finished.
    var latencies: [UInt64] = []
    var statuses: [Int: Int] = [:]
    var transportErrors: [String: Int] = [:]
    var scheduled = 0
    /// Open loop: requests the schedule called for before the deadline, sent or not (the offered load).
    var due = 0
    var inputsAccepted = 0
    var finished: UInt64 = 0

    init(plan: Plan, index: Int) {
        self.plan = plan
        self.index = index
    }

    func run(start: UInt64) {
        defer { finished = Clock.now() }
        var traffic = Traffic(seed: plan.seed, connection: index, users: plan.users)
        // Read mode asks for the users `Plan.fill` bought subscriptions for.
        let readUsers = plan.mode == .read ? (0..<plan.users).map { "lg\(index)-u\($0)" } : []
        let client = Connection(socketPath: plan.socket, timeoutSeconds: 30)
        let deadline = start + UInt64(plan.duration * 1e9)
        let quota = plan.requests.map { ($0 + plan.connections - 1 - index) / plan.connections }
        // Open loop: this connection's share of the rate, phase-shifted so connections do not fire together.
        let interval = plan.rate.map { Double(plan.connections) / $0 * 1e9 }
        let phase = interval.map { $0 * Double(index) / Double(plan.connections) } ?? 0
        if let interval {
            let slots = Int(((Double(deadline - start) - phase) / interval).rounded(.up))
            due = min(max(0, slots), quota ?? Int.max)
        }
        Clock.sleep(until: start)
        latencies.reserveCapacity(min(quota ?? 100_000, 2_000_000))
        var sent = 0
        while quota.map({ sent < $0 }) ?? true {
            var intended = Clock.now()
            if let interval {
                intended = start + UInt64(phase + Double(sent) * interval)
                if intended >= deadline { break }
                Clock.sleep(until: intended)
            } else if intended >= deadline {
                break
            }
            sent += 1
            scheduled += 1
            let status: Int
            do {
                switch plan.mode {
                case .read:
                    let user = readUsers[Int(UInt64(sent &* 2_654_435_761) % UInt64(max(1, readUsers.count)))]
                    status = try client.request(method: "GET", path: "/v1/customers/\(user)")
                case .single:
                    status = try client.request(method: "POST", path: "/v1/events", body: Array(traffic.next().utf8))
                case .batch:
                    let body = (0..<plan.batchSize).map { _ in traffic.next() }.joined(separator: "\n")
                    status = try client.request(
                        method: "POST", path: "/v1/events", body: Array(body.utf8), contentType: "application/x-ndjson")
                }
            } catch {
                transportErrors[error.code.rawValue, default: 0] += 1
                // The client opens a new connection for the next request by itself; when nothing accepts on the
                // socket any more, this connection's work is over.
                if error.code == .connect { return }
                continue
            }
            if latencies.count < 5_000_000 { latencies.append(Clock.now() - intended) }
            statuses[status, default: 0] += 1
            if status == 200 || status == 207 { inputsAccepted += plan.batchSize }
        }
    }
}

// MARK: - Report

struct Report {
    let plan: Plan
    let elapsed: Double
    /// Offered: requests sent (closed loop) or due by the schedule (open loop).
    let scheduled: Int
    let sent: Int
    let statuses: [Int: Int]
    let transportErrors: [String: Int]
    let inputsAccepted: Int
    let sorted: [UInt64]

    init(plan: Plan, workers: [Worker], elapsed: Double) {
        self.plan = plan
        self.elapsed = max(elapsed, 1e-9)
        scheduled = workers.reduce(0) { $0 + (plan.rate == nil ? $1.scheduled : $1.due) }
        sent = workers.reduce(0) { $0 + $1.scheduled }
        statuses = workers.reduce(into: [:]) { all, w in all.merge(w.statuses, uniquingKeysWith: +) }
        transportErrors = workers.reduce(into: [:]) { all, w in all.merge(w.transportErrors, uniquingKeysWith: +) }
        inputsAccepted = workers.reduce(0) { $0 + $1.inputsAccepted }
        sorted = workers.flatMap(\.latencies).sorted()
    }

    var accepted: Int { (statuses[200] ?? 0) + (statuses[207] ?? 0) }
    var errors: Int { statuses.filter { $0.key != 200 && $0.key != 207 }.values.reduce(0, +) + transportErrors.values.reduce(0, +) }

    func percentile(_ p: Double) -> UInt64 {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }

    static func format(_ ns: UInt64) -> String {
        ns < 1_000_000 ? String(format: "%.0f µs", Double(ns) / 1e3) : String(format: "%.2f ms", Double(ns) / 1e6)
    }

    static func rate(_ x: Double) -> String { String(format: "%.0f", x) }

    var loop: String { plan.rate.map { "open \(Self.rate($0))/s" } ?? "closed" }

    func printSummary() {
        print("mode \(plan.mode.rawValue), \(plan.connections) connections, \(loop), batch \(plan.batchSize), \(String(format: "%.2f", elapsed)) s")
        print("offered   \(scheduled) requests (\(Self.rate(Double(scheduled) / elapsed))/s), sent \(sent)")
        print("accepted  \(accepted) requests (\(Self.rate(Double(accepted) / elapsed))/s), \(inputsAccepted) inputs (\(Self.rate(Double(inputsAccepted) / elapsed))/s)")
        print("latency per request\(plan.batchSize > 1 ? " (one batch)" : ""): p50 \(Self.format(percentile(0.5))), p99 \(Self.format(percentile(0.99))), p99.9 \(Self.format(percentile(0.999))), max \(Self.format(sorted.last ?? 0))")
        if plan.batchSize > 1 {
            print("latency per input within a batch: p50 \(Self.format(percentile(0.5) / UInt64(plan.batchSize)))")
        }
        let byStatus = statuses.keys.sorted().map { "\($0): \(statuses[$0]!)" }.joined(separator: ", ")
        print("statuses  \(byStatus.isEmpty ? "-" : byStatus)")
        if !transportErrors.isEmpty {
            print("transport errors  " + transportErrors.keys.sorted().map { "\($0): \(transportErrors[$0]!)" }.joined(separator: ", "))
        }
    }

    static let tableHeader = """
        | mode | connections | loop | batch | offered req/s | accepted req/s | inputs/s | p50 | p99 | p99.9 | errors |
        |---|---|---|---|---|---|---|---|---|---|---|
        """

    var tableRow: String {
        "| \(plan.mode.rawValue) | \(plan.connections) | \(loop) | \(plan.batchSize) | \(Self.rate(Double(scheduled) / elapsed)) | "
            + "\(Self.rate(Double(accepted) / elapsed)) | \(Self.rate(Double(inputsAccepted) / elapsed)) | "
            + "\(Self.format(percentile(0.5))) | \(Self.format(percentile(0.99))) | \(Self.format(percentile(0.999))) | \(errors) |"
    }
}

// MARK: - Report as JSON

extension Report {
    /// The figures of the summary as one JSON object; latencies in nanoseconds, rates per second.
    struct Figures: Encodable {
        var mode: String
        var connections: Int
        var batchSize: Int
        var rate: Double?
        var elapsedSeconds: Double
        var offeredRequests: Int
        var sentRequests: Int
        var acceptedRequests: Int
        var acceptedPerSecond: Double
        var inputsAccepted: Int
        var inputsPerSecond: Double
        var p50Ns: UInt64
        var p99Ns: UInt64
        var p999Ns: UInt64
        var maxNs: UInt64
        var errors: Int
        var statuses: [String: Int]
        var transportErrors: [String: Int]
    }

    var json: String {
        let figures = Figures(
            mode: plan.mode.rawValue, connections: plan.connections, batchSize: plan.batchSize, rate: plan.rate,
            elapsedSeconds: elapsed, offeredRequests: scheduled, sentRequests: sent, acceptedRequests: accepted,
            acceptedPerSecond: Double(accepted) / elapsed, inputsAccepted: inputsAccepted,
            inputsPerSecond: Double(inputsAccepted) / elapsed, p50Ns: percentile(0.5), p99Ns: percentile(0.99),
            p999Ns: percentile(0.999), maxNs: sorted.last ?? 0, errors: errors,
            statuses: Dictionary(uniqueKeysWithValues: statuses.map { (String($0.key), $0.value) }),
            transportErrors: transportErrors)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding plain numbers, strings and dictionaries of them cannot fail.
        return String(decoding: try! encoder.encode(figures), as: UTF8.self)
    }
}

// MARK: - Clock

enum Clock {
    /// Monotonic nanoseconds.
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    static func sleep(until instant: UInt64) {
        let now = Self.now()
        guard instant > now else { return }
        let wait = instant - now
        var request = timespec(tv_sec: Int(wait / 1_000_000_000), tv_nsec: Int(wait % 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
