import Foundation
import LedgerTestSupport

// MARK: - examples/: where it is and how it is made

/// The repository's `examples/` folder: Apple-shaped sample inputs, the test PKI that signs the signed ones, and a
/// configuration that trusts its root. `write(into:)` makes every file; `tools/generate-examples.sh` runs it.
enum ExampleFiles {
    /// The package root (this file is Tests/StoreLedgerCLITests/ExampleFiles.swift).
    static let repositoryRoot: String = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    static let directory = repositoryRoot + "/examples"

    static func path(_ name: String) -> String { directory + "/" + name }

    static func bytes(_ name: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path(name)) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path(name)])
        }
        return [UInt8](data)
    }

    // MARK: - The story the samples tell

    static let bundleId = "com.example.app"
    static let bundleVersion = "42"
    static let appAppleId: Int64 = 1_234_567_890
    static let monthly = "com.example.premium.monthly"
    static let yearly = "com.example.premium.yearly"
    static let lifetime = "com.example.lifetime"
    static let gems = "com.example.gems60"
    static let groupId = "20925731"

    /// A monthly subscription bought 2023-10-15T09:30:00Z, renewed twice: a verifyReceipt response knows the first
    /// two periods, a V1 DID_RENEW notification brings the third.
    static let monthlyOTID = "1000000741475761"
    static let monthlyPeriods: [(transactionId: String, lineItem: String, start: Int64, end: Int64)] = [
        ("1000000741475761", "1000000084739510", 1_697_362_200_000, 1_700_040_600_000),
        ("1000000770281234", "1000000084739511", 1_700_040_600_000, 1_702_632_600_000),
        ("1000000802113344", "1000000084739512", 1_702_632_600_000, 1_705_311_000_000),
    ]

    /// A yearly subscription bought with StoreKit 2 on 2023-11-14T22:13:20Z (transaction.jws) and renewed a year
    /// later (notification-v2.json, DID_RENEW).
    static let yearlyOTID = "2000000456789012"
    static let yearlyRenewalId = "2000000567890123"
    static let yearlyPurchase: Int64 = 1_700_000_000_000
    static let yearlyRenewal: Int64 = 1_731_622_400_000
    static let yearlyExpiry: Int64 = 1_763_158_400_000
    static let appAccountToken = "c6f7a9e2-3b41-4d5e-9f80-1a2b3c4d5e6f"

    // MARK: - Apple's date strings

    /// `2023-10-15 09:30:00 Etc/GMT`, as verifyReceipt and V1 notifications write dates.
    static func gmt(_ ms: Int64) -> String { format(ms, zone: "Etc/GMT") }

    /// `2023-10-15 02:30:00 America/Los_Angeles` (Pacific time, daylight saving included, as Apple writes `_pst`).
    static func pst(_ ms: Int64) -> String { format(ms, zone: "America/Los_Angeles") }

    private static func format(_ ms: Int64, zone: String) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: zone)!
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000)) + " " + zone
    }

    /// `name`, `name_ms`, `name_pst`: one V1 date, every value a string.
    static func v1Date(_ name: String, _ ms: Int64) -> [String: Any] {
        [name: gmt(ms), name + "_ms": String(ms), name + "_pst": pst(ms)]
    }

    // MARK: - V1 and verifyReceipt

    /// One `in_app` / `latest_receipt_info` entry of the monthly subscription.
    static func v1Transaction(_ period: Int) -> [String: Any] {
        let p = monthlyPeriods[period]
        var o: [String: Any] = [
            "transaction_id": p.transactionId, "original_transaction_id": monthlyOTID, "product_id": monthly,
            "quantity": "1", "web_order_line_item_id": p.lineItem, "is_trial_period": "false",
            "is_in_intro_offer_period": "false", "in_app_ownership_type": "PURCHASED",
            "subscription_group_identifier": groupId,
        ]
        o.merge(v1Date("purchase_date", p.start)) { $1 }
        o.merge(v1Date("original_purchase_date", monthlyPeriods[0].start)) { $1 }
        o.merge(v1Date("expires_date", p.end)) { $1 }
        return o
    }

    static func v1PendingRenewal() -> [String: Any] {
        [
            "auto_renew_product_id": monthly, "auto_renew_status": "1", "original_transaction_id": monthlyOTID,
            "product_id": monthly,
        ]
    }

    /// A base64 PKCS #7 receipt as Apple returns it in `latest_receipt` (shortened: the ledger keeps it, opaque).
    static let latestReceipt =
        "MIIUVAYJKoZIhvcNAQcCoIIURTCCFEECAQExCzAJBgUrDgMCGgUAMIIDkgYJKoZIhvcNAQcBoIIDgwSCA38xggN7MAoCAQgCAQEEAhYAMAoCARQCAQEEAgwAMAsCAQECAQEEAwIBADALAgELAgEBBAMCAQAwCwIBDwIBAQQDAgEAMAsCARACAQEEAwIBADALAgEZAgEBBAMCAQMwDAIBCgIBAQQEFgI0KzAMAgEOAgEBBAQCAgDmMA0CAQ0CAQEEBQIDAv8="

    /// receipt.json: a verifyReceipt response (status 0) that knows the first two monthly periods.
    static func receipt() -> [String: Any] {
        var receipt: [String: Any] = [
            "receipt_type": "Production", "adam_id": appAppleId, "app_item_id": appAppleId, "bundle_id": bundleId,
            "application_version": bundleVersion, "download_id": 94_022_357_155_128,
            "version_external_identifier": 861_232_519, "original_application_version": "1.0",
            "in_app": [v1Transaction(0), v1Transaction(1)],
        ]
        receipt.merge(v1Date("receipt_creation_date", 1_700_040_605_000)) { $1 }
        receipt.merge(v1Date("request_date", 1_700_481_600_000)) { $1 }
        receipt.merge(v1Date("original_purchase_date", 1_693_558_800_000)) { $1 }
        return [
            "status": 0, "environment": "Production", "receipt": receipt,
            "latest_receipt_info": [v1Transaction(1), v1Transaction(0)], "latest_receipt": latestReceipt,
            "pending_renewal_info": [v1PendingRenewal()],
        ]
    }

    /// notification-v1.json: a V1 DID_RENEW (the `unified_receipt` shape) bringing the third monthly period.
    static func notificationV1() -> [String: Any] {
        [
            "notification_type": "DID_RENEW", "environment": "PROD", "bid": bundleId, "bvrs": bundleVersion,
            "password": "7a3e1f9c2b8d4e6f0a1b2c3d4e5f6a7b", "auto_renew_status": "true",
            "auto_renew_product_id": monthly, "auto_renew_adam_id": "1490125678",
            "unified_receipt": [
                "environment": "Production", "status": 0, "latest_receipt": latestReceipt,
                "latest_receipt_info": [v1Transaction(2), v1Transaction(1), v1Transaction(0)],
                "pending_renewal_info": [v1PendingRenewal()],
            ] as [String: Any],
        ]
    }

    // MARK: - V2 (signed)

    /// A `JWSTransactionDecodedPayload` of the yearly subscription.
    static func yearlyTransaction(renewal: Bool) -> [String: Any] {
        [
            "transactionId": renewal ? yearlyRenewalId : yearlyOTID, "originalTransactionId": yearlyOTID,
            "webOrderLineItemId": renewal ? "2000000038475613" : "2000000038475612", "bundleId": bundleId,
            "productId": yearly, "subscriptionGroupIdentifier": groupId,
            "purchaseDate": renewal ? yearlyRenewal : yearlyPurchase, "originalPurchaseDate": yearlyPurchase,
            "expiresDate": renewal ? yearlyExpiry : yearlyRenewal, "quantity": 1, "type": "Auto-Renewable Subscription",
            "appAccountToken": appAccountToken, "inAppOwnershipType": "PURCHASED",
            "signedDate": renewal ? yearlyRenewal + 11_000 : yearlyPurchase + 5_000, "environment": "Production",
            "transactionReason": renewal ? "RENEWAL" : "PURCHASE", "storefront": "USA", "storefrontId": "143441",
            "price": 99_990, "currency": "USD",
        ]
    }

    /// A `JWSRenewalInfoDecodedPayload` of the yearly subscription after its renewal.
    static func yearlyRenewalInfo() -> [String: Any] {
        [
            "originalTransactionId": yearlyOTID, "autoRenewProductId": yearly, "productId": yearly,
            "autoRenewStatus": 1, "signedDate": yearlyRenewal + 11_000, "environment": "Production",
            "recentSubscriptionStartDate": yearlyPurchase, "renewalDate": yearlyExpiry, "currency": "USD",
            "renewalPrice": 99_990, "appAccountToken": appAccountToken,
        ]
    }

    /// The `responseBodyV2DecodedPayload` of notification-v2.json: DID_RENEW, with signed transaction and renewal.
    static func notificationV2Payload(pki: TestPKI) -> [String: Any] {
        [
            "notificationType": "DID_RENEW", "notificationUUID": "002e14d5-51f5-4503-b5a8-c3a1af68eb20",
            "version": "2.0", "signedDate": yearlyRenewal + 11_000,
            "data": [
                "appAppleId": appAppleId, "bundleId": bundleId, "bundleVersion": bundleVersion,
                "environment": "Production", "status": 1,
                "signedTransactionInfo": pki.sign(json: yearlyTransaction(renewal: true)),
                "signedRenewalInfo": pki.sign(json: yearlyRenewalInfo()),
            ] as [String: Any],
        ]
    }

    // MARK: - NDJSON batch

    /// inputs.ndjson: three envelopes, posted with `?appUserId=u1&receivedAt=2023-11-14T22:13:20Z`: a decoded
    /// non-consumable purchase, a signed consumable purchase, and the renewal info of subscription 1001 (whose
    /// purchase docs/socket-api.md appends just before) with auto-renew turned off.
    static func inputs(pki: TestPKI) -> [[String: Any]] {
        let lifetimePurchase: [String: Any] = [
            "transactionId": "1002", "originalTransactionId": "1002", "bundleId": bundleId, "productId": lifetime,
            "purchaseDate": 1_699_990_000_000, "originalPurchaseDate": 1_699_990_000_000, "quantity": 1,
            "type": "Non-Consumable", "inAppOwnershipType": "PURCHASED", "signedDate": 1_699_990_002_000,
            "environment": "Production", "transactionReason": "PURCHASE", "storefront": "USA",
            "storefrontId": "143441", "price": 49_990, "currency": "USD",
        ]
        let gemsPurchase: [String: Any] = [
            "transactionId": "1003", "originalTransactionId": "1003", "bundleId": bundleId, "productId": gems,
            "purchaseDate": 1_699_995_000_000, "originalPurchaseDate": 1_699_995_000_000, "quantity": 1,
            "type": "Consumable", "inAppOwnershipType": "PURCHASED", "signedDate": 1_699_995_003_000,
            "environment": "Production", "transactionReason": "PURCHASE", "storefront": "USA",
            "storefrontId": "143441", "price": 990, "currency": "USD",
        ]
        let autoRenewOff: [String: Any] = [
            "originalTransactionId": "1001", "autoRenewProductId": monthly, "productId": monthly,
            "autoRenewStatus": 0, "signedDate": 1_700_000_000_000, "environment": "Production",
            "recentSubscriptionStartDate": 1_700_000_000_000, "renewalDate": 1_702_592_000_000,
        ]
        return [
            ["type": "transaction", "payload": lifetimePurchase],
            ["type": "transaction", "payload": pki.sign(json: gemsPurchase)],
            ["type": "renewal", "payload": autoRenewOff],
        ]
    }

    // MARK: - Configuration

    /// config.json: trusts pki/root.cer (relative paths resolve against the configuration's folder).
    static func configuration() -> [String: Any] {
        [
            "bundleId": bundleId, "bindingPolicy": "transfer", "trustedRoots": ["pki/" + TestPKI.FileName.root],
            "requireSignatures": false,
            "products": [
                monthly: ["type": "autoRenewable", "entitlements": ["premium"], "group": "g1"],
                yearly: ["type": "autoRenewable", "entitlements": ["premium"], "group": "g1"],
                lifetime: ["type": "nonConsumable", "entitlements": ["premium"]],
                gems: ["type": "consumable", "credits": ["gems": 60]],
            ] as [String: Any],
        ]
    }

    // MARK: - Writing

    static func pretty(_ object: Any) -> [UInt8] {
        let data = try! JSONSerialization.data(
            withJSONObject: object,
            options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        )
        return [UInt8](data) + [0x0A]
    }

    static func line(_ object: Any) -> [UInt8] { AppleFixtures.json(object) + [0x0A] }

    /// Writes every sample into `directory`. The PKI in `directory/pki` is reused when there is one (so the root a
    /// configuration trusts stays the same), else minted and written.
    static func write(into directory: String) throws {
        let pkiDirectory = directory + "/pki"
        let pki: TestPKI
        if FileManager.default.fileExists(atPath: pkiDirectory + "/" + TestPKI.FileName.root) {
            pki = try TestPKI(contentsOf: pkiDirectory)
        } else {
            pki = try TestPKI(name: "StoreLedger Examples")
            try pki.write(to: pkiDirectory)
        }
        let files: [(String, [UInt8])] = [
            ("config.json", pretty(configuration())),
            ("receipt.json", pretty(receipt())),
            ("notification-v1.json", pretty(notificationV1())),
            ("notification-v2.json", line(["signedPayload": pki.sign(json: notificationV2Payload(pki: pki))])),
            ("transaction.jws", Array(pki.sign(json: yearlyTransaction(renewal: false)).utf8) + [0x0A]),
            ("inputs.ndjson", inputs(pki: pki).flatMap(line)),
        ]
        for (name, bytes) in files {
            try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + name))
        }
    }
}
