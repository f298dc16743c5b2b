import LedgerCodec
import LedgerCore
import Testing

/// The canonical binary encoding of facts and events: round trips, determinism, forward compatibility.
@Suite struct FactCodingTests {
    static func fullTransaction() -> TransactionFact {
        var t = TransactionFact(
            transactionId: "1000000750000001", originalTransactionId: "1000000741475761",
            productId: "com.example.premium.monthly", purchaseDate: 1_605_243_570_000, environment: .sandbox)
        t.webOrderLineItemId = "1000000057437201"
        t.bundleId = "com.example.app"
        t.subscriptionGroupIdentifier = "20675121"
        t.originalPurchaseDate = 1_605_243_570_000
        t.expiresDate = 1_605_243_870_000
        t.quantity = 1
        t.type = .autoRenewable
        t.appAccountToken = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        t.inAppOwnershipType = "PURCHASED"
        t.signedDate = 1_605_243_571_000
        t.revocationDate = 1_605_243_600_000
        t.revocationReason = 1
        t.revocationType = "REFUND_PRORATED"
        t.revocationPercentage = 42_500
        t.isUpgraded = false
        t.offerType = 1
        t.offerIdentifier = "intro"
        t.offerDiscountType = "FREE_TRIAL"
        t.isTrialPeriod = true
        t.isInIntroOfferPeriod = false
        t.storefront = "USA"
        t.transactionReason = "RENEWAL"
        t.price = -1  // negative numbers survive zigzag encoding
        t.currency = "USD"
        t.extra = ["futureField": "{\"a\":1}", "other": "\"x\""]
        return t
    }

    static let facts: [Fact] = {
        var renewal = RenewalInfoFact(originalTransactionId: "1000000741475761", environment: .production)
        renewal.productId = "monthly"
        renewal.autoRenewProductId = "yearly"
        renewal.autoRenewStatus = false
        renewal.expirationIntent = 1
        renewal.isInBillingRetryPeriod = true
        renewal.gracePeriodExpiresDate = 1_605_300_000_000
        renewal.priceIncreaseStatus = 0
        renewal.renewalDate = 1_605_243_870_000
        renewal.signedDate = 1_605_243_571_000
        renewal.extra = ["eligibleWinBackOfferIds": "[\"w1\"]"]
        var note = NotificationFact(notificationUUID: "002e14d5-51f5-4503-b5a8-c3a1af68eb20", notificationType: "DID_RENEW")
        note.subtype = "BILLING_RECOVERY"
        note.signedDate = 1_605_243_571_000
        note.version = "2.0"
        note.bundleId = "com.example.app"
        note.appAppleId = 41_234
        note.originalTransactionId = "1000000741475761"
        note.transactionId = "1000000750000001"
        note.status = 1
        let claim = BindingClaim(
            appUserId: "alice", originalTransactionId: "1000000741475761", claimedAt: 1_605_243_570_000,
            cause: .appAccountToken, environment: .xcode)
        return [.transaction(fullTransaction()), .renewal(renewal), .notification(note), .binding(claim)]
    }()

    @Test(arguments: ProductType.allCases)
    func everyProductTypeRoundTripsByItsAppleName(type: ProductType) throws {
        var t = Self.fullTransaction()
        t.type = type
        let decoded = try Fact(decoding: Fact.transaction(t).encoded())
        guard case .transaction(let back) = decoded else {
            Issue.record("decoded \(decoded.kind), not a transaction")
            return
        }
        #expect(back.type == type)
        #expect(back == t)
    }

    @Test func aRunOfFactsDecodedWithSharedStringsEqualsEachDecodedAlone() throws {
        // Decoding a run of events with one `RepeatedStrings` (as a refold does) gives the same facts as decoding
        // each alone, even when a repeated field changes between them.
        var a = Self.fullTransaction()
        var b = Self.fullTransaction()
        b.transactionId = "1000000750000002"
        b.productId = "com.example.premium.yearly"
        b.bundleId = nil
        a.subscriptionGroupIdentifier = "1"
        var strings = RepeatedStrings()
        for t in [a, b, a] {
            let bytes = Fact.transaction(t).encoded()
            let shared = try bytes.withUnsafeBytes { try Fact(decoding: $0, strings: &strings) }
            #expect(shared == Fact.transaction(t))
            #expect(shared == (try Fact(decoding: bytes)))
        }
    }

    @Test(arguments: facts)
    func factsRoundTrip(_ fact: Fact) throws {
        let bytes = fact.encoded()
        #expect(try Fact(decoding: bytes) == fact)
        #expect(bytes.first == Fact.formatVersion)
    }

    @Test func minimalTransactionRoundTripsWithAbsentOptionals() throws {
        let t = TransactionFact(transactionId: "1", originalTransactionId: "1", productId: "p", purchaseDate: 0)
        let decoded = try Fact(decoding: Fact.transaction(t).encoded())
        guard case .transaction(let back) = decoded else {
            Issue.record("decoded as \(decoded.kind)")
            return
        }
        #expect(back == t)
        #expect(back.expiresDate == nil)
        #expect(back.isUpgraded == nil)
    }

    @Test func equalFactsEncodeToEqualBytes() {
        // Dictionaries iterate in random order; the encoding sorts `extra` so the idempotency digest is stable.
        var a = Self.fullTransaction()
        var b = Self.fullTransaction()
        a.extra = ["z": "1", "a": "2", "m": "3"]
        b.extra = ["m": "3", "z": "1", "a": "2"]
        #expect(Fact.transaction(a).encoded() == Fact.transaction(b).encoded())
        b.expiresDate! += 1
        #expect(Fact.transaction(a).encoded() != Fact.transaction(b).encoded())
    }

    @Test func unknownFutureFieldsAreKeptAndWrittenBack() throws {
        // A newer writer appends fields 90 (varint) and 91 (bytes) that this version does not know.
        var bytes = Fact.transaction(Self.fullTransaction()).encoded()
        var extra = BinaryWriter()
        extra.write(90, UInt64(12345))
        extra.write(91, bytes: Array("from the future".utf8))
        bytes += extra.bytes
        let decoded = try Fact(decoding: bytes)
        guard case .transaction(let t) = decoded else {
            Issue.record("wrong kind")
            return
        }
        #expect(t.unknownFields.fields.map(\.tag) == [90, 91])
        #expect(t.unknownFields.fields[0].varint == 12345)
        #expect(t.unknownFields.fields[1].bytes == Array("from the future".utf8))
        #expect(decoded.encoded() == bytes, "re-encoding writes the unknown fields back unchanged")
    }

    @Test func eventsRoundTripWithMetadata() throws {
        var metadata = FactMetadata(
            source: .notificationV2, signature: .verified, receivedAt: 1_605_243_572_000, observedAt: 1_605_243_571_500,
            rawDigest: Array(repeating: 7, count: 32), appUserId: "bob")
        metadata.unknownFields.fields.append(UnknownField(tag: 40, wireType: .varint, varint: 3, bytes: []))
        for fact in Self.facts {
            let stored = LedgerEvent.encode(fact: fact, metadata: metadata)
            let event = try LedgerEvent(seq: 42, decoding: stored)
            #expect(event.seq == 42)
            #expect(event.fact == fact)
            #expect(event.metadata == metadata)
        }
    }

    /// A replay decodes events for the fold only: the fact whole, of the metadata what the fold reads (the instants,
    /// source and signature), the rest (raw digest, envelope user, unknown fields) left empty.
    @Test func eventsDecodedForTheFoldKeepTheFactAndTheInstants() throws {
        var metadata = FactMetadata(
            source: .receipt, signature: .verified, receivedAt: 1_605_243_572_000, observedAt: 1_605_243_571_500,
            rawDigest: Array(repeating: 7, count: 32), appUserId: "bob")
        metadata.unknownFields.fields.append(UnknownField(tag: 40, wireType: .bytes, varint: 0, bytes: [1, 2]))
        for fact in Self.facts {
            let stored = LedgerEvent.encode(fact: fact, metadata: metadata)
            var strings = RepeatedStrings()
            let event = try stored.withUnsafeBytes { b in
                try LedgerEvent(seq: 7, decoding: b, strings: &strings, metadata: .forFold)
            }
            #expect(event.seq == 7)
            #expect(event.fact == fact)
            #expect(event.metadata.source == .receipt)
            #expect(event.metadata.signature == .verified)
            #expect(event.metadata.receivedAt == 1_605_243_572_000)
            #expect(event.metadata.observedAt == 1_605_243_571_500)
            #expect(event.effectiveDate == (fact.signedDate ?? 1_605_243_571_500))
            #expect(event.metadata.rawDigest.isEmpty && event.metadata.appUserId == nil)
            #expect(event.metadata.unknownFields.isEmpty)
        }
    }

    @Test func malformedBytesAreRefusedNotTrapped() {
        let good = Fact.transaction(Self.fullTransaction()).encoded()
        // Every truncation of a valid encoding either fails cleanly or (at a field boundary) decodes to something.
        for n in 0..<good.count {
            _ = try? Fact(decoding: Array(good.prefix(n)))
        }
        #expect(throws: FactDecodingError.self) { try Fact(decoding: [UInt8]()) }
        #expect(throws: FactDecodingError.self) { try Fact(decoding: [1, 99]) }  // unknown kind
        #expect(throws: FactDecodingError.self) { try Fact(decoding: [2, 1]) }  // unknown version
        #expect(throws: FactDecodingError.self) { try Fact(decoding: [1, 1, 0x0A, 0xFF, 0xFF, 0xFF, 0x0F]) }  // length past end
        // Without the required ids.
        #expect(throws: FactDecodingError.self) { try Fact(decoding: [1, 1]) }
    }
}
