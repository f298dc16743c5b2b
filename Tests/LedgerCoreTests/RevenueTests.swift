import LedgerCore
import LedgerTestSupport
import Testing

/// Revenue: each period's price at its purchase date, refunds with their amount (prorated where Apple says
/// so), reversals, Family Sharing, the interval and the log position, currencies kept apart, the operator's rates.
@Suite struct RevenueTests {
    static let monthly = "com.example.premium.monthly"
    static let yearly = "com.example.premium.yearly"
    static let t0 = Scenario.utc(2024, 3, 1, 9)
    static let month = 31 * Scenario.day
    static let rules = FoldRules(
        catalog: Catalog(products: [
            monthly: ProductConfiguration(type: .autoRenewable, entitlements: ["premium"], group: "g1"),
            yearly: ProductConfiguration(type: .autoRenewable, entitlements: ["premium"], group: "g1"),
        ]))

    /// alice's monthly subscription: two periods at 9.99 USD (t0, t0 + month).
    static func twoMonths(otid: OriginalTransactionID = "1000", currency: String = "USD", price: Int64 = 9990)
        -> (Scenario, TransactionFact, TransactionFact)
    {
        var s = Scenario(otid: otid, rules: rules)
        let first = s.purchase("\(otid)1", product: monthly, at: t0, expires: t0 + month) {
            $0.price = price
            $0.currency = currency
        }
        s.claim("alice", at: t0)
        let second = s.purchase("\(otid)2", product: monthly, at: t0 + month, expires: t0 + 2 * month) {
            $0.price = price
            $0.currency = currency
        }
        return (s, first, second)
    }

    static func summary(
        _ timelines: [Timeline], from: UnixMillis? = nil, to: UnixMillis? = nil, user: AppUserID? = nil,
        product: String? = nil
    ) -> RevenueSummary {
        Revenue.summary(
            timelines: timelines, environment: .production, from: from, to: to, asOf: nil, user: user, product: product)
    }

    @Test func eachPeriodCountsItsPriceAtItsPurchaseDate() {
        let (s, _, _) = Self.twoMonths()
        let all = Self.summary([s.timeline()])
        #expect(all.totals["USD"]?.purchases == 2)
        #expect(all.totals["USD"]?.gross == 19_980)
        #expect(all.totals["USD"]?.net == 19_980)
        #expect(all.entries.map(\.at) == [Self.t0, Self.t0 + Self.month])
        #expect(all.entries.map(\.appUserId) == ["alice", "alice"])
        #expect(all.products[Self.monthly]?["USD"]?.gross == 19_980)
        // [from, to): the start is in, the end is out.
        #expect(Self.summary([s.timeline()], from: Self.t0, to: Self.t0 + Self.month).totals["USD"]?.gross == 9990)
        #expect(Self.summary([s.timeline()], from: Self.t0 + 1).totals["USD"]?.gross == 9990)
        #expect(Self.summary([s.timeline()], to: Self.t0).totals.isEmpty)
    }

    @Test func aFullRefundGivesThePriceBackAtItsDate() {
        var (s, _, second) = Self.twoMonths()
        let refunded = Self.t0 + Self.month + 3 * Scenario.day
        s.refund(second, at: refunded, type: "REFUND_FULL")
        let all = Self.summary([s.timeline()])
        #expect(all.totals["USD"]?.gross == 19_980)
        #expect(all.totals["USD"]?.refunds == 1)
        #expect(all.totals["USD"]?.refunded == 9990)
        #expect(all.totals["USD"]?.net == 9990)
        let refund = all.entries.last!
        #expect(refund.kind == .refund)
        #expect(refund.at == refunded)
        #expect(refund.amount == -9990)
        #expect(refund.transactionId == "10002")
        #expect(refund.revocationType == "REFUND_FULL")
        // Before the refund's date, nothing was given back.
        #expect(Self.summary([s.timeline()], to: refunded).totals["USD"]?.refunded == 0)
        // After the purchases, only the refund: negative net.
        #expect(Self.summary([s.timeline()], from: refunded).totals["USD"]?.net == -9990)
    }

    @Test func aProratedRefundGivesBackItsShare() {
        var (s, first, _) = Self.twoMonths()
        s.refund(first, at: Self.t0 + 10 * Scenario.day, type: "REFUND_PRORATED", percentage: 25_000)
        let all = Self.summary([s.timeline()])
        // 25% of 9.990, rounded toward zero: 2.497.
        #expect(all.totals["USD"]?.refunded == 2497)
        #expect(all.totals["USD"]?.net == 17_483)
        #expect(all.entries.first { $0.kind == .refund }?.percentage == 25_000)
    }

    @Test func aReversalRestoresTheRefundedAmount() {
        var (s, first, _) = Self.twoMonths()
        let refunded = Self.t0 + 10 * Scenario.day
        s.refund(first, at: refunded, type: "REFUND_PRORATED", percentage: 50_000)
        let beforeReversal = s.nextSeq - 1
        let reversed = Self.t0 + 20 * Scenario.day
        s.notification("REFUND_REVERSED", signed: reversed, transaction: "10001")
        let t = s.timeline()
        let all = Self.summary([t])
        #expect(all.totals["USD"]?.refunds == 1)
        #expect(all.totals["USD"]?.reversals == 1)
        #expect(all.totals["USD"]?.refunded == 0)
        #expect(all.totals["USD"]?.net == 19_980)
        #expect(all.entries.map(\.kind) == [.purchase, .refund, .refundReversed, .purchase])
        #expect(all.entries[2].at == reversed)
        #expect(all.entries[2].amount == 4995)
        // Over an interval that ends before the reversal, the refund stands.
        #expect(Self.summary([t], to: reversed).totals["USD"]?.refunded == 4995)
        // As known before the reversal arrived, at any interval.
        #expect(Self.summary([s.timeline(asOf: beforeReversal)]).totals["USD"]?.refunded == 4995)
    }

    @Test func asOfALogPositionTheLaterNewsIsNotKnown() {
        var (s, first, _) = Self.twoMonths()
        let afterPurchases = s.nextSeq - 1
        s.refund(first, at: Self.t0 + Scenario.day)
        let asOf = Revenue.summary(
            timelines: [s.timeline(asOf: afterPurchases)], environment: .production, from: nil, to: nil,
            asOf: afterPurchases)
        #expect(asOf.totals["USD"]?.refunded == 0)
        #expect(asOf.asOf == afterPurchases)
        #expect(Self.summary([s.timeline()]).totals["USD"]?.refunded == 9990)
    }

    @Test func aFamilySharedPeriodBringsTheMemberNothing() {
        // The organizer bought it (their own subscription); the member's copy is FAMILY_SHARED, then revoked.
        var organizer = Scenario(otid: "1000", rules: Self.rules)
        organizer.purchase("10001", product: Self.monthly, at: Self.t0, expires: Self.t0 + Self.month) {
            $0.price = 9990
            $0.currency = "USD"
            $0.inAppOwnershipType = "PURCHASED"
        }
        organizer.claim("olga", at: Self.t0)
        var member = Scenario(otid: "2000", rules: Self.rules)
        let shared = member.purchase("20001", product: Self.monthly, at: Self.t0, expires: Self.t0 + Self.month) {
            $0.price = 9990
            $0.currency = "USD"
            $0.inAppOwnershipType = "FAMILY_SHARED"
        }
        member.claim("max", at: Self.t0)
        member.refund(shared, at: Self.t0 + Scenario.day, reason: 0, type: "FAMILY_REVOKE")
        let timelines = [organizer.timeline(), member.timeline()]

        let max = Self.summary(timelines, user: "max")
        #expect(max.totals.isEmpty)
        #expect(max.entries.isEmpty)
        #expect(max.unpriced == 0, "a shared period is not an unknown price: it brought nothing")
        let olga = Self.summary(timelines, user: "olga")
        #expect(olga.totals["USD"]?.gross == 9990)
        let all = Self.summary(timelines)
        #expect(all.totals["USD"]?.purchases == 1)
        #expect(all.totals["USD"]?.refunded == 0, "a Family Sharing revoke is not a refund")
    }

    @Test func currenciesAreNeverAddedTogether() {
        let (usd, _, _) = Self.twoMonths(otid: "1000", currency: "USD", price: 9990)
        var eur = Scenario(otid: "2000", rules: Self.rules)
        eur.purchase("20001", product: Self.yearly, at: Self.t0, expires: Self.t0 + 365 * Scenario.day) {
            $0.price = 89_990
            $0.currency = "EUR"
        }
        eur.claim("bob", at: Self.t0)
        let all = Self.summary([usd.timeline(), eur.timeline()])
        #expect(Set(all.totals.keys) == ["USD", "EUR"])
        #expect(all.totals["USD"]?.gross == 19_980)
        #expect(all.totals["EUR"]?.gross == 89_990)
        #expect(all.products[Self.yearly] == ["EUR": all.totals["EUR"]!])
        #expect(all.products[Self.monthly]?["EUR"] == nil)
        #expect(Self.summary([usd.timeline(), eur.timeline()], product: Self.yearly).totals.keys.sorted() == ["EUR"])
        #expect(Self.summary([usd.timeline(), eur.timeline()], user: "bob").totals.keys.sorted() == ["EUR"])

        // The operator's rates convert; a currency without one stays out, named.
        let rates = ExchangeRates(currency: "EUR", micros: ["USD": 920_000])
        let converted = all.converted(by: rates)
        #expect(converted.gross == 89_990 + 18_382)  // 19.980 USD × 0.92 = 18.3816 → 18.382 EUR
        #expect(converted.unconverted.isEmpty)
        #expect(converted.rates == ["EUR": 1_000_000, "USD": 920_000])
        let partial = all.converted(by: ExchangeRates(currency: "GBP", micros: ["USD": 790_000]))
        #expect(partial.gross == 15_784)  // 19.980 × 0.79 = 15.7842
        #expect(partial.unconverted == ["EUR"])
    }

    @Test func aPeriodWithoutAStatedPriceIsCountedNotGuessed() {
        var s = Scenario(otid: "1000", rules: Self.rules)
        s.v1Transaction("10001", product: Self.monthly, purchased: Self.t0, expires: Self.t0 + Self.month, observed: Self.t0)
        s.claim("alice", at: Self.t0)
        let all = Self.summary([s.timeline()])
        #expect(all.totals.isEmpty)
        #expect(all.unpriced == 1)
        #expect(Self.summary([s.timeline()], from: Self.t0 + 1).unpriced == 0)
    }

    @Test func aPeriodBelongsToWhoeverOwnedItWhenBought() {
        var (s, first, _) = Self.twoMonths()
        // bob takes the subscription over between the two periods (transfer policy); alice's refund stays hers.
        s.claim("bob", at: Self.t0 + 20 * Scenario.day)
        s.refund(first, at: Self.t0 + 25 * Scenario.day)
        let t = s.timeline()
        let alice = Self.summary([t], user: "alice")
        #expect(alice.entries.map(\.transactionId) == ["10001", "10001"])
        #expect(alice.totals["USD"]?.net == 0)
        let bob = Self.summary([t], user: "bob")
        #expect(bob.entries.map(\.transactionId) == ["10002"])
        #expect(bob.entries.map(\.appUserId) == ["bob"])
        #expect(bob.totals["USD"]?.net == 9990)
    }
}
