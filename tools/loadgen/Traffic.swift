import Foundation

// MARK: - Synthetic App Store traffic

/// A deterministic generator of realistic App Store inputs for one load connection: many users, each with a
/// subscription that is bought, renews, gets refunded, upgraded, restored, transferred to another user, with
/// re-deliveries (duplicates) and late, out-of-order deliveries, as V1 notifications and decoded V2 envelopes.
///
/// Each connection owns its users (ids are prefixed by the connection), so the histories stay consistent.
struct Traffic {
    /// A small, fast, seedable generator (SplitMix64): the same seed gives the same traffic.
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

    /// One user's subscription as far as the generator has taken it.
    struct Subscription {
        var user: String
        var otid: String
        var product: Int
        var periods = 0
        var refunded = false
    }

    static let products = [
        "com.example.premium.monthly", "com.example.premium.yearly", "com.example.pro.monthly",
    ]
    static let month: Int64 = 2_592_000_000
    static let epoch: Int64 = 1_700_000_000_000

    private var random: Random
    private let connection: Int
    private var subscriptions: [Subscription] = []
    private let userCount: Int
    /// Recent documents, re-sent as duplicates or late (out of order).
    private var recent: [String] = []
    /// Inputs that must follow the last one (the app's claim after a V1 purchase, which names no user).
    private var pending: [String] = []
    private var nextTransaction: UInt64 = 0

    init(seed: UInt64, connection: Int, users: Int) {
        random = Random(state: seed &+ UInt64(connection) &* 0x1000_0001)
        self.connection = connection
        userCount = max(1, users)
    }

    /// `n` first purchases, each claimed by its user (read mode fills the ledger with them before measuring).
    mutating func initialPurchases(_ n: Int) -> [String] {
        (0..<n).flatMap { _ in
            let doc = purchase()
            defer { pending.removeAll() }
            return [doc] + pending
        }
    }

    /// The next input, as one JSON line.
    mutating func next() -> String {
        if !pending.isEmpty { return remember(pending.removeFirst()) }
        let roll = Int.random(in: 0..<100, using: &random)
        if roll < 5, let old = recent.randomElement(using: &random) { return old }  // duplicate or late delivery
        if subscriptions.count < userCount && (subscriptions.isEmpty || roll < 30) { return remember(purchase()) }
        let i = Int.random(in: 0..<subscriptions.count, using: &random)
        let doc: String
        switch roll {
        case ..<70: doc = renewal(i)
        case ..<76: doc = refund(i)
        case ..<82: doc = upgrade(i)
        case ..<88: doc = restore(i)
        case ..<92: doc = transfer(i)
        default: doc = autoRenewChange(i)
        }
        return remember(doc)
    }

    private mutating func remember(_ doc: String) -> String {
        if recent.count < 64 {
            recent.append(doc)
        } else {
            recent[Int.random(in: 0..<64, using: &random)] = doc
        }
        return doc
    }

    private mutating func transactionId() -> String {
        nextTransaction += 1
        return "\(connection + 1)\(String(nextTransaction + 1_000_000_000))"
    }

    // MARK: - Stories

    private mutating func purchase() -> String {
        let n = subscriptions.count
        let sub = Subscription(
            user: "lg\(connection)-u\(n)", otid: transactionId(), product: Int.random(in: 0..<2, using: &random))
        subscriptions.append(sub)
        guard Bool.random(using: &random) else {
            return v2Transaction(sub, transactionId: sub.otid, period: 0, user: sub.user)
        }
        // Apple's V1 notification names no user: the app's backend claims the purchase right after.
        pending.append(
            #"{"type":"binding","payload":{"appUserId":"\#(sub.user)","originalTransactionId":"\#(sub.otid)"}}"#)
        return v1("INITIAL_BUY", sub, transactionId: sub.otid, period: 0)
    }

    private mutating func renewal(_ i: Int) -> String {
        subscriptions[i].periods += 1
        let sub = subscriptions[i]
        let tid = transactionId()
        return Bool.random(using: &random)
            ? v1("DID_RENEW", sub, transactionId: tid, period: sub.periods)
            : v2Transaction(sub, transactionId: tid, period: sub.periods, user: nil)
    }

    private mutating func refund(_ i: Int) -> String {
        subscriptions[i].refunded = true
        let sub = subscriptions[i]
        return v1("REFUND", sub, transactionId: sub.otid, period: 0, cancelledAt: Self.epoch + Int64(sub.periods) * Self.month + 86_400_000)
    }

    private mutating func upgrade(_ i: Int) -> String {
        subscriptions[i].product = 2
        subscriptions[i].periods += 1
        let sub = subscriptions[i]
        return v1("INTERACTIVE_RENEWAL", sub, transactionId: transactionId(), period: sub.periods)
    }

    /// A restore: the app's backend re-submits the original purchase, decoded, claimed by the same user.
    private mutating func restore(_ i: Int) -> String {
        let sub = subscriptions[i]
        return v2Transaction(sub, transactionId: sub.otid, period: 0, user: sub.user)
    }

    /// A transfer: another of this connection's users claims the subscription.
    private mutating func transfer(_ i: Int) -> String {
        let other = subscriptions[Int.random(in: 0..<subscriptions.count, using: &random)].user
        subscriptions[i].user = other
        return #"{"type":"binding","payload":{"appUserId":"\#(other)","originalTransactionId":"\#(subscriptions[i].otid)"}}"#
    }

    private mutating func autoRenewChange(_ i: Int) -> String {
        v1("DID_CHANGE_RENEWAL_STATUS", subscriptions[i], transactionId: nil, period: subscriptions[i].periods)
    }

    // MARK: - Documents

    /// A V1 server notification in the unified_receipt shape.
    private mutating func v1(
        _ type: String, _ sub: Subscription, transactionId: String?, period: Int, cancelledAt: Int64? = nil
    ) -> String {
        let product = Self.products[sub.product]
        let start = Self.epoch + Int64(period) * Self.month
        let autoRenew = type == "DID_CHANGE_RENEWAL_STATUS" ? Bool.random(using: &random) : true
        var info = #"{"transaction_id":"\#(transactionId ?? sub.otid)","original_transaction_id":"\#(sub.otid)","product_id":"\#(product)","purchase_date_ms":"\#(start)","original_purchase_date_ms":"\#(Self.epoch)","expires_date_ms":"\#(start + Self.month)","web_order_line_item_id":"\#(sub.otid)\#(period)","quantity":"1","subscription_group_identifier":"g1""#
        if let cancelledAt { info += #","cancellation_date_ms":"\#(cancelledAt)","cancellation_reason":"0""# }
        info += "}"
        return #"{"notification_type":"\#(type)","environment":"PROD","bid":"com.example.app","auto_renew_status":"\#(autoRenew)","auto_renew_product_id":"\#(product)","unified_receipt":{"environment":"Production","status":0,"latest_receipt_info":[\#(info)],"pending_renewal_info":[{"original_transaction_id":"\#(sub.otid)","product_id":"\#(product)","auto_renew_status":"\#(autoRenew ? 1 : 0)","auto_renew_product_id":"\#(product)"}]}}"#
    }

    /// A decoded V2 transaction in an API envelope, signed now (as Apple signs what it sends when it sends it; a
    /// fact speaks from its `signedDate`, so late deliveries above stay the only out-of-order ones).
    private func v2Transaction(_ sub: Subscription, transactionId: String, period: Int, user: String?) -> String {
        let start = Self.epoch + Int64(period) * Self.month
        let userField = user.map { #""appUserId":"\#($0)","# } ?? ""
        let signed = Int64(Date().timeIntervalSince1970 * 1000)
        return #"{"type":"transaction",\#(userField)"payload":{"transactionId":"\#(transactionId)","signedDate":\#(signed),"originalTransactionId":"\#(sub.otid)","webOrderLineItemId":"\#(sub.otid)\#(period)","productId":"\#(Self.products[sub.product])","subscriptionGroupIdentifier":"g1","purchaseDate":\#(start),"originalPurchaseDate":\#(Self.epoch),"expiresDate":\#(start + Self.month),"quantity":1,"type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED","environment":"Production","bundleId":"com.example.app"}}"#
    }
}
