import LedgerAppStore
import LedgerCore
import LedgerTestSupport
import LedgerErrors
import Testing

// MARK: - verifyReceipt responses

@Suite("verifyReceipt responses")
struct ReceiptDecodingTests {
    typealias F = AppleFixtures

    @Test("iOS 7 shape: in_app and latest_receipt_info deduplicated, renewal info, request date, extras kept")
    func ios7() throws {
        let first = F.v1Transaction(
            transactionId: "1000000000000001", isTrialPeriod: true, extra: ["future_field": ["a": 1]])
        let renewal = F.v1Transaction(
            transactionId: "1000000000000002", purchaseDate: F.epoch + 30 * F.day,
            originalPurchaseDate: F.epoch, expiresDate: F.epoch + 60 * F.day, webOrderLineItemId: "1000000000000102",
            promotionalOfferId: "winback10")
        let refunded = F.v1Transaction(
            transactionId: "1000000000000003", purchaseDate: F.epoch + 60 * F.day, originalPurchaseDate: F.epoch,
            expiresDate: F.epoch + 90 * F.day, webOrderLineItemId: "1000000000000103",
            cancellationDate: F.epoch + 61 * F.day, cancellationReason: "1")
        let body = F.receiptIOS7(
            inApp: [first], latest: [first, renewal, refunded],
            pending: [F.v1PendingRenewal(autoRenewProductId: F.yearly, autoRenewStatus: false, expirationIntent: 1)])
        let input = try decode(body)

        #expect(input.type == .receipt)
        #expect(input.metadata.source == .receipt)
        #expect(input.metadata.signature == .unsigned)
        #expect(input.metadata.observedAt == F.epoch + 5 * F.minute)
        #expect(input.metadata.receivedAt == receivedAt)
        #expect(input.transactions.map(\.transactionId.rawValue) == ["1000000000000001", "1000000000000002", "1000000000000003"])

        let t1 = input.transactions[0]
        #expect(t1.originalTransactionId == "1000000000000001")
        #expect(t1.productId == F.monthly)
        #expect(t1.purchaseDate == F.epoch)
        #expect(t1.expiresDate == F.epoch + 30 * F.day)
        #expect(t1.signedDate == nil)
        #expect(t1.bundleId == F.bundleId)
        #expect(t1.environment == .production)
        #expect(t1.isTrialPeriod == true)
        #expect(t1.offerType == 1)
        #expect(t1.quantity == 1)
        #expect(t1.webOrderLineItemId == "1000000000000101")
        #expect(t1.inAppOwnershipType == "PURCHASED")
        #expect(t1.subscriptionGroupIdentifier == "20567304")
        #expect(t1.extra == ["future_field": #"{"a":1}"#])

        let t2 = input.transactions[1]
        #expect(t2.offerType == 2)
        #expect(t2.offerIdentifier == "winback10")
        #expect(t2.originalPurchaseDate == F.epoch)

        let t3 = input.transactions[2]
        #expect(t3.revocationDate == F.epoch + 61 * F.day)
        #expect(t3.revocationReason == 1)
        #expect(t3.isRefundLike)

        let r = try #require(input.renewals.first)
        #expect(input.renewals.count == 1)
        #expect(r.originalTransactionId == "1000000000000001")
        #expect(r.autoRenewStatus == false)
        #expect(r.autoRenewProductId == F.yearly)
        #expect(r.expirationIntent == 1)
        #expect(input.bindings.isEmpty)
    }

    @Test("iOS 6 shape with status 21006 reads latest_expired_receipt_info; expires_date is milliseconds")
    func ios6Expired() throws {
        let original = F.v1Transaction(
            transactionId: "1000000588936659", originalTransactionId: "1000000588936659", productId: "10000001",
            purchaseDate: 1_573_049_528_000, expiresDate: 1_573_049_708_000, style: .ios6)
        let latest = F.v1Transaction(
            transactionId: "1000000590411796", originalTransactionId: "1000000588936659", productId: "10000001",
            purchaseDate: 1_573_453_748_000, originalPurchaseDate: 1_573_049_528_000, expiresDate: 1_573_453_928_000,
            webOrderLineItemId: "1000000048147451", style: .ios6)
        let input = try decode(F.receiptIOS6(status: 21006, receipt: original, latestExpired: latest))
        #expect(input.transactions.count == 2)
        let t = try #require(input.transactions.last)
        #expect(t.transactionId == "1000000590411796")
        #expect(t.originalTransactionId == "1000000588936659")
        #expect(t.expiresDate == 1_573_453_928_000)
        #expect(t.purchaseDate == 1_573_453_748_000)
        #expect(t.bundleId == F.bundleId)
        #expect(t.extra["item_id"] == #""1486579372""#)
        #expect(t.extra["expires_date_formatted"] == nil)
        #expect(input.metadata.observedAt == receivedAt)
    }

    @Test("iOS 6 shape with status 0 reads latest_receipt_info as one object")
    func ios6Active() throws {
        let t = F.v1Transaction(transactionId: "1000000000000009", style: .ios6)
        let input = try decode(F.receiptIOS6(receipt: t, latest: t))
        #expect(input.transactions.count == 1)
        #expect(input.transactions[0].expiresDate == F.epoch + 30 * F.day)
    }

    @Test("Formatted GMT dates are used when the _ms fields are absent")
    func formattedDates() throws {
        let t = F.v1Transaction(
            purchaseDate: 1_543_480_166_000, expiresDate: 1_543_480_466_000, cancellationDate: 1_543_480_200_000,
            style: .formattedOnly)
        let input = try decode(F.receiptIOS7(inApp: [t]))
        let fact = try #require(input.transactions.first)
        #expect(fact.purchaseDate == 1_543_480_166_000)
        #expect(fact.expiresDate == 1_543_480_466_000)
        #expect(fact.revocationDate == 1_543_480_200_000)
        #expect(F.gmt(1_543_480_166_000) == "2018-11-29 08:29:26 Etc/GMT")
    }

    @Test("Upgrade: is_upgraded with a cancellation date is not a refund")
    func upgrade() throws {
        let old = F.v1Transaction(
            transactionId: "1000000000000001", cancellationDate: F.epoch + F.day, isUpgraded: true)
        let fact = try #require(try decode(F.receiptIOS7(inApp: [old])).transactions.first)
        #expect(fact.isUpgraded == true)
        #expect(fact.revocationDate == F.epoch + F.day)
        #expect(!fact.isRefundLike)
    }

    @Test("Offer code and intro offer map to offer types 3 and 1")
    func offers() throws {
        let code = F.v1Transaction(transactionId: "1", offerCodeRefName: "SPRING")
        let intro = F.v1Transaction(transactionId: "2", isInIntroOfferPeriod: true)
        let input = try decode(F.receiptIOS7(inApp: [code, intro]))
        #expect(input.transactions[0].offerType == 3)
        #expect(input.transactions[0].offerIdentifier == "SPRING")
        #expect(input.transactions[1].offerType == 1)
        #expect(input.transactions[1].isInIntroOfferPeriod == true)
    }

    @Test("Sandbox receipts are Sandbox facts; refused by a production-only configuration")
    func sandbox() throws {
        let body = F.receiptIOS7(environment: "Sandbox", inApp: [F.v1Transaction()])
        #expect(try decode(body).transactions.first?.environment == .sandbox)
        let error = refusal(body, with: trustingDecoder(environments: [.production]))
        #expect(error?.code == "environment_not_accepted")
    }

    @Test("A receipt for another bundle is refused")
    func wrongBundle() {
        let refused0 = refusal(F.receiptIOS7(bundleId: "com.other.app", inApp: [F.v1Transaction()]))
        #expect(refused0?.code == "wrong_bundle")
    }

    @Test(
        "Every non-success status is refused with its own code",
        arguments: [
            (21000, "receipt_status_21000"), (21001, "receipt_status_21001"), (21002, "receipt_status_21002"),
            (21003, "receipt_status_21003"), (21004, "receipt_status_21004"), (21005, "receipt_status_21005"),
            (21007, "wrong_environment_21007"), (21008, "wrong_environment_21008"), (21009, "receipt_status_21009"),
            (21010, "receipt_status_21010"), (21100, "receipt_status_21100"), (21199, "receipt_status_21199"),
            (42, "receipt_status_42"),
        ])
    func statuses(status: Int, code: String) throws {
        let refused1 = refusal(F.receiptStatus(status))
        let error = try #require(refused1)
        #expect(error.code.rawValue == code)
        #expect(error.message.contains(String(status)))
        if status == 21007 { #expect(error.message.contains("sandbox")) }
    }

    @Test("Wrong types and missing ids name the field")
    func fieldErrors() throws {
        let badDate = F.v1Transaction(extra: ["purchase_date_ms": "yesterday"])
        let refused2 = refusal(F.receiptIOS7(inApp: [badDate]))
        let e1 = try #require(refused2)
        #expect(e1.code == "wrong_type")
        #expect(e1.message.contains("purchase_date_ms"))

        var noId = F.v1Transaction()
        noId["transaction_id"] = nil
        let refused3 = refusal(F.receiptIOS7(inApp: [noId]))
        let e2 = try #require(refused3)
        #expect(e2.code == "missing_field")
        #expect(e2.message.contains("transaction_id"))

        let badBool = F.v1Transaction(extra: ["is_trial_period": "maybe"])
        let refused4 = refusal(F.receiptIOS7(inApp: [badBool]))
        #expect(refused4?.code == "wrong_type")

        let refused5 = refusal(F.json(["receipt": ["in_app": []]]), type: .receipt)
        #expect(refused5?.code == "missing_field")
    }

    @Test("appUserId on a receipt claims every OTID it names once, at the request date")
    func claims() throws {
        let a = F.v1Transaction(transactionId: "11", originalTransactionId: "11")
        let a2 = F.v1Transaction(transactionId: "12", originalTransactionId: "11", purchaseDate: F.epoch + F.day)
        let b = F.v1Transaction(transactionId: "21", originalTransactionId: "21", productId: "com.example.gems")
        let input = try decode(F.receiptIOS7(inApp: [a, a2, b]), appUserId: "u1")
        #expect(input.metadata.appUserId == "u1")
        #expect(input.bindings.map(\.originalTransactionId.rawValue) == ["11", "21"])
        #expect(input.bindings.allSatisfy { $0.cause == .claim && $0.appUserId == "u1" })
        #expect(input.bindings.allSatisfy { $0.claimedAt == F.epoch + 5 * F.minute })
    }
}
