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
    private var monthIndex = 0

    init(seed: UInt64) { random = Random(state: seed) }

    /// The next month's inputs, in the order they happen: new subscriptions through the month, every active one
    /// renewing (or refunded, turned off, lapsed) on its day.
    mutating func nextMonth(newSubscriptions: Int) -> [Plan] {
        let monthStart = Self.epoch + Int64(monthIndex) * Self.month
        monthIndex += 1
        var plans: [Plan] = []
        var stillActive: [Subscription] = []
        for var sub in active {
            let day = sub.periods[0].start % Self.month
            let at = monthStart + day + Int64.random(in: 0..<3_600_000, using: &random)
            let roll = Int.random(in: 0..<1000, using: &random)
            if !sub.autoRenew || roll < 60 {
                // Lapses: V2 says so; V1 and receipts say nothing.
                if sub.channel == .v2 { plans.append(Plan(kind: .v2(type: "EXPIRED", subtype: "VOLUNTARY"), subscription: sub, at: at)) }
                continue
            }
            sub.periods.append((transactionId(), transactionId(), at))
            plans.append(contentsOf: renewal(sub, at: at))
            if roll < 75 {
                // Refunded a few days into the new period; the subscription ends.
                sub.refundedAt = at + 3 * AppleFixtures.day
                plans.append(refund(sub, at: sub.refundedAt!))
                continue
            }
            if roll < 100 {
                sub.autoRenew = false
                plans.append(autoRenewalOff(sub, at: at + 5 * AppleFixtures.day))
            }
            stillActive.append(sub)
        }
        for _ in 0..<newSubscriptions {
            let sub = newSubscription(at: monthStart + Int64.random(in: 0..<Self.month, using: &random))
            plans.append(contentsOf: purchase(sub))
            stillActive.append(sub)
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

    private mutating func newSubscription(at: Int64) -> Subscription {
        let roll = Int.random(in: 0..<100, using: &random)
        let channel: Channel = roll < 45 ? .v1 : roll < 80 ? .v2 : .receipts
        let tid = transactionId()
        let n = nextTransaction
        var sub = Subscription(
            channel: channel, otid: tid, user: "user-\(n)",
            product: Self.products[Int.random(in: 0..<Self.products.count, using: &random)],
            environment: channel == .v2 && roll % 10 == 0 ? "Sandbox" : "Production")
        if channel == .v2, roll % 2 == 0 {
            sub.token = String(format: "%08x-1c2b-4e6f-8a7b-%012llx", UInt32(truncatingIfNeeded: n), n)
        }
        sub.periods.append((tid, transactionId(), at))
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

extension AuditStories.Plan {
    /// The input's bytes and the options it is ingested with (the receipts name their app user, as the app's backend
    /// does in the query string); nil for a re-delivery, which repeats the document of an earlier plan of its month.
    func document() -> (bytes: [UInt8], options: IngestPipeline.Options)? {
        let sub = subscription
        switch kind {
        case .v1(let type):
            let latest = sub.periods.suffix(3).map { p in
                F.v1Transaction(
                    transactionId: p.tid, originalTransactionId: sub.otid, productId: sub.product, purchaseDate: p.start,
                    originalPurchaseDate: sub.periods[0].start, expiresDate: p.start + AuditStories.month,
                    webOrderLineItemId: p.lineItem,
                    cancellationDate: p.tid == sub.periods.last?.tid ? sub.refundedAt : nil,
                    cancellationReason: p.tid == sub.periods.last?.tid && sub.refundedAt != nil ? "0" : nil)
            }
            let pending = [
                F.v1PendingRenewal(originalTransactionId: sub.otid, productId: sub.product, autoRenewStatus: sub.autoRenew)
            ]
            let bytes = F.v1Notification(
                type: type, autoRenewStatus: sub.autoRenew, autoRenewProductId: sub.product, latest: latest, pending: pending)
            return (bytes, .init())
        case .v1Claim:
            return (F.envelope(type: "binding", payload: F.binding(appUserId: sub.user, originalTransactionId: sub.otid)), .init())
        case .v2(let type, let subtype):
            let last = sub.periods[sub.periods.count - 1]
            let transaction = F.v2Transaction(
                transactionId: last.tid, originalTransactionId: sub.otid, productId: sub.product, purchaseDate: last.start,
                originalPurchaseDate: sub.periods[0].start, expiresDate: last.start + AuditStories.month, signedDate: at,
                environment: sub.environment, webOrderLineItemId: last.lineItem, appAccountToken: sub.token,
                revocationDate: sub.refundedAt, revocationReason: sub.refundedAt.map { _ in 0 },
                revocationType: sub.refundedAt.map { _ in "REFUND_FULL" },
                transactionReason: sub.periods.count == 1 ? "PURCHASE" : "RENEWAL")
            let renewal = F.v2Renewal(
                originalTransactionId: sub.otid, productId: sub.product, autoRenewStatus: sub.autoRenew ? 1 : 0,
                expirationIntent: type == "EXPIRED" ? 1 : nil, renewalDate: last.start + AuditStories.month,
                signedDate: at, environment: sub.environment)
            let uuid = String(format: "%08x-7f3e-4c1a-9b2d-%012llx", UInt32(truncatingIfNeeded: at), UInt64(last.tid)! & 0xFFFF_FFFF_FFFF)
            let bytes = F.v2Notification(
                type: type, subtype: subtype, notificationUUID: uuid, signedDate: at, environment: sub.environment,
                transaction: transaction, renewal: renewal)
            return (bytes, .init())
        case .receipt:
            let transactions = sub.periods.suffix(6).map { p in
                F.v1Transaction(
                    transactionId: p.tid, originalTransactionId: sub.otid, productId: sub.product, purchaseDate: p.start,
                    originalPurchaseDate: sub.periods[0].start, expiresDate: p.start + AuditStories.month,
                    webOrderLineItemId: p.lineItem)
            }
            let bytes = F.receiptIOS7(
                requestDate: at, inApp: transactions, latest: transactions,
                pending: [F.v1PendingRenewal(originalTransactionId: sub.otid, productId: sub.product, autoRenewStatus: sub.autoRenew)])
            return (bytes, .init(appUserId: .init(sub.user)))
        case .redelivery:
            return nil
        case .unparsable:
            return (Array(#"{"notification_type":"DID_RENEW","unified_receipt":{"status":0,"#.utf8), .init())
        }
    }
}
