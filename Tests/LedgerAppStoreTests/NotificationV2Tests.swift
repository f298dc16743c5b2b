import LedgerAppStore
import LedgerCore
import LedgerTestSupport
import LedgerErrors
import Testing

// MARK: - V2 server notifications

@Suite("V2 server notifications")
struct NotificationV2Tests {
    typealias F = AppleFixtures

    struct Kind: CustomTestStringConvertible, Sendable {
        var type: String
        var subtype: String?
        var testDescription: String { subtype.map { "\(type)/\($0)" } ?? type }
    }

    static let kinds = AppleFixtures.v2NotificationTypes.map { Kind(type: $0.type, subtype: $0.subtype) }

    @Test("Every type and subtype decodes to the facts it states", arguments: kinds)
    func everyType(kind: Kind) throws {
        let refund = ["REFUND", "REVOKE"].contains(kind.type)
        let transaction = F.v2Transaction(
            transactionId: "2000000000000009", originalTransactionId: "2000000000000001",
            purchaseDate: F.epoch + 30 * F.day, expiresDate: F.epoch + 60 * F.day, signedDate: F.epoch + 31 * F.day,
            revocationDate: refund ? F.epoch + 31 * F.day : nil, revocationReason: refund ? 1 : nil,
            revocationType: refund ? (kind.type == "REVOKE" ? "FAMILY_REVOKE" : "REFUND_FULL") : nil,
            offerType: kind.type == "OFFER_REDEEMED" ? 3 : nil, offerIdentifier: kind.type == "OFFER_REDEEMED" ? "SPRING" : nil,
            extra: ["appTransactionId": "71134"])
        let renewal = F.v2Renewal(
            autoRenewProductId: kind.subtype == "DOWNGRADE" ? "com.example.basic.monthly" : nil,
            autoRenewStatus: kind.subtype == "AUTO_RENEW_DISABLED" ? 0 : 1,
            isInBillingRetryPeriod: kind.type == "DID_FAIL_TO_RENEW" ? true : nil,
            gracePeriodExpiresDate: kind.subtype == "GRACE_PERIOD" ? F.epoch + 46 * F.day : nil,
            signedDate: F.epoch + 31 * F.day, extra: ["eligibleWinBackOfferIds": ["w1"]])
        let uuid = "9d3a5f0e-1c2b-4e6f-8a7b-\(String(kind.testDescription.hashValue & 0xFFFF_FFFF, radix: 16))"
        let body = F.v2Notification(
            type: kind.type, subtype: kind.subtype, notificationUUID: uuid, signedDate: F.epoch + 31 * F.day,
            transaction: transaction, renewal: renewal, extra: ["someFutureField": 7])
        let input = try decode(body)

        #expect(input.type == .notification)
        #expect(input.metadata.source == .notificationV2)
        #expect(input.metadata.signature == .verified)
        let n = try #require(input.notifications.first)
        #expect(n.notificationType == kind.type)
        #expect(n.subtype == kind.subtype)
        #expect(n.notificationUUID == uuid)
        #expect(n.signedDate == F.epoch + 31 * F.day)
        #expect(n.version == "2.0")
        #expect(n.environment == .production)
        #expect(n.bundleId == F.bundleId)
        #expect(n.appAppleId == F.appAppleId)
        #expect(n.extra["someFutureField"] == "7")

        switch F.V2Section.for(type: kind.type, subtype: kind.subtype) {
        case .data:
            #expect(n.status == 1)
            #expect(n.originalTransactionId == "2000000000000001")
            #expect(n.transactionId == "2000000000000009")
            #expect(n.extra["data.bundleVersion"] == #""1.0""#)
            let t = try #require(input.transactions.first)
            #expect(t.transactionId == "2000000000000009")
            #expect(t.purchaseDate == F.epoch + 30 * F.day)
            #expect(t.expiresDate == F.epoch + 60 * F.day)
            #expect(t.signedDate == F.epoch + 31 * F.day)
            #expect(t.type == .autoRenewable)
            #expect(t.price == 9990)
            #expect(t.currency == "USD")
            #expect(t.appTransactionId == "71134", "a field the ledger models is a fact, not extra")
            #expect(t.extra["appTransactionId"] == nil)
            #expect(t.extra["storefrontId"] == #""143441""#)
            #expect(t.revocationDate == (refund ? F.epoch + 31 * F.day : nil))
            #expect(t.revocationType == (refund ? (kind.type == "REVOKE" ? "FAMILY_REVOKE" : "REFUND_FULL") : nil))
            if kind.type == "OFFER_REDEEMED" {
                #expect(t.offerType == 3)
                #expect(t.offerIdentifier == "SPRING")
            }
            let r = try #require(input.renewals.first)
            #expect(r.autoRenewStatus == (kind.subtype != "AUTO_RENEW_DISABLED"))
            #expect(r.eligibleWinBackOfferIds == ["w1"])
            if kind.subtype == "DOWNGRADE" { #expect(r.autoRenewProductId == "com.example.basic.monthly") }
            if kind.subtype == "GRACE_PERIOD" { #expect(r.gracePeriodExpiresDate == F.epoch + 46 * F.day) }
            if kind.type == "CONSUMPTION_REQUEST" {
                #expect(n.extra["data.consumptionRequestReason"] == #""UNINTENDED_PURCHASE""#)
            }
        case .dataWithoutInfo:
            #expect(input.facts.count == 1)
            #expect(n.originalTransactionId == nil)
        case .summary:
            #expect(input.facts.count == 1)
            #expect(n.extra["summary"]?.contains(#""succeededCount":5"#) == true)
        case .externalPurchaseToken:
            #expect(input.facts.count == 1)
            #expect(n.extra["externalPurchaseToken"]?.contains("externalPurchaseId") == true)
        case .appData:
            #expect(input.facts.count == 1)
            #expect(n.extra["appData"]?.contains("signedAppTransactionInfo") == true)
        }
    }

    @Test("Unknown types, subtypes and fields are kept, not refused")
    func unknownType() throws {
        let body = F.v2Notification(
            type: "SOMETHING_NEW_IN_2031", subtype: "SHINY", extra: ["newSection": ["x": [1, 2]]])
        let input = try decode(body)
        let n = try #require(input.notifications.first)
        #expect(n.notificationType == "SOMETHING_NEW_IN_2031")
        #expect(n.subtype == "SHINY")
        #expect(n.extra["newSection"] == #"{"x":[1,2]}"#)
        #expect(input.transactions.count == 1)
    }

    @Test("TEST notification yields only the notification fact")
    func testNotification() throws {
        let input = try decode(F.v2Notification(type: "TEST", subtype: nil))
        #expect(input.facts.count == 1)
        #expect(input.notifications.first?.notificationType == "TEST")
    }

    @Test("Sandbox environment is taken from data; an external purchase token's SANDBOX_ id marks sandbox")
    func environments() throws {
        let sandbox = try decode(F.v2Notification(type: "DID_RENEW", subtype: nil, environment: "Sandbox"))
        #expect(sandbox.facts.allSatisfy { $0.environment == .sandbox })
        let token = try decode(F.v2Notification(type: "EXTERNAL_PURCHASE_TOKEN", subtype: "UNREPORTED", environment: "Sandbox"))
        #expect(token.notifications.first?.environment == .sandbox)
    }

    @Test("A notification missing notificationUUID is refused naming it")
    func missingUUID() throws {
        var payload = F.v2NotificationPayload(type: "DID_RENEW", subtype: nil)
        payload["notificationUUID"] = nil
        let refused0 = refusal(F.v2Notification(signedPayload: TestPKI.shared.sign(json: payload)))
        let error = try #require(refused0)
        #expect(error.code == "missing_field")
        #expect(error.message.contains("notificationUUID"))
    }

    @Test("A transaction's appAccountToken claims its OTID for that user at its purchase date")
    func appAccountToken() throws {
        let t = F.v2Transaction(appAccountToken: "7E3FB20B-4CDB-47CC-936D-99D65F608138")
        let input = try decode(F.v2Notification(type: "SUBSCRIBED", subtype: "INITIAL_BUY", transaction: t))
        let claim = try #require(input.bindings.first)
        #expect(input.bindings.count == 1)
        #expect(claim.appUserId == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(claim.cause == .appAccountToken)
        #expect(claim.claimedAt == F.epoch)
        #expect(claim.originalTransactionId == "2000000000000001")
    }

    @Test("Decoded (unsigned) V2 notification JSON is accepted and marked unsigned")
    func decodedNotification() throws {
        let payload = F.v2NotificationPayload(type: "DID_RENEW", subtype: nil)
        let input = try decode(F.json(payload))
        #expect(input.metadata.source == .decodedJSON)
        #expect(input.metadata.signature == .unsigned)
        #expect(input.transactions.count == 1)
    }
}
