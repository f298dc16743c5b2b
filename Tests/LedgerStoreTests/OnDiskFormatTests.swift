import Foundation
import LMDB
import LedgerCore
import LedgerStore
import LedgerErrors
import Testing

/// The bytes a ledger writes are its format on disk: a ledger written by an earlier build must open, verify and
/// replay in this one. A fixed history (every kind of fact, two environments, an environment this build does not
/// know, a claim that names no environment, a late fact that makes a refold, a duplicate, refusals) is written and
/// every database is read back raw and digested; the digests were recorded with the build before the store's layout
/// was reorganised. A change here is a change of the format, which needs a schema upgrade.
@Suite struct OnDiskFormatTests {
    static let day: Int64 = 86_400_000
    static let start: Int64 = 1_740_819_600_000  // 2025-03-01T09:00:00Z

    static func transactionFact(
        _ id: String, otid: String, month: Int64, environment: AppStoreEnvironment = .production
    ) -> Fact {
        var t = TransactionFact(
            transactionId: TransactionID(id), originalTransactionId: OriginalTransactionID(otid),
            productId: "com.example.premium.monthly", purchaseDate: start + month * 30 * day, environment: environment)
        t.expiresDate = start + (month + 1) * 30 * day
        t.signedDate = start + month * 30 * day
        t.originalPurchaseDate = start
        t.webOrderLineItemId = "w\(otid)-\(month)"
        t.type = .autoRenewable
        return .transaction(t)
    }

    static func claim(_ user: String, otid: String, at: Int64, environment: AppStoreEnvironment?) -> Fact {
        .binding(
            BindingClaim(
                appUserId: AppUserID(user), originalTransactionId: OriginalTransactionID(otid), claimedAt: at,
                environment: environment ?? .production, everyEnvironment: environment == nil))
    }

    static func input(_ facts: [Fact], _ n: Int64) -> LedgerInput {
        .facts(
            facts, metadata: FactMetadata(source: .decodedJSON, receivedAt: start + n * 1_000),
            raw: Array("input \(n): \(facts.map(\.eventKey).joined(separator: ","))".utf8))
    }

    /// The fixed history, in three commits.
    static let commits: [[LedgerInput]] = {
        let other = AppStoreEnvironment(appleName: "Preview")!
        var renewal = RenewalInfoFact(originalTransactionId: "100", environment: .production)
        renewal.autoRenewStatus = false
        renewal.autoRenewProductId = "com.example.premium.monthly"
        var notification = NotificationFact(notificationUUID: "n-1", notificationType: "DID_RENEW")
        notification.originalTransactionId = "100"
        notification.transactionId = "102"
        notification.signedDate = start + 60 * day
        notification.version = "2.0"
        let rejectedAt = start + 5_000
        return [
            [
                input([transactionFact("100", otid: "100", month: 0)], 1),
                input([transactionFact("101", otid: "100", month: 1), claim("u1", otid: "100", at: start + day, environment: .production)], 2),
                input([transactionFact("200", otid: "200", month: 0, environment: .sandbox)], 3),
                .rejected(RejectedInput(raw: Array("not json".utf8), code: "invalid_json", message: "unexpected n", receivedAt: rejectedAt)),
            ],
            [
                input([transactionFact("102", otid: "100", month: 2), .notification(notification)], 4),
                input([.renewal(renewal)], 5),
                input([claim("u2", otid: "200", at: start + 2 * day, environment: nil)], 6),
                input([transactionFact("300", otid: "300", month: 0, environment: other)], 7),
                input([transactionFact("101", otid: "100", month: 1)], 8),  // a duplicate: writes nothing
            ],
            [
                // Lands before what the timeline folded: a refold of subscription 100.
                input([transactionFact("099", otid: "100", month: -1)], 9),
                input([transactionFact("201", otid: "200", month: 0, environment: .production)], 10),
                .rejected(RejectedInput(raw: Array(repeating: 0x41, count: 300), code: "too_large", message: "over", receivedAt: rejectedAt)),
            ],
        ]
    }()

    static let databases = [
        "meta", "raw", "events", "log", "by_otid", "by_user", "timelines", "rejected", "bindings_any", "lifecycle",
        "webhook_dead", "metric_days", "metric_points", "metric_dirty", "identities", "identity_index", "raw_sealed",
        "rejected_sealed", "receipt_created",
    ]

    /// FNV-1a (64 bits) over every key and value of each database, in key order, each framed by its length.
    static func digests(of directory: String) throws -> [String: String] {
        var options = Environment.Options()
        options.readOnly = true
        let env = try Environment(path: directory, options: options)
        var out: [String: String] = [:]
        for name in databases {
            let db = try env.openDatabase(name)
            out[name] = try env.read { txn in
                var hash: UInt64 = 0xcbf2_9ce4_8422_2325
                func add(_ bytes: [UInt8]) {
                    for b in withUnsafeBytes(of: UInt64(bytes.count).bigEndian, Array.init) + bytes {
                        hash = (hash ^ UInt64(b)) &* 0x100_0000_01b3
                    }
                }
                let cursor = try txn.cursor(db)
                var entry = try cursor.first()
                var count = 0
                while let e = entry {
                    add(Array(e.key))
                    add(Array(e.value))
                    count += 1
                    entry = try cursor.next()
                }
                return "\(count) " + String(hash, radix: 16)
            }
        }
        return out
    }

    /// Recorded with the build before the reorganisation (entries, then the digest).
    static let recorded: [String: String] = [
        "meta": "4 505ab3938a0dd150", "raw": "9 6e2eb91d3bb58e27", "events": "11 e61e484b471ab0e9",
        "log": "11 4c669db929224b3b", "by_otid": "12 5338f56e78c08b57", "by_user": "3 5f4cffb065e548f3",
        "timelines": "4 93a3815902793d1b", "rejected": "2 d1bcf857e3108c25", "bindings_any": "1 f9d7db8022222bf4",
        // Schema 4: the schema version in `meta`, the lifecycle events, no dead letter; schema 5: the version in
        // `meta` (the fixed history states no ownership type, so its timelines are as before); schema 6: the version
        // in `meta`, and the timelines' fold positions of claims (a claim's id is its cause); schema 7: the version
        // in `meta`, and the metrics summed by day; schema 8: the version in `meta` (the history is written without
        // pseudonyms, so no identity and no sealed raw input); schema 9: the version in `meta` (the history has no
        // receipt copy of a signed transaction, so its timelines are as before); schema 10: the version in `meta`
        // (the history has no upgrade, so its metrics are as before); schema 11: the version in `meta` (this build
        // wrote the history's receipts, with their creation dates, so none is derived).
        "lifecycle": "9 b19334a9fb8c9035", "webhook_dead": "0 cbf29ce484222325", "metric_days": "9 fda1abe387f74699",
        "metric_points": "4 d348f1db7385a75", "metric_dirty": "0 cbf29ce484222325",
        "identities": "0 cbf29ce484222325", "identity_index": "0 cbf29ce484222325", "raw_sealed": "0 cbf29ce484222325",
        "rejected_sealed": "0 cbf29ce484222325", "receipt_created": "0 cbf29ce484222325",
    ]

    @Test func aFixedHistoryIsStoredAsTheEarlierBuildStoredIt() throws {
        let t = try TemporaryLedger()
        for commit in Self.commits { _ = try t.ledger.appendAndWait(commit) }
        // The metrics summed in whatever the follower has done meanwhile.
        try t.ledger.catchUpMetrics()
        let verification = try t.ledger.audit.verify()
        #expect(verification.ok, "\(verification.fault ?? "")")
        // Read through an environment of its own: a copy, since one process must not open one environment twice.
        let copy = NSTemporaryDirectory() + "ledger-format-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        try t.ledger.copy(to: copy)
        let found = try Self.digests(of: copy)
        for name in Self.databases {
            #expect(found[name] == Self.recorded[name], "\(name)")
        }
    }
}
