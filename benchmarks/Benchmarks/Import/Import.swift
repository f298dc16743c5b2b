import Benchmark
import Foundation
import LedgerCore
import LedgerStore
import Logging

/// The process's anonymous resident memory in MB (`RssAnon` in /proc/self/status): the heap, without the LMDB map's
/// file-backed pages, which `peakMemoryResident` counts too and the kernel can drop at will.
func anonymousResidentMB() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("RssAnon:") {
        let kb = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
        return kb / 1024
    }
    return 0
}

let rssAnonPeak = BenchmarkMetric.custom("RssAnon peak (MB)", polarity: .prefersSmaller, useScalingFactor: false)

/// Memory while importing 10M events (IMPORT_EVENTS overrides): inputs are generated as they are appended (4,000 per
/// durable commit), so what stays resident is the ledger's own.
let benchmarks: @Sendable () -> Void = {
    let total = Int(ProcessInfo.processInfo.environment["IMPORT_EVENTS"] ?? "") ?? 10_000_000
    Benchmark(
        "Import \(total / 1_000_000)M events, 4000 per commit",
        configuration: .init(
            metrics: [.wallClock, .peakMemoryResident, .throughput, rssAnonPeak],
            scalingFactor: .mega, maxDuration: .seconds(3_600), maxIterations: 1)
    ) { benchmark in
        let dir = NSTemporaryDirectory() + "bench-import-" + UUID().uuidString.prefix(8)
        var options = Ledger.Options()
        options.initialMapSize = 16 << 30
        let ledger = try Ledger(directory: dir, options: options, logger: Logger(label: "import"))
        defer {
            ledger.close()
            try? FileManager.default.removeItem(atPath: dir)
        }
        let day: Int64 = 86_400_000
        let subscriptions = 1_000_000
        var next = 0
        var peak = anonymousResidentMB()
        while next < total {
            var batch: [LedgerInput] = []
            batch.reserveCapacity(4_000)
            for _ in 0..<min(4_000, total - next) {
                let i = next
                next += 1
                let purchase = 1_600_000_000_000 + Int64(i / subscriptions) * 30 * day
                var t = TransactionFact(
                    transactionId: TransactionID(String(2_000_000_400_000_000 + i)),  // 16 digits, like Apple's
                    originalTransactionId: OriginalTransactionID(String(2_000_000_300_000_000 + i % subscriptions)),
                    productId: "com.example.premium.monthly", purchaseDate: purchase)
                t.expiresDate = purchase + 30 * day
                t.signedDate = purchase
                t.webOrderLineItemId = String(2_000_000_500_000_000 + i)
                batch.append(
                    .facts([.transaction(t)], metadata: FactMetadata(source: .decodedJSON, receivedAt: purchase),
                           raw: Array("{\"i\":\(i)}".utf8)))
            }
            _ = try ledger.appendAndWait(batch)
            if next % 100_000 == 0 { peak = max(peak, anonymousResidentMB()) }
        }
        benchmark.measurement(rssAnonPeak, max(peak, anonymousResidentMB()))
    }
}
