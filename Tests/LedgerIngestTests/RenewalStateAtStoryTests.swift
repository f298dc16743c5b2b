import Foundation
import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerTestSupport
import Testing

/// The renewal state at a past instant is the state then, not the latest renewal info's. A yearly subscriber picks
/// the monthly plan on day 5 (a downgrade, pending until the renewal), Apple announces a price increase on day 10,
/// the customer takes the downgrade back on day 20 and turns auto-renew off on day 25. Each notification carries the
/// renewal info of its moment; the timeline keeps the latest, yet asked for day 7 or day 12 it must say what was true
/// then — and the same whichever order the notifications arrive in.
@Suite struct RenewalStateAtStoryTests {
    static let day = AppleFixtures.day
    static let epoch = AppleFixtures.epoch
    static let otid = "2000000000000001"
    static let yearly = AppleFixtures.yearly
    static let monthly = AppleFixtures.monthly

    static let purchase = Array(AppleFixtures.signedTransaction(AppleFixtures.v2Transaction(
        transactionId: otid, originalTransactionId: otid, productId: yearly, purchaseDate: epoch,
        expiresDate: epoch + 365 * day, signedDate: epoch)).utf8)

    /// A V2 notification signed on `day`, carrying the purchase and a renewal info of that instant.
    static func notification(
        _ n: Int, type: String, subtype: String?, onDay d: Int64, renewsInto: String, autoRenew: Int64 = 1,
        priceIncreaseStatus: Int64? = nil
    ) -> [UInt8] {
        let at = epoch + d * day
        return AppleFixtures.v2Notification(
            type: type, subtype: subtype, notificationUUID: "9d3a5f0e-1c2b-4e6f-8a7b-00000000000\(n)", signedDate: at,
            transaction: AppleFixtures.v2Transaction(
                transactionId: otid, originalTransactionId: otid, productId: yearly, purchaseDate: epoch,
                expiresDate: epoch + 365 * day, signedDate: at),
            renewal: AppleFixtures.v2Renewal(
                originalTransactionId: otid, productId: yearly, autoRenewProductId: renewsInto,
                autoRenewStatus: autoRenew, priceIncreaseStatus: priceIncreaseStatus,
                renewalDate: epoch + 365 * day, signedDate: at))
    }

    static let notifications: [[UInt8]] = [
        notification(1, type: "DID_CHANGE_RENEWAL_PREF", subtype: "DOWNGRADE", onDay: 5, renewsInto: monthly),
        notification(
            2, type: "PRICE_INCREASE", subtype: "PENDING", onDay: 10, renewsInto: monthly, priceIncreaseStatus: 0),
        notification(
            3, type: "DID_CHANGE_RENEWAL_PREF", subtype: nil, onDay: 20, renewsInto: yearly, priceIncreaseStatus: 0),
        notification(
            4, type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", onDay: 25, renewsInto: yearly,
            autoRenew: 0, priceIncreaseStatus: 0),
    ]

    struct RenewalAnswer: Equatable, CustomStringConvertible {
        var autoRenew: Bool?
        var pending: String?
        var priceIncrease: Int64?
        var description: String { "autoRenew \(String(describing: autoRenew)) pending \(pending ?? "-") price \(String(describing: priceIncrease))" }
    }

    /// The timeline's renewal answers on days 3, 7, 12, 22 and 27, after the notifications arrived in `order`.
    static func answers(order: [Int]) async throws -> [RenewalAnswer] {
        let story = try StoryLedger("renewal-at")
        defer { story.close() }
        let ledger = story.ledger
        let now = epoch + 30 * day
        #expect(try await story.ingest(purchase, claimedBy: "u1", now: now).allSatisfy { $0.status == .appended })
        for i in order {
            let results = try await story.ingest(notifications[i], now: now)
            #expect(results.allSatisfy { $0.status == .appended || $0.status == .duplicate }, "\(results.map(\.status))")
        }
        #expect(try ledger.audit.verify().ok)
        #expect(try ledger.audit.replay(check: true).differences.isEmpty)
        // The customer's answer tells the same: renewing until day 25, when auto-renew was seen turned off.
        for (d, renews, detected) in [(7, true, nil), (22, true, nil), (27, false, epoch + 25 * day)] as [(Int64, Bool, Int64?)] {
            let premium = try ledger.customer(AppUserID("u1"), at: epoch + d * day).entitlements[yearly]
            #expect(premium?.willRenew == renews && premium?.unsubscribeDetectedAt == detected, "day \(d): \(String(describing: premium))")
        }
        return try ([3, 7, 12, 22, 27] as [Int64]).map { d in
            let view = try #require(try ledger.timeline(OriginalTransactionID(otid), at: epoch + d * day))
            return RenewalAnswer(
                autoRenew: view.autoRenew, pending: view.pendingProductId, priceIncrease: view.priceIncreaseStatus)
        }
    }

    @Test func aPastInstantTellsTheRenewalStateThenInEveryArrivalOrder() async throws {
        let expected = [
            // Before any notification: the purchase says it renews, nothing more.
            RenewalAnswer(autoRenew: true, pending: nil, priceIncrease: nil),
            RenewalAnswer(autoRenew: true, pending: Self.monthly, priceIncrease: nil),
            RenewalAnswer(autoRenew: true, pending: Self.monthly, priceIncrease: 0),
            RenewalAnswer(autoRenew: true, pending: nil, priceIncrease: 0),
            RenewalAnswer(autoRenew: false, pending: nil, priceIncrease: 0),
        ]
        for order in [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]] {
            let answers = try await Self.answers(order: order)
            #expect(answers == expected, "order \(order)")
        }
    }
}
