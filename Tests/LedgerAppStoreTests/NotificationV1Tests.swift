import LedgerAppStore
import LedgerCore
import LedgerTestSupport
import LedgerErrors
import Testing

// MARK: - V1 server notifications

@Suite("V1 server notifications")
struct NotificationV1Tests {
    typealias F = AppleFixtures

    @Test("unified_receipt shape, every type", arguments: AppleFixtures.v1NotificationTypes)
    func unified(type: String) throws {
        let refunded = type == "REFUND" || type == "CANCEL" || type == "REVOKE"
        let latest = F.v1Transaction(
            transactionId: "1000000000000002", purchaseDate: F.epoch + 30 * F.day, originalPurchaseDate: F.epoch,
            expiresDate: F.epoch + 60 * F.day, webOrderLineItemId: "1000000000000102",
            cancellationDate: refunded ? F.epoch + 31 * F.day : nil, cancellationReason: refunded ? "0" : nil)
        let body = F.v1Notification(
            type: type, autoRenewStatus: type != "DID_CHANGE_RENEWAL_STATUS", latest: [F.v1Transaction(), latest],
            extra: ["brand_new_field": "kept"])
        let input = try decode(body)

        #expect(input.type == .notification)
        #expect(input.metadata.source == .notificationV1)
        #expect(input.metadata.signature == .unsigned)
        let n = try #require(input.notifications.first)
        #expect(n.notificationType == type)
        #expect(n.notificationUUID == sha256Hex(body))
        #expect(n.version == "1")
        #expect(n.environment == .production)
        #expect(n.bundleId == F.bundleId)
        #expect(n.originalTransactionId == "1000000000000001")
        #expect(n.transactionId == "1000000000000002")
        #expect(n.autoRenewStatus == (type != "DID_CHANGE_RENEWAL_STATUS"))
        #expect(n.autoRenewProductId == F.monthly)
        #expect(n.extra["brand_new_field"] == #""kept""#)
        #expect(n.extra["auto_renew_adam_id"] == #""1486579372""#)
        #expect(n.extra["password"] == nil)
        #expect(input.transactions.count == 2)
        let t = try #require(input.transactions.last)
        #expect(t.purchaseDate == F.epoch + 30 * F.day)
        #expect(t.revocationDate == (refunded ? F.epoch + 31 * F.day : nil))
        #expect(t.environment == .production)
        #expect(input.renewals.count == 1)
        #expect(input.renewals.first?.autoRenewStatus == (type != "DID_CHANGE_RENEWAL_STATUS"))
        if type == "DID_CHANGE_RENEWAL_STATUS" {
            #expect(n.extra["auto_renew_status_change_date_ms"] == "\"\(F.epoch + F.minute)\"")
        }
    }

    @Test("Older shape: top-level latest_receipt_info object with formatted dates only", arguments: AppleFixtures.v1NotificationTypes)
    func legacy(type: String) throws {
        let latest = F.v1Transaction(
            transactionId: "1000000000000007", purchaseDate: 1_543_480_166_000, expiresDate: 1_543_480_466_000,
            style: .formattedOnly)
        let body = F.v1LegacyNotification(
            type: type, environment: "Sandbox", autoRenewStatus: false, autoRenewProductId: F.yearly, latest: latest)
        let input = try decode(body)
        let n = try #require(input.notifications.first)
        #expect(n.notificationType == type)
        #expect(n.environment == .sandbox)
        #expect(n.transactionId == "1000000000000007")
        #expect(n.originalTransactionId == "1000000000000001")
        let t = try #require(input.transactions.first)
        #expect(input.transactions.count == 1)
        #expect(t.purchaseDate == 1_543_480_166_000)
        #expect(t.expiresDate == 1_543_480_466_000)
        #expect(t.environment == .sandbox)
        let r = try #require(input.renewals.first)
        #expect(r.originalTransactionId == "1000000000000001")
        #expect(r.autoRenewStatus == false)
        #expect(r.autoRenewProductId == F.yearly)
        #expect(r.productId == F.monthly)
    }

    @Test("Older shape: latest_expired_receipt_info when the subscription expired")
    func legacyExpired() throws {
        let expired = F.v1Transaction(transactionId: "1000000000000008", style: .formattedOnly)
        let input = try decode(F.v1LegacyNotification(type: "DID_FAIL_TO_RENEW", latestExpired: expired))
        #expect(input.transactions.map(\.transactionId) == ["1000000000000008"])
        #expect(input.renewals.first?.expirationIntent == 1)
    }

    @Test("CANCEL: plan switch (auto_renew_status true, no date) versus refund (cancellation_date_ms)")
    func cancel() throws {
        let switchBody = F.v1Notification(type: "CANCEL", autoRenewStatus: true, latest: [F.v1Transaction()])
        let refundBody = F.v1Notification(
            type: "CANCEL", autoRenewStatus: false,
            latest: [F.v1Transaction(cancellationDate: F.epoch + F.day, cancellationReason: "1")])
        let switched = try decode(switchBody)
        let refunded = try decode(refundBody)
        #expect(switched.transactions[0].revocationDate == nil)
        #expect(switched.notifications[0].autoRenewStatus == true)
        #expect(refunded.transactions[0].revocationDate == F.epoch + F.day)
        #expect(refunded.transactions[0].revocationReason == 1)
        #expect(switched.notifications[0].notificationUUID != refunded.notifications[0].notificationUUID)
    }

    @Test("The same body is the same notification, bare or in an envelope")
    func identity() throws {
        let body = F.v1Notification(type: "DID_RENEW", latest: [F.v1Transaction()])
        let bare = try decode(body)
        let wrapped = try decode(F.envelope(type: "notification", appUserId: "u7", receivedAt: F.epoch + 42, payload: body))
        #expect(bare.notifications[0].notificationUUID == wrapped.notifications[0].notificationUUID)
        #expect(bare.raw != wrapped.raw)
        #expect(wrapped.metadata.receivedAt == F.epoch + 42)
        #expect(wrapped.metadata.appUserId == "u7")
        #expect(wrapped.bindings.map(\.appUserId) == ["u7"])
        #expect(wrapped.bindings.first?.claimedAt == F.epoch + 42)
    }

    @Test("A notification without notification_type is refused naming the field")
    func missingType() throws {
        let refused0 = refusal(F.json(["unified_receipt": [:]]), type: .notification)
        let error = try #require(refused0)
        #expect(error.code == "missing_field")
    }
}
