import Foundation
import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerStore
import Logging
import TestFixtures

// MARK: - The audit ledger: what `verify` and `export` are measured on

/// A ledger of about a million events made from `AuditStories` (V1 and V2 notifications, receipts, claims,
/// re-deliveries and refusals, through the same decoders and append path as the server's), cached on disk so that
/// repeated runs (the Audit benchmark, `storeledger verify` by hand, two builds side by side) read the same ledger.
///
/// Made once per directory: a ledger is built in `<dir>.partial` and renamed when complete, so an interrupted build is
/// never taken for a finished one. A cached ledger this build cannot open (another schema) is made again.
public enum AuditLedger {
    /// The stories' version: bumped when they change, so a cached ledger of older stories is not measured as new.
    static let storiesVersion = 2
    static let seed: UInt64 = 12
    /// New subscribers per month: with the renewals, churn and re-deliveries, a month of traffic adds some 40k
    /// to 170k events, so a million is reached in a year and a half of the app's life.
    static let newSubscriptionsPerMonth = 5_000

    /// Where cached ledgers live: `$STORELEDGER_BENCH_CACHE`, else `/tmp/storeledger-bench`.
    public static var cacheDirectory: String {
        ProcessInfo.processInfo.environment["STORELEDGER_BENCH_CACHE"] ?? "/tmp/storeledger-bench"
    }

    /// The directory of the cached ledger of at least `events` events (the last month's traffic stops at the first
    /// append that reaches it), made first when there is none.
    public static func directory(events: Int = 1_000_000, report: (String) -> Void = { _ in }) throws -> String {
        let dir = "\(cacheDirectory)/audit-\(events)-v\(storiesVersion)"
        let fm = FileManager.default
        if fm.fileExists(atPath: dir + "/data.mdb") {
            if (try? Ledger(directory: dir, options: readOnly, logger: logger))?.close() != nil { return dir }
            report("the cached ledger in \(dir) does not open with this build: making it again")
            try fm.removeItem(atPath: dir)
        }
        let partial = dir + ".partial"
        try? fm.removeItem(atPath: partial)
        try fm.createDirectory(atPath: partial, withIntermediateDirectories: true)
        try make(in: partial, events: events, report: report)
        try fm.moveItem(atPath: partial, toPath: dir)
        return dir
    }

    static let logger = Logger(label: "audit-ledger")
    static var readOnly: Ledger.Options {
        var o = Ledger.Options()
        o.readOnly = true
        return o
    }

    /// Appends the stories' inputs, month after month, until the log holds `events` events.
    static func make(in dir: String, events: Int, report: (String) -> Void) throws {
        var options = Ledger.Options()
        options.unsafeNoSync = true  // made once and kept: no commit needs to be durable on its own
        options.initialMapSize = 4 << 30
        let ledger = try Ledger(directory: dir, options: options, logger: logger)
        defer { ledger.close() }
        let pipeline = IngestPipeline(
            ledger: ledger,
            configuration: AppStoreConfiguration(bundleId: F.bundleId, trustedRootsDER: [TestPKI.shared.rootDER]))
        var stories = AuditStories(seed: seed)
        let apple = AppleDocuments()
        var month = 0
        let started = Date()
        filling: while true {
            let plans = stories.nextMonth(newSubscriptions: newSubscriptionsPerMonth)
            let documents = build(plans, apple)
            var start = 0
            while start < plans.count {
                let end = min(start + 2_000, plans.count)
                let inputs = parallelMap(start..<end) { i in
                    pipeline.prepare(documents[i].bytes, options: documents[i].options, now: plans[i].at + 5_000)
                }
                _ = try ledger.appendAndWait(inputs)
                if try ledger.lastSeq() >= UInt64(events) { break filling }
                start = end
            }
            month += 1
            report("month \(month): \(try ledger.lastSeq()) events (\(Int(Date().timeIntervalSince(started))) s)")
        }
        report("made \(dir): \(try ledger.lastSeq()) events in \(Int(Date().timeIntervalSince(started))) s")
    }

    /// Every plan's document, built on every core; a re-delivery takes the bytes of the document it repeats.
    static func build(_ plans: [AuditStories.Plan], _ apple: AppleDocuments) -> [(bytes: [UInt8], options: IngestPipeline.Options)] {
        let built = parallelMap(plans.indices) { plans[$0].document(apple) }
        var documents: [(bytes: [UInt8], options: IngestPipeline.Options)] = []
        documents.reserveCapacity(plans.count)
        for (plan, document) in zip(plans, built) {
            if case .redelivery(let earlier) = plan.kind {
                documents.append(documents[earlier])
            } else {
                documents.append(document!)
            }
        }
        return documents
    }
}

/// `transform` of every index of `range`, in order, computed on every core.
func parallelMap<T: Sendable>(_ range: Range<Int>, _ transform: @Sendable (Int) -> T) -> [T] {
    let workers = max(1, ProcessInfo.processInfo.activeProcessorCount)
    let base = range.lowerBound
    var values = [T?](repeating: nil, count: range.count)
    values.withUnsafeMutableBufferPointer { buffer in
        // Each worker writes its own slots (every `workers`-th), so no two write the same one.
        nonisolated(unsafe) let buffer = buffer
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            var i = worker
            while i < buffer.count {
                buffer[i] = transform(base + i)
                i += workers
            }
        }
    }
    return values.map { $0! }
}
