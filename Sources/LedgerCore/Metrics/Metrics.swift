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
    /// Refunds dated in the bucket (of any period but one shared through Family Sharing), and what they gave back per
    /// currency (milliunits) as `Revenue` counts them when the period states its price;
    /// reversals of refunds, and what they restored (a currency whose refunds and reversals cancel is left out).
    public var refunds = 0
    public var refunded: [String: Int64] = [:]
    public var reversals = 0
    /// Periods that began in the bucket (every purchase and renewal, a period shared through Family Sharing
    /// excepted): what a refund rate divides by.
    public var purchases = 0

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
        var figures = [MetricAccumulator(boundaries: boundaries, product: product)]
        sum(timelines, environment: environment, into: &figures)
        return figures[0].buckets()
    }

    /// Every change of `timelines` of `environment` added to each of `figures` (several sets of buckets folded from
    /// one pass over the timelines).
    public static func sum(
        _ timelines: some Sequence<Timeline>, environment: AppStoreEnvironment, into figures: inout [MetricAccumulator]
    ) {
        for t in timelines where t.environment == environment {
            contributions(of: t) { instant, product, counter, delta in
                for i in figures.indices { figures[i].add(instant, product: product, counter, delta) }
            }
        }
    }

    /// What one subscription adds to the figures, as changes at instants of valid time: `add(instant, product,
    /// counter, delta)`. A snapshot counter's change holds from its instant on (a state's segment adds at its start
    /// and takes back at its end, and only the differences between consecutive segments are stated); a movement
    /// happened at its instant. Summing every subscription's changes into buckets (`MetricAccumulator`) gives
    /// `series`; summing them by day is the figures the store maintains as it appends (the sum of the changes of
    /// the timeline after an input less those of the timeline before).
    /// - Complexity: O(instants where its state can change × (its periods and changes)).
    public static func contributions(
        of t: Timeline, _ add: (_ instant: UnixMillis, _ product: String?, _ counter: MetricCounter, _ delta: Int64) -> Void
    ) {
        guard t.productType == .autoRenewable else { return }
        let instants = changeInstants(t)
        let states = instants.map { t.status(at: $0) }

        // Snapshots: a subscription's state is constant between the instants where it can change; each segment's
        // counts are stated as their difference from the segment before.
        var before: [(product: String?, counter: MetricCounter, amount: Int64)] = []
        var now: [(product: String?, counter: MetricCounter, amount: Int64)] = []
        for k in states.indices {
            let s = states[k]
            let product = s.period?.productId
            now.removeAll(keepingCapacity: true)
            switch s.status {
            case .active:
                now.append((product, .live, 1))
                now.append((product, .active, 1))
                if let offer = s.period?.offer { now.append((product, offer.isTrial ? .trials : .offers, 1)) }
            case .inGracePeriod:
                now.append((product, .live, 1))
                now.append((product, .inGracePeriod, 1))
            case .inBillingRetry:
                now.append((product, .live, 1))
                now.append((product, .inBillingRetry, 1))
            case .expired, .revoked:
                break
            }
            if s.isLive, s.status != .inBillingRetry, let p = s.period {
                if let (currency, amount) = monthly(p) {
                    now.append((product, .mrr(currency), amount))
                    now.append((product, .priced(currency), 1))
                } else if p.terms?.ownershipType != "FAMILY_SHARED" {
                    now.append((product, .unpriced, 1))
                }
            }
            for c in now where !before.contains(where: { $0 == c }) { add(instants[k], c.product, c.counter, c.amount) }
            for c in before where !now.contains(where: { $0 == c }) { add(instants[k], c.product, c.counter, -c.amount) }
            swap(&before, &now)
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
                if everLive { add(instants[k], states[k].period?.productId, .reactivations, 1) }
                everLive = true
            } else {
                // Apple states why a moment after the expiry (an EXPIRED notification): the first reason
                // stated before the subscription is live again.
                let lapse = states[k..<(live[k...].firstIndex(of: true) ?? live.count)]
                let reason = lapse.lazy.map(ChurnReason.init(status:)).first { $0 != .other } ?? .other
                add(instants[k], states[k - 1].period?.productId, .churned(reason), 1)
            }
        }

        let periods = t.periods.sorted { $0.start < $1.start }
        if let first = periods.first {
            add(first.start, first.productId, .cohort, 1)
            for (n, p) in periods.prefix(retentionPeriods).enumerated() where p.openRevocation == nil {
                add(first.start, first.productId, .retained(n), 1)
            }
        }
        for (index, p) in periods.enumerated() {
            if p.terms?.ownershipType != "FAMILY_SHARED" { add(p.start, p.productId, .purchases, 1) }
            if index == 0 {
                add(p.start, p.productId, .new, 1)
            } else if liveBefore(p.start) {
                add(p.start, p.productId, .renewals, 1)
            }
            if p.offer?.isTrial == true, let end = p.end {
                add(end, p.productId, .trialsEnded, 1)
                let converted = periods[(index + 1)...].contains {
                    $0.offer?.isTrial != true && $0.start < end.saturatingAdd(conversionWindow) && $0.openRevocation == nil
                }
                if converted { add(end, p.productId, .trialsConverted, 1) }
            }
            // Refunds and their reversals of periods not shared through Family Sharing, a family member's revoke
            // left out; what they gave back as `Revenue` counts it, when the period states its price.
            guard !p.revocations.isEmpty, p.terms?.ownershipType != "FAMILY_SHARED" else { continue }
            let price = p.terms?.price
            let currency = p.terms?.currency
            for r in p.revocations where !r.isFamilyRevoke {
                add(r.date, p.productId, .refunds, 1)
                if let reversed = r.reversedAt { add(reversed, p.productId, .reversals, 1) }
                guard let price, let currency else { continue }
                let back = Lifecycle.refundedAmount(price: price, revocation: r)
                add(r.date, p.productId, .refunded(currency), back)
                if let reversed = r.reversedAt { add(reversed, p.productId, .refunded(currency), 0 &- back) }
            }
        }
    }

    /// Whether two timelines of one subscription make the same contributions: `contributions` reads only their
    /// periods, stated changes and renewal state, so a change of owners, claims or tokens (who holds it, never what
    /// it is) changes no figure and leaves nothing for the maintained sums to do.
    public static func contributeAlike(_ a: Timeline, _ b: Timeline) -> Bool {
        a.periods == b.periods && a.statedChanges == b.statedChanges && a.renewal == b.renewal
    }

    /// `p`'s price per average month in its currency; nil when Apple stated no price (or the period has no end), or
    /// when it was shared through Family Sharing. The price bought the whole billed period: the old side of an
    /// upgrade ends early, but its price is still spread over the length it was billed for (to its `expiresDate`),
    /// or a year upgraded after a week would count as a year's price per week.
    static func monthly(_ p: Period) -> (currency: String, amount: Int64)? {
        guard p.terms?.ownershipType != "FAMILY_SHARED", let price = p.terms?.price, let currency = p.terms?.currency,
            let end = p.end, end > p.start, let billedUntil = p.billedUntil
        else { return nil }
        let length = Int128(billedUntil) - Int128(p.start)
        let amount = (Int128(price) * Int128(month) + length / 2) / length
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
        instants.sort()
        var kept = 0
        for i in instants.indices where kept == 0 || instants[i] != instants[kept - 1] {
            instants[kept] = instants[i]
            kept += 1
        }
        instants.removeLast(instants.count - kept)
        return instants
    }
}

extension StatusAt {
    /// Active, in the grace period or in billing retry: a subscription a business still counts.
    public var isLive: Bool { status == .active || status == .inGracePeriod || status == .inBillingRetry }
}
