import Foundation
import Hummingbird
import HummingbirdTesting
import LedgerCore
import LedgerServer
import LedgerStore
import LedgerTestSupport
import Testing

/// Three stories of valid time and knowledge time, told through the socket's routes as a service would tell them
/// (Apple's signed documents, the caller's `appUserId`) and read back as a customer, a timeline and a why, at
/// instants before and after, and as known at log positions before and after (docs/domain.md, "Owners", "Late
/// statements", "Refunds and revocations").
@Suite("Two clocks: restores, late statuses, stale receipts", .timeLimit(.minutes(3)))
struct TwoClocksStoryTests {
    static let day: Int64 = 86_400_000
    static let hour: Int64 = 3_600_000
    static let t0: Int64 = 1_709_283_600_000  // 2024-03-01T09:00:00Z
    static let monthly = "com.example.premium.monthly"
    static let lifetime = "com.example.lifetime"
    static let otid = "2000000000000001"
    static let token = "7e3fb20b-4cdb-47cc-936d-99d65f608138"

    static func configuration(policy: String) -> String {
        #"{"bindingPolicy":"\#(policy)","products":{"\#(monthly)":{"type":"autoRenewable","entitlements":["premium"]},"\#(lifetime)":{"type":"nonConsumable","entitlements":["premium"]}}}"#
    }

    typealias Call = @Sendable (_ method: HTTPRequest.Method, _ uri: String, _ body: [UInt8]?) async throws -> (
        HTTPResponse.Status, [String: Any]
    )

    /// Runs `story` against a router over a fresh ledger with `policy`.
    static func withRouter(policy: String = "transfer", _ story: @escaping @Sendable (Call, LedgerRoutes) async throws -> Void) async throws {
        let (api, directory) = try RouterTests.makeAPI(configuration(policy: policy))
        defer {
            api.ledger.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let app = Application(router: api.makeRouter())
        try await app.test(.router) { client in
            let call: Call = { method, uri, body in
                try await client.execute(
                    uri: uri, method: method, headers: body == nil ? [:] : [.contentType: "application/json"],
                    body: body.map { ByteBuffer(bytes: $0) }
                ) { response in
                    let text = String(buffer: response.body)
                    let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
                    return (response.status, object)
                }
            }
            try await story(call, api)
        }
    }

    static func premium(_ customer: [String: Any]) -> [String: Any]? {
        (customer["entitlements"] as? [String: Any])?["premium"] as? [String: Any]
    }

    static func active(_ call: Call, _ user: String, at: Int64, asOf: UInt64? = nil) async throws -> Bool {
        let (status, customer) = try await call(
            .get, "/v1/customers/\(user)?at=\(at)" + (asOf.map { "&asOf=\($0)" } ?? ""), nil)
        #expect(status == .ok)
        return premium(customer)?["active"] as? Bool == true
    }

    static func posted(_ result: (HTTPResponse.Status, [String: Any])) -> UInt64? {
        #expect(result.0 == .ok, "\(result.1)")
        #expect(result.1["status"] as? String == "appended", "\(result.1)")
        return (result.1["seq"] as? NSNumber)?.uint64Value
    }

    // MARK: - 1. A restore by another app user

    /// Zoe buys (her transaction carries the token the app made for her); ten days later Adam, on the same Apple ID,
    /// restores: his backend posts the re-signed transaction, still carrying Zoe's token, naming Adam.
    static func zoeBuysAdamRestores(_ call: Call, adamFirst: Bool) async throws -> (bought: UInt64, restored: UInt64) {
        let bought = AppleFixtures.v2Transaction(
            transactionId: otid, originalTransactionId: otid, productId: monthly, purchaseDate: t0,
            expiresDate: t0 + 30 * day, signedDate: t0 + 1_000, appAccountToken: token)
        var restored = bought
        restored["signedDate"] = t0 + 10 * day
        func zoe() async throws -> UInt64? {
            posted(try await call(.post, "/v1/apple/transactions?appUserId=zoe", Array(AppleFixtures.signedTransaction(bought).utf8)))
        }
        func adam() async throws -> UInt64? {
            posted(try await call(.post, "/v1/apple/transactions?appUserId=adam", Array(AppleFixtures.signedTransaction(restored).utf8)))
        }
        if adamFirst {
            let a = try await adam(), z = try await zoe()
            return (try #require(z), try #require(a))
        }
        let z = try await zoe(), a = try await adam()
        return (try #require(z), try #require(a))
    }

    @Test(arguments: [("transfer", false), ("keep", false), ("share", false), ("transfer", true), ("keep", true)])
    func aRestoreByAnotherUserIsAClaimAtTheRestore(policy: String, adamFirst: Bool) async throws {
        try await Self.withRouter(policy: policy) { call, _ in
            let (bought, restored) = try await Self.zoeBuysAdamRestores(call, adamFirst: adamFirst)
            let before = Self.t0 + 5 * Self.day, after = Self.t0 + 12 * Self.day

            // Before the restore, whatever the policy: Zoe's, and only hers.
            #expect(try await Self.active(call, "zoe", at: before), "\(policy): Zoe owns it until the restore")
            #expect(try await !Self.active(call, "adam", at: before), "\(policy): Adam owned nothing before his restore")
            let (_, why) = try await call(.get, "/v1/customers/zoe/entitlements/premium/why?at=\(before)", nil)
            #expect(why["reason"] as? String == "purchase", "\(why)")

            // After it, the policy decides what Adam's claim does.
            let zoeAfter = try await Self.active(call, "zoe", at: after)
            let adamAfter = try await Self.active(call, "adam", at: after)
            switch policy {
            case "transfer": #expect(!zoeAfter && adamAfter)
            case "keep": #expect(zoeAfter && !adamAfter)
            default: #expect(zoeAfter && adamAfter)
            }

            let (_, timeline) = try await call(.get, "/v1/subscriptions/\(Self.otid)?at=\(after)", nil)
            let owners = try #require(timeline["owners"] as? [[String: Any]])
            let users = owners.map { $0["appUserId"] as? String }
            let refused = (timeline["refusedClaims"] as? [[String: Any]]) ?? []
            switch policy {
            case "transfer":
                #expect(users == ["zoe", "adam"], "\(owners)")
                #expect(owners.first?["from"] as? Int64 == Self.t0, "Zoe owns it from her purchase")
                #expect(owners.first?["to"] as? Int64 == Self.t0 + 10 * Self.day, "until Adam's restore: \(owners)")
                #expect(owners.last?["from"] as? Int64 == Self.t0 + 10 * Self.day)
                let (_, whyZoe) = try await call(.get, "/v1/customers/zoe/entitlements/premium/why?at=\(after)", nil)
                #expect(whyZoe["reason"] as? String == "transferred", "\(whyZoe)")
            case "keep":
                #expect(users == ["zoe"], "\(owners)")
                #expect(refused.map { $0["appUserId"] as? String } == ["adam"], "one refused claim: \(refused)")
                #expect(refused.first?["at"] as? Int64 == Self.t0 + 10 * Self.day)
                let (_, whyAdam) = try await call(.get, "/v1/customers/adam/entitlements/premium/why?at=\(after)", nil)
                #expect(whyAdam["reason"] as? String == "claim_refused", "\(whyAdam)")
            default:
                #expect(users == ["zoe", "adam"], "\(owners)")
                #expect(owners.first?["to"] == nil || owners.first?["to"] is NSNull, "\(owners)")
                #expect(owners.last?["from"] as? Int64 == Self.t0 + 10 * Self.day)
            }

            // As known before the restore was posted (Zoe's purchase alone, when it came first): Zoe's after it too.
            if !adamFirst {
                #expect(try await Self.active(call, "zoe", at: after, asOf: bought))
                #expect(try await !Self.active(call, "adam", at: after, asOf: bought))
            } else {
                // Adam's post alone (before Zoe's backend said anything): the token's purchase is claimed by Adam at
                // his restore; nobody named owned it before.
                #expect(try await !Self.active(call, "zoe", at: after, asOf: restored))
            }
        }
    }

    // MARK: - 2. A status Apple states late

    /// Alice's month ends at E. Apple's DID_FAIL_TO_RENEW is signed two hours later; the grace period (or, without
    /// one, billing retry) began at E all the same.
    @Test(arguments: [true, false])
    func aLateGracePeriodOrBillingRetryBeganAtTheExpiry(grace: Bool) async throws {
        try await Self.withRouter { call, _ in
            let end = Self.t0 + 30 * Self.day
            let bought = AppleFixtures.v2Transaction(
                transactionId: Self.otid, originalTransactionId: Self.otid, productId: Self.monthly,
                purchaseDate: Self.t0, expiresDate: end, signedDate: Self.t0)
            let beforeStatement = try #require(
                Self.posted(
                    try await call(
                        .post, "/v1/apple/transactions?appUserId=alice",
                        Array(AppleFixtures.signedTransaction(bought).utf8))))
            let stated = end + 2 * Self.hour
            let renewal = AppleFixtures.v2Renewal(
                originalTransactionId: Self.otid, productId: Self.monthly, autoRenewStatus: 1,
                isInBillingRetryPeriod: true, gracePeriodExpiresDate: grace ? end + 16 * Self.day : nil,
                signedDate: stated)
            let notification = AppleFixtures.v2Notification(
                type: "DID_FAIL_TO_RENEW", subtype: grace ? "GRACE_PERIOD" : nil,
                notificationUUID: "5e1c3b9a-0000-4000-8000-00000000000\(grace ? 1 : 2)", signedDate: stated,
                transaction: bought, renewal: renewal)
            #expect(Self.posted(try await call(.post, "/v1/apple/notifications", notification)) != nil)

            let oneHourIn = end + Self.hour
            let (_, timeline) = try await call(.get, "/v1/subscriptions/\(Self.otid)?at=\(oneHourIn)", nil)
            #expect(timeline["status"] as? String == (grace ? "in_grace_period" : "in_billing_retry"), "\(timeline)")
            #expect(try await Self.active(call, "alice", at: oneHourIn) == grace, "access during grace from the expiry")
            let changes = (timeline["changes"] as? [[String: Any]]) ?? []
            let kind = grace ? "grace_period" : "billing_retry"
            #expect(changes.first { $0["kind"] as? String == kind }?["at"] as? Int64 == end, "\(changes)")
            let (_, why) = try await call(.get, "/v1/customers/alice/entitlements/premium/why?at=\(oneHourIn)", nil)
            #expect(why["reason"] as? String == (grace ? "grace_period" : "billing_retry"), "\(why)")

            // As known before Apple said so: expired at E.
            let (_, known) = try await call(
                .get, "/v1/subscriptions/\(Self.otid)?at=\(oneHourIn)&asOf=\(beforeStatement)", nil)
            #expect(known["status"] as? String == "expired", "\(known)")
            #expect(try await !Self.active(call, "alice", at: oneHourIn, asOf: beforeStatement))
            // Just before the expiry: active either way.
            #expect(try await Self.active(call, "alice", at: end - 1))
            if grace {
                #expect(try await !Self.active(call, "alice", at: end + 16 * Self.day), "the grace period ran out")
            }
        }
    }

    // MARK: - 3. A stale receipt never reverses a refund

    /// Bob buys a lifetime unlock at T0 and Apple refunds it at T0+10d. At T0+20d his app posts an old device
    /// receipt, made a minute after the purchase, whose `in_app` holds the purchase without a cancellation: it says
    /// what the receipt was then, not what Apple says now. Only Apple's REFUND_REVERSED gives access back.
    @Test func aStaleReceiptNeverReversesARefund() async throws {
        try await Self.withRouter { call, _ in
            let tid = "2000000000000777"
            let purchase = AppleFixtures.v2Transaction(
                transactionId: tid, originalTransactionId: tid, productId: Self.lifetime, purchaseDate: Self.t0,
                signedDate: Self.t0, type: "Non-Consumable")
            #expect(
                Self.posted(
                    try await call(
                        .post, "/v1/apple/transactions?appUserId=bob",
                        Array(AppleFixtures.signedTransaction(purchase).utf8))) != nil)
            let refundedAt = Self.t0 + 10 * Self.day
            var refunded = purchase
            refunded["signedDate"] = refundedAt
            refunded["revocationDate"] = refundedAt
            refunded["revocationReason"] = 0
            refunded["revocationType"] = "REFUND_FULL"
            let refund = AppleFixtures.v2Notification(
                type: "REFUND", subtype: nil, notificationUUID: "5e1c3b9a-0000-4000-8000-000000000101",
                signedDate: refundedAt, transaction: refunded)
            #expect(Self.posted(try await call(.post, "/v1/apple/notifications", refund)) != nil)

            let stale = AppleFixtures.receiptIOS7(
                requestDate: Self.t0 + 20 * Self.day, creationDate: Self.t0 + 60_000,
                inApp: [
                    AppleFixtures.v1Transaction(
                        transactionId: tid, originalTransactionId: tid, productId: Self.lifetime,
                        purchaseDate: Self.t0, expiresDate: nil, webOrderLineItemId: nil)
                ])
            let staleSeq = try #require(
                Self.posted(try await call(.post, "/v1/apple/receipts?appUserId=bob", stale)))

            let later = Self.t0 + 25 * Self.day
            #expect(try await Self.active(call, "bob", at: Self.t0 + 5 * Self.day), "bought")
            #expect(try await !Self.active(call, "bob", at: later), "the stale receipt gave a refunded purchase back")
            let (_, why) = try await call(.get, "/v1/customers/bob/entitlements/premium/why?at=\(later)", nil)
            #expect(why["reason"] as? String == "refunded", "\(why)")
            let (_, timeline) = try await call(.get, "/v1/subscriptions/\(tid)?at=\(later)", nil)
            #expect(timeline["status"] as? String == "revoked", "\(timeline)")

            // Apple reverses the refund at T0+30d: access again from then, revoked in between.
            let reversedAt = Self.t0 + 30 * Self.day
            let reversal = AppleFixtures.v2Notification(
                type: "REFUND_REVERSED", subtype: nil, notificationUUID: "5e1c3b9a-0000-4000-8000-000000000102",
                signedDate: reversedAt, transaction: purchase)
            #expect(Self.posted(try await call(.post, "/v1/apple/notifications", reversal)) != nil)
            #expect(try await !Self.active(call, "bob", at: later))
            #expect(try await Self.active(call, "bob", at: reversedAt + Self.day))
            #expect(try await !Self.active(call, "bob", at: reversedAt + Self.day, asOf: staleSeq))
        }
    }
}
