import LedgerCodec
import LedgerCore
import Testing

/// A check against Apple (`ReconciliationFact`): stored like every fact, keyed by its subscription, never folded.
@Suite struct ReconciliationCodingTests {
    static let day: Int64 = 86_400_000
    static let t0: Int64 = 1_700_000_000_000

    static var check: ReconciliationFact {
        ReconciliationFact(
            originalTransactionId: "42", environment: .sandbox, checkedAt: t0 + 90 * day, revision: "rev-c",
            transactionsSeen: 5, transactionsAdded: ["104", "105"], notificationsSeen: 5,
            notificationsAdded: ["uuid-4", "uuid-5"], notificationsUndelivered: ["uuid-4"], renewalInfoAdded: true)
    }

    @Test func itsBytesRoundTrip() throws {
        let fact = Fact.reconciliation(Self.check)
        let decoded = try Fact(decoding: fact.encoded())
        #expect(decoded == fact)
        #expect(fact.kind == .reconciliation)
        #expect(fact.kind.code == 5)
        #expect(fact.eventKey == "reconciliation:42")
        #expect(fact.originalTransactionId == nil, "in no subscription's by_otid: it is not a step of the fold")
        #expect(fact.environment == .sandbox)
        // A check that found nothing is another fact (another revision under the same key).
        var clean = Self.check
        clean.transactionsAdded = []
        clean.notificationsAdded = []
        clean.renewalInfoAdded = false
        #expect(clean.complete && !Self.check.complete)
        #expect(Fact.reconciliation(clean).encoded() != fact.encoded())
        #expect(try Fact(decoding: Fact.reconciliation(clean).encoded()) == .reconciliation(clean))
    }

    @Test func howAppleWasAskedRoundTrips() throws {
        var missed = Self.check
        missed.mode = ReconciliationFact.missedMode
        missed.windowStart = Self.t0 + 60 * Self.day
        var customer = Self.check
        customer.mode = ReconciliationFact.customerMode
        customer.windowStart = Self.t0
        customer.refundsSeen = 2
        for check in [missed, customer] {
            #expect(try Fact(decoding: Fact.reconciliation(check).encoded()) == .reconciliation(check))
        }
        #expect(Fact.reconciliation(missed).encoded() != Fact.reconciliation(Self.check).encoded())
        // A check that names none decodes with none.
        #expect(try Fact(decoding: Fact.reconciliation(Self.check).encoded()) == .reconciliation(Self.check))
        guard case .reconciliation(let decoded) = try Fact(decoding: Fact.reconciliation(Self.check).encoded()) else {
            Issue.record("not a reconciliation")
            return
        }
        #expect(decoded.mode == nil && decoded.windowStart == nil && decoded.refundsSeen == nil)
    }

    @Test func theFoldIgnoresIt() {
        var t = TransactionFact(transactionId: "100", originalTransactionId: "42", productId: "monthly", purchaseDate: Self.t0)
        t.expiresDate = Self.t0 + 30 * Self.day
        t.environment = .sandbox
        let purchase = LedgerEvent(
            seq: 1, fact: .transaction(t), metadata: FactMetadata(source: .decodedJSON, receivedAt: Self.t0))
        let check = LedgerEvent(
            seq: 2, fact: .reconciliation(Self.check),
            metadata: FactMetadata(source: .reconciliation, receivedAt: Self.t0 + 90 * Self.day))
        let without = Timeline.fold([purchase], rules: FoldRules(), ties: .canonical)
        let with = Timeline.fold([purchase, check], rules: FoldRules(), ties: .canonical)
        #expect(with.periods == without.periods)
        #expect(with.encoded(after: 1) == without.encoded(after: 1))
    }
}
