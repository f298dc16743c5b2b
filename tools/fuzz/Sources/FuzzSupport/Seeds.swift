import Foundation
import TestFixtures

// MARK: - Seed corpus from the test fixtures

/// Seed inputs per target, built from `LedgerTestSupport`'s fixtures (the same documents the tests use), so the
/// fuzzer starts from every shape the decoders know. `tools/fuzz/run.sh` writes them once per corpus directory:
/// `FUZZ_WRITE_SEEDS=DIR <target>` writes the target's seeds into DIR (and the test root their JWS are signed with
/// into `FUZZ_TEST_ROOT`), then exits.
public enum Seeds {
    typealias F = AppleFixtures

    static func receipts() -> [[UInt8]] {
        let t1 = F.v1Transaction()
        let t2 = F.v1Transaction(transactionId: "1000000000000002", purchaseDate: F.epoch + 30 * F.day)
        let refunded = F.v1Transaction(
            transactionId: "1000000000000003", purchaseDate: F.epoch + 60 * F.day,
            cancellationDate: F.epoch + 61 * F.day, cancellationReason: "1")
        return [
            F.receiptIOS7(inApp: [t1], latest: [t1, t2, refunded], pending: [F.v1PendingRenewal(gracePeriodExpiresDate: F.epoch + 40 * F.day)]),
            F.receiptIOS7(inApp: [F.v1Transaction(productId: "com.example.gems60", expiresDate: nil, quantity: 3)]),
            F.receiptIOS6(status: 21006, receipt: F.v1Transaction(style: .ios6), latestExpired: F.v1Transaction(style: .ios6)),
            F.receiptIOS6(status: 0, receipt: F.v1Transaction(style: .ios6), latest: F.v1Transaction(style: .ios6)),
            F.receiptStatus(21007, environment: "Sandbox"),
            F.receiptStatus(21002),
        ]
    }

    static func notificationsV1() -> [[UInt8]] {
        let t1 = F.v1Transaction()
        let t2 = F.v1Transaction(transactionId: "1000000000000002", purchaseDate: F.epoch + 30 * F.day, isUpgraded: true)
        return [
            F.v1Notification(type: "DID_RENEW", latest: [t1, t2]),
            F.v1Notification(type: "DID_CHANGE_RENEWAL_STATUS", autoRenewStatus: false, latest: [t1]),
            F.v1Notification(
                type: "REFUND", latest: [F.v1Transaction(cancellationDate: F.epoch + F.day, cancellationReason: "0")]),
            F.v1LegacyNotification(type: "CANCEL", latest: F.v1Transaction(style: .formattedOnly)),
            F.v1LegacyNotification(type: "DID_FAIL_TO_RENEW", latestExpired: F.v1Transaction(style: .formattedOnly)),
        ]
    }

    static func notificationsV2() -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        for (type, subtype) in [
            ("SUBSCRIBED", "INITIAL_BUY"), ("DID_RENEW", nil), ("DID_FAIL_TO_RENEW", "GRACE_PERIOD"),
            ("REFUND", nil), ("RENEWAL_EXTENSION", "SUMMARY"), ("EXTERNAL_PURCHASE_TOKEN", "UNREPORTED"), ("TEST", nil),
        ] as [(String, String?)] {
            seeds.append(F.v2Notification(type: type, subtype: subtype))
            seeds.append(F.json(F.v2NotificationPayload(type: type, subtype: subtype)))
        }
        return seeds
    }

    static func jws() -> [[UInt8]] {
        [
            Array(F.signedTransaction().utf8),
            Array(F.signedRenewal(F.v2Renewal(gracePeriodExpiresDate: F.epoch + 40 * F.day)).utf8),
            Array(F.signedTransaction(F.v2Transaction(revocationDate: F.epoch + F.day, revocationReason: 1)).utf8),
            F.json(F.signedTransaction(F.v2Transaction(type: "Non-Consumable"))),
            F.json(["signedTransactionInfo": F.signedTransaction(), "signedRenewalInfo": F.signedRenewal()]),
        ]
    }

    static func envelopes() -> [[UInt8]] {
        [
            F.envelope(type: "transaction", appUserId: "u1", receivedAt: F.epoch, jws: F.signedTransaction()),
            F.envelope(type: "receipt", appUserId: "u1", payload: F.receiptIOS7(inApp: [F.v1Transaction()])),
            F.envelope(type: "binding", receivedAt: F.epoch, payload: F.binding(appUserId: "u2", originalTransactionId: "1")),
            F.envelope(type: nil, payload: F.json(F.v2Renewal())),
            F.binding(appUserId: "u1", originalTransactionId: "2000000000000001", claimedAt: F.epoch),
            F.json(F.v2Transaction(appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138", quantity: 2)),
            F.json(F.v2Transaction(type: "Non-Renewing Subscription")),
            F.json(F.v2Transaction(productId: "com.example.gems60", type: "Consumable", quantity: 5)),
        ]
    }

    /// The seeds of the target named `target`.
    public static func seeds(for target: String) -> [[UInt8]] {
        switch target {
        case "FuzzReceipt": return receipts()
        case "FuzzNotificationV1": return notificationsV1()
        case "FuzzNotificationV2": return notificationsV2()
        case "FuzzJWS": return jws()
        case "FuzzEnvelope": return envelopes() + receipts().prefix(2) + notificationsV1().prefix(2) + jws().prefix(2)
        case "FuzzFraming":
            let lines = envelopes().map { $0 + [0x0A] }
            return [lines.flatMap { $0 }, envelopes()[0] + envelopes()[1], Array("  \n\n".utf8) + jws()[0]]
        case "FuzzHTTP":
            return HTTPSeeds.requests(documents: envelopes() + receipts().prefix(1) + notificationsV1().prefix(1))
        case "FuzzQuery": return ReadRoutes.seeds()
        case "FuzzDamagedLedger": return LedgerDamage.seeds()
        default: return []
        }
    }

    /// Writes the seeds of `target` into `directory` and the test root into `rootPath`.
    public static func write(target: String, to directory: String, rootPath: String?) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (i, seed) in seeds(for: target).enumerated() {
            try Data(seed).write(to: URL(fileURLWithPath: directory + "/seed-\(i)"))
        }
        if let rootPath { try Data(TestPKI.shared.rootDER).write(to: URL(fileURLWithPath: rootPath)) }
    }
}

/// HTTP/1.1 requests as a client writes them on the socket.
public enum HTTPSeeds {
    static func request(_ method: String, _ target: String, body: [UInt8]? = nil, type: String = "application/json")
        -> [UInt8]
    {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\n"
        if let body { head += "Content-Type: \(type)\r\nContent-Length: \(body.count)\r\n" }
        return Array((head + "\r\n").utf8) + (body ?? [])
    }

    static func requests(documents: [[UInt8]]) -> [[UInt8]] {
        var seeds = documents.map { request("POST", "/v1/events", body: $0) }
        seeds.append(request("POST", "/v1/events", body: documents.flatMap { $0 + [0x0A] }, type: "application/x-ndjson"))
        seeds.append(request("POST", "/v1/apple/transactions?appUserId=u9", body: Array(#"{"transactionId":"1","originalTransactionId":"1","productId":"p","purchaseDate":1700000000000,"expiresDate":1702592000000}"#.utf8)))
        seeds.append(request("POST", "/v1/apple/notifications", body: documents[0]))
        seeds.append(request("POST", "/v1/apple/receipts?appUserId=u1", body: documents.last!))
        seeds.append(request("POST", "/v1/bindings", body: Array(#"{"appUserId":"u1","originalTransactionId":"1"}"#.utf8)))
        for path in [
            "/v1/subscriptions/1?at=2023-11-14T22:13:20Z", "/v1/subscriptions/1?asOf=3&environment=Sandbox",
            "/v1/customers/u9?at=1700000000000", "/v1/customers/u1", "/v1/transactions/1", "/v1/events?after=0&limit=5",
            "/v1/health", "/metrics",
        ] {
            seeds.append(request("GET", path))
        }
        // Two pipelined requests on one connection.
        seeds.append(request("GET", "/v1/health") + request("GET", "/v1/subscriptions/1"))
        return seeds
    }
}

// MARK: - libFuzzer's initialisation hook

/// Called by libFuzzer before fuzzing; writes the seeds instead when `FUZZ_WRITE_SEEDS` is set.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(
    _ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?
) -> CInt {
    let environment = ProcessInfo.processInfo.environment
    guard let directory = environment["FUZZ_WRITE_SEEDS"] else { return 0 }
    let program = argv?.pointee?.pointee.map { String(cString: $0) } ?? ""
    let target = URL(fileURLWithPath: program).lastPathComponent
    do {
        try Seeds.write(target: target, to: directory, rootPath: environment["FUZZ_TEST_ROOT"])
        print("wrote \(Seeds.seeds(for: target).count) seeds for \(target) to \(directory)")
        exit(0)
    } catch {
        print("cannot write seeds: \(error)")
        exit(1)
    }
}
