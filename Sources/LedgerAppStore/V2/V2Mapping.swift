import LedgerCore

// MARK: - V2Mapping

/// Decoded V2 payloads (`JWSTransactionDecodedPayload`, `JWSRenewalInfoDecodedPayload`) to canonical facts. The
/// field names are the facts' own; anything else Apple sends lands in `extra`.
enum V2Mapping {
    static let transactionKeys: Set<String> = [
        "transactionId", "originalTransactionId", "webOrderLineItemId", "bundleId", "productId",
        "subscriptionGroupIdentifier", "purchaseDate", "originalPurchaseDate", "expiresDate", "quantity",
        "appAccountToken", "inAppOwnershipType", "signedDate", "revocationDate", "revocationReason", "revocationType",
        "revocationPercentage", "isUpgraded", "offerType", "offerIdentifier", "offerDiscountType", "environment",
        "storefront", "transactionReason", "price", "currency", "appTransactionId", "offerPeriod", "billingPlanType",
        "commitmentInfo",
    ]

    static let renewalKeys: Set<String> = [
        "originalTransactionId", "productId", "autoRenewProductId", "autoRenewStatus", "expirationIntent",
        "isInBillingRetryPeriod", "gracePeriodExpiresDate", "priceIncreaseStatus", "renewalDate", "offerType",
        "offerIdentifier", "signedDate", "recentSubscriptionStartDate", "environment", "renewalPrice", "currency",
        "offerDiscountType", "offerPeriod", "eligibleWinBackOfferIds", "appAccountToken", "appTransactionId",
        "renewalBillingPlanType",
    ]

    /// A transaction payload; `transactionId`, `originalTransactionId`, `productId` and `purchaseDate` are required.
    /// An unknown product `type` is kept in `extra["type"]`.
    static func transaction(_ o: AppleObject) throws(InputError) -> TransactionFact {
        let tid = try o.requiredIdentifier("transactionId")
        let otid = try o.requiredIdentifier("originalTransactionId")
        let productId = try o.requiredString("productId")
        guard let purchaseDate = try o.int64("purchaseDate") else { throw .missingField(o.name("purchaseDate")) }
        var t = TransactionFact(
            transactionId: TransactionID(tid), originalTransactionId: OriginalTransactionID(otid), productId: productId,
            purchaseDate: purchaseDate, environment: try o.environment("environment") ?? .production)
        t.webOrderLineItemId = try o.identifier("webOrderLineItemId")
        t.bundleId = try o.string("bundleId")
        t.subscriptionGroupIdentifier = try o.identifier("subscriptionGroupIdentifier")
        t.originalPurchaseDate = try o.int64("originalPurchaseDate")
        t.expiresDate = try o.int64("expiresDate")
        t.quantity = try o.int64("quantity")
        t.appAccountToken = try o.string("appAccountToken").map { $0.lowercased() }
        t.inAppOwnershipType = try o.string("inAppOwnershipType")
        t.signedDate = try o.int64("signedDate")
        t.revocationDate = try o.int64("revocationDate")
        t.revocationReason = try o.int64("revocationReason")
        t.revocationType = try o.string("revocationType")
        t.revocationPercentage = try o.int64("revocationPercentage")
        t.isUpgraded = try o.bool("isUpgraded")
        t.offerType = try o.int64("offerType")
        t.offerIdentifier = try o.string("offerIdentifier")
        t.offerDiscountType = try o.string("offerDiscountType")
        t.storefront = try o.string("storefront")
        t.transactionReason = try o.string("transactionReason")
        t.price = try o.int64("price")
        t.currency = try o.string("currency")
        t.appTransactionId = try o.identifier("appTransactionId")
        t.offerPeriod = try o.string("offerPeriod")
        t.billingPlanType = try o.string("billingPlanType")
        if let c = try o.object("commitmentInfo") {
            t.commitment = TransactionFact.Commitment(
                billingPeriodNumber: try c.int64("billingPeriodNumber"),
                totalBillingPeriods: try c.int64("totalBillingPeriods"),
                expiresDate: try c.int64("commitmentExpiresDate"), price: try c.int64("commitmentPrice"))
            // The rest of it (fields Apple adds) stays with the transaction, under its Apple path.
            for (key, value) in c.extras(excluding: commitmentKeys) { t.extra["commitmentInfo." + key] = value }
        }
        var known = transactionKeys
        if let typeName = try o.string("type"), let type = ProductType(rawValue: typeName) {
            t.type = type
            known.insert("type")
        }
        t.extra.merge(o.extras(excluding: known)) { nested, _ in nested }
        return t
    }

    static let appTransactionKeys: Set<String> = [
        "appTransactionId", "bundleId", "originalPurchaseDate", "receiptType", "receiptCreationDate",
        "originalApplicationVersion", "signedDate",
    ]

    /// A signed AppTransaction (`JWSAppTransactionDecodedPayload`): the customer's purchase (or download) of the app
    /// itself, as a one-time purchase of the product named by the bundle id, under the id `app:<appTransactionId>`
    /// (its own OTID). `originalApplicationVersion` says which version the customer first got: how an app that went
    /// from paid to free recognises its paid-app buyers.
    static func appTransaction(_ o: AppleObject) throws(InputError) -> TransactionFact {
        let appTransactionId = try o.requiredIdentifier("appTransactionId")
        let bundleId = try o.requiredString("bundleId")
        guard let purchaseDate = try o.int64("originalPurchaseDate") else {
            throw .missingField(o.name("originalPurchaseDate"))
        }
        let id = "app:" + appTransactionId
        var t = TransactionFact(
            transactionId: TransactionID(id), originalTransactionId: OriginalTransactionID(id), productId: bundleId,
            purchaseDate: purchaseDate, environment: try o.environment("receiptType") ?? .production)
        t.type = .nonConsumable
        t.bundleId = bundleId
        t.appTransactionId = appTransactionId
        t.originalPurchaseDate = purchaseDate
        t.originalApplicationVersion = try o.string("originalApplicationVersion")
        t.signedDate = try o.int64("signedDate")
        if t.signedDate == nil { t.signedDate = try o.int64("receiptCreationDate") }
        t.extra = o.extras(excluding: appTransactionKeys)
        return t
    }

    static let commitmentKeys: Set<String> = [
        "billingPeriodNumber", "totalBillingPeriods", "commitmentExpiresDate", "commitmentPrice",
    ]

    /// A renewal info payload; `originalTransactionId` is required.
    static func renewal(_ o: AppleObject) throws(InputError) -> RenewalInfoFact {
        let otid = try o.requiredIdentifier("originalTransactionId")
        var r = RenewalInfoFact(
            originalTransactionId: OriginalTransactionID(otid), environment: try o.environment("environment") ?? .production)
        r.productId = try o.string("productId")
        r.autoRenewProductId = try o.string("autoRenewProductId")
        r.autoRenewStatus = try o.bool("autoRenewStatus")
        r.expirationIntent = try o.int64("expirationIntent")
        r.isInBillingRetryPeriod = try o.bool("isInBillingRetryPeriod")
        r.gracePeriodExpiresDate = try o.int64("gracePeriodExpiresDate")
        r.priceIncreaseStatus = try o.int64("priceIncreaseStatus")
        r.renewalDate = try o.int64("renewalDate")
        r.offerType = try o.int64("offerType")
        r.offerIdentifier = try o.string("offerIdentifier")
        r.signedDate = try o.int64("signedDate")
        r.recentSubscriptionStartDate = try o.int64("recentSubscriptionStartDate")
        r.renewalPrice = try o.int64("renewalPrice")
        r.currency = try o.string("currency")
        r.offerDiscountType = try o.string("offerDiscountType")
        r.offerPeriod = try o.string("offerPeriod")
        r.eligibleWinBackOfferIds = try o.strings("eligibleWinBackOfferIds")
        r.appAccountToken = try o.string("appAccountToken").map { $0.lowercased() }
        r.appTransactionId = try o.identifier("appTransactionId")
        r.renewalBillingPlanType = try o.string("renewalBillingPlanType")
        r.extra = o.extras(excluding: renewalKeys)
        return r
    }
}
