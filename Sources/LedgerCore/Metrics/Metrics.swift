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
        contributions(of: t, restatingFrom: .min, roundedDown: { $0 }, add)
    }

    /// `contributions(of:_:)` with the changes dated before a window left out, but those of the counters that read
    /// later periods (`MetricCounter.isStatedWhole`: the cohort, its retention, trial conversions). The window
    /// begins at `from` or earlier (`round` of an instant, where the subscription was live just before, since a
    /// churn reads the lapse after it; the beginning of time when it was never live before), and that beginning is
    /// returned. When the timeline's states before `from` are those of an earlier timeline of the subscription and
    /// the periods begun before it are the same (`firstChange`), the earlier timeline's changes dated before the
    /// window (those stated whole left out), with these, are exactly `contributions(of:_:)`: a tail step restates
    /// its tail, not the whole timeline.
    /// - Complexity: O(instants in the window and the lapse before it × (periods and changes) + periods).
    @discardableResult
    public static func contributions(
        of t: Timeline, restatingFrom from: UnixMillis, roundedDown round: (UnixMillis) -> UnixMillis,
        _ add: (_ instant: UnixMillis, _ product: String?, _ counter: MetricCounter, _ delta: Int64) -> Void
    ) -> UnixMillis {
        guard t.productType == .autoRenewable else { return .min }
        let instants = changeInstants(t)
        let (start, w) = window(t, instants, from: from, round)
        // The states from the one before the window: its segment is what the window's first change differs from.
        let first = max(w - 1, 0)
        let states = instants[first...].map { t.status(at: $0) }
        func state(_ k: Int) -> StatusAt { states[k - first] }
        stateChanges(instants, from: w, first: first, state, add)
        movements(instants, from: w, first: first, state, add)
        periodChanges(t, instants, restatingFrom: start, first: first, state, add)
        return start
    }

    /// Where the window of `contributions(of:restatingFrom:roundedDown:_:)` begins, and its first instant's index.
    private static func window(
        _ t: Timeline, _ instants: [UnixMillis], from: UnixMillis, _ round: (UnixMillis) -> UnixMillis
    ) -> (start: UnixMillis, index: Int) {
        var start = from == .min ? UnixMillis.min : min(round(from), from)
        while start != .min {
            let w = firstIndex(instants, atOrAfter: start)
            guard w > 0 else { break }
            if t.status(at: instants[w - 1]).isLive { return (start, w) }
            // In a lapse: back to where it began, the instant after the last live state.
            var k = w - 1
            while k > 0, !t.status(at: instants[k - 1]).isLive { k -= 1 }
            guard k > 0 else { break }
            let earlier = round(instants[k])
            // Each turn moves back, or the window is the whole timeline.
            guard earlier < start else { break }
            start = earlier
        }
        return (.min, 0)
    }

    /// The index of the first of `instants` (ascending) at or after `instant`.
    private static func firstIndex(_ instants: [UnixMillis], atOrAfter instant: UnixMillis) -> Int {
        var low = 0
        var high = instants.count
        while low < high {
            let mid = (low + high) / 2
            if instants[mid] < instant { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Snapshots: a subscription's state is constant between the instants where it can change; each segment's
    /// counts are stated as their difference from the segment before, from segment `w` on.
    private static func stateChanges(
        _ instants: [UnixMillis], from w: Int, first: Int, _ state: (Int) -> StatusAt,
        _ add: (UnixMillis, String?, MetricCounter, Int64) -> Void
    ) {
        var before: [(product: String?, counter: MetricCounter, amount: Int64)] = []
        var now: [(product: String?, counter: MetricCounter, amount: Int64)] = []
        for k in first..<instants.count {
            let s = state(k)
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
            if k >= w {
                for c in now where !before.contains(where: { $0 == c }) { add(instants[k], c.product, c.counter, c.amount) }
                for c in before where !now.contains(where: { $0 == c }) { add(instants[k], c.product, c.counter, -c.amount) }
            }
            swap(&before, &now)
        }
    }

    /// Movements: where the subscription starts and stops being live, from instant `w` on (live just before it,
    /// when `w` > 0). A billing retry or grace period Apple states after the period's end begins at that end (the
    /// fold's `retryBegan`): a renewal that fails leaves no gap between live states.
    private static func movements(
        _ instants: [UnixMillis], from w: Int, first: Int, _ state: (Int) -> StatusAt,
        _ add: (UnixMillis, String?, MetricCounter, Int64) -> Void
    ) {
        func live(_ k: Int) -> Bool { state(k).isLive }
        var everLive = w > 0
        for k in w..<instants.count where live(k) != (k > 0 && live(k - 1)) {
            if live(k) {
                if everLive { add(instants[k], state(k).period?.productId, .reactivations, 1) }
                everLive = true
            } else {
                // Apple states why a moment after the expiry (an EXPIRED notification): the first reason
                // stated before the subscription is live again.
                var reason = ChurnReason.other
                var j = k
                while j < instants.count, !live(j) {
                    let r = ChurnReason(status: state(j))
                    if r != .other {
                        reason = r
                        break
                    }
                    j += 1
                }
                add(instants[k], state(k - 1).period?.productId, .churned(reason), 1)
            }
        }
    }

    /// What the periods add, from `start` on: renewals (a period begun while the subscription was live), new
    /// subscriptions, purchases, trials ended, refunds and their reversals, each dated at an instant of its own
    /// period. The cohort, its retention and trial conversions read later periods, and are stated whole.
    private static func periodChanges(
        _ t: Timeline, _ instants: [UnixMillis], restatingFrom start: UnixMillis, first: Int,
        _ state: (Int) -> StatusAt, _ add: (UnixMillis, String?, MetricCounter, Int64) -> Void
    ) {
        /// Whether the subscription was live just before `instant`, one of `instants` at or after `start`: the state
        /// of the segment before it (none before the first: nothing had begun).
        func liveBefore(_ instant: UnixMillis) -> Bool {
            let low = firstIndex(instants, atOrAfter: instant)
            return low > 0 && state(low - 1).isLive
        }
        let periods = t.periods.indices.dropFirst().allSatisfy { t.periods[$0 - 1].start <= t.periods[$0].start }
            ? t.periods : t.periods.sorted { $0.start < $1.start }
        if let first = periods.first {
            add(first.start, first.productId, .cohort, 1)
            for (n, p) in periods.prefix(retentionPeriods).enumerated() where p.openRevocation == nil {
                add(first.start, first.productId, .retained(n), 1)
            }
        }
        for (index, p) in periods.enumerated() {
            if p.offer?.isTrial == true, let end = p.end {
                if end >= start { add(end, p.productId, .trialsEnded, 1) }
                let converted = periods[(index + 1)...].contains {
                    $0.offer?.isTrial != true && $0.start < end.saturatingAdd(conversionWindow) && $0.openRevocation == nil
                }
                if converted { add(end, p.productId, .trialsConverted, 1) }
            }
            if p.start >= start {
                if p.terms?.ownershipType != "FAMILY_SHARED" { add(p.start, p.productId, .purchases, 1) }
                if index == 0 {
                    add(p.start, p.productId, .new, 1)
                } else if liveBefore(p.start) {
                    add(p.start, p.productId, .renewals, 1)
                }
            }
            // Refunds and their reversals of periods not shared through Family Sharing, a family member's revoke
            // left out; what they gave back as `Revenue` counts it, when the period states its price.
            guard !p.revocations.isEmpty, p.terms?.ownershipType != "FAMILY_SHARED" else { continue }
            let price = p.terms?.price
            let currency = p.terms?.currency
            for r in p.revocations where !r.isFamilyRevoke {
                let back = price.map { Lifecycle.refundedAmount(price: $0, revocation: r) }
                if r.date >= start {
                    add(r.date, p.productId, .refunds, 1)
                    if let back, let currency { add(r.date, p.productId, .refunded(currency), back) }
                }
                if let reversed = r.reversedAt, reversed >= start {
                    add(reversed, p.productId, .reversals, 1)
                    if let back, let currency { add(reversed, p.productId, .refunded(currency), 0 &- back) }
                }
            }
        }
    }

    /// The earliest instant at which the contributions of two timelines of one subscription may differ, nil when
    /// they cannot. `contributions` reads only their periods, stated changes and renewal state (owners, claims and
    /// tokens say who holds it, never what it is); the first element that differs in each list, and every element
    /// after it on either side, bound the instant from below with every instant they hold. So the states before
    /// it are equal, and so are the periods begun before it (what `contributions(of:restatingFrom:roundedDown:_:)`
    /// needs to restate only the rest).
    /// - Complexity: O(periods + stated changes) comparisons.
    public static func firstChange(_ a: Timeline, _ b: Timeline) -> UnixMillis? {
        var cut: UnixMillis?
        func bound(_ x: UnixMillis) { cut = min(cut ?? x, x) }
        func firstUnequal<T: Equatable>(_ x: [T], _ y: [T]) -> Int? {
            let n = min(x.count, y.count)
            var i = 0
            while i < n && x[i] == y[i] { i += 1 }
            return i < x.count || i < y.count ? i : nil
        }
        if let i = firstUnequal(a.periods, b.periods) {
            for periods in [a.periods, b.periods] {
                for p in periods[min(i, periods.count)...] {
                    bound(p.start)
                    if let end = p.end { bound(end) }
                    for r in p.revocations {
                        bound(r.date)
                        if let back = r.reversedAt { bound(back) }
                    }
                }
            }
        }
        if let i = firstUnequal(a.statedChanges, b.statedChanges) {
            for changes in [a.statedChanges, b.statedChanges] {
                for c in changes[min(i, changes.count)...] {
                    bound(c.at)
                    if let until = c.until { bound(until) }
                }
            }
        }
        if a.renewal != b.renewal {
            if let r = a.renewal { bound(r.at) }
            if let r = b.renewal { bound(r.at) }
        }
        return cut
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
