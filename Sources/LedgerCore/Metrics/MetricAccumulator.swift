// MARK: - The figures a subscription changes, and their sum over buckets

/// One figure a subscription's change adds to (`Metrics.contributions`). A snapshot counter's change holds from its
/// instant on, so a bucket's snapshot is the sum of every change up to its last instant; a movement counts in the
/// bucket holding its instant.
public enum MetricCounter: Hashable, Sendable {
    // Snapshots (`MetricBucket`'s counts, MRR and the currencies MRR has a price in).
    case live, active, trials, offers, inGracePeriod, inBillingRetry, unpriced
    case mrr(String)
    case priced(String)
    // Movements.
    case new, renewals, reactivations, trialsEnded, trialsConverted, refunds, reversals, purchases
    case churned(ChurnReason)
    case refunded(String)
    /// A subscription whose first period began at the instant (its cohort's size, refunded or not), and the ones of
    /// them that reached period number n (`MetricBucket.retained`).
    case cohort
    case retained(Int)

    /// The counters without an argument.
    public static let plain: [MetricCounter] = [
        .live, .active, .trials, .offers, .inGracePeriod, .inBillingRetry, .unpriced, .new, .renewals, .reactivations,
        .trialsEnded, .trialsConverted, .refunds, .reversals, .purchases, .cohort,
    ]

    /// Whether each change of the counter reads periods after the one it is dated by (the cohort and its retention,
    /// dated at the first period; a trial's conversion, dated at its end): what
    /// `Metrics.contributions(of:restatingFrom:roundedDown:_:)` states whole, and every other counter from a window
    /// on.
    public var isStatedWhole: Bool {
        switch self {
        case .cohort, .retained, .trialsConverted: true
        default: false
        }
    }

    /// Whether the counter is a snapshot (summed from the beginning of time) rather than a movement.
    public var isSnapshot: Bool {
        switch self {
        case .live, .active, .trials, .offers, .inGracePeriod, .inBillingRetry, .unpriced, .mrr, .priced: true
        default: false
        }
    }
}

/// Sums changes (`Metrics.contributions`, or the store's sums of them by day) into the buckets between consecutive
/// `boundaries`, keeping those of `products` when given (one product, or the products that grant an entitlement).
public struct MetricAccumulator: Sendable {
    let boundaries: [UnixMillis]
    let products: Set<String>?
    private var figures: [MetricBucket]
    /// Snapshot changes, at the first bucket whose last instant is not before them (`buckets.count`: after all).
    private var counts: [[Int64]]
    private var mrr: [String: [Int64]] = [:]
    private var priced: [String: [Int64]] = [:]
    private var cohorts: [Int]
    private var retained: [[Int]]

    public init(boundaries: [UnixMillis], product: String? = nil) {
        self.init(boundaries: boundaries, products: product.map { [$0] })
    }

    public init(boundaries: [UnixMillis], products: Set<String>?) {
        self.boundaries = boundaries
        self.products = products
        let n = max(0, boundaries.count - 1)
        figures = zip(boundaries, boundaries.dropFirst()).map { MetricBucket(start: $0, end: $1) }
        counts = Array(repeating: Array(repeating: 0, count: n + 1), count: Self.fixedSnapshots)
        cohorts = Array(repeating: 0, count: n)
        retained = Array(repeating: [], count: n)
    }

    private static let fixedSnapshots = 7

    /// Adds one change.
    public mutating func add(_ instant: UnixMillis, product: String?, _ counter: MetricCounter, _ delta: Int64) {
        guard figures.count > 0, products.map({ kept in product.map { kept.contains($0) } ?? false }) ?? true else {
            return
        }
        if counter.isSnapshot {
            let i = firstSnapshot(atOrAfter: instant)
            switch counter {
            case .live: counts[0][i] += delta
            case .active: counts[1][i] += delta
            case .trials: counts[2][i] += delta
            case .offers: counts[3][i] += delta
            case .inGracePeriod: counts[4][i] += delta
            case .inBillingRetry: counts[5][i] += delta
            case .unpriced: counts[6][i] += delta
            case .mrr(let currency):
                if mrr[currency] == nil { mrr[currency] = Array(repeating: 0, count: figures.count + 1) }
                mrr[currency]![i] = mrr[currency]![i].saturatingAdd(delta)
            case .priced(let currency):
                if priced[currency] == nil { priced[currency] = Array(repeating: 0, count: figures.count + 1) }
                priced[currency]![i] += delta
            default: break
            }
            return
        }
        guard instant >= boundaries[0], instant < boundaries[boundaries.count - 1] else { return }
        let b = firstSnapshot(atOrAfter: instant)
        let count = Int(clamping: delta)
        switch counter {
        case .new: figures[b].new += count
        case .renewals: figures[b].renewals += count
        case .reactivations: figures[b].reactivations += count
        case .trialsEnded: figures[b].trialsEnded += count
        case .trialsConverted: figures[b].trialsConverted += count
        case .refunds: figures[b].refunds += count
        case .reversals: figures[b].reversals += count
        case .purchases: figures[b].purchases += count
        case .churned(let reason):
            figures[b].churned[reason, default: 0] += count
            if figures[b].churned[reason] == 0 { figures[b].churned[reason] = nil }
        case .refunded(let currency):
            figures[b].refunded[currency] = figures[b].refunded[currency, default: 0].saturatingAdd(delta)
        case .cohort: cohorts[b] += count
        case .retained(let n):
            guard n >= 0, n < Metrics.retentionPeriods else { return }
            if retained[b].isEmpty { retained[b] = Array(repeating: 0, count: Metrics.retentionPeriods) }
            retained[b][n] += count
        default: break
        }
    }

    /// The buckets, their snapshots summed.
    public func buckets() -> [MetricBucket] {
        var out = figures
        var running = [Int64](repeating: 0, count: Self.fixedSnapshots)
        var runningMRR = mrr.mapValues { _ in Int64(0) }
        var runningPriced = priced.mapValues { _ in Int64(0) }
        for i in out.indices {
            for k in running.indices { running[k] += counts[k][i] }
            out[i].live = Int(running[0])
            out[i].active = Int(running[1])
            out[i].trials = Int(running[2])
            out[i].offers = Int(running[3])
            out[i].inGracePeriod = Int(running[4])
            out[i].inBillingRetry = Int(running[5])
            out[i].unpriced = Int(running[6])
            for (currency, differences) in mrr {
                runningMRR[currency]! = runningMRR[currency]!.saturatingAdd(differences[i])
            }
            for (currency, differences) in priced {
                runningPriced[currency]! += differences[i]
                if runningPriced[currency]! > 0 { out[i].mrr[currency] = runningMRR[currency] ?? 0 }
            }
            // A refund and its reversal in one bucket give nothing back: no amount is stated, as no churn is.
            out[i].refunded = out[i].refunded.filter { $0.value != 0 }
            if cohorts[i] > 0 {
                out[i].retained = retained[i].isEmpty ? Array(repeating: 0, count: Metrics.retentionPeriods) : retained[i]
            }
        }
        return out
    }

    /// The first bucket whose snapshot instant (`end - 1`) is at or after `instant` (`buckets.count`: none).
    private func firstSnapshot(atOrAfter instant: UnixMillis) -> Int {
        var low = 0
        var high = figures.count
        while low < high {
            let mid = (low + high) / 2
            if boundaries[mid + 1] - 1 >= instant { high = mid } else { low = mid + 1 }
        }
        return low
    }
}
