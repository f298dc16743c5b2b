import LedgerCore
// Older checkouts kept the codec in LedgerCore; instructions.sh builds this workload against them too.
#if canImport(LedgerCodec)
import LedgerCodec
#endif

// The fold's workload, shared by the Fold benchmark (wall clock) and `fold-instructions` (instructions counted under
// callgrind): synthetic V2-like facts, monthly renewals with their renewal infos and DID_RENEW notifications, and the
// store's incremental update of one stored timeline.

let day: Int64 = 86_400_000
let start: Int64 = 1_600_000_000_000
public let rules = FoldRules()

/// One subscription's history in the order it happened (and so in seq order): `periods` monthly renewals; after
/// each (while `events` allows) a renewal info and a DID_RENEW notification signed a few seconds later. 16-digit
/// ids like Apple's.
public func history(otid: Int, periods: Int, events: Int) -> [LedgerEvent] {
    let o = OriginalTransactionID(String(2_000_000_000_000_000 + otid))
    var result: [LedgerEvent] = []
    result.reserveCapacity(events)
    var seq: UInt64 = 1
    func add(_ fact: Fact, at instant: Int64) {
        result.append(LedgerEvent(seq: seq, fact: fact, metadata: FactMetadata(source: .notificationV2, receivedAt: instant)))
        seq += 1
    }
    let extras = max(0, events - periods)
    for i in 0..<periods {
        let purchase = start + Int64(i) * 30 * day
        let tid = TransactionID(String(2_000_000_000_000_000 + otid * 1000 + i))
        var t = TransactionFact(
            transactionId: tid, originalTransactionId: o, productId: "com.example.premium.monthly",
            purchaseDate: purchase)
        t.expiresDate = purchase + 30 * day
        t.originalPurchaseDate = start
        t.webOrderLineItemId = String(3_000_000_000_000_000 + otid * 1000 + i)
        t.signedDate = purchase + 1_000
        t.type = .autoRenewable
        t.bundleId = "com.example.app"
        t.inAppOwnershipType = "PURCHASED"
        t.transactionReason = i == 0 ? "PURCHASE" : "RENEWAL"
        t.storefront = "USA"
        t.price = 9_990
        t.currency = "USD"
        add(.transaction(t), at: purchase + 1_000)
        if i < extras / 2 || (i == extras / 2 && extras % 2 == 1) {
            var r = RenewalInfoFact(originalTransactionId: o)
            r.productId = t.productId
            r.autoRenewProductId = t.productId
            r.autoRenewStatus = i % 7 != 3
            r.renewalDate = t.expiresDate
            r.signedDate = purchase + 2_000
            add(.renewal(r), at: purchase + 2_000)
        }
        if i < extras / 2 {
            var n = NotificationFact(notificationUUID: "0b6c\(otid)-8f3e-4c2a-9d1e-\(100_000_000_000 + i)", notificationType: "DID_RENEW")
            n.signedDate = purchase + 3_000
            n.version = "2.0"
            n.bundleId = "com.example.app"
            n.originalTransactionId = o
            n.transactionId = tid
            n.status = 1
            add(.notification(n), at: purchase + 3_000)
        }
    }
    return result
}

/// The next renewal after everything in `events` (the store's common case), with the next seq.
public func nextRenewal(after events: [LedgerEvent]) -> LedgerEvent {
    guard case .transaction(var t) = events.last(where: { $0.fact.kind == .transaction })!.fact else { fatalError() }
    let purchase = t.expiresDate!
    t.transactionId = TransactionID(String(Int(t.transactionId.rawValue)! + 1))
    t.webOrderLineItemId = String(Int(t.webOrderLineItemId!)! + 1)
    t.purchaseDate = purchase
    t.expiresDate = purchase + 30 * day
    t.signedDate = purchase + 10_000
    let seq = events.map(\.seq).max()! + 1
    return LedgerEvent(seq: seq, fact: .transaction(t), metadata: FactMetadata(source: .notificationV2, receivedAt: purchase))
}

/// A refund of the second period, signed mid-history: it lands in the past, so `apply` refuses and the OTID refolds.
public func pastRefund(in events: [LedgerEvent]) -> LedgerEvent {
    let transactions = events.compactMap { e -> TransactionFact? in
        if case .transaction(let t) = e.fact { return t } else { return nil }
    }
    var t = transactions[1]
    let at = transactions[transactions.count / 2].purchaseDate
    t.revocationDate = at
    t.revocationReason = 0
    t.revocationType = "REFUND_FULL"
    t.signedDate = at
    let seq = events.map(\.seq).max()! + 1
    return LedgerEvent(seq: seq, fact: .transaction(t), metadata: FactMetadata(source: .notificationV2, receivedAt: at))
}

/// What the store does for one touched OTID: the tail path (only the last period decoded, the others copied as
/// stored); when that declines, decode the stored timeline whole, apply the event (refolding the OTID from all its
/// events when it lands in the past), encode.
@inline(never)
public func update(stored: [UInt8], with event: LedgerEvent, all: [LedgerEvent]) -> [UInt8] {
    if let bytes = try! stored.withUnsafeBytes({ try Timeline.appending([event], toEncoded: $0, rules: rules) }) {
        return bytes
    }
    var timeline = try! Timeline(decoding: stored)
    if !timeline.apply(event, rules: rules) { timeline = fold(all + [event]) }
    return timeline.encoded()
}

/// `Timeline.fold` as the store calls it: same-instant facts in the codec's canonical order.
@inline(__always)
public func fold(_ events: [LedgerEvent]) -> Timeline {
    #if canImport(LedgerCodec)
    Timeline.fold(events, rules: rules, ties: .canonical)
    #else
    Timeline.fold(events, rules: rules)
    #endif
}
