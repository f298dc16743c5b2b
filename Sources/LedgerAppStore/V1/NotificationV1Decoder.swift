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

    /// V1 has no id: the `notificationUUID` is `id(of:)` the parsed body, so the same notification is one event
    /// whatever whitespace carried it (`curl --data` strips newlines, `--data-binary` keeps them) and whether it came
    /// bare or as an envelope's `payload`.
    static func decode(_ root: AppleObject) throws(InputError) -> [Fact] {
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
        var notification = NotificationFact(
            notificationUUID: id(of: root), notificationType: type, environment: environment)
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

    /// The hex SHA-256 of the notification's canonical JSON text (`JSONText.compact`: members sorted by name, no
    /// whitespace, only `"`, `\\` and control characters escaped, integral numbers as integers). Two bodies that
    /// parse to the same JSON value get the same id.
    ///
    /// Ledgers written before this rule keyed V1 notifications by the SHA-256 of the body's bytes. Their events keep
    /// the id they were stored with (`verify` and `replay` read stored facts and never re-derive it); only a body
    /// received again after the change is decoded with the new id, and is stored once more as its own notification
    /// event (its transactions and renewal infos are still duplicates).
    static func id(of root: AppleObject) -> String {
        Hex.lowercase(SHA256.hash(data: JSONText.compactBytes(root.fields)))
    }
}

