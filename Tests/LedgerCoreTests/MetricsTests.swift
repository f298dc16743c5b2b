import LedgerCore
import LedgerTestSupport
import Testing

/// Subscription metrics on stories with known answers: a trial that converts, a late refund restating an earlier
/// month, a billing retry that recovers and one that churns, a voluntary churn and a reactivation, Family Sharing, two
/// currencies, the product filter.
@Suite struct MetricsTests {
    static let monthly = "com.example.premium.monthly"
    static let yearly = "com.example.premium.yearly"
    static let rules = FoldRules(
        catalog: Catalog(products: [
            monthly: ProductConfiguration(type: .autoRenewable, entitlements: ["premium"], group: "g1"),
            yearly: ProductConfiguration(type: .autoRenewable, entitlements: ["premium"], group: "g1"),
        ]))
    static let day = Scenario.day

    /// Month buckets of 2024, January to June.
    static let months = (1...7).map { Scenario.utc(2024, Int64($0), 1) }

    static func series(_ stories: [Scenario], product: String? = nil, asOf: UInt64? = nil) -> [MetricBucket] {
        Metrics.series(
            timelines: stories.map { asOf.map($0.timeline(asOf:)) ?? $0.timeline() }, environment: .production,
            boundaries: months, product: product)
    }

    /// A monthly subscription bought on the 10th of `month` at `price` in `currency`, renewed `renewals` times.
    static func subscriber(
        _ otid: String, from month: Int64, renewals: Int, price: Int64 = 9990, currency: String = "USD",
        product: String = monthly, _ adjust: (inout TransactionFact) -> Void = { _ in }
    ) -> (Scenario, [TransactionFact]) {
        var s = Scenario(otid: OriginalTransactionID(otid), rules: rules)
        var facts: [TransactionFact] = []
        for k in 0...Int64(renewals) {
            let start = Scenario.utc(2024, month + k, 10)
            let end = Scenario.utc(2024, month + k + 1, 10)
            facts.append(
                s.purchase("\(otid)-\(k)", product: product, at: start, expires: end) {
                    $0.price = price
                    $0.currency = currency
                    adjust(&$0)
                })
        }
        s.claim("user-\(otid)", at: Scenario.utc(2024, month, 10))
        return (s, facts)
    }

    /// Every one of the timeline's contributions, for comparing two timelines' whole figures.
    static func contributions(_ t: Timeline) -> [String] {
        var all: [String] = []
        Metrics.contributions(of: t) { instant, product, counter, delta in all.append("\(instant) \(product ?? "-") \(counter) \(delta)") }
        return all.sorted()
    }

    /// The write path leaves the maintained metrics alone when `firstChange` finds none, and has them restated from
    /// the instant it finds: a claim by another user moves the owner and no figure; a renewal changes them from its
    /// period's start (the lapse it ends), a refund from its date.
    @Test func aClaimChangesNoContributionAndARenewalOrARefundChangesThemFromTheirInstant() {
        var (s, _) = Self.subscriber("1", from: 1, renewals: 1)
        let before = s.timeline()
        s.claim("someone-else", at: Scenario.utc(2024, 2, 20))
        let claimed = s.timeline()
        #expect(claimed.owners != before.owners, "the claim moved the owner")
        #expect(Metrics.firstChange(before, claimed) == nil)
        #expect(Self.contributions(before) == Self.contributions(claimed))

        let third = s.purchase("1-2", product: Self.monthly, at: Scenario.utc(2024, 3, 10), expires: Scenario.utc(2024, 4, 10)) {
            $0.price = 9990
            $0.currency = "USD"
        }
        let renewed = s.timeline()
        #expect(Metrics.firstChange(claimed, renewed) == Scenario.utc(2024, 3, 10))
        #expect(Self.contributions(claimed) != Self.contributions(renewed))

        s.refund(third, at: Scenario.utc(2024, 3, 15))
        let refunded = s.timeline()
        #expect(Metrics.firstChange(renewed, refunded) == Scenario.utc(2024, 3, 10))
        #expect(Self.contributions(renewed) != Self.contributions(refunded))
    }

    @Test func newRenewalsAndActiveCountsFollowThePeriods() {
        // Bought 10 January, renewed in February and March, then nothing: it lapses on 10 April.
        let (s, _) = Self.subscriber("1", from: 1, renewals: 2)
        let b = Self.series([s])
        #expect(b.map(\.new) == [1, 0, 0, 0, 0, 0])
        #expect(b.map(\.renewals) == [0, 1, 1, 0, 0, 0])
        #expect(b.map(\.active) == [1, 1, 1, 0, 0, 0])
        #expect(b.map(\.live) == [1, 1, 1, 0, 0, 0])
        #expect(b.map(\.churnedTotal) == [0, 0, 0, 1, 0, 0])
        #expect(b[3].churned == [.other: 1], "no reason was stated")
        // MRR: 9.99 a month over a period of 31, 29, 31 days, normalised to the average month.
        #expect(b[0].mrr["USD"] == (9990 * Metrics.month + 31 * Self.day / 2) / (31 * Self.day))
        #expect(b[1].mrr["USD"] == (9990 * Metrics.month + 29 * Self.day / 2) / (29 * Self.day))
        #expect(b[3].mrr.isEmpty)
    }

    @Test func aTrialThatConvertsCountsInTheMonthItEnds() {
        var s = Scenario(otid: "2", rules: Self.rules)
        let start = Scenario.utc(2024, 1, 25)
        let trialEnd = Scenario.utc(2024, 2, 1, 12)
        s.purchase("2-0", product: Self.monthly, at: start, expires: trialEnd) {
            $0.offerType = 1
            $0.offerDiscountType = "FREE_TRIAL"
            $0.price = 0
            $0.currency = "USD"
        }
        s.purchase("2-1", product: Self.monthly, at: trialEnd, expires: Scenario.utc(2024, 3, 1, 12)) {
            $0.price = 9990
            $0.currency = "USD"
        }
        // A second trial that lapses.
        var lapsed = Scenario(otid: "3", rules: Self.rules)
        lapsed.purchase("3-0", product: Self.monthly, at: start, expires: Scenario.utc(2024, 2, 2)) {
            $0.offerType = 1
            $0.offerDiscountType = "FREE_TRIAL"
        }
        let b = Self.series([s, lapsed])
        #expect(b[0].trials == 2 && b[0].active == 2, "both in their trial at the end of January")
        #expect(b[1].trialsEnded == 2 && b[1].trialsConverted == 1)
        #expect(b[1].renewals == 1, "the paid period continues the trial")
        #expect(b[1].active == 1 && b[1].trials == 0)
        #expect(b[1].churnedTotal == 1)
        #expect(b[0].mrr["USD"] == 0, "a free trial brings nothing")
    }

    @Test func aLateRefundRestatesTheMonthItIsDatedInAsOfTheLogPosition() {
        var (s, facts) = Self.subscriber("4", from: 1, renewals: 2)
        let before = s.nextSeq - 1
        // Told in April (after the March figures were read), dated 20 February: February's period refunded.
        s.refund(facts[1], at: Scenario.utc(2024, 2, 20))
        let then = Self.series([s], asOf: before)
        let now = Self.series([s])
        #expect(then[1].refunds == 0 && then[1].active == 1)
        #expect(now[1].refunds == 1 && now[1].refunded["USD"] == 9990)
        #expect(now.map(\.purchases) == then.map(\.purchases) && now[1].purchases == 1, "February's renewal, refunded or not")
        #expect(now[1].active == 0 && now[1].churned == [.refunded: 1], "the refund ended access in February")
        #expect(now[2].reactivations == 1 && now[2].active == 1, "March's renewal brought it back")
        // January's own figures stand; its cohort's retention is restated (its second period was refunded).
        var january = now[0]
        january.retained = then[0].retained
        #expect(then[0] == january)
        #expect(Array(then[0].retained.prefix(3)) == [1, 1, 1] && Array(now[0].retained.prefix(3)) == [1, 0, 1])
    }

    @Test func aBillingRetryThatRecoversIsNoChurn() {
        var s = Scenario(otid: "5", rules: Self.rules)
        let end = Scenario.utc(2024, 2, 10)
        s.purchase("5-0", product: Self.monthly, at: Scenario.utc(2024, 1, 10), expires: end)
        s.notification("DID_FAIL_TO_RENEW", signed: end + 5 * Scenario.minute)
        let recovered = Scenario.utc(2024, 3, 3)
        s.purchase("5-1", product: Self.monthly, at: recovered, expires: Scenario.utc(2024, 4, 3))
        s.notification("DID_RENEW", subtype: "BILLING_RECOVERY", signed: recovered)
        let b = Self.series([s])
        #expect(b[1].inBillingRetry == 1 && b[1].live == 1 && b[1].active == 0)
        #expect(b[1].mrr.isEmpty, "nothing is paid during billing retry")
        #expect(b.map(\.churnedTotal) == [0, 0, 0, 1, 0, 0], "only when April's period lapses")
        #expect(b[2].renewals == 1 && b[2].reactivations == 0)
    }

    @Test func expiriesAreChurnedByTheirStatedReason() {
        var voluntary = Scenario(otid: "6", rules: Self.rules)
        let end = Scenario.utc(2024, 2, 10)
        voluntary.purchase("6-0", product: Self.monthly, at: Scenario.utc(2024, 1, 10), expires: end)
        voluntary.notification("DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", signed: end - Self.day)
        voluntary.notification("EXPIRED", subtype: "VOLUNTARY", signed: end + Scenario.minute)
        var billing = Scenario(otid: "7", rules: Self.rules)
        billing.purchase("7-0", product: Self.monthly, at: Scenario.utc(2024, 1, 10), expires: end)
        billing.notification("DID_FAIL_TO_RENEW", signed: end + Scenario.minute)
        billing.notification("EXPIRED", subtype: "BILLING_RETRY", signed: Scenario.utc(2024, 3, 20))
        let b = Self.series([voluntary, billing])
        #expect(b[1].churned == [.voluntary: 1])
        #expect(b[1].inBillingRetry == 1)
        #expect(b[2].churned == [.billing: 1])
        #expect(b[2].live == 0)
    }

    @Test func familySharingAndCurrenciesAreKeptApart() {
        let (usd, _) = Self.subscriber("8", from: 1, renewals: 0, price: 9990, currency: "USD")
        let (eur, _) = Self.subscriber("9", from: 1, renewals: 0, price: 8990, currency: "EUR")
        let (family, _) = Self.subscriber("10", from: 1, renewals: 0) { $0.inAppOwnershipType = "FAMILY_SHARED" }
        let (unpriced, _) = Self.subscriber("11", from: 1, renewals: 0) {
            $0.price = nil
            $0.currency = nil
        }
        let b = Self.series([usd, eur, family, unpriced])
        #expect(b[0].active == 4)
        let january = 31 * Self.day
        #expect(b[0].mrr == [
            "USD": (9990 * Metrics.month + january / 2) / january, "EUR": (8990 * Metrics.month + january / 2) / january,
        ])
        #expect(b[0].unpriced == 1, "the family-shared period brings nothing and is not unpriced")
    }

    /// The snapshots, spread over buckets as differences, against each bucket's state asked directly, by day over
    /// half a year of every story above.
    @Test func snapshotsEqualTheStateAtEachBucketsLastInstant() {
        var stories = [
            Self.subscriber("20", from: 1, renewals: 2).0, Self.subscriber("21", from: 2, renewals: 0).0,
            Self.subscriber("22", from: 1, renewals: 1) { $0.inAppOwnershipType = "FAMILY_SHARED" }.0,
        ]
        var (refunded, facts) = Self.subscriber("23", from: 1, renewals: 3, currency: "EUR")
        refunded.refund(facts[1], at: Scenario.utc(2024, 2, 20))
        stories.append(refunded)
        var retry = Scenario(otid: "24", rules: Self.rules)
        retry.purchase("24-0", product: Self.monthly, at: Scenario.utc(2024, 1, 10), expires: Scenario.utc(2024, 2, 10)) {
            $0.offerType = 1
            $0.offerDiscountType = "FREE_TRIAL"
        }
        retry.notification("DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", signed: Scenario.utc(2024, 2, 10, 1))
        retry.renewalInfo(signed: Scenario.utc(2024, 2, 10, 2), product: Self.monthly) {
            $0.isInBillingRetryPeriod = true
            $0.gracePeriodExpiresDate = Scenario.utc(2024, 2, 16)
        }
        stories.append(retry)
        let days = (0...182).map { Scenario.utc(2024, 1, 1) + Int64($0) * Self.day }
        let timelines = stories.map { $0.timeline() }
        let buckets = Metrics.series(timelines: timelines, environment: .production, boundaries: days)
        for b in buckets {
            let states = timelines.map { $0.status(at: b.end - 1) }
            let active = states.filter { $0.status == .active }
            #expect(b.live == states.filter(\.isLive).count, "\(b.start)")
            #expect(b.active == active.count, "\(b.start)")
            #expect(b.trials == active.filter { $0.period?.offer?.isTrial == true }.count, "\(b.start)")
            #expect(b.inGracePeriod == states.filter { $0.status == .inGracePeriod }.count, "\(b.start)")
            #expect(b.inBillingRetry == states.filter { $0.status == .inBillingRetry }.count, "\(b.start)")
            var mrr: [String: Int64] = [:]
            for s in states where s.status == .active || s.status == .inGracePeriod {
                guard let p = s.period, p.terms?.ownershipType != "FAMILY_SHARED", let price = p.terms?.price,
                    let currency = p.terms?.currency, let end = p.end
                else { continue }
                mrr[currency, default: 0] += (price * Metrics.month + (end - p.start) / 2) / (end - p.start)
            }
            #expect(b.mrr == mrr, "\(b.start)")
        }
        #expect(buckets.contains { $0.inGracePeriod == 1 } && buckets.contains { $0.live == 0 })
    }

    @Test func retentionFollowsEachCohortToItsLaterPeriods() {
        // January's cohort: one renewed twice (3 periods), one never renewed, one whose second period was refunded.
        let (a, _) = Self.subscriber("30", from: 1, renewals: 2)
        let (b, _) = Self.subscriber("31", from: 1, renewals: 0)
        var (c, facts) = Self.subscriber("32", from: 1, renewals: 2)
        c.refund(facts[1], at: Scenario.utc(2024, 2, 15))
        // February's cohort: one renewed once.
        let (d, _) = Self.subscriber("33", from: 2, renewals: 1)
        let buckets = Self.series([a, b, c, d])
        #expect(Array(buckets[0].retained.prefix(4)) == [3, 1, 2, 0], "3 began; 1 reached its 2nd period (the other 2nd was refunded); 2 their 3rd")
        #expect(Array(buckets[1].retained.prefix(3)) == [1, 1, 0])
        #expect(buckets[2].retained.isEmpty, "no cohort began in March")
    }

    @Test func theProductFilterCountsThatProductsPeriodsOnly() {
        let (m, _) = Self.subscriber("12", from: 1, renewals: 1)
        let (y, _) = Self.subscriber("13", from: 2, renewals: 0, product: Self.yearly)
        #expect(Self.series([m, y], product: Self.yearly).map(\.new) == [0, 1, 0, 0, 0, 0])
        #expect(Self.series([m, y], product: Self.monthly).map(\.active) == [1, 1, 0, 0, 0, 0])
        #expect(Self.series([m, y]).map(\.active) == [1, 2, 0, 0, 0, 0])
    }
}
