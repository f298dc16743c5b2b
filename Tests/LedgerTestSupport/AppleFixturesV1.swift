import Foundation

// MARK: - V1 documents

extension AppleFixtures {
    /// Every V1 `notification_type`.
    public static let v1NotificationTypes: [String] = [
        "INITIAL_BUY", "CANCEL", "RENEWAL", "INTERACTIVE_RENEWAL", "DID_CHANGE_RENEWAL_PREF",
        "DID_CHANGE_RENEWAL_STATUS", "DID_FAIL_TO_RENEW", "DID_RECOVER", "DID_RENEW", "PRICE_INCREASE_CONSENT",
        "REFUND", "REVOKE", "CONSUMPTION_REQUEST",
    ]

    /// How a V1 transaction spells its dates.
    public enum V1DateStyle: Sendable {
        /// iOS 7: `x`, `x_ms`, `x_pst` for every date.
        case ios7
        /// iOS 6: `purchase_date_ms` etc., but `expires_date` is milliseconds and `expires_date_formatted` the GMT
        /// text; plus `bid`, `bvrs`, `item_id`, `unique_identifier`.
        case ios6
        /// Formatted GMT dates only (old V1 notifications' `latest_receipt_info` as some proxies relay it).
        case formattedOnly
    }

    /// One `in_app` / `latest_receipt_info` entry: every value a string, as Apple sends them.
    public static func v1Transaction(
        transactionId: String = "1000000000000001", originalTransactionId: String = "1000000000000001",
        productId: String = monthly, purchaseDate: Int64 = epoch, originalPurchaseDate: Int64? = nil,
        expiresDate: Int64? = epoch + 30 * day, webOrderLineItemId: String? = "1000000000000101",
        cancellationDate: Int64? = nil, cancellationReason: String? = nil, isUpgraded: Bool = false,
        isTrialPeriod: Bool = false, isInIntroOfferPeriod: Bool = false, promotionalOfferId: String? = nil,
        offerCodeRefName: String? = nil, quantity: Int = 1, bundleId: String = bundleId,
        style: V1DateStyle = .ios7, extra: [String: Any] = [:]
    ) -> [String: Any] {
        var o: [String: Any] = [
            "transaction_id": transactionId, "original_transaction_id": originalTransactionId, "product_id": productId,
            "quantity": String(quantity), "is_trial_period": String(isTrialPeriod),
        ]
        func date(_ name: String, _ ms: Int64?) {
            guard let ms else { return }
            switch style {
            case .ios7:
                o[name] = gmt(ms)
                o[name + "_ms"] = String(ms)
                o[name + "_pst"] = pst(ms)
            case .ios6:
                if name == "expires_date" {
                    o["expires_date"] = String(ms)
                    o["expires_date_formatted"] = gmt(ms)
                    o["expires_date_formatted_pst"] = pst(ms)
                } else {
                    o[name] = gmt(ms)
                    o[name + "_ms"] = String(ms)
                    o[name + "_pst"] = pst(ms)
                }
            case .formattedOnly:
                o[name] = gmt(ms)
            }
        }
        date("purchase_date", purchaseDate)
        date("original_purchase_date", originalPurchaseDate ?? purchaseDate)
        date("expires_date", expiresDate)
        date("cancellation_date", cancellationDate)
        o["cancellation_reason"] = cancellationReason
        o["web_order_line_item_id"] = webOrderLineItemId
        if style != .ios6 { o["is_in_intro_offer_period"] = String(isInIntroOfferPeriod) }
        if isUpgraded { o["is_upgraded"] = "true" }
        o["promotional_offer_id"] = promotionalOfferId
        o["offer_code_ref_name"] = offerCodeRefName
        if style == .ios6 {
            o["bid"] = bundleId
            o["bvrs"] = "100"
            o["item_id"] = "1486579372"
            o["unique_identifier"] = "bb799d21231091277a1cecc2eaedaf9cbbe40e11"
            o["unique_vendor_identifier"] = "E1ADB329-66F9-4968-9460-BFB51C01AFCA"
        } else if expiresDate != nil {
            o["subscription_group_identifier"] = "20567304"
            o["in_app_ownership_type"] = "PURCHASED"
        }
        for (k, v) in extra { o[k] = v }
        return o
    }

    /// One `pending_renewal_info` entry.
    public static func v1PendingRenewal(
        originalTransactionId: String = "1000000000000001", productId: String = monthly,
        autoRenewProductId: String? = nil, autoRenewStatus: Bool = true, expirationIntent: Int? = nil,
        isInBillingRetryPeriod: Bool? = nil, gracePeriodExpiresDate: Int64? = nil, priceConsentStatus: Int? = nil
    ) -> [String: Any] {
        var o: [String: Any] = [
            "original_transaction_id": originalTransactionId, "product_id": productId,
            "auto_renew_product_id": autoRenewProductId ?? productId, "auto_renew_status": autoRenewStatus ? "1" : "0",
        ]
        o["expiration_intent"] = expirationIntent.map(String.init)
        o["is_in_billing_retry_period"] = isInBillingRetryPeriod.map { $0 ? "1" : "0" }
        if let gracePeriodExpiresDate {
            o["grace_period_expires_date"] = gmt(gracePeriodExpiresDate)
            o["grace_period_expires_date_ms"] = String(gracePeriodExpiresDate)
            o["grace_period_expires_date_pst"] = pst(gracePeriodExpiresDate)
        }
        o["price_consent_status"] = priceConsentStatus.map(String.init)
        return o
    }

    // MARK: - verifyReceipt

    /// An iOS 7 style verifyReceipt response: `receipt.in_app[]`, `latest_receipt_info[]`, `pending_renewal_info[]`.
    public static func receiptIOS7(
        status: Int = 0, environment: String = "Production", bundleId: String = bundleId,
        requestDate: Int64? = epoch + 5 * minute, creationDate: Int64? = nil, inApp: [[String: Any]],
        latest: [[String: Any]]? = nil, pending: [[String: Any]]? = nil, extra: [String: Any] = [:]
    ) -> [UInt8] {
        var receipt: [String: Any] = [
            "receipt_type": environment == "Sandbox" ? "ProductionSandbox" : "Production", "adam_id": 1_234_567_890,
            "app_item_id": 1_234_567_890, "bundle_id": bundleId, "application_version": "100",
            "download_id": 0, "version_external_identifier": 0, "original_application_version": "1.0",
            "in_app": inApp,
        ]
        if let requestDate {
            receipt["request_date"] = gmt(requestDate)
            receipt["request_date_ms"] = String(requestDate)
            receipt["request_date_pst"] = pst(requestDate)
        }
        // A receipt is made anew on the device when it changes: by default just before it is verified.
        receipt["receipt_creation_date_ms"] = String(creationDate ?? requestDate ?? epoch)
        var o: [String: Any] = ["status": status, "environment": environment, "receipt": receipt]
        if let latest {
            o["latest_receipt_info"] = latest
            o["latest_receipt"] = "MIIT3wYJKoZIhvcNAQcCoIIT0DCCE8wCAQExCzAJBgUrDgMCGgUAMIIDgAYJKoZIhvcNAQcBoIID"
        }
        o["pending_renewal_info"] = pending
        for (k, v) in extra { o[k] = v }
        return json(o)
    }

    /// An iOS 6 style verifyReceipt response: `receipt` is the transaction itself; `latest_receipt_info` or
    /// `latest_expired_receipt_info` a single object (status 21006 = valid but expired).
    public static func receiptIOS6(
        status: Int = 0, receipt: [String: Any], latest: [String: Any]? = nil, latestExpired: [String: Any]? = nil
    ) -> [UInt8] {
        var o: [String: Any] = ["status": status, "receipt": receipt]
        if let latest {
            o["latest_receipt_info"] = latest
            o["latest_receipt"] = "ewoJInNpZ25hdHVyZSIgPSAiQXBNVUJDODZBbHpOaWtWNVl0clpBTWlKUWJLOEVk"
        }
        o["latest_expired_receipt_info"] = latestExpired
        return json(o)
    }

    /// A verifyReceipt error response (`{"status": 21002}`, `{"status": 21007, …}`).
    public static func receiptStatus(_ status: Int, environment: String? = nil) -> [UInt8] {
        var o: [String: Any] = ["status": status]
        o["environment"] = environment
        return json(o)
    }

    // MARK: - V1 notifications

    /// A V1 notification in the `unified_receipt` shape (2020 and later).
    public static func v1Notification(
        type: String, environment: String = "PROD", bundleId: String = bundleId, autoRenewStatus: Bool = true,
        autoRenewProductId: String = monthly, latest: [[String: Any]], pending: [[String: Any]]? = nil,
        extra: [String: Any] = [:]
    ) -> [UInt8] {
        var unified: [String: Any] = [
            "environment": environment == "PROD" ? "Production" : environment, "status": 0,
            "latest_receipt": "MIIT3wYJKoZIhvcNAQcCoIIT0DCCE8wCAQExCzAJBgUrDgMCGgUAMIIDgAYJKoZIhvcNAQcBoIID",
            "latest_receipt_info": latest,
        ]
        unified["pending_renewal_info"] = pending ?? latest.prefix(1).map { t in
            v1PendingRenewal(
                originalTransactionId: t["original_transaction_id"] as! String, productId: t["product_id"] as! String,
                autoRenewProductId: autoRenewProductId, autoRenewStatus: autoRenewStatus)
        }
        var o: [String: Any] = [
            "notification_type": type, "environment": environment, "bid": bundleId, "bvrs": "100",
            "password": "0123456789abcdef0123456789abcdef", "auto_renew_status": String(autoRenewStatus),
            "auto_renew_product_id": autoRenewProductId, "auto_renew_adam_id": "1486579372",
            "unified_receipt": unified,
        ]
        if type == "DID_CHANGE_RENEWAL_STATUS" {
            o["auto_renew_status_change_date_ms"] = String(epoch + minute)
            o["auto_renew_status_change_date"] = gmt(epoch + minute)
        }
        for (k, v) in extra { o[k] = v }
        return json(o)
    }

    /// A V1 notification in the older shape: top-level `latest_receipt_info` (or `latest_expired_receipt_info`)
    /// object, formatted dates only.
    public static func v1LegacyNotification(
        type: String, environment: String = "PROD", bundleId: String = bundleId, autoRenewStatus: Bool = true,
        autoRenewProductId: String = monthly, latest: [String: Any]? = nil, latestExpired: [String: Any]? = nil,
        extra: [String: Any] = [:]
    ) -> [UInt8] {
        var o: [String: Any] = [
            "notification_type": type, "environment": environment, "bid": bundleId, "bvrs": "100",
            "password": "0123456789abcdef0123456789abcdef", "auto_renew_status": String(autoRenewStatus),
            "auto_renew_product_id": autoRenewProductId,
        ]
        if let latest {
            o["latest_receipt_info"] = latest
            o["latest_receipt"] = "ewoJInNpZ25hdHVyZSIgPSAiQXBNVUJDODZBbHpOaWtWNVl0clpBTWlKUWJLOEVk"
        }
        if let latestExpired {
            o["latest_expired_receipt_info"] = latestExpired
            o["latest_expired_receipt"] = "ewoJInNpZ25hdHVyZSIgPSAiQXBNVUJDODZBbHpOaWtWNVl0clpBTWlKUWJLOEVk"
            if latest == nil { o["expiration_intent"] = "1" }
        }
        for (k, v) in extra { o[k] = v }
        return json(o)
    }
}
