import Foundation
import LedgerClient
import LedgerTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension LiveProcesses {
    /// examples/: made by `ExampleFiles.write` (run `tools/generate-examples.sh`), shaped like Apple's documented
    /// examples, accepted by a server that runs with examples/config.json, the signed ones verified against
    /// examples/pki/root.cer.
    @Suite("examples/", .serialized, .timeLimit(.minutes(2)))
    struct ExamplesTests {
        // MARK: - The generator

        /// Rewrites examples/ (keeping examples/pki). Off unless STORELEDGER_WRITE_EXAMPLES=1: a test run must not
        /// change the work tree.
        @Test(.enabled(if: ProcessInfo.processInfo.environment["STORELEDGER_WRITE_EXAMPLES"] == "1"))
        func writeExamples() throws {
            try ExampleFiles.write(into: ExampleFiles.directory)
        }

        /// The committed files are what the generator makes now (the signed ones up to their ECDSA signatures, which
        /// differ on every run: their decoded payloads and headers must be equal).
        @Test func committedExamplesMatchTheGenerator() throws {
            let fresh = try TemporaryDirectory(prefix: "sl-examples")
            defer { fresh.remove() }
            try FileManager.default.copyItem(atPath: ExampleFiles.path("pki"), toPath: fresh.file("pki"))
            try ExampleFiles.write(into: fresh.path)
            func read(_ directory: String, _ name: String) throws -> [UInt8] {
                try #require(
                    FileManager.default.contents(atPath: directory + "/" + name).map { [UInt8]($0) },
                    "\(name)"
                )
            }
            for name in ["config.json", "receipt.json", "notification-v1.json"] {
                #expect(
                    try read(fresh.path, name) == ExampleFiles.bytes(name),
                    "examples/\(name) differs from the generator's: run tools/generate-examples.sh"
                )
            }
            for name in ["notification-v2.json", "transaction.jws", "inputs.ndjson"] {
                let committed = Self.unsigned(try ExampleFiles.bytes(name))
                let generated = Self.unsigned(try read(fresh.path, name))
                #expect(!committed.isEmpty)
                #expect(
                    committed == generated,
                    "examples/\(name) differs from the generator's (signatures aside): run tools/generate-examples.sh"
                )
            }
        }

        /// `text` with every JWS replaced by its decoded header and payload (recursively), as canonical JSON.
        static func unsigned(_ bytes: [UInt8]) -> [String] {
            let text = String(decoding: bytes, as: UTF8.self)
            return text.split(separator: "\n").map { line in
                // A line is JSON (an NDJSON envelope, a notification body) or bare JWS text (transaction.jws).
                let value = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) ?? String(line)
                return String(decoding: AppleFixtures.json(expandJWS(value)), as: UTF8.self)
            }
        }

        static func expandJWS(_ value: Any) -> Any {
            if let s = value as? String, let parts = JWSParts(s) {
                return ["header": expandJWS(parts.header), "payload": expandJWS(parts.payload)]
            }
            if let o = value as? [String: Any] { return o.mapValues(expandJWS) }
            if let a = value as? [Any] { return a.map(expandJWS) }
            return value
        }

        // MARK: - Apple's shapes

        @Test func unsignedSamplesUseOnlyApplesDocumentedFieldsAndTypes() throws {
            let receipt = try Self.object(ExampleFiles.bytes("receipt.json"))
            try AppleShapes.check(receipt, fields: AppleShapes.verifyReceiptResponse, at: "receipt.json")
            let receiptBody = try #require(receipt["receipt"] as? [String: Any])
            try AppleShapes.check(receiptBody, fields: AppleShapes.appReceipt, at: "receipt.json receipt")
            #expect(receipt["status"] as? Int == 0)

            let v1 = try Self.object(ExampleFiles.bytes("notification-v1.json"))
            try AppleShapes.check(v1, fields: AppleShapes.v1Notification, at: "notification-v1.json")
            let unified = try #require(v1["unified_receipt"] as? [String: Any])
            try AppleShapes.check(
                unified,
                fields: AppleShapes.unifiedReceipt,
                at: "notification-v1.json unified_receipt"
            )
            #expect(v1["auto_renew_status"] as? String == "true", "V1 booleans are the strings \"true\"/\"false\"")

            var transactions = try #require(receiptBody["in_app"] as? [[String: Any]])
            transactions += try #require(receipt["latest_receipt_info"] as? [[String: Any]])
            transactions += try #require(unified["latest_receipt_info"] as? [[String: Any]])
            #expect(transactions.count == 7)
            for t in transactions {
                try AppleShapes.check(t, fields: AppleShapes.v1Transaction, at: "a V1 transaction")
                // Every value a string; every `_ms` date milliseconds, equal to its formatted twin.
                for (key, value) in t {
                    #expect(value is String, "\(key) must be a string in V1")
                    guard key.hasSuffix("_ms"), let text = value as? String else { continue }
                    let ms = try #require(Int64(text), "\(key) is not milliseconds")
                    #expect(ms > 1_000_000_000_000, "\(key) is not in milliseconds")
                    #expect(t[String(key.dropLast(3))] as? String == ExampleFiles.gmt(ms))
                    #expect(t[String(key.dropLast(3)) + "_pst"] as? String == ExampleFiles.pst(ms))
                }
            }
            let pending = try #require(unified["pending_renewal_info"] as? [[String: Any]])
            for p in pending {
                try AppleShapes.check(p, fields: AppleShapes.v1PendingRenewal, at: "pending_renewal_info")
            }
            // Pacific time includes daylight saving, as Apple's `_pst` strings do.
            #expect(ExampleFiles.pst(1_697_362_200_000) == "2023-10-15 02:30:00 America/Los_Angeles")
            #expect(ExampleFiles.pst(1_700_040_600_000) == "2023-11-15 01:30:00 America/Los_Angeles")
        }

        @Test func signedSamplesAreES256WithTheExampleChainAndApplesFields() throws {
            let root = Data(try ExampleFiles.bytes("pki/root.cer")).base64EncodedString()
            func checkHeader(_ parts: JWSParts, _ name: String) {
                #expect(parts.header["alg"] as? String == "ES256", "\(name): alg")
                let x5c = parts.header["x5c"] as? [String] ?? []
                #expect(x5c.count == 3, "\(name): x5c holds leaf, intermediate, root")
                #expect(x5c.last == root, "\(name): the chain ends at examples/pki/root.cer")
            }

            let jws = try #require(JWSParts(String(decoding: ExampleFiles.bytes("transaction.jws"), as: UTF8.self)))
            checkHeader(jws, "transaction.jws")
            try AppleShapes.check(jws.payload, fields: AppleShapes.v2Transaction, at: "transaction.jws")
            try AppleShapes.checkV2Dates(jws.payload, at: "transaction.jws")

            let body = try Self.object(ExampleFiles.bytes("notification-v2.json"))
            #expect(Array(body.keys) == ["signedPayload"])
            let notification = try #require(JWSParts(body["signedPayload"] as? String ?? ""))
            checkHeader(notification, "signedPayload")
            try AppleShapes.check(notification.payload, fields: AppleShapes.v2Notification, at: "signedPayload")
            try AppleShapes.checkV2Dates(notification.payload, at: "signedPayload")
            let data = try #require(notification.payload["data"] as? [String: Any])
            try AppleShapes.check(data, fields: AppleShapes.v2NotificationData, at: "signedPayload data")
            let transaction = try #require(JWSParts(data["signedTransactionInfo"] as? String ?? ""))
            let renewal = try #require(JWSParts(data["signedRenewalInfo"] as? String ?? ""))
            checkHeader(transaction, "signedTransactionInfo")
            checkHeader(renewal, "signedRenewalInfo")
            try AppleShapes.check(transaction.payload, fields: AppleShapes.v2Transaction, at: "signedTransactionInfo")
            try AppleShapes.check(renewal.payload, fields: AppleShapes.v2Renewal, at: "signedRenewalInfo")
            try AppleShapes.checkV2Dates(transaction.payload, at: "signedTransactionInfo")
            try AppleShapes.checkV2Dates(renewal.payload, at: "signedRenewalInfo")

            let lines = String(decoding: try ExampleFiles.bytes("inputs.ndjson"), as: UTF8.self).split(separator: "\n")
            #expect(lines.count == 3)
            for line in lines {
                let envelope = try Self.object(Array(line.utf8))
                let payload: [String: Any]
                if let signed = envelope["payload"] as? String {
                    let parts = try #require(JWSParts(signed))
                    checkHeader(parts, "inputs.ndjson")
                    payload = parts.payload
                } else {
                    payload = try #require(envelope["payload"] as? [String: Any])
                }
                let fields =
                    envelope["type"] as? String == "renewal" ? AppleShapes.v2Renewal : AppleShapes.v2Transaction
                try AppleShapes.check(payload, fields: fields, at: "inputs.ndjson")
                try AppleShapes.checkV2Dates(payload, at: "inputs.ndjson")
            }
        }

        static func object(_ bytes: [UInt8]) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        }

        // MARK: - A server with the examples' configuration

        @Test func aServerWithTheExamplesConfigurationAcceptsEverySampleAndVerifiesTheSignedOnes() async throws {
            try await withTaskExecutorPreference(TestExecutor.shared) { try await acceptsEverySample() }
        }

        private func acceptsEverySample() async throws {
            let directory = try TemporaryDirectory(prefix: "sl-examples")
            defer { directory.remove() }
            let server = try ServerProcess(
                data: directory.path,
                arguments: ["--config", ExampleFiles.path("config.json")]
            )
            defer { server.killAndWait() }
            try await server.waitUntilAnswering()
            let client = try AsyncLedgerClient(socketPath: server.socketPath, timeoutSeconds: 10)

            let v1 = try ExampleFiles.bytes("notification-v1.json")
            let posts: [(String, String, [UInt8], String, Int)] = [
                ("/v1/apple/notifications", "application/json", v1, "appended", 200),
                // What `curl --data @examples/notification-v1.json` sends: the newlines stripped. The same event.
                (
                    "/v1/apple/notifications", "application/json", v1.filter { $0 != 0x0A && $0 != 0x0D }, "duplicate",
                    200
                ),
                (
                    "/v1/apple/notifications", "application/json", try ExampleFiles.bytes("notification-v2.json"),
                    "appended", 200
                ),
                (
                    "/v1/apple/receipts?appUserId=u1", "application/json", try ExampleFiles.bytes("receipt.json"),
                    "appended", 200
                ),
                (
                    "/v1/apple/transactions?appUserId=u1", "text/plain", try ExampleFiles.bytes("transaction.jws"),
                    "appended", 200
                ),
            ]
            for (path, contentType, body, expected, status) in posts {
                let answer = try await client.post(path, body: body, contentType: contentType)
                #expect(answer.status == status, "\(path): \(answer.text)")
                #expect(answer.text.contains(#""status":"\#(expected)""#), "\(path): \(answer.text)")
            }
            let batch = try await client.post(
                "/v1/events?appUserId=u1&receivedAt=2023-11-14T22:13:20Z",
                body: try ExampleFiles.bytes("inputs.ndjson"),
                contentType: "application/x-ndjson"
            )
            #expect(batch.status == 200, "\(batch.text)")
            #expect(batch.text.components(separatedBy: #""status":"appended""#).count == 4, "\(batch.text)")

            // Every event of a signed input verified against examples/pki/root.cer; every other one unsigned.
            let events = try await client.get("/v1/events?after=0&limit=1000")
            #expect(events.status == 200)
            var signatures: [String: Set<String>] = [:]  // event key → the signature statuses of its events
            for line in events.text.split(separator: "\n") {
                let event = try Self.object(Array(line.utf8))
                signatures[event["key"] as? String ?? "?", default: []].insert(event["signature"] as? String ?? "?")
            }
            let signed = [
                ExampleFiles.yearlyOTID, ExampleFiles.yearlyRenewalId, "renewal:\(ExampleFiles.yearlyOTID)",
                "notification:002e14d5-51f5-4503-b5a8-c3a1af68eb20", "1003",
            ]
            for key in signed { #expect(signatures[key] == ["verified"], "\(key): \(signatures[key] ?? [])") }
            let unsigned =
                ExampleFiles.monthlyPeriods.map(\.transactionId) + ["renewal:\(ExampleFiles.monthlyOTID)", "1002"]
            for key in unsigned { #expect(signatures[key] == ["unsigned"], "\(key): \(signatures[key] ?? [])") }
            #expect(!signatures.values.contains { $0.contains("unverified") }, "\(signatures)")
            // u1 owns both subscriptions and the lifetime purchase, and was credited the gems.
            let customer = try Self.object(try await client.get("/v1/customers/u1?at=2023-12-01T00:00:00Z").body)
            let subscriptions = Set(customer["subscriptions"] as? [String] ?? [])
            #expect(subscriptions.isSuperset(of: [ExampleFiles.monthlyOTID, ExampleFiles.yearlyOTID]), "\(customer)")
            #expect((customer["credits"] as? [String: Any])?["gems"] as? Int == 60, "\(customer)")
            let timeline = try Self.object(
                try await client.get("/v1/subscriptions/\(ExampleFiles.monthlyOTID)?at=2024-01-01T00:00:00Z").body
            )
            #expect((timeline["periods"] as? [Any])?.count == 3, "\(timeline)")
        }
    }
}

// MARK: - JWS, read without verifying

/// A compact JWS's decoded header and payload (the tests compare shapes; the server verifies signatures).
struct JWSParts {
    var header: [String: Any]
    var payload: [String: Any]

    init?(_ token: String) {
        let parts = token.trimmingCharacters(in: .whitespacesAndNewlines).split(
            separator: ".",
            omittingEmptySubsequences: false
        )
        guard parts.count == 3,
            let h = Self.decode(parts[0]), let p = Self.decode(parts[1])
        else { return nil }
        header = h
        payload = p
    }

    private static func decode(_ segment: Substring) -> [String: Any]? {
        var s = segment.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        guard let data = Data(base64Encoded: s) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }
}

// MARK: - Apple's documented field names

/// The field names Apple documents for each object (App Store Server Notifications V1 `responseBody`, verifyReceipt
/// `responseBody`, App Store Server API `JWSTransactionDecodedPayload`, `JWSRenewalInfoDecodedPayload`,
/// `responseBodyV2DecodedPayload`). A sample may leave optional fields out; it may not invent one.
enum AppleShapes {
    struct Undocumented: Error, CustomStringConvertible {
        var description: String
    }

    static func check(_ object: [String: Any], fields: Set<String>, at place: String) throws {
        let unknown = Set(object.keys).subtracting(fields)
        guard unknown.isEmpty else {
            throw Undocumented(description: "\(place): fields Apple does not document: \(unknown.sorted())")
        }
    }

    /// V2 dates are integers in milliseconds since 1970.
    static func checkV2Dates(_ object: [String: Any], at place: String) throws {
        for (key, value) in object where key.hasSuffix("Date") {
            guard let ms = value as? Int64 ?? (value as? Int).map(Int64.init), ms > 1_000_000_000_000 else {
                throw Undocumented(description: "\(place): \(key) is not milliseconds since 1970: \(value)")
            }
        }
    }

    static let verifyReceiptResponse: Set<String> = [
        "environment", "is-retryable", "latest_receipt", "latest_receipt_info", "pending_renewal_info", "receipt",
        "status",
    ]
    static let appReceipt: Set<String> = [
        "adam_id", "app_item_id", "application_version", "bundle_id", "download_id", "expiration_date",
        "expiration_date_ms", "expiration_date_pst", "in_app", "original_application_version", "original_purchase_date",
        "original_purchase_date_ms", "original_purchase_date_pst", "preorder_date", "preorder_date_ms",
        "preorder_date_pst", "receipt_creation_date", "receipt_creation_date_ms", "receipt_creation_date_pst",
        "receipt_type", "request_date", "request_date_ms", "request_date_pst", "version_external_identifier",
    ]
    static let v1Transaction: Set<String> = [
        "app_account_token", "cancellation_date", "cancellation_date_ms", "cancellation_date_pst",
        "cancellation_reason", "expires_date", "expires_date_ms", "expires_date_pst", "in_app_ownership_type",
        "is_in_intro_offer_period", "is_trial_period", "is_upgraded", "offer_code_ref_name", "original_purchase_date",
        "original_purchase_date_ms", "original_purchase_date_pst", "original_transaction_id", "product_id",
        "promotional_offer_id", "purchase_date", "purchase_date_ms", "purchase_date_pst", "quantity",
        "subscription_group_identifier", "transaction_id", "web_order_line_item_id",
    ]
    static let v1PendingRenewal: Set<String> = [
        "auto_renew_product_id", "auto_renew_status", "expiration_intent", "grace_period_expires_date",
        "grace_period_expires_date_ms", "grace_period_expires_date_pst", "is_in_billing_retry_period",
        "offer_code_ref_name", "original_transaction_id", "price_consent_status", "price_increase_status",
        "product_id", "promotional_offer_id",
    ]
    static let v1Notification: Set<String> = [
        "auto_renew_adam_id", "auto_renew_product_id", "auto_renew_status", "auto_renew_status_change_date",
        "auto_renew_status_change_date_ms", "auto_renew_status_change_date_pst", "bid", "bvrs", "environment",
        "expiration_intent", "notification_type", "password", "unified_receipt",
    ]
    static let unifiedReceipt: Set<String> = [
        "environment", "latest_receipt", "latest_receipt_info", "pending_renewal_info", "status",
    ]
    static let v2Transaction: Set<String> = [
        "appAccountToken", "appTransactionId", "bundleId", "currency", "environment", "expiresDate",
        "inAppOwnershipType", "isUpgraded", "offerDiscountType", "offerIdentifier", "offerPeriod", "offerType",
        "originalPurchaseDate", "originalTransactionId", "price", "productId", "purchaseDate", "quantity",
        "revocationDate", "revocationReason", "signedDate", "storefront", "storefrontId", "subscriptionGroupIdentifier",
        "transactionId", "transactionReason", "type", "webOrderLineItemId",
    ]
    static let v2Renewal: Set<String> = [
        "appAccountToken", "appTransactionId", "autoRenewProductId", "autoRenewStatus", "currency",
        "eligibleWinBackOfferIds", "environment", "expirationIntent", "gracePeriodExpiresDate",
        "isInBillingRetryPeriod", "offerDiscountType", "offerIdentifier", "offerPeriod", "offerType",
        "originalTransactionId", "priceIncreaseStatus", "productId", "recentSubscriptionStartDate", "renewalDate",
        "renewalPrice", "signedDate",
    ]
    static let v2Notification: Set<String> = [
        "notificationType", "subtype", "notificationUUID", "data", "summary", "externalPurchaseToken", "appData",
        "version", "signedDate",
    ]
    static let v2NotificationData: Set<String> = [
        "appAppleId", "bundleId", "bundleVersion", "consumptionRequestReason", "environment", "signedRenewalInfo",
        "signedTransactionInfo", "status",
    ]
}
