import LedgerCore

// MARK: - NotificationV2Decoder

/// A decoded V2 notification payload (`responseBodyV2DecodedPayload`) to a `NotificationFact` plus the transaction
/// and renewal facts of its nested `signedTransactionInfo` / `signedRenewalInfo` (verified like the outer JWS).
/// Unknown types, subtypes and fields are kept, never refused.
enum NotificationV2Decoder {
    static let knownKeys: Set<String> = [
        "notificationType", "subtype", "notificationUUID", "signedDate", "version", "data", "summary",
        "externalPurchaseToken", "appData",
    ]
    static let dataKeys: Set<String> = [
        "environment", "appAppleId", "bundleId", "signedTransactionInfo", "signedRenewalInfo", "status",
    ]

    struct Result {
        var facts: [Fact]
        /// The weakest signature status among the nested JWS (`.verified` when there were none).
        var nestedSignature: SignatureStatus
    }

    static func decode(
        _ payload: AppleObject, verifier: JWSVerifier, receivedAt: UnixMillis
    ) throws(InputError) -> Result {
        let type = try payload.requiredString("notificationType")
        let uuid = try payload.requiredString("notificationUUID")
        let data = try payload.object("data")
        let summary = try payload.object("summary")
        let token = try payload.object("externalPurchaseToken")
        let appData = try payload.object("appData")
        let sections = [data, summary, appData, token].compactMap { $0 }

        var environment: AppStoreEnvironment?
        var bundleId: String?
        var appAppleId: Int64?
        for section in sections {
            if environment == nil { environment = try section.environment("environment") }
            if bundleId == nil { bundleId = try section.string("bundleId") }
            if appAppleId == nil { appAppleId = try section.int64("appAppleId") }
        }
        if environment == nil, let id = try token?.string("externalPurchaseId"), id.hasPrefix("SANDBOX") {
            environment = .sandbox
        }

        var notification = NotificationFact(
            notificationUUID: uuid, notificationType: type, environment: environment ?? .production)
        notification.subtype = try payload.string("subtype")
        notification.signedDate = try payload.int64("signedDate")
        notification.version = try payload.string("version")
        notification.bundleId = bundleId
        notification.appAppleId = appAppleId
        notification.status = try data?.int64("status")
        notification.extra = payload.extras(excluding: knownKeys)
        if let data {
            for (key, value) in data.extras(excluding: dataKeys) { notification.extra["data." + key] = value }
        }
        for (key, section) in [("summary", summary), ("externalPurchaseToken", token), ("appData", appData)] {
            if let section { notification.extra[key] = JSONText.compact(section.fields) }
        }

        var facts = [Fact]()
        var signature = SignatureStatus.verified
        let nestedDate = notification.signedDate ?? receivedAt
        if let jws = try data?.string("signedTransactionInfo") {
            let (transaction, status) = try verifier.transaction(
                jws, field: "data.signedTransactionInfo", fallbackDate: nestedDate)
            if status != .verified { signature = status }
            notification.originalTransactionId = transaction.originalTransactionId
            notification.transactionId = transaction.transactionId
            facts.append(.transaction(transaction))
        }
        if let jws = try data?.string("signedRenewalInfo") {
            let (renewal, status) = try verifier.renewal(jws, field: "data.signedRenewalInfo", fallbackDate: nestedDate)
            if status != .verified { signature = status }
            if notification.originalTransactionId == nil { notification.originalTransactionId = renewal.originalTransactionId }
            facts.append(.renewal(renewal))
        }
        facts.insert(.notification(notification), at: 0)
        return Result(facts: facts, nestedSignature: signature)
    }
}
