import LedgerCodec
import LedgerCore
import LedgerTestSupport
import Testing

/// `stepTransaction` skips its scans when a transaction is surely new (id, line item and start above every known
/// one). These histories sit just outside that shortcut: each must fold, apply incrementally (also after a decode,
/// which rebuilds the shortcut's bounds from the bytes) and encode exactly as the scans alone would decide.
@Suite struct PeriodIndexTests {
    static let t0 = Scenario.utc(2024, 1, 1)
    static let month = 30 * Scenario.day

    /// Applies each event to the timeline decoded from the previous step's bytes, as the store does.
    static func storedIncremental(_ s: Scenario) throws -> Timeline {
        var bytes = Timeline(originalTransactionId: s.originalTransactionId, environment: s.environment).encoded()
        for (k, e) in s.events.enumerated() {
            var t = try Timeline(decoding: bytes)
            if !t.apply(e, rules: s.rules) { t = Timeline.fold(s.events[...k], rules: s.rules, ties: .canonical) }
            bytes = t.encoded()
        }
        return try Timeline(decoding: bytes)
    }

    static func check(_ s: Scenario, periods: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let folded = s.timeline()
        #expect(folded.periods.count == periods, sourceLocation: sourceLocation)
        #expect(s.incrementalTimeline().timeline == folded, sourceLocation: sourceLocation)
        let stored = try storedIncremental(s)
        #expect(stored == folded, sourceLocation: sourceLocation)
        #expect(stored.encoded() == folded.encoded(), sourceLocation: sourceLocation)
    }

    @Test func aV2RestoreWithALargerIdJoinsItsPeriodByLineItem() throws {
        var s = Scenario()
        s.purchase("100", product: "basic", at: Self.t0, expires: Self.t0 + Self.month, webOrderLineItemId: "500")
        s.purchase("101", product: "basic", at: Self.t0 + Self.month, expires: Self.t0 + 2 * Self.month,
            webOrderLineItemId: "501")
        // A restore of the second period, observed later, with a new (larger) id and a later "purchase" instant.
        s.purchase("999", product: "basic", at: Self.t0 + Self.month + 5, expires: Self.t0 + 2 * Self.month,
            signed: Self.t0 + Self.month + Scenario.day, webOrderLineItemId: "501")
        try Self.check(s, periods: 2)
        #expect(s.timeline().periods[1].observedAs == ["999"])
    }

    @Test func aV1RestoreWithoutLineItemJoinsByProductAndStart() throws {
        var s = Scenario()
        s.purchase("100", product: "basic", at: Self.t0, expires: Self.t0 + Self.month, webOrderLineItemId: "500")
        s.v1Transaction("200", product: "basic", purchased: Self.t0, expires: Self.t0 + Self.month,
            observed: Self.t0 + Scenario.day)
        try Self.check(s, periods: 1)
    }

    @Test func nonDecimalAndShorterIdsFallBackToTheScans() throws {
        var s = Scenario()
        s.purchase("tx-b", product: "basic", at: Self.t0, expires: Self.t0 + Self.month, webOrderLineItemId: "w-b")
        s.purchase("9", product: "basic", at: Self.t0 + Self.month, expires: Self.t0 + 2 * Self.month,
            webOrderLineItemId: "9")
        s.purchase("10", product: "basic", at: Self.t0 + 2 * Self.month, expires: Self.t0 + 3 * Self.month,
            webOrderLineItemId: "10")
        // A revision of "tx-b" (a refund), then a restore of "9" by line item with a larger id.
        s.revise(s.events[0].fact.transactionFact!, signed: Self.t0 + 2 * Self.month + Scenario.day) {
            $0.revocationDate = Self.t0 + 2 * Self.month + Scenario.day
        }
        s.purchase("11", product: "basic", at: Self.t0 + Self.month, expires: Self.t0 + 2 * Self.month,
            signed: Self.t0 + 2 * Self.month + 2 * Scenario.day, webOrderLineItemId: "9")
        try Self.check(s, periods: 3)
        #expect(s.timeline().periods[0].revocations.count == 1)
        #expect(s.timeline().periods[1].observedAs == ["11"])
    }
}

extension Fact {
    fileprivate var transactionFact: TransactionFact? {
        if case .transaction(let t) = self { return t }
        return nil
    }
}
