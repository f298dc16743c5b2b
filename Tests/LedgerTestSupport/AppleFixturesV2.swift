import Foundation

// MARK: - V2 documents

extension AppleFixtures {
    /// Every V2 notification type with each documented subtype (nil = none), per App Store Server Notifications V2.
    public static let v2NotificationTypes: [(type: String, subtype: String?)] = [
        ("SUBSCRIBED", "INITIAL_BUY"), ("SUBSCRIBED", "RESUBSCRIBE"),
        ("DID_RENEW", nil), ("DID_RENEW", "BILLING_RECOVERY"),
        ("DID_CHANGE_RENEWAL_PREF", "UPGRADE"), ("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE"),
        ("DID_CHANGE_RENEWAL_PREF", nil),
        ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED"), ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED"),
        ("OFFER_REDEEMED", "INITIAL_BUY"), ("OFFER_REDEEMED", "RESUBSCRIBE"), ("OFFER_REDEEMED", "UPGRADE"),
        ("OFFER_REDEEMED", "DOWNGRADE"), ("OFFER_REDEEMED", nil),
        ("DID_FAIL_TO_RENEW", "GRACE_PERIOD"), ("DID_FAIL_TO_RENEW", nil),
        ("GRACE_PERIOD_EXPIRED", nil),
        ("EXPIRED", "VOLUNTARY"), ("EXPIRED", "BILLING_RETRY"), ("EXPIRED", "PRICE_INCREASE"),
        ("EXPIRED", "PRODUCT_NOT_FOR_SALE"),
        ("PRICE_INCREASE", "PENDING"), ("PRICE_INCREASE", "ACCEPTED"),
        ("REFUND", nil), ("REFUND_DECLINED", nil), ("REFUND_REVERSED", nil), ("REVOKE", nil),
        ("RENEWAL_EXTENDED", nil), ("RENEWAL_EXTENSION", "SUMMARY"), ("RENEWAL_EXTENSION", "FAILURE"),
        ("CONSUMPTION_REQUEST", nil), ("ONE_TIME_CHARGE", nil), ("TEST", nil),
        ("EXTERNAL_PURCHASE_TOKEN", "UNREPORTED"), ("METADATA_UPDATE", nil), ("MIGRATION", nil), ("PRICE_CHANGE", nil),
        ("RESCIND_CONSENT", nil),
    ]

    /// What a V2 notification carries besides its header.
    public enum V2Section: Sendable, Equatable {
        /// `data` with signed transaction and renewal info.
        case data
        /// `data` without signed infos (TEST).
        case dataWithoutInfo
        /// `summary` (RENEWAL_EXTENSION / SUMMARY).
        case summary
        /// `externalPurchaseToken` (EXTERNAL_PURCHASE_TOKEN).
        case externalPurchaseToken
        /// `appData` (RESCIND_CONSENT).
        case appData

        /// The section Apple sends for a type/subtype.
        public static func `for`(type: String, subtype: String?) -> V2Section {
            switch (type, subtype) {
            case ("RENEWAL_EXTENSION", "SUMMARY"): .summary
            case ("EXTERNAL_PURCHASE_TOKEN", _): .externalPurchaseToken
            case ("RESCIND_CONSENT", _): .appData
            case ("TEST", _): .dataWithoutInfo
            default: .data
            }
        }
    }

    /// A `JWSTransactionDecodedPayload`. Dates are ms since epoch; nil parameters are omitted.
    public static func v2Transaction(
        transactionId: String = "2000000000000001", originalTransactionId: String = "2000000000000001",
        productId: String = monthly, purchaseDate: Int64 = epoch, originalPurchaseDate: Int64? = nil,
        expiresDate: Int64? = epoch + 30 * day, signedDate: Int64 = epoch, environment: String = "Production",
        bundleId: String = bundleId, type: String = "Auto-Renewable Subscription",
        webOrderLineItemId: String? = "3000000000000001", appAccountToken: String? = nil,
        revocationDate: Int64? = nil, revocationReason: Int64? = nil, revocationType: String? = nil,
        revocationPercentage: Int64? = nil, isUpgraded: Bool? = nil, offerType: Int64? = nil,
        offerIdentifier: String? = nil, offerDiscountType: String? = nil, transactionReason: String = "PURCHASE",
        quantity: Int64 = 1, price: Int64? = 9990, currency: String? = "USD", storefront: String = "USA",
        extra: [String: Any] = [:]
    ) -> [String: Any] {
        var o: [String: Any] = [
            "transactionId": transactionId, "originalTransactionId": originalTransactionId, "productId": productId,
            "bundleId": bundleId, "purchaseDate": purchaseDate,
            "originalPurchaseDate": originalPurchaseDate ?? purchaseDate, "quantity": quantity, "type": type,
            "inAppOwnershipType": "PURCHASED", "signedDate": signedDate, "environment": environment,
            "transactionReason": transactionReason, "storefront": storefront, "storefrontId": "143441",
            "subscriptionGroupIdentifier": "21000001",
        ]
        o["expiresDate"] = expiresDate
        o["webOrderLineItemId"] = webOrderLineItemId
        o["appAccountToken"] = appAccountToken
        o["revocationDate"] = revocationDate
        o["revocationReason"] = revocationReason
        o["revocationType"] = revocationType
        o["revocationPercentage"] = revocationPercentage
        o["isUpgraded"] = isUpgraded
        o["offerType"] = offerType
        o["offerIdentifier"] = offerIdentifier
        o["offerDiscountType"] = offerDiscountType
        o["price"] = price
        o["currency"] = currency
        if type != "Auto-Renewable Subscription" {
            o["expiresDate"] = nil
            o["webOrderLineItemId"] = nil
            o["subscriptionGroupIdentifier"] = nil
        }
        for (k, v) in extra { o[k] = v }
        return o
    }

    /// A `JWSRenewalInfoDecodedPayload`.
    public static func v2Renewal(
        originalTransactionId: String = "2000000000000001", productId: String = monthly,
        autoRenewProductId: String? = nil, autoRenewStatus: Int64 = 1, expirationIntent: Int64? = nil,
        isInBillingRetryPeriod: Bool? = nil, gracePeriodExpiresDate: Int64? = nil, priceIncreaseStatus: Int64? = nil,
        renewalDate: Int64? = epoch + 30 * day, signedDate: Int64 = epoch, environment: String = "Production",
        offerType: Int64? = nil, offerIdentifier: String? = nil, extra: [String: Any] = [:]
    ) -> [String: Any] {
        var o: [String: Any] = [
            "originalTransactionId": originalTransactionId, "productId": productId,
            "autoRenewProductId": autoRenewProductId ?? productId, "autoRenewStatus": autoRenewStatus,
            "signedDate": signedDate, "environment": environment, "recentSubscriptionStartDate": epoch,
        ]
        o["expirationIntent"] = expirationIntent
        o["isInBillingRetryPeriod"] = isInBillingRetryPeriod
        o["gracePeriodExpiresDate"] = gracePeriodExpiresDate
        o["priceIncreaseStatus"] = priceIncreaseStatus
        o["renewalDate"] = renewalDate
        o["offerType"] = offerType
        o["offerIdentifier"] = offerIdentifier
        for (k, v) in extra { o[k] = v }
        return o
    }

    /// A `responseBodyV2DecodedPayload` for `type`/`subtype`, with the section Apple sends for it. `transaction` and
    /// `renewal` are signed with `pki` into `data` (when the section is `.data`).
    public static func v2NotificationPayload(
        type: String, subtype: String?, pki: TestPKI = .shared,
        notificationUUID: String = "9d3a5f0e-1c2b-4e6f-8a7b-000000000001", signedDate: Int64 = epoch,
        environment: String = "Production", bundleId: String = bundleId, status: Int64? = 1,
        transaction: [String: Any]? = nil, renewal: [String: Any]? = nil, section: V2Section? = nil,
        extra: [String: Any] = [:]
    ) -> [String: Any] {
        var o: [String: Any] = [
            "notificationType": type, "notificationUUID": notificationUUID, "signedDate": signedDate, "version": "2.0",
        ]
        o["subtype"] = subtype
        switch section ?? V2Section.for(type: type, subtype: subtype) {
        case .data:
            var data: [String: Any] = [
                "environment": environment, "bundleId": bundleId, "appAppleId": appAppleId, "bundleVersion": "1.0",
            ]
            data["status"] = status
            let t = transaction ?? v2Transaction(signedDate: signedDate, environment: environment, bundleId: bundleId)
            data["signedTransactionInfo"] = pki.sign(json: t)
            let r = renewal ?? v2Renewal(
                originalTransactionId: t["originalTransactionId"] as! String, signedDate: signedDate,
                environment: environment)
            data["signedRenewalInfo"] = pki.sign(json: r)
            if type == "CONSUMPTION_REQUEST" { data["consumptionRequestReason"] = "UNINTENDED_PURCHASE" }
            o["data"] = data
        case .dataWithoutInfo:
            o["data"] = ["environment": environment, "bundleId": bundleId, "appAppleId": appAppleId]
        case .summary:
            o["summary"] = [
                "environment": environment, "appAppleId": appAppleId, "bundleId": bundleId, "productId": monthly,
                "requestIdentifier": "efb27071-45a4-4aca-9854-2a1e9146f265", "storefrontCountryCodes": ["USA", "CAN"],
                "succeededCount": 5, "failedCount": 2,
            ] as [String: Any]
        case .externalPurchaseToken:
            o["externalPurchaseToken"] = [
                "externalPurchaseId": (environment == "Sandbox" ? "SANDBOX_" : "") + "b2158121-7af9-49d4-9561-1f588205523e",
                "tokenCreationDate": signedDate, "appAppleId": appAppleId, "bundleId": bundleId,
            ] as [String: Any]
        case .appData:
            o["appData"] = [
                "appAppleId": appAppleId, "bundleId": bundleId, "environment": environment,
                "signedAppTransactionInfo": pki.sign(json: ["appAppleId": appAppleId, "bundleId": bundleId]),
            ] as [String: Any]
        }
        for (k, v) in extra { o[k] = v }
        return o
    }

    /// The body Apple POSTs: `{"signedPayload": JWS}`.
    public static func v2Notification(signedPayload: String) -> [UInt8] { json(["signedPayload": signedPayload]) }

    /// A signed V2 notification body for `type`/`subtype` (see `v2NotificationPayload`).
    public static func v2Notification(
        type: String, subtype: String?, pki: TestPKI = .shared,
        notificationUUID: String = "9d3a5f0e-1c2b-4e6f-8a7b-000000000001", signedDate: Int64 = epoch,
        environment: String = "Production", bundleId: String = bundleId, transaction: [String: Any]? = nil,
        renewal: [String: Any]? = nil, extra: [String: Any] = [:]
    ) -> [UInt8] {
        let payload = v2NotificationPayload(
            type: type, subtype: subtype, pki: pki, notificationUUID: notificationUUID, signedDate: signedDate,
            environment: environment, bundleId: bundleId, transaction: transaction, renewal: renewal, extra: extra)
        return v2Notification(signedPayload: pki.sign(json: payload))
    }

    /// A StoreKit 2 `jwsRepresentation` / Server API `signedTransactionInfo` value.
    public static func signedTransaction(_ payload: [String: Any] = v2Transaction(), pki: TestPKI = .shared) -> String {
        pki.sign(json: payload)
    }

    /// A Server API `signedRenewalInfo` value.
    public static func signedRenewal(_ payload: [String: Any] = v2Renewal(), pki: TestPKI = .shared) -> String {
        pki.sign(json: payload)
    }
}
