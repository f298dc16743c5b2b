import LedgerCodec
@testable import LedgerCore
import LedgerTestSupport
import Testing

/// The fold builds a new period in one go (`Period(bought:)`), where a revision goes through `take` and
/// `applyRevocation(of:at:seq:)`: the two must agree on every field, whatever the transaction states, or a period would
/// depend on whether it was first seen new or revised.
@Suite struct PeriodTests {
    static let rules = FoldRules(
        catalog: Catalog(products: [
            "pass.month": ProductConfiguration(type: .nonRenewing, duration: CalendarDuration(months: 1)),
            "coins": ProductConfiguration(type: .consumable),
        ]))

    /// Transactions with every field the fold reads drawn at random (present or absent).
    static func transaction(_ rng: inout SplitMix64) -> TransactionFact {
        func maybe<T>(_ value: T) -> T? { rng.next() % 3 == 0 ? nil : value }
        let purchase = 1_700_000_000_000 + Int64(rng.next() % 1_000_000_000)
        let products = ["com.example.premium.monthly", "pass.month", "coins", "lifetime"]
        var t = TransactionFact(
            transactionId: TransactionID("\(2_000_000_000_000_000 + rng.next() % 1_000_000)"),
            originalTransactionId: "2000000000000001", productId: products[Int(rng.next() % 4)], purchaseDate: purchase)
        t.webOrderLineItemId = maybe("\(3_000_000_000_000_000 + rng.next() % 1_000_000)")
        t.expiresDate = maybe(purchase + 30 * 86_400_000)
        t.originalPurchaseDate = maybe(purchase - Int64(rng.next() % 1_000_000))
        t.quantity = maybe(Int64(1 + rng.next() % 3))
        t.type = maybe(ProductType.allCases[Int(rng.next() % 4)])
        t.isUpgraded = maybe(rng.next() % 2 == 0)
        t.revocationDate = maybe(purchase + Int64(rng.next() % 1_000_000))
        t.revocationReason = maybe(Int64(rng.next() % 2))
        t.revocationType = maybe(["REFUND_FULL", "REFUND_PRORATED", "FAMILY_REVOKE"][Int(rng.next() % 3)])
        t.revocationPercentage = maybe(Int64(rng.next() % 100_000))
        t.offerType = maybe(Int64(1 + rng.next() % 4))
        t.offerIdentifier = maybe("offer-\(rng.next() % 5)")
        t.offerDiscountType = maybe(["FREE_TRIAL", "PAY_AS_YOU_GO", "PAY_UP_FRONT"][Int(rng.next() % 3)])
        t.isTrialPeriod = maybe(rng.next() % 2 == 0)
        t.isInIntroOfferPeriod = maybe(rng.next() % 2 == 0)
        return t
    }

    @Test func aNewPeriodEqualsOneTakenAndWalkedFromTheSameTransaction() {
        var rng = SplitMix64(seed: 4)
        for _ in 0..<2_000 {
            let t = Self.transaction(&rng)
            let seq = rng.next() % 1_000
            let instant = t.purchaseDate + 1
            var walked = Period(transactionId: t.transactionId, productId: t.productId, start: t.purchaseDate, seq: seq)
            walked.take(t, rules: Self.rules, format: .signed)
            walked.applyRevocation(of: t, at: instant, seq: seq)
            let bought = Period(bought: t, seq: seq, rules: Self.rules)
            #expect(bought == walked, "\(t)")
        }
    }

    @Test func consecutivePeriodsWithTheSameTermsShareThemAndEncodeAsIfTheyDidNot() throws {
        func renewal(_ i: Int64, price: Int64) -> TransactionFact {
            var t = TransactionFact(
                transactionId: TransactionID("20000000000\(i)"), originalTransactionId: OriginalTransactionID("200000000001"),
                productId: "com.example.monthly", purchaseDate: 1_700_000_000_000 + i * 2_592_000_000)
            t.expiresDate = t.purchaseDate + 2_592_000_000
            t.transactionReason = i == 0 ? "PURCHASE" : "RENEWAL"
            t.price = price
            t.currency = "EUR"
            return t
        }
        let first = Period(bought: renewal(0, price: 4_990), seq: 1, rules: Self.rules)
        let second = Period(bought: renewal(1, price: 4_990), seq: 2, rules: Self.rules, previousTerms: first.terms)
        let third = Period(bought: renewal(2, price: 4_990), seq: 3, rules: Self.rules, previousTerms: second.terms)
        let raised = Period(bought: renewal(3, price: 5_990), seq: 4, rules: Self.rules, previousTerms: third.terms)
        // The reason differs from the purchase to the first renewal; then the terms repeat until the price rises.
        #expect(first.terms !== second.terms)
        #expect(second.terms === third.terms)
        #expect(raised.terms !== third.terms)
        #expect(raised.terms?.price == 5_990 && raised.terms?.currency == "EUR")
        #expect(third.terms?.transactionReason == "RENEWAL" && third.terms?.price == 4_990)
        #expect(Period(bought: renewal(2, price: 4_990), seq: 3, rules: Self.rules) == third)

        // A timeline whose periods share terms encodes to the bytes of one whose periods each have their own, and
        // decodes to periods that share them again.
        var shared = Timeline(originalTransactionId: OriginalTransactionID("200000000001"), environment: .production)
        shared.periods = [first, second, third, raised]
        var separate = shared
        separate.periods = (0..<4).map { i in
            Period(bought: renewal(Int64(i), price: i == 3 ? 5_990 : 4_990), seq: UInt64(i + 1), rules: Self.rules)
        }
        #expect(separate.periods[1].terms !== separate.periods[2].terms)
        #expect(shared.encoded() == separate.encoded())
        let decoded = try Timeline(decoding: separate.encoded())
        #expect(decoded.periods == shared.periods)
        #expect(decoded.periods[1].terms === decoded.periods[2].terms)
    }

    /// The decoder takes a period's terms from the period before when its record ends in the same bytes (without
    /// reading them): only then. Terms that differ in one byte of the price, in a currency's length, or are absent in
    /// between are read, and every period decodes to what was encoded.
    @Test func decodedPeriodsReuseTheTermsOfThePeriodBeforeOnlyWhenTheirBytesRepeat() throws {
        func period(_ i: Int64, price: Int64?, currency: String?, reason: String? = "RENEWAL") -> Period {
            var t = TransactionFact(
                transactionId: TransactionID("20000000000\(i)"), originalTransactionId: OriginalTransactionID("200000000001"),
                productId: "com.example.monthly", purchaseDate: 1_700_000_000_000 + i * 2_592_000_000)
            t.expiresDate = t.purchaseDate + 2_592_000_000
            t.transactionReason = reason
            t.price = price
            t.currency = currency
            return Period(bought: t, seq: UInt64(i + 1), rules: Self.rules)
        }
        var timeline = Timeline(originalTransactionId: OriginalTransactionID("200000000001"), environment: .production)
        timeline.periods = [
            period(0, price: 4_990, currency: "EUR"), period(1, price: 4_990, currency: "EUR"),
            period(2, price: 4_991, currency: "EUR"), period(3, price: nil, currency: nil, reason: nil),
            period(4, price: 4_991, currency: "EUR"), period(5, price: 4_991, currency: "EURO"),
            period(6, price: 4_991, currency: "EURO"), period(7, price: 4_991, currency: "EUR"),
        ]
        let bytes = timeline.encoded()
        let decoded = try Timeline(decoding: bytes)
        #expect(decoded.periods == timeline.periods)
        #expect(decoded.periods.map { $0.terms?.price } == [4_990, 4_990, 4_991, nil, 4_991, 4_991, 4_991, 4_991])
        #expect(decoded.periods.map { $0.terms?.currency } == ["EUR", "EUR", "EUR", nil, "EUR", "EURO", "EURO", "EUR"])
        #expect(decoded.periods[0].terms === decoded.periods[1].terms)
        #expect(decoded.periods[5].terms === decoded.periods[6].terms)
        #expect(decoded.periods[1].terms !== decoded.periods[2].terms)
        #expect(decoded.encoded() == bytes)
    }
}
