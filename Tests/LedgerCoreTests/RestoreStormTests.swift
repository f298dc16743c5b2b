import LedgerCodec
import LedgerCore
import LedgerTestSupport
import Testing

/// Seed 000 (sandbox field notes, 2020-11-13 and 16): six monthly periods (five minutes each in the sandbox),
/// restored again and again with new transaction ids and the original dates, then a resubscription to the 3-month
/// product (fifteen minutes) under the same OTID, itself restored.
@Suite struct RestoreStormTests {
    static let monthly = RestoreStorm.monthly
    static let quarterly = RestoreStorm.quarterly
    static let monthlyPeriods = RestoreStorm.monthlyPeriods
    static let quarterlyPeriods = RestoreStorm.quarterlyPeriods
    static func time(_ hhmmss: String) -> UnixMillis { RestoreStorm.time(hhmmss) }
    static func story() -> Scenario { RestoreStorm.story() }

    @Test func restoredCopiesJoinTheirPeriodAndNeverAddOne() throws {
        let t = Self.story().timeline()
        #expect(t.periods.count == 12)
        #expect(t.periods.map(\.transactionId.rawValue) == (Self.monthlyPeriods + Self.quarterlyPeriods).map(\.0))
        let fourth = try #require(t.periods.first { $0.start == Self.time("04:59:30") })
        #expect(fourth.transactionId == "1000000741479862")
        #expect(
            fourth.observedAs.map(\.rawValue) == [
                "1000000741490609", "1000000741492121", "1000000741494008", "1000000741504977", "1000000741509639",
                "1000000742182773", "1000000742227893",
            ])
        let first = try #require(t.periods.first)
        #expect(first.observedAs.count == 4)
        #expect(t.periods.allSatisfy { $0.revocations.isEmpty && !$0.upgraded })
    }

    @Test func statusFollowsThePeriodsAcrossTheGapAndTheResubscription() {
        let t = Self.story().timeline()
        let during = t.view(at: Scenario.utc(2020, 11, 13, 5, 12), asOf: nil)
        #expect(during.status == "active")
        #expect(during.productId == Self.monthly)
        #expect(during.expiresAt == Scenario.utc(2020, 11, 13, 5, 14, 30))

        let gap = t.view(at: Scenario.utc(2020, 11, 14), asOf: nil)
        #expect(gap.status == "expired")

        let resubscribed = t.view(at: Scenario.utc(2020, 11, 16, 3, 20), asOf: nil)
        #expect(resubscribed.status == "active")
        #expect(resubscribed.productId == Self.quarterly)
        #expect(resubscribed.expiresAt == Scenario.utc(2020, 11, 16, 3, 32, 45))

        let kinds = t.changes().filter { $0.kind != .ownerChanged }.map(\.kind)
        #expect(kinds == [.purchase] + Array(repeating: .renewal, count: 5) + [.resubscribe]
            + Array(repeating: .renewal, count: 5))
    }

    @Test func anyDeliveryOrderAndTheIncrementalPathGiveTheSameTimeline() {
        let s = Self.story()
        let folded = s.timeline()
        let (incremental, refolds) = s.incrementalTimeline()
        #expect(incremental == folded)
        #expect(incremental.encoded() == folded.encoded())
        // Restores observed later than everything known are tail events. The one refold: the last receipt lists
        // 1000000742227887 after 1000000742227890, and copies observed at one instant fold in id order.
        #expect(refolds == 1)

        var reversed = Scenario(otid: s.originalTransactionId, environment: .sandbox)
        for e in s.events.reversed() { reversed.tell(e.fact, observedAt: e.metadata.observedAt, source: .receipt) }
        #expect(reversed.timeline().withoutProvenance() == folded.withoutProvenance())
    }
}
