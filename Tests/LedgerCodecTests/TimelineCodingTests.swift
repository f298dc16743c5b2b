import LedgerCodec
@testable import LedgerCore
import LedgerTestSupport
import Testing

/// The timeline's stored form and the configuration types.
@Suite struct TimelineCodingTests {
    static let t0 = Scenario.utc(2024, 5, 1)

    /// A timeline using every field: periods with offers, restores, revocations (one reversed), upgrade, renewal
    /// state, stated changes, owners and refused claims.
    static func rich() -> Timeline {
        var s = Scenario(rules: FoldRules(bindingPolicy: .keep))
        let a = s.purchase("1", product: "basic", at: t0, expires: t0 + 30 * Scenario.day) {
            $0.offerType = 2
            $0.offerIdentifier = "spring"
            $0.offerDiscountType = "PAY_AS_YOU_GO"
            $0.appAccountToken = "u1"
        }
        s.refund(a, at: t0 + Scenario.day, reason: 0, type: "REFUND_PRORATED", percentage: 50_000)
        s.notification("REFUND_REVERSED", signed: t0 + 2 * Scenario.day, transaction: "1")
        s.v1Transaction("5", product: "basic", purchased: t0, expires: t0 + 30 * Scenario.day, observed: t0 + 3 * Scenario.day)
        s.revise(a, signed: t0 + 10 * Scenario.day) {
            $0.isUpgraded = true
            $0.revocationDate = t0 + 10 * Scenario.day
        }
        s.purchase("2", product: "pro", at: t0 + 10 * Scenario.day, expires: t0 + 40 * Scenario.day) { $0.quantity = 3 }
        s.renewalInfo(signed: t0 + 11 * Scenario.day, product: "pro", autoRenewProduct: "basic", autoRenew: false) {
            $0.gracePeriodExpiresDate = t0 + 50 * Scenario.day
            $0.priceIncreaseStatus = 1
            $0.expirationIntent = 1
            $0.renewalDate = t0 + 40 * Scenario.day
        }
        s.claim("u2", at: t0 + 12 * Scenario.day)
        return s.timeline()
    }

    @Test func roundTripsAndEqualTimelinesGiveIdenticalBytes() throws {
        let t = Self.rich()
        #expect(t.periods.count == 2 && t.periods[0].observedAs == ["5"] && t.periods[0].upgraded)
        #expect(t.periods[0].revocations.count == 1 && t.periods[0].revocations[0].reversedAt != nil)
        #expect(!t.statedChanges.isEmpty && t.renewal != nil && t.owners.count == 1 && t.refusedClaims.count == 1)
        let bytes = t.encoded()
        let decoded = try Timeline(decoding: bytes)
        #expect(decoded == t)
        #expect(decoded.encoded() == bytes)
        #expect(Self.rich().encoded() == bytes, "deterministic")
        let empty = Timeline(originalTransactionId: "7", environment: .xcode)
        #expect(try Timeline(decoding: empty.encoded()) == empty)
    }

    @Test func aDecodedTimelineContinuesIncrementally() throws {
        var s = Scenario()
        s.purchase("1", product: "basic", at: Self.t0, expires: Self.t0 + 30 * Scenario.day)
        var stored = try Timeline(decoding: s.timeline().encoded())
        s.purchase("2", product: "basic", at: Self.t0 + 30 * Scenario.day, expires: Self.t0 + 60 * Scenario.day)
        let applied = stored.apply(s.events.last!, rules: s.rules)
        #expect(applied)
        #expect(stored == s.timeline())
    }

    /// The tail path decodes only the last period; what it writes back equals the whole timeline's encoding.
    @Test func theTailPathWritesTheBytesOfTheWholeTimeline() throws {
        var s = Scenario()
        var bought: [TransactionFact] = []
        for month in 0..<12 {
            let start = Self.t0 + Int64(month) * 30 * Scenario.day
            bought.append(
                s.purchase(
                    "\(1000 + month)", product: "basic", at: start, expires: start + 30 * Scenario.day,
                    webOrderLineItemId: "\(5000 + month)"))
        }
        let before = s.timeline().encoded()
        s.purchase(
            "1012", product: "basic", at: Self.t0 + 360 * Scenario.day, expires: Self.t0 + 390 * Scenario.day,
            webOrderLineItemId: "5012")
        let renewal = s.events.last!
        let appended = try before.withUnsafeBytes { try Timeline.appending([renewal], toEncoded: $0, rules: s.rules) }
        #expect(appended == s.timeline().encoded())
        #expect(try Timeline(decoding: appended ?? []).periods.count == 13)

        // A revision of an earlier period needs that period: the tail path declines and leaves it to the caller.
        s.refund(bought[3], at: Self.t0 + 400 * Scenario.day)
        let refund = s.events.last!
        let declined = try s.timeline().encoded().withUnsafeBytes {
            try Timeline.appending([refund], toEncoded: $0, rules: s.rules)
        }
        #expect(declined == nil)
    }

    /// `encoded()` writes the periods one after another, and the tail path copies the earlier ones as one run of
    /// bytes. An encoding with another field among them (valid, though not one `encoded()` writes) is decoded
    /// whole: the renewal continues it to the same timeline, with no field copied twice.
    @Test func periodsWithAnotherFieldAmongThemAreDecodedWhole() throws {
        var s = Scenario()
        for month in 0..<4 {
            let start = Self.t0 + Int64(month) * 30 * Scenario.day
            s.purchase(
                "\(1000 + month)", product: "basic", at: start, expires: start + 30 * Scenario.day,
                webOrderLineItemId: "\(5000 + month)")
        }
        let stored = s.timeline().encoded()
        let interleaved = try movingField(8, toAfterTheFirst: 3, in: stored)  // The last seq after the first period.
        #expect(interleaved != stored)
        #expect(try Timeline(decoding: interleaved) == Timeline(decoding: stored))
        s.purchase(
            "1004", product: "basic", at: Self.t0 + 120 * Scenario.day, expires: Self.t0 + 150 * Scenario.day,
            webOrderLineItemId: "5004")
        let renewal = s.events.last!
        for bytes in [stored, interleaved] {
            let appended = try bytes.withUnsafeBytes { try Timeline.appending([renewal], toEncoded: $0, rules: s.rules) }
            #expect(appended == s.timeline().encoded())
        }
    }

    /// A timeline stored before the period bounds were (no field 10) still decodes and continues; the tail path
    /// declines it, since without the bounds it cannot tell a renewal from a restore without reading every period.
    @Test func aTimelineWithoutStoredBoundsIsDecodedWhole() throws {
        var s = Scenario()
        s.purchase("1", product: "basic", at: Self.t0, expires: Self.t0 + 30 * Scenario.day, webOrderLineItemId: "51")
        s.purchase(
            "2", product: "basic", at: Self.t0 + 30 * Scenario.day, expires: Self.t0 + 60 * Scenario.day,
            webOrderLineItemId: "52")
        let legacy = try removingField(10, from: s.timeline().encoded())
        #expect(legacy.count < s.timeline().encoded().count)
        s.purchase(
            "3", product: "basic", at: Self.t0 + 60 * Scenario.day, expires: Self.t0 + 90 * Scenario.day,
            webOrderLineItemId: "53")
        let renewal = s.events.last!
        // With the bounds, the same renewal takes the tail path.
        #expect(try s.timeline(asOf: renewal.seq - 1).encoded().withUnsafeBytes {
            try Timeline.appending([renewal], toEncoded: $0, rules: s.rules)
        } != nil)
        #expect(try legacy.withUnsafeBytes { try Timeline.appending([renewal], toEncoded: $0, rules: s.rules) } == nil)
        var whole = try Timeline(decoding: legacy)
        let applied = whole.apply(renewal, rules: s.rules)
        #expect(applied)
        #expect(whole.encoded() == s.timeline().encoded())
    }


    /// Periods of one product share their product's bytes in the encoding (copied from where they were first
    /// written); a period record of 128 bytes or more moves when its length is written: the products of the periods
    /// around such records must still round-trip, whatever their sizes.
    @Test(arguments: [0, 1, 8, 20, 200])
    func productsRoundTripAroundLongPeriodRecords(restores: Int) throws {
        var periods: [Period] = []
        for month in 0..<4 {
            var p = Period(
                transactionId: TransactionID("\(1_000 + month)"), productId: month == 3 ? "com.example.other" : "com.example.premium.monthly",
                start: Self.t0 + Int64(month) * 30 * Scenario.day, expiresDate: Self.t0 + Int64(month + 1) * 30 * Scenario.day,
                end: Self.t0 + Int64(month + 1) * 30 * Scenario.day, seq: UInt64(month + 1))
            // The first period of each product restored many times: its record, where the product's bytes are
            // written, grows past 127 bytes (then past 16 KB).
            if month == 0 || month == 3 { p.observedAs = (0..<restores).map { TransactionID("\(2_000_000_000_000_000 + $0)") } }
            periods.append(p)
        }
        var t = Timeline(originalTransactionId: "1000", environment: .production)
        t.periods = periods
        let decoded = try Timeline(decoding: t.encoded())
        #expect(decoded.periods.map(\.productId) == periods.map(\.productId))
        #expect(decoded.periods == periods)
        #expect(decoded.encoded() == t.encoded())
    }

    @Test func malformedBytesAreRefused() {
        let bytes = Self.rich().encoded()
        for cut in [0, 1, 5, bytes.count / 2, bytes.count - 1] {
            #expect(throws: FactDecodingError.self) { try Timeline(decoding: Array(bytes[..<cut])) }
        }
        #expect(throws: FactDecodingError.self) { try Timeline(decoding: [9] + bytes.dropFirst()) }
    }
}

/// Nested messages are written in place with a one-byte length placeholder; bodies of 128 bytes or more must grow
/// their length prefix without changing the bytes' meaning.
@Suite struct TimelineNestedLengthTests {
    @Test func longNestedMessagesRoundTrip() throws {
        var s = Scenario()
        let t0 = Scenario.utc(2024, 5, 1)
        let longProduct = String(repeating: "p", count: 300)
        s.purchase("1", product: longProduct, at: t0, expires: t0 + 30 * Scenario.day) {
            $0.offerType = 2
            $0.offerIdentifier = String(repeating: "o", count: 200)
        }
        s.purchase("2", product: "basic", at: t0 + 30 * Scenario.day, expires: t0 + 60 * Scenario.day)
        let t = s.timeline()
        let bytes = t.encoded()
        let decoded = try Timeline(decoding: bytes)
        #expect(decoded == t)
        #expect(decoded.periods[0].productId == longProduct && decoded.periods[1].productId == "basic")
        #expect(decoded.encoded() == bytes)
    }
}
