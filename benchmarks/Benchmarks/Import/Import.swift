import Benchmark
import Foundation
import LedgerCore
import LedgerStore
import Logging

/// Memory while importing 10M events: inputs are generated as they are appended (4,000 per durable commit), so the
/// resident set is the ledger's own (the LMDB map's pages are file-backed and counted by the kernel separately from
/// the process's anonymous memory; peakMemoryResident includes mapped pages that are resident).
let benchmarks: @Sendable () -> Void = {
    let total = Int(ProcessInfo.processInfo.environment["IMPORT_EVENTS"] ?? "") ?? 10_000_000
    Benchmark(
        "Import \(total / 1_000_000)M events, 4000 per commit",
        configuration: .init(
            metrics: [.wallClock, .peakMemoryResident, .peakMemoryResidentDelta, .throughput],
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
        while next < total {
            var batch: [LedgerInput] = []
            batch.reserveCapacity(4_000)
            for _ in 0..<min(4_000, total - next) {
                let i = next
                next += 1
                let purchase = 1_600_000_000_000 + Int64(i / subscriptions) * 30 * day
                var t = TransactionFact(
                    transactionId: TransactionID(String(4_000_000_000 + i)),
                    originalTransactionId: OriginalTransactionID(String(3_000_000_000 + i % subscriptions)),
                    productId: "com.example.premium.monthly", purchaseDate: purchase)
                t.expiresDate = purchase + 30 * day
                t.signedDate = purchase
                t.webOrderLineItemId = String(5_000_000_000 + i)
                batch.append(
                    .facts([.transaction(t)], metadata: FactMetadata(source: .decodedJSON, receivedAt: purchase),
                           raw: Array("{\"i\":\(i)}".utf8)))
            }
            _ = try ledger.appendAndWait(batch)
        }
    }
}
