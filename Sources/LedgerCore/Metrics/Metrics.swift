// MARK: - Subscription metrics over buckets of valid time

/// Why a subscription stopped being live (`Metrics`): the expiry's reason as Apple states it (an EXPIRED
/// notification's subtype, else the renewal info's `expirationIntent`), or a refund or revoke.
public enum ChurnReason: String, Hashable, Sendable, CaseIterable {
    /// The customer turned auto-renew off (`VOLUNTARY`).
    case voluntary
    /// Billing retry ended without a payment (`BILLING_RETRY`).
    case billing
    /// The customer did not consent to a price increase (`PRICE_INCREASE`).
    case priceIncrease = "price_increase"
    /// The period that was live was refunded or revoked.
    case refunded
    /// Any other reason Apple states (`PRODUCT_NOT_FOR_SALE`, `OTHER`), or none.
    case other

    init(status: StatusAt) {
        if status.status == .revoked {
            self = .refunded
            return
        }
        switch status.expirationReason {
        case "VOLUNTARY": self = .voluntary
        case "BILLING_RETRY": self = .billing
        case "PRICE_INCREASE": self = .priceIncrease
        default: self = .other
        }
    }
}

/// The figures of one bucket `[start, end)` of valid time. The counts of subscriptions (`active` …
/// `inBillingRetry`) and `mrr` are a snapshot at the bucket's last instant (`end - 1`); the movements are the
/// changes whose instant lies in the bucket.
public struct MetricBucket: Hashable, Sendable {
    public var start: UnixMillis
    public var end: UnixMillis

    /// Auto-renewable subscriptions live at the snapshot: active, in their grace period or in billing retry.
    public var live = 0
    /// Of those, active (a period covers the instant, unrevoked).
    public var active = 0
    /// Of the active, in a free trial (`offer.isTrial`), and on another introductory or promotional offer.
    public var trials = 0
    public var offers = 0
    public var inGracePeriod = 0
    public var inBillingRetry = 0

    /// Subscriptions whose first period began in the bucket.
    public var new = 0
    /// Periods after a subscription's first that began in the bucket while it was live (renewals, and the new
    /// product's period of an upgrade, downgrade or crossgrade).
    public var renewals = 0
    /// Subscriptions that became live again in the bucket after they had churned.
    public var reactivations = 0
    /// Subscriptions that stopped being live in the bucket, by reason.
    public var churned: [ChurnReason: Int] = [:]
    /// Free trials that ended in the bucket, and of those, the ones a paid period followed (within 60 days: a
    /// billing retry that recovers converts too).
    public var trialsEnded = 0
    public var trialsConverted = 0
    /// Monthly recurring revenue at the snapshot: each active or grace-period subscription's period price
    /// normalised to a month (`price × 30.436875 days ÷ the period's length`), per currency, in milliunits. A
    /// period shared through Family Sharing brings nothing; a period without a stated price is counted in
    /// `unpriced`, never guessed.
    public var mrr: [String: Int64] = [:]
    public var unpriced = 0
    /// Renewal retention of the cohort whose first period began in the bucket: how many of its subscriptions
    /// reached their first, second, … period (up to `Metrics.retentionPeriods`), a refunded period not counted.
    /// `retained[0]` is the cohort's size (its first periods not refunded).
    public var retained: [Int] = []
    /// Refunds dated in the bucket, and what they gave back per currency (milliunits), as `Revenue` counts them;
    /// reversals of refunds, and what they restored.
    public var refunds = 0
    public var refunded: [String: Int64] = [:]
    public var reversals = 0

    public init(start: UnixMillis, end: UnixMillis) {
        self.start = start
        self.end = end
    }

    /// All subscriptions churned in the bucket.
    public var churnedTotal: Int { churned.values.reduce(0, +) }

    /// `mrr` in the operator's currency: the sum of the currencies `rates` converts, and how many it does not.
    public func mrr(in rates: ExchangeRates) -> (amount: Int64, unconverted: Int) {
        var total: Int64 = 0
        var unconverted = 0
        for (currency, amount) in mrr {
            if let c = rates.convert(amount, from: currency) { total = total.saturatingAdd(c) } else { unconverted += 1 }
        }
        return (total, unconverted)
    }
}

public enum Metrics {
    /// The average month, in milliseconds (365.2425 days ÷ 12), the unit MRR normalises to.
    public static let month: UnixMillis = 2_629_746_000

    /// The period numbers renewal retention follows.
    public static let retentionPeriods = 24

    /// How long after a free trial's end a paid period still counts as its conversion.
    public static let conversionWindow: UnixMillis = 60 * 86_400_000

    /// The figures of `timelines` (of `environment`, of `product` when given) for each bucket between consecutive
    /// `boundaries` (ascending). Every figure is folded here from the timelines as given: the caller decides the log
    /// position they are known at.
    /// - Complexity: O(Σ over subscriptions of (instants where its state can change × (its periods and changes +
    ///   log buckets)) + buckets × currencies): a snapshot costs nothing per bucket a state spans.
    public static func series(
        timelines: [Timeline], environment: AppStoreEnvironment, boundaries: [UnixMillis], product: String? = nil
    ) -> [MetricBucket] {
        guard boundaries.count >= 2 else { return [] }
        var buckets = zip(boundaries, boundaries.dropFirst()).map { MetricBucket(start: $0, end: $1) }
        func matches(_ p: Period?) -> Bool { product.map { p?.productId == $0 } ?? true }

        // Snapshots: a subscription's state is constant between the instants where it can change, so each segment
        // adds to the snapshots of the buckets whose last instant it holds, as differences summed once at the end.
        var counts = [[Int]](repeating: [Int](repeating: 0, count: buckets.count + 1), count: Snapshot.allCases.count)
        var mrr: [String: [Int64]] = [:]
        var unpriced = [Int](repeating: 0, count: buckets.count + 1)
        var priced: [String: [Int]] = [:]
        /// The first bucket whose snapshot instant (`end - 1`) is at or after `instant` (`buckets.count`: none).
        func firstSnapshot(atOrAfter instant: UnixMillis) -> Int {
            var low = 0
            var high = buckets.count
            while low < high {
                let mid = (low + high) / 2
                if boundaries[mid + 1] - 1 >= instant { high = mid } else { low = mid + 1 }
            }
            return low
        }
        /// The bucket holding `instant`, if any: the first whose last instant is not before it (buckets are
        /// contiguous).
        func bucket(_ instant: UnixMillis) -> Int? {
            guard instant >= boundaries[0], instant < boundaries[boundaries.count - 1] else { return nil }
            return firstSnapshot(atOrAfter: instant)
        }
        /// The buckets whose snapshot instant lies in `[from, to)` (`to` nil: no end).
        func snapshots(from: UnixMillis, to: UnixMillis?) -> Range<Int> {
            let lower = firstSnapshot(atOrAfter: from)
            return lower..<max(lower, to.map(firstSnapshot(atOrAfter:)) ?? buckets.count)
        }

        for t in timelines where t.environment == environment && t.productType == .autoRenewable {
            let instants = changeInstants(t)
            let states = instants.map { t.status(at: $0) }
            for k in states.indices where matches(states[k].period) {
                let range = snapshots(from: instants[k], to: k + 1 < instants.count ? instants[k + 1] : nil)
                guard !range.isEmpty else { continue }
                let s = states[k]
                func add(_ what: Snapshot) {
                    counts[what.rawValue][range.lowerBound] += 1
                    counts[what.rawValue][range.upperBound] -= 1
                }
                switch s.status {
                case .active:
                    add(.live)
                    add(.active)
                    if let offer = s.period?.offer { add(offer.isTrial ? .trials : .offers) }
                case .inGracePeriod:
                    add(.live)
                    add(.inGracePeriod)
                case .inBillingRetry:
                    add(.live)
                    add(.inBillingRetry)
                case .expired, .revoked:
                    continue
                }
                if s.status != .inBillingRetry, let p = s.period {
                    if let (currency, amount) = monthly(p) {
                        mrr[currency, default: [Int64](repeating: 0, count: buckets.count + 1)][range.lowerBound] += amount
                        mrr[currency]![range.upperBound] -= amount
                        priced[currency, default: [Int](repeating: 0, count: buckets.count + 1)][range.lowerBound] += 1
                        priced[currency]![range.upperBound] -= 1
                    } else if p.terms?.ownershipType != "FAMILY_SHARED" {
                        unpriced[range.lowerBound] += 1
                        unpriced[range.upperBound] -= 1
                    }
                }
            }

            // Movements: where the subscription starts and stops being live.
            // A billing retry or grace period Apple states after the period's end begins at that end (the fold's
            // `retryBegan`): a renewal that fails leaves no gap between live states.
            let live = states.map(\.isLive)
            /// Whether the subscription was live just before `instant`, one of `instants`: the state of the segment
            /// before it (none before the first: nothing had begun).
            func liveBefore(_ instant: UnixMillis) -> Bool {
                var low = 0
                var high = instants.count
                while low < high {
                    let mid = (low + high) / 2
                    if instants[mid] < instant { low = mid + 1 } else { high = mid }
                }
                return low > 0 && live[low - 1]
            }
            var everLive = false
            for k in instants.indices where live[k] != (k > 0 && live[k - 1]) {
                if live[k] {
                    if everLive, matches(states[k].period), let b = bucket(instants[k]) { buckets[b].reactivations += 1 }
                    everLive = true
                } else if matches(states[k - 1].period), let b = bucket(instants[k]) {
                    // Apple states why a moment after the expiry (an EXPIRED notification): the first reason
                    // stated before the subscription is live again.
                    let lapse = states[k..<(live[k...].firstIndex(of: true) ?? live.count)]
                    let reason = lapse.lazy.map(ChurnReason.init(status:)).first { $0 != .other } ?? .other
                    buckets[b].churned[reason, default: 0] += 1
                }
            }

            let periods = t.periods.sorted { $0.start < $1.start }
            if let first = periods.first, matches(first), let cohort = bucket(first.start) {
                if buckets[cohort].retained.isEmpty { buckets[cohort].retained = Array(repeating: 0, count: retentionPeriods) }
                for (n, p) in periods.prefix(retentionPeriods).enumerated() where p.openRevocation == nil {
                    buckets[cohort].retained[n] += 1
                }
            }
            for (index, p) in periods.enumerated() where matches(p) {
                if let b = bucket(p.start) {
                    if index == 0 {
                        buckets[b].new += 1
                    } else if liveBefore(p.start) {
                        buckets[b].renewals += 1
                    }
                }
                if p.offer?.isTrial == true, let end = p.end, let b = bucket(end) {
                    buckets[b].trialsEnded += 1
                    let converted = periods[(index + 1)...].contains {
                        $0.offer?.isTrial != true && $0.start < end.saturatingAdd(conversionWindow)
                            && $0.openRevocation == nil
                    }
                    if converted { buckets[b].trialsConverted += 1 }
                }
                for e in Revenue.entries(of: p, in: t, buyer: nil) ?? [] where e.kind != .purchase {
                    guard let b = bucket(e.at) else { continue }
                    if e.kind == .refund {
                        buckets[b].refunds += 1
                        buckets[b].refunded[e.currency, default: 0] =
                            buckets[b].refunded[e.currency, default: 0].saturatingAdd(-e.amount)
                    } else {
                        buckets[b].reversals += 1
                        buckets[b].refunded[e.currency, default: 0] =
                            buckets[b].refunded[e.currency, default: 0].saturatingSubtract(e.amount)
                    }
                }
            }
        }
        var running = [Int](repeating: 0, count: Snapshot.allCases.count)
        var runningMRR = mrr.mapValues { _ in Int64(0) }
        var runningPriced = priced.mapValues { _ in 0 }
        var runningUnpriced = 0
        for i in buckets.indices {
            for what in Snapshot.allCases { running[what.rawValue] += counts[what.rawValue][i] }
            buckets[i].live = running[Snapshot.live.rawValue]
            buckets[i].active = running[Snapshot.active.rawValue]
            buckets[i].trials = running[Snapshot.trials.rawValue]
            buckets[i].offers = running[Snapshot.offers.rawValue]
            buckets[i].inGracePeriod = running[Snapshot.inGracePeriod.rawValue]
            buckets[i].inBillingRetry = running[Snapshot.inBillingRetry.rawValue]
            for (currency, differences) in mrr {
                runningMRR[currency]! = runningMRR[currency]!.saturatingAdd(differences[i])
                runningPriced[currency]! += priced[currency]![i]
                if runningPriced[currency]! > 0 { buckets[i].mrr[currency] = runningMRR[currency]! }
            }
            runningUnpriced += unpriced[i]
            buckets[i].unpriced = runningUnpriced
        }
        return buckets
    }

    /// The states a snapshot counts.
    enum Snapshot: Int, CaseIterable {
        case live, active, trials, offers, inGracePeriod, inBillingRetry
    }

    /// `p`'s price per average month in its currency; nil when Apple stated no price (or the period has no end), or
    /// when it was shared through Family Sharing.
    static func monthly(_ p: Period) -> (currency: String, amount: Int64)? {
        guard p.terms?.ownershipType != "FAMILY_SHARED", let price = p.terms?.price, let currency = p.terms?.currency,
            let end = p.end, end > p.start
        else { return nil }
        let amount = (Int128(price) * Int128(month) + Int128(end - p.start) / 2) / Int128(end - p.start)
        return (currency, Int64(clamping: amount))
    }

    /// The instants at which `t`'s state can change, ascending: every period's start and end, every revocation and
    /// its reversal, every stated change and the end of a grace period it states, the renewal info (its expiration
    /// intent says why an expiry happened).
    static func changeInstants(_ t: Timeline) -> [UnixMillis] {
        var instants: [UnixMillis] = []
        for p in t.periods {
            instants.append(p.start)
            if let end = p.end { instants.append(end) }
            for r in p.revocations {
                instants.append(r.date)
                if let reversed = r.reversedAt { instants.append(reversed) }
            }
        }
        for c in t.statedChanges {
            instants.append(c.at)
            if let until = c.until { instants.append(until) }
        }
        if let renewal = t.renewal { instants.append(renewal.at) }
        return Array(Set(instants)).sorted()
    }
}

extension StatusAt {
    /// Active, in the grace period or in billing retry: a subscription a business still counts.
    public var isLive: Bool { status == .active || status == .inGracePeriod || status == .inBillingRetry }
}
