import Foundation
import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerTestSupport
import Testing

/// What Apple stated stays stated: the same two transactions reach the ledger as signed transactions (which state
/// price, currency and reason) and as a verifyReceipt response (which cannot), in either order. The receipt's copies
/// fold after the signed ones (it was created later), yet the periods keep Apple's price and reason, revenue counts
/// both, and the renewal after billing retry is a renewal, not a resubscribe.
@Suite struct FormatMergeStoryTests {
    static let day = AppleFixtures.day
    static let epoch = AppleFixtures.epoch
    static let otid = "2000000000000001"
    /// The renewal was charged three days after the first period ended: Apple retried billing meanwhile.
    static let renewalStart = epoch + 33 * day

    static let signedInputs: [[UInt8]] = [
        Array(AppleFixtures.signedTransaction(AppleFixtures.v2Transaction(
            transactionId: otid, originalTransactionId: otid, purchaseDate: epoch, expiresDate: epoch + 30 * day,
            signedDate: epoch, webOrderLineItemId: "3000000000000001", offerType: 1, offerIdentifier: nil,
            offerDiscountType: "PAY_AS_YOU_GO", price: 4990, currency: "EUR")).utf8),
        Array(AppleFixtures.signedTransaction(AppleFixtures.v2Transaction(
            transactionId: "2000000000000002", originalTransactionId: otid, purchaseDate: renewalStart,
            expiresDate: renewalStart + 30 * day, signedDate: renewalStart, webOrderLineItemId: "3000000000000002",
            transactionReason: "RENEWAL", price: 9990, currency: "EUR")).utf8),
    ]

    /// The app's verifyReceipt response a week into the renewal: both transactions, as Apple's older objects state
    /// them (an introductory offer, no price, no currency, no reason).
    static let receipt: [UInt8] = {
        let copies = [
            AppleFixtures.v1Transaction(
                transactionId: otid, originalTransactionId: otid, purchaseDate: epoch, expiresDate: epoch + 30 * day,
                webOrderLineItemId: "3000000000000001", isInIntroOfferPeriod: true),
            AppleFixtures.v1Transaction(
                transactionId: "2000000000000002", originalTransactionId: otid, purchaseDate: renewalStart,
                expiresDate: renewalStart + 30 * day, webOrderLineItemId: "3000000000000002"),
        ]
        return AppleFixtures.receiptIOS7(requestDate: renewalStart + 7 * day, inApp: copies, latest: copies)
    }()

    /// The answers that depend on what Apple stated of the two periods.
    struct Answers: Equatable {
        var terms: [[String?]]
        var offer: Offer?
        var renewal: [String?]
        var revenue: [String: Int64]
        var unpriced: Int
    }

    static func answers(receiptFirst: Bool) async throws -> Answers {
        let story = try StoryLedger("format-merge")
        defer { story.close() }
        let ledger = story.ledger
        let receipt = { () async throws in
            let results = try await story.ingest(Self.receipt, claimedBy: "u1", now: Self.renewalStart + 7 * Self.day)
            #expect(results.allSatisfy { $0.status == .appended }, "\(results.map(\.status))")
        }
        if receiptFirst { try await receipt() }
        for body in Self.signedInputs {
            let results = try await story.ingest(body, now: Self.renewalStart + Self.day)
            #expect(results.map(\.status) == [.appended])
        }
        if !receiptFirst { try await receipt() }

        let view = try #require(try ledger.timeline(OriginalTransactionID(Self.otid), at: Self.renewalStart + 8 * Self.day))
        let renewal = try ledger.lifecycleEvents(of: OriginalTransactionID(Self.otid), environment: .production)
            .last { $0.statement.transactionId == "2000000000000002" && $0.statement.type == .renewal }
        let revenue = try ledger.revenue(user: AppUserID("u1"))
        #expect(try ledger.audit.verify().ok)
        #expect(try ledger.audit.replay(check: true).differences.isEmpty)
        return Answers(
            terms: view.periods.map { [$0.price.map(String.init), $0.currency, $0.transactionReason] },
            offer: view.periods.first?.offer,
            renewal: [
                renewal?.statement.reason, renewal?.statement.price.map(String.init), renewal?.statement.currency,
            ],
            revenue: revenue.totals.mapValues(\.gross), unpriced: revenue.unpriced)
    }

    @Test func aReceiptCopyErasesNoPriceReasonOrOfferWhicheverComesFirst() async throws {
        let expected = Answers(
            terms: [["4990", "EUR", "PURCHASE"], ["9990", "EUR", "RENEWAL"]],
            offer: Offer(type: 1, discountType: "PAY_AS_YOU_GO"),
            renewal: [nil, "9990", "EUR"], revenue: ["EUR": 14_980], unpriced: 0)
        #expect(try await Self.answers(receiptFirst: false) == expected)
        #expect(try await Self.answers(receiptFirst: true) == expected)
    }

    /// The renewal info Apple signed states the next renewal's price and currency; the receipt's
    /// `pending_renewal_info` a day later cannot, and says the same of the rest. Whichever arrives first, the
    /// timeline after both tells the price the signed info stated.
    static func renewalPrice(receiptFirst: Bool) async throws -> [String?] {
        let story = try StoryLedger("format-merge-renewal")
        defer { story.close() }
        let ledger = story.ledger
        let notification = AppleFixtures.v2Notification(
            type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_ENABLED", signedDate: epoch + day,
            transaction: AppleFixtures.v2Transaction(
                transactionId: otid, originalTransactionId: otid, purchaseDate: epoch, expiresDate: epoch + 30 * day,
                signedDate: epoch + day, price: 4990, currency: "EUR"),
            renewal: AppleFixtures.v2Renewal(
                originalTransactionId: otid, signedDate: epoch + day,
                extra: ["renewalPrice": 5990, "currency": "EUR", "eligibleWinBackOfferIds": ["winback-1"]]))
        let copy = AppleFixtures.v1Transaction(
            transactionId: otid, originalTransactionId: otid, purchaseDate: epoch, expiresDate: epoch + 30 * day,
            webOrderLineItemId: "3000000000000001")
        let receipt = AppleFixtures.receiptIOS7(
            requestDate: epoch + 2 * day, inApp: [copy], latest: [copy],
            pending: [AppleFixtures.v1PendingRenewal(originalTransactionId: otid)])
        for body in receiptFirst ? [receipt, notification] : [notification, receipt] {
            let results = try await story.ingest(body, now: epoch + 3 * day)
            #expect(results.allSatisfy { $0.status == .appended }, "\(results.map(\.status))")
        }
        let view = try #require(try ledger.timeline(OriginalTransactionID(otid), at: epoch + 3 * day))
        #expect(try ledger.audit.replay(check: true).differences.isEmpty)
        return [
            view.renewalPrice.map(String.init), view.renewalCurrency, view.eligibleWinBackOfferIds?.joined(),
            view.autoRenew.map { "\($0)" },
        ]
    }

    @Test func aPendingRenewalInfoErasesNoRenewalPriceWhicheverComesFirst() async throws {
        let expected: [String?] = ["5990", "EUR", "winback-1", "true"]
        #expect(try await Self.renewalPrice(receiptFirst: false) == expected)
        #expect(try await Self.renewalPrice(receiptFirst: true) == expected)
    }
}
