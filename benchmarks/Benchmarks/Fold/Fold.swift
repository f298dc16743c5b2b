import Benchmark
import LedgerCodec
import LedgerCore

// The pure fold's hot paths, as the store drives them: `Timeline.fold` (replay, verify, refolds), one incremental
// update of a stored timeline (decode + `apply` + encode, per touched OTID per write transaction), and decoding
// stored events. Synthetic V2-like facts: monthly renewals with their renewal infos and DID_RENEW notifications.

let day: Int64 = 86_400_000
let start: Int64 = 1_600_000_000_000
let rules = FoldRules()

/// One subscription's history in the order it happened (and so in seq order): `periods` monthly renewals; after
/// each (while `events` allows) a renewal info and a DID_RENEW notification signed a few seconds later. 16-digit
/// ids like Apple's.
func history(otid: Int, periods: Int, events: Int) -> [LedgerEvent] {
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
func nextRenewal(after events: [LedgerEvent]) -> LedgerEvent {
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
func pastRefund(in events: [LedgerEvent]) -> LedgerEvent {
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
func update(stored: [UInt8], with event: LedgerEvent, all: [LedgerEvent]) -> [UInt8] {
    if let bytes = try! stored.withUnsafeBytes({ try Timeline.appending([event], toEncoded: $0, rules: rules) }) {
        return bytes
    }
    var timeline = try! Timeline(decoding: stored)
    if !timeline.apply(event, rules: rules) { timeline = Timeline.fold(all + [event], rules: rules, ties: .canonical) }
    return timeline.encoded()
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration.maxDuration = .seconds(3)
    Benchmark.defaultConfiguration.maxIterations = 1_000_000
    Benchmark.defaultConfiguration.metrics = [.wallClock, .throughput, .cpuTotal, .mallocCountTotal]

    // 1000 timelines of 100 events (40 renewals, 30 renewal infos, 30 notifications), in seq order as replay reads
    // them. One scaled iteration is one event: figures are per event, throughput in events/s.
    let timelines = (0..<1_000).map { history(otid: $0, periods: 40, events: 100) }
    Benchmark("Fold 100-event timelines (per event)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        var k = 0
        for _ in 0..<(benchmark.scaledIterations.count / 100) {
            blackHole(Timeline.fold(timelines[k % timelines.count], rules: rules, ties: .canonical))
            k += 1
        }
    }

    // The same histories delivered shuffled (restores, retries and redeliveries arrive out of order).
    var rng = SystemRandomNumberGenerator()
    let shuffled = timelines.prefix(100).map { $0.shuffled(using: &rng) }
    Benchmark("Fold 100-event timelines, shuffled (per event)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        var k = 0
        for _ in 0..<(benchmark.scaledIterations.count / 100) {
            blackHole(Timeline.fold(shuffled[k % shuffled.count], rules: rules, ties: .canonical))
            k += 1
        }
    }

    // One incremental update at the tail of a stored timeline of 5 and of 100 periods, as the store does it.
    for periods in [5, 100] {
        let events = history(otid: 7, periods: periods, events: periods)
        let stored = Timeline.fold(events, rules: rules, ties: .canonical).encoded()
        let next = nextRenewal(after: events)
        Benchmark(
            "Incremental update at the tail, \(periods) periods (\(stored.count) B)",
            configuration: .init(scalingFactor: .kilo)
        ) { benchmark in
            for _ in benchmark.scaledIterations { blackHole(update(stored: stored, with: next, all: events)) }
        }
    }

    // One update in the past of a 100-event timeline: apply refuses, the OTID refolds from its 101 events.
    do {
        let events = timelines[0]
        let stored = Timeline.fold(events, rules: rules, ties: .canonical).encoded()
        let refund = pastRefund(in: events)
        Benchmark("Incremental update in the past, 100 events (refold)") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(update(stored: stored, with: refund, all: events)) }
        }
    }

    // Decoding stored events (what replay and refolds read from the log). Figures per event.
    let encodedEvents = timelines.prefix(10).flatMap { $0 }.map { ($0.seq, LedgerEvent.encode(fact: $0.fact, metadata: $0.metadata)) }
    Benchmark("LedgerEvent decode (per event)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        var k = 0
        for _ in benchmark.scaledIterations {
            let (seq, bytes) = encodedEvents[k % encodedEvents.count]
            blackHole(try! LedgerEvent(seq: seq, decoding: bytes))
            k += 1
        }
    }

    // Encoding facts (the idempotency key hashes these bytes; appends store them). Figures per fact.
    let facts = timelines.prefix(10).flatMap { $0 }.map(\.fact)
    Benchmark("Fact encode (per fact)", configuration: .init(scalingFactor: .kilo)) { benchmark in
        var k = 0
        for _ in benchmark.scaledIterations {
            blackHole(facts[k % facts.count].encoded())
            k += 1
        }
    }
}
