import LedgerCodec
import LedgerCore
import Testing

/// `apply(contentsOf:)`: the new events of one input arrive in document order (notification first, transactions in
/// any order); applied together they must take the incremental path and give exactly what `fold` gives.
@Suite struct BatchApplyTests {
    static let day: Int64 = 86_400_000
    static let t0: Int64 = 1_700_000_000_000

    static func event(_ seq: UInt64, _ fact: Fact, observed: Int64) -> LedgerEvent {
        LedgerEvent(seq: seq, fact: fact, metadata: FactMetadata(source: .notificationV1, receivedAt: observed))
    }

    static func transaction(_ tid: String, purchase: Int64) -> Fact {
        var t = TransactionFact(transactionId: TransactionID(tid), originalTransactionId: "42", productId: "monthly", purchaseDate: purchase)
        t.expiresDate = purchase + 30 * day
        return .transaction(t)
    }

    /// Seq 1: the purchase. Then one V1 notification observed later, stating (in its document order) the
    /// notification, two renewals in descending id order, the renewal info and a claim.
    static func history() -> (first: LedgerEvent, batch: [LedgerEvent]) {
        let first = event(1, transaction("100", purchase: t0), observed: t0)
        let seen = t0 + 61 * day
        var note = NotificationFact(notificationUUID: "v1-abc", notificationType: "DID_RENEW")
        note.originalTransactionId = "42"
        var renewal = RenewalInfoFact(originalTransactionId: "42")
        renewal.autoRenewStatus = true
        let batch = [
            event(2, .notification(note), observed: seen),
            event(3, transaction("102", purchase: t0 + 60 * day), observed: seen),
            event(4, transaction("101", purchase: t0 + 30 * day), observed: seen),
            event(5, .renewal(renewal), observed: seen),
            event(6, .binding(BindingClaim(appUserId: "u1", originalTransactionId: "42", claimedAt: seen)), observed: seen),
        ]
        return (first, batch)
    }

    @Test func anInputInDocumentOrderTakesTheIncrementalPath() {
        let (first, batch) = Self.history()
        let rules = FoldRules()
        var timeline = Timeline.fold([first], rules: rules, ties: .canonical)
        // One by one, the notification's position (kind 3) precedes the transactions' (kind 1) at the same instant.
        var oneByOne = timeline
        var allApplied = true
        for e in batch where allApplied { allApplied = oneByOne.apply(e, rules: rules) }
        #expect(!allApplied, "document order is not fold order")
        let applied = timeline.apply(contentsOf: batch, rules: rules)
        #expect(applied)
        #expect(timeline == Timeline.fold([first] + batch, rules: rules, ties: .canonical))
        #expect(timeline.periods.map(\.transactionId) == ["100", "101", "102"])
        #expect(timeline.owner(at: Self.t0 + 62 * Self.day) == ["u1"])
    }

    @Test func aBatchReachingIntoThePastIsRefusedAndChangesNothing() {
        let (first, batch) = Self.history()
        let rules = FoldRules()
        var timeline = Timeline.fold([first] + batch, rules: rules, ties: .canonical)
        let before = timeline
        let late = [Self.event(7, Self.transaction("99", purchase: Self.t0 - Self.day), observed: Self.t0 - Self.day)]
        let applied = timeline.apply(contentsOf: late, rules: rules)
        #expect(!applied)
        #expect(timeline == before)
    }
}
