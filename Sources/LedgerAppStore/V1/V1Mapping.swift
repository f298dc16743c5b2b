import LedgerCore

// MARK: - V1Mapping

/// V1 transaction and pending-renewal objects (verifyReceipt and V1 notifications, iOS 6 and iOS 7 shapes) to
/// canonical facts. V1 facts carry no `signedDate`: they speak from the input's `observedAt`.
enum V1Mapping {
    /// Fields modelled by `TransactionFact` (including every date spelling); the rest go to `extra`.
    static let transactionKeys: Set<String> = [
        "transaction_id", "original_transaction_id", "web_order_line_item_id", "product_id",
        "subscription_group_identifier", "quantity", "app_account_token", "in_app_ownership_type",
        "purchase_date", "purchase_date_ms", "purchase_date_pst",
        "original_purchase_date", "original_purchase_date_ms", "original_purchase_date_pst",
        "expires_date", "expires_date_ms", "expires_date_pst", "expires_date_formatted", "expires_date_formatted_pst",
        "cancellation_date", "cancellation_date_ms", "cancellation_date_pst", "cancellation_reason",
        "is_upgraded", "is_trial_period", "is_in_intro_offer_period", "promotional_offer_id", "offer_code_ref_name",
        "bid",
    ]

    /// Fields modelled by `RenewalInfoFact`.
    static let renewalKeys: Set<String> = [
        "original_transaction_id", "product_id", "auto_renew_product_id", "auto_renew_status", "expiration_intent",
        "is_in_billing_retry_period", "grace_period_expires_date", "grace_period_expires_date_ms",
        "grace_period_expires_date_pst", "price_consent_status", "price_increase_status", "promotional_offer_id",
        "offer_code_ref_name",
    ]

    /// One `in_app` / `latest_receipt_info` entry. `bundleId` is the receipt's (iOS 7); an iOS 6 entry's own `bid`
    /// wins when present.
    static func transaction(
        _ o: AppleObject, environment: AppStoreEnvironment, bundleId: String?
    ) throws(InputError) -> TransactionFact {
        let tid = try o.requiredIdentifier("transaction_id")
        let otid = try o.identifier("original_transaction_id") ?? tid
        let productId = try o.requiredString("product_id")
        guard let purchaseDate = try o.v1Date("purchase_date") else { throw .missingField(o.name("purchase_date_ms")) }
        var t = TransactionFact(
            transactionId: TransactionID(tid), originalTransactionId: OriginalTransactionID(otid), productId: productId,
            purchaseDate: purchaseDate, environment: environment)
        t.webOrderLineItemId = try o.identifier("web_order_line_item_id")
        t.bundleId = try o.string("bid")
        if t.bundleId == nil { t.bundleId = bundleId }
        t.subscriptionGroupIdentifier = try o.identifier("subscription_group_identifier")
        t.originalPurchaseDate = try o.v1Date("original_purchase_date")
        t.expiresDate = try o.v1Date("expires_date")
        t.quantity = try o.v1Int("quantity")
        t.appAccountToken = try o.string("app_account_token").map { $0.lowercased() }
        t.inAppOwnershipType = try o.string("in_app_ownership_type")
        t.revocationDate = try o.v1Date("cancellation_date")
        t.revocationReason = try o.v1Int("cancellation_reason")
        t.isUpgraded = try o.v1Bool("is_upgraded")
        t.isTrialPeriod = try o.v1Bool("is_trial_period")
        t.isInIntroOfferPeriod = try o.v1Bool("is_in_intro_offer_period")
        if let offer = try namedOffer(o) {
            t.offerType = offer.type
            t.offerIdentifier = offer.identifier
        } else if t.isTrialPeriod == true || t.isInIntroOfferPeriod == true {
            t.offerType = 1
        }
        if t.isTrialPeriod == true { t.offerDiscountType = "FREE_TRIAL" }
        t.extra = o.extras(excluding: transactionKeys)
        return t
    }

    /// One `pending_renewal_info` entry.
    static func renewal(_ o: AppleObject, environment: AppStoreEnvironment) throws(InputError) -> RenewalInfoFact {
        let otid = try o.requiredIdentifier("original_transaction_id")
        var r = RenewalInfoFact(originalTransactionId: OriginalTransactionID(otid), environment: environment)
        r.productId = try o.string("product_id")
        r.autoRenewProductId = try o.string("auto_renew_product_id")
        r.autoRenewStatus = try o.v1Bool("auto_renew_status")
        r.expirationIntent = try o.v1Int("expiration_intent")
        r.isInBillingRetryPeriod = try o.v1Bool("is_in_billing_retry_period")
        r.gracePeriodExpiresDate = try o.v1Date("grace_period_expires_date")
        r.priceIncreaseStatus = try o.v1Int("price_consent_status")
        if r.priceIncreaseStatus == nil { r.priceIncreaseStatus = try o.v1Int("price_increase_status") }
        if let offer = try namedOffer(o) {
            r.offerType = offer.type
            r.offerIdentifier = offer.identifier
        }
        r.extra = o.extras(excluding: renewalKeys)
        return r
    }

    /// The offer a V1 transaction or renewal info names, as V2 numbers it: a promotional offer (2) by
    /// `promotional_offer_id`, else an offer code (3) by `offer_code_ref_name`.
    private static func namedOffer(_ o: AppleObject) throws(InputError) -> (type: Int64, identifier: String)? {
        if let promo = try o.string("promotional_offer_id") { return (2, promo) }
        if let code = try o.string("offer_code_ref_name") { return (3, code) }
        return nil
    }

    /// The latest transactions a V1 document states: `latest_receipt_info`, or, when that is absent (an expired
    /// subscription, iOS 6 style), `latest_expired_receipt_info`.
    static func latestTransactions(_ o: AppleObject) throws(InputError) -> [AppleObject] {
        try o.objects(o.has("latest_receipt_info") ? "latest_receipt_info" : "latest_expired_receipt_info")
    }
}
