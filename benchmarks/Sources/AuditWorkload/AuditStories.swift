import Crypto
import Foundation
import LedgerAppStore
import LedgerCore
import LedgerIngest
import TestFixtures

// MARK: - The stories of the audit ledger

/// The App Store traffic of an app with a growing base of subscribers, month by month, as Apple's documents: each
/// subscription is bought, renews monthly while its subscriber stays, and sometimes has its auto-renewal turned off,
/// is refunded or lapses. A subscription reaches the ledger through one channel for its whole life:
/// - V1 server notifications (`unified_receipt` shape, the last three transactions in `latest_receipt_info`), the
///   purchase followed by the app backend's claim naming the user (a claim that names no environment);
/// - signed V2 notifications (3 JWS each: payload, transaction, renewal info), half of them with an
///   `appAccountToken`, some in the sandbox;
/// - verifyReceipt responses the app posts for its user at purchase and at every renewal (the receipt's last six
///   transactions, in `in_app` and `latest_receipt_info`).
/// Besides: Apple's re-deliveries (the same bytes again: duplicates, no event) and a few bodies that do not parse
/// (refused, kept in `rejected`).
///
/// The plan is drawn from a seeded generator, so every ledger made from one seed holds the same inputs in the same
/// order (V2 signatures differ: ECDSA signs with a fresh nonce and the test PKI is minted per process).
struct AuditStories {
    /// SplitMix64: small, fast and seedable.
    struct Random: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    enum Channel { case v1, v2, receipts }

    /// One subscription as far as its story has gone.
    struct Subscription {
        var channel: Channel
        var otid: String
        var user: String
        var product: String
        var environment: String
        var token: String?
        /// Its transactions so far: id, line item, start.
        var periods: [(tid: String, lineItem: String, start: Int64)] = []
        var autoRenew = true
        var refundedAt: Int64?
    }

    /// One input to build: what happened to a subscription (a copy of it at that moment), and when.
    struct Plan {
        enum Kind {
            case v1(type: String), v1Claim
            case v2(type: String, subtype: String?)
            case receipt
            case redelivery(Int)
            case unparsable
        }
        var kind: Kind
        var subscription: Subscription
        var at: Int64
    }

    static let month: Int64 = 30 * AppleFixtures.day
    /// 2023-01-01T00:00:00Z.
    static let epoch: Int64 = 1_672_531_200_000
    static let products = ["com.example.premium.monthly", "com.example.pro.monthly", "com.example.family.monthly"]

    private var random: Random
    private var active: [Subscription] = []
    private var nextTransaction: UInt64 = 0
    private var subscribers = 0
    private var monthIndex = 0

    init(seed: UInt64) { random = Random(state: seed) }

    /// The next month's inputs, in the order they happen: new subscriptions through the month, every active one
    /// renewing (or refunded, turned off, lapsed) on its day. Transaction ids are handed out in the order the
    /// transactions happen, as Apple's grow with time.
    mutating func nextMonth(newSubscriptions: Int) -> [Plan] {
        let monthStart = Self.epoch + Int64(monthIndex) * Self.month
        monthIndex += 1
        // What happens to each subscription this month, decided first; the ids once the order in time is known.
        enum Outcome { case lapse, renew(refund: Bool, turnOff: Bool), purchase }
        var month: [(sub: Subscription, at: Int64, outcome: Outcome)] = []
        for sub in active {
            let day = sub.periods[0].start % Self.month
            let at = monthStart + day + Int64.random(in: 0..<3_600_000, using: &random)
            let roll = Int.random(in: 0..<1000, using: &random)
            if !sub.autoRenew || roll < 60 {
                month.append((sub, at, .lapse))
            } else {
                month.append((sub, at, .renew(refund: roll < 75, turnOff: roll >= 75 && roll < 100)))
            }
        }
        for _ in 0..<newSubscriptions {
            month.append((newSubscription(), monthStart + Int64.random(in: 0..<Self.month, using: &random), .purchase))
        }
        month.sort { $0.at < $1.at }
        var plans: [Plan] = []
        var stillActive: [Subscription] = []
        for (var sub, at, outcome) in month {
            switch outcome {
            case .lapse:
                // V2 says so; V1 and receipts say nothing.
                if sub.channel == .v2 { plans.append(Plan(kind: .v2(type: "EXPIRED", subtype: "VOLUNTARY"), subscription: sub, at: at)) }
            case .purchase:
                let tid = transactionId()
                sub.otid = tid
                sub.periods = [(tid, transactionId(), at)]
                plans.append(contentsOf: purchase(sub))
                stillActive.append(sub)
            case .renew(let refunded, let turnOff):
                sub.periods.append((transactionId(), transactionId(), at))
                plans.append(contentsOf: renewal(sub, at: at))
                if refunded {
                    // Refunded a few days into the new period; the subscription ends.
                    sub.refundedAt = at + 3 * AppleFixtures.day
                    plans.append(refund(sub, at: sub.refundedAt!))
                    continue
                }
                if turnOff {
                    sub.autoRenew = false
                    plans.append(autoRenewalOff(sub, at: at + 5 * AppleFixtures.day))
                }
                stillActive.append(sub)
            }
        }
        active = stillActive
        plans.sort { $0.at < $1.at }
        // Apple's re-deliveries and the odd body that does not parse, among the month's traffic.
        var mixed: [Plan] = []
        mixed.reserveCapacity(plans.count + plans.count / 20)
        for plan in plans {
            mixed.append(plan)
            let roll = Int.random(in: 0..<1000, using: &random)
            if roll < 30, mixed.count > 10 {
                let earlier = mixed.count - 1 - Int.random(in: 1...min(200, mixed.count - 1), using: &random)
                mixed.append(Plan(kind: .redelivery(earlier), subscription: plan.subscription, at: plan.at + 1_000))
            } else if roll < 31 {
                mixed.append(Plan(kind: .unparsable, subscription: plan.subscription, at: plan.at + 1_000))
            }
        }
        return mixed
    }

    private mutating func transactionId() -> String {
        nextTransaction += 1
        return String(2_000_000_100_000_000 + nextTransaction)  // 16 digits, growing with time, like Apple's
    }

    /// A subscriber and a product; its ids come with its first transaction.
    private mutating func newSubscription() -> Subscription {
        let roll = Int.random(in: 0..<100, using: &random)
        let channel: Channel = roll < 45 ? .v1 : roll < 80 ? .v2 : .receipts
        subscribers += 1
        let n = UInt64(subscribers)
        var sub = Subscription(
            channel: channel, otid: "", user: "user-\(n)",
            product: Self.products[Int.random(in: 0..<Self.products.count, using: &random)],
            environment: channel == .v2 && roll % 10 == 0 ? "Sandbox" : "Production")
        if channel == .v2, roll % 2 == 0 {
            sub.token = String(format: "%08x-1c2b-4e6f-8a7b-%012llx", UInt32(truncatingIfNeeded: n), n)
        }
        return sub
    }

    private func purchase(_ sub: Subscription) -> [Plan] {
        let at = sub.periods[0].start
        switch sub.channel {
        case .v1: return [Plan(kind: .v1(type: "INITIAL_BUY"), subscription: sub, at: at), Plan(kind: .v1Claim, subscription: sub, at: at + 2_000)]
        case .v2: return [Plan(kind: .v2(type: "SUBSCRIBED", subtype: "INITIAL_BUY"), subscription: sub, at: at)]
        case .receipts: return [Plan(kind: .receipt, subscription: sub, at: at + 1_000)]
        }
    }

    private func renewal(_ sub: Subscription, at: Int64) -> [Plan] {
        switch sub.channel {
        case .v1: return [Plan(kind: .v1(type: "DID_RENEW"), subscription: sub, at: at)]
        case .v2: return [Plan(kind: .v2(type: "DID_RENEW", subtype: nil), subscription: sub, at: at)]
        case .receipts: return [Plan(kind: .receipt, subscription: sub, at: at + 60_000)]
        }
    }

    private func refund(_ sub: Subscription, at: Int64) -> Plan {
        switch sub.channel {
        case .v1, .receipts: Plan(kind: .v1(type: "REFUND"), subscription: sub, at: at)
        case .v2: Plan(kind: .v2(type: "REFUND", subtype: nil), subscription: sub, at: at)
        }
    }

    private func autoRenewalOff(_ sub: Subscription, at: Int64) -> Plan {
        switch sub.channel {
        case .v1, .receipts: Plan(kind: .v1(type: "DID_CHANGE_RENEWAL_STATUS"), subscription: sub, at: at)
        case .v2: Plan(kind: .v2(type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED"), subscription: sub, at: at)
        }
    }
}

// MARK: - Documents

typealias F = AppleFixtures

/// Apple's documents, written as text with the fields of `AppleFixtures` (Apple's documented field lists): the
/// fixtures build them through `JSONSerialization` and sign with a header made anew each time, which made a million
/// events take half an hour; here the JWS header is made once and the JSON written directly.
struct AppleDocuments: Sendable {
    let header: String
    let key: P256.Signing.PrivateKey

    init(pki: TestPKI = .shared) {
        let x5c = pki.x5c.map { "\"\($0)\"" }.joined(separator: ",")
        header = Self.base64URL(Array(#"{"alg":"ES256","x5c":[\#(x5c)]}"#.utf8))
        key = pki.leafKey
    }

    /// A compact ES256 JWS of `payload`, with the test PKI's chain in its header.
    func jws(_ payload: String) -> String {
        let input = header + "." + Self.base64URL(Array(payload.utf8))
        let signature = try! key.signature(for: Data(input.utf8))
        return input + "." + Self.base64URL(Array(signature.rawRepresentation))
    }

    /// Base64url without padding.
    static func base64URL(_ bytes: [UInt8]) -> String {
        let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let w = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [table[Int(w >> 18)], table[Int(w >> 12 & 63)], table[Int(w >> 6 & 63)], table[Int(w & 63)]]
            i += 3
        }
        if bytes.count - i == 1 {
            let w = UInt32(bytes[i]) << 16
            out += [table[Int(w >> 18)], table[Int(w >> 12 & 63)]]
        } else if bytes.count - i == 2 {
            let w = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [table[Int(w >> 18)], table[Int(w >> 12 & 63)], table[Int(w >> 6 & 63)]]
        }
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: V1 and receipts

    /// An iOS 7 style `in_app` / `latest_receipt_info` entry (every value a string, each date three times).
    static func v1Transaction(
        _ tid: String, otid: String, product: String, start: Int64, originalStart: Int64, lineItem: String,
        cancelledAt: Int64?
    ) -> String {
        func date(_ name: String, _ ms: Int64) -> String {
            #""\#(name)":"\#(F.gmt(ms))","\#(name)_ms":"\#(ms)","\#(name)_pst":"\#(F.pst(ms))""#
        }
        var o = #"{"transaction_id":"\#(tid)","original_transaction_id":"\#(otid)","product_id":"\#(product)","quantity":"1","is_trial_period":"false","#
        o += date("purchase_date", start) + "," + date("original_purchase_date", originalStart) + ","
        o += date("expires_date", start + AuditStories.month)
        if let cancelledAt { o += "," + date("cancellation_date", cancelledAt) + #","cancellation_reason":"0""# }
        o += #","web_order_line_item_id":"\#(lineItem)","is_in_intro_offer_period":"false","subscription_group_identifier":"20567304","in_app_ownership_type":"PURCHASED"}"#
        return o
    }

    static func v1PendingRenewal(otid: String, product: String, autoRenew: Bool) -> String {
        #"{"auto_renew_product_id":"\#(product)","auto_renew_status":"\#(autoRenew ? 1 : 0)","original_transaction_id":"\#(otid)","product_id":"\#(product)"}"#
    }

    static let latestReceipt = "MIIT3wYJKoZIhvcNAQcCoIIT0DCCE8wCAQExCzAJBgUrDgMCGgUAMIIDgAYJKoZIhvcNAQcBoIID"

    /// A V1 notification in the `unified_receipt` shape.
    static func v1Notification(type: String, autoRenew: Bool, product: String, latest: [String], pending: String, at: Int64)
        -> String
    {
        var o = #"{"notification_type":"\#(type)","environment":"PROD","bid":"\#(F.bundleId)","bvrs":"100","password":"0123456789abcdef0123456789abcdef","auto_renew_status":"\#(autoRenew)","auto_renew_product_id":"\#(product)","auto_renew_adam_id":"1486579372","#
        if type == "DID_CHANGE_RENEWAL_STATUS" {
            o += #""auto_renew_status_change_date_ms":"\#(at)","auto_renew_status_change_date":"\#(F.gmt(at))","#
        }
        o += #""unified_receipt":{"environment":"Production","status":0,"latest_receipt":"\#(latestReceipt)","latest_receipt_info":[\#(latest.joined(separator: ","))],"pending_renewal_info":[\#(pending)]}}"#
        return o
    }

    /// An iOS 7 style verifyReceipt response.
    static func receipt(at: Int64, transactions: [String], pending: String) -> String {
        let list = transactions.joined(separator: ",")
        return #"{"status":0,"environment":"Production","receipt":{"receipt_type":"Production","adam_id":1234567890,"app_item_id":1234567890,"bundle_id":"\#(F.bundleId)","application_version":"100","download_id":0,"version_external_identifier":0,"original_application_version":"1.0","in_app":[\#(list)],"request_date":"\#(F.gmt(at))","request_date_ms":"\#(at)","request_date_pst":"\#(F.pst(at))","receipt_creation_date_ms":"\#(AuditStories.epoch)"},"latest_receipt_info":[\#(list)],"latest_receipt":"\#(latestReceipt)","pending_renewal_info":[\#(pending)]}"#
    }

    // MARK: V2

    /// A V2 notification body `{"signedPayload": JWS}`, its transaction and renewal info signed inside.
    func v2Notification(type: String, subtype: String?, uuid: String, at: Int64, environment: String, transaction: String, renewal: String)
        -> String
    {
        let subtypeField = subtype.map { #""subtype":"\#($0)","# } ?? ""
        let payload = #"{"notificationType":"\#(type)",\#(subtypeField)"notificationUUID":"\#(uuid)","signedDate":\#(at),"version":"2.0","data":{"environment":"\#(environment)","bundleId":"\#(F.bundleId)","appAppleId":1234567890,"bundleVersion":"1.0","status":1,"signedTransactionInfo":"\#(jws(transaction))","signedRenewalInfo":"\#(jws(renewal))"}}"#
        return #"{"signedPayload":"\#(jws(payload))"}"#
    }
}

extension AuditStories.Plan {
    /// The input's bytes and the options it is ingested with (the receipts name their app user, as the app's backend
    /// does in the query string); nil for a re-delivery, which repeats the document of an earlier plan of its month.
    func document(_ apple: AppleDocuments) -> (bytes: [UInt8], options: IngestPipeline.Options)? {
        typealias D = AppleDocuments
        let sub = subscription
        let first = sub.periods[0].start
        let last = sub.periods[sub.periods.count - 1]
        func v1(_ p: (tid: String, lineItem: String, start: Int64), cancelled: Bool = false) -> String {
            D.v1Transaction(
                p.tid, otid: sub.otid, product: sub.product, start: p.start, originalStart: first, lineItem: p.lineItem,
                cancelledAt: cancelled ? sub.refundedAt : nil)
        }
        let pending = D.v1PendingRenewal(otid: sub.otid, product: sub.product, autoRenew: sub.autoRenew)
        switch kind {
        case .v1(let type):
            let latest = sub.periods.suffix(3).map { v1($0, cancelled: $0.tid == last.tid) }
            let text = D.v1Notification(
                type: type, autoRenew: sub.autoRenew, product: sub.product, latest: latest, pending: pending, at: at)
            return (Array(text.utf8), .init())
        case .v1Claim:
            let text = #"{"type":"binding","payload":{"appUserId":"\#(sub.user)","originalTransactionId":"\#(sub.otid)"}}"#
            return (Array(text.utf8), .init())
        case .v2(let type, let subtype):
            var transaction = #"{"transactionId":"\#(last.tid)","originalTransactionId":"\#(sub.otid)","productId":"\#(sub.product)","bundleId":"\#(F.bundleId)","purchaseDate":\#(last.start),"originalPurchaseDate":\#(first),"expiresDate":\#(last.start + AuditStories.month),"quantity":1,"type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED","signedDate":\#(at),"environment":"\#(sub.environment)","transactionReason":"\#(sub.periods.count == 1 ? "PURCHASE" : "RENEWAL")","storefront":"USA","storefrontId":"143441","subscriptionGroupIdentifier":"21000001","webOrderLineItemId":"\#(last.lineItem)","price":9990,"currency":"USD""#
            if let token = sub.token { transaction += #","appAccountToken":"\#(token)""# }
            if let refundedAt = sub.refundedAt {
                transaction += #","revocationDate":\#(refundedAt),"revocationReason":0,"revocationType":"REFUND_FULL""#
            }
            transaction += "}"
            let intent = type == "EXPIRED" ? #","expirationIntent":1"# : ""
            let renewal = #"{"originalTransactionId":"\#(sub.otid)","productId":"\#(sub.product)","autoRenewProductId":"\#(sub.product)","autoRenewStatus":\#(sub.autoRenew ? 1 : 0),"signedDate":\#(at),"environment":"\#(sub.environment)","recentSubscriptionStartDate":\#(first),"renewalDate":\#(last.start + AuditStories.month)\#(intent)}"#
            let uuid = String(format: "%08x-7f3e-4c1a-9b2d-%012llx", UInt32(truncatingIfNeeded: at), UInt64(last.tid)! & 0xFFFF_FFFF_FFFF)
            let text = apple.v2Notification(
                type: type, subtype: subtype, uuid: uuid, at: at, environment: sub.environment, transaction: transaction,
                renewal: renewal)
            return (Array(text.utf8), .init())
        case .receipt:
            let text = D.receipt(at: at, transactions: sub.periods.suffix(6).map { v1($0) }, pending: pending)
            return (Array(text.utf8), .init(appUserId: .init(sub.user)))
        case .redelivery:
            return nil
        case .unparsable:
            return (Array(#"{"notification_type":"DID_RENEW","unified_receipt":{"status":0,"#.utf8), .init())
        }
    }
}
