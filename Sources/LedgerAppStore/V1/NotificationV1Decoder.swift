import Crypto
import LedgerCore

// MARK: - NotificationV1Decoder

/// V1 server notifications (`notification_type`), both the `unified_receipt` shape and the older one with top-level
/// `latest_receipt_info` / `latest_expired_receipt_info` objects, to a `NotificationFact` plus the transaction and
/// renewal facts they carry.
enum NotificationV1Decoder {
    /// Top-level fields modelled by the facts, or deliberately not copied into `extra`: `password` is the app's
    /// shared secret and `latest_receipt` / `latest_expired_receipt` are opaque receipts (all stay in the raw input).
    static let knownKeys: Set<String> = [
        "notification_type", "environment", "auto_renew_status", "auto_renew_product_id", "bid", "unified_receipt",
        "latest_receipt_info", "latest_expired_receipt_info", "latest_receipt", "latest_expired_receipt", "password",
        "original_transaction_id",
    ]

    /// `body` is the notification's exact bytes: V1 has no id, so its hex SHA-256 is the `notificationUUID`.
    /// `bodyDigest` is the SHA-256 of `body` when the caller already has it.
    static func decode(
        _ root: AppleObject, body: ArraySlice<UInt8>, bodyDigest: SHA256.Digest? = nil
    ) throws(InputError) -> [Fact] {
        let type = try root.requiredString("notification_type")
        let unified = try root.object("unified_receipt")
        var environment: AppStoreEnvironment = .production
        if let e = try root.environment("environment") {
            environment = e
        } else if let e = try unified?.environment("environment") {
            environment = e
        }
        let bundleId = try root.string("bid")

        let sources: [AppleObject]
        if let unified {
            sources = try unified.objects("latest_receipt_info")
        } else {
            // The older shape states the latest (or latest expired) transaction at the top level.
            sources = try V1Mapping.latestTransactions(root)
        }
        var deduplicated = V1Transactions()
        try deduplicated.add(sources, environment: environment, bundleId: bundleId)
        let transactions = deduplicated.list

        // The latest transaction the notification concerns: the newest purchase, ties broken by the larger id.
        let latest = transactions.max { a, b in
            a.purchaseDate != b.purchaseDate ? a.purchaseDate < b.purchaseDate : a.transactionId < b.transactionId
        }
        let digest = bodyDigest ?? SHA256.hash(data: body)
        var notification = NotificationFact(
            notificationUUID: Hex.lowercase(digest), notificationType: type,
            environment: environment)
        notification.version = "1"
        notification.bundleId = bundleId ?? latest?.bundleId
        if let otid = try root.identifier("original_transaction_id") {
            notification.originalTransactionId = OriginalTransactionID(otid)
        } else {
            notification.originalTransactionId = latest?.originalTransactionId
        }
        notification.transactionId = latest?.transactionId
        notification.autoRenewStatus = try root.v1Bool("auto_renew_status")
        notification.autoRenewProductId = try root.string("auto_renew_product_id")
        notification.extra = root.extras(excluding: knownKeys)
        if let unified {
            for key in ["status", "environment"] where unified.has(key) {
                notification.extra["unified_receipt." + key] = JSONText.compact(unified.fields[key]!)
            }
        }

        var facts: [Fact] = [.notification(notification)]
        facts.append(contentsOf: transactions.map(Fact.transaction))
        if let unified, unified.has("pending_renewal_info") {
            for o in try unified.objects("pending_renewal_info") {
                facts.append(.renewal(try V1Mapping.renewal(o, environment: environment)))
            }
        } else if let otid = notification.originalTransactionId,
            root.has("auto_renew_status") || root.has("auto_renew_product_id")
        {
            // The older shape states the renewal state at the top level only.
            var renewal = RenewalInfoFact(originalTransactionId: otid, environment: environment)
            renewal.productId = latest?.productId
            renewal.autoRenewStatus = notification.autoRenewStatus
            renewal.autoRenewProductId = notification.autoRenewProductId
            renewal.expirationIntent = try root.v1Int("expiration_intent")
            renewal.isInBillingRetryPeriod = try root.v1Bool("is_in_billing_retry_period")
            facts.append(.renewal(renewal))
        }
        return facts
    }
}

