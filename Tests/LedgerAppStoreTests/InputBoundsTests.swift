import Foundation
import LedgerAppStore
import LedgerCore
import LedgerTestSupport
import LedgerErrors
import Testing

// MARK: - Bounds at the door

/// Every instant a fact carries lies in 2008-01-01..2200-01-01 and every quantity in 0...1,000,000, whatever format
/// the input came in; anything else is `out_of_range`, naming Apple's field (the story: an `expiresDate` at the end
/// of Int64 was accepted and then trapped every read of its subscription).
@Suite("Input bounds")
struct InputBoundsTests {
    typealias F = AppleFixtures

    static let earliest = FactBounds.earliestInstant
    static let limit = FactBounds.instantLimit
    /// Values no Apple date ever had: the ends of Int64, zero, just outside the window.
    static let outside: [Int64] = [.min, .min + 1, -1, 0, earliest - 1, limit, .max - 1, .max]

    /// No trusted roots: signed inputs decode unverified, so the bounds (not certificate validity at `signedDate`)
    /// decide.
    static let lenient = InputDecoder(configuration: AppStoreConfiguration())

    static func outOfRange(_ body: [UInt8], decoder: InputDecoder = lenient, type: InputType? = nil) -> InputError? {
        refusal(body, with: decoder, type: type)
    }

    @Test("The issue's poison input: a decoded V2 transaction expiring at Int64.min is refused, even when strict")
    func poison() throws {
        let body = Array(
            #"{"transactionId":"1","originalTransactionId":"1","productId":"p","purchaseDate":1700000000000,"expiresDate":-9223372036854775808}"#
                .utf8)
        let strict = trustingDecoder(bundleId: nil, requireSignatures: true)
        for decoder in [strict, Self.lenient] {
            let refused = try #require(refusal(body, with: decoder, type: .transaction))
            #expect(refused.code == "out_of_range")
            #expect(refused.message == "expiresDate -9223372036854775808 is outside 2008-01-01..2200-01-01 (transaction 1)")
        }
        let max = try #require(refusal(Array(String(decoding: body, as: UTF8.self)
            .replacingOccurrences(of: "-9223372036854775808", with: "9223372036854775807").utf8)))
        #expect(max.message.hasPrefix("expiresDate 9223372036854775807 is outside 2008-01-01..2200-01-01"))
    }

    @Test("The window's edges: its first millisecond and last millisecond are accepted, their neighbours outside not")
    func edges() throws {
        for (value, accepted) in [(Self.earliest, true), (Self.limit - 1, true), (Self.earliest - 1, false), (Self.limit, false)] {
            let body = F.json(F.v2Transaction(purchaseDate: value, expiresDate: value, signedDate: value))
            let refused = refusal(body, with: Self.lenient)
            #expect((refused == nil) == accepted, "\(value): \(String(describing: refused))")
            if !accepted { #expect(refused?.code == "out_of_range") }
        }
    }

    @Test(
        "Every V2 transaction instant is checked, by its V2 name",
        arguments: ["purchaseDate", "originalPurchaseDate", "expiresDate", "signedDate", "revocationDate"])
    func v2TransactionInstants(field: String) throws {
        for value in Self.outside {
            let body = F.json(F.v2Transaction(extra: [field: value]))
            let refused = try #require(Self.outOfRange(body), "\(field) = \(value)")
            #expect(refused.code == "out_of_range")
            #expect(refused.message.hasPrefix("\(field) \(value) is outside 2008-01-01..2200-01-01"), "\(refused.message)")
            // The same document signed: refused the same way.
            let signed = Array(F.signedTransaction(F.v2Transaction(extra: [field: value])).utf8)
            #expect(Self.outOfRange(signed)?.code == "out_of_range")
        }
    }

    @Test(
        "Every V2 renewal info instant is checked",
        arguments: ["gracePeriodExpiresDate", "renewalDate", "signedDate", "recentSubscriptionStartDate"])
    func v2RenewalInstants(field: String) throws {
        for value in [Int64.min, 0, Int64.max] {
            let refused = try #require(Self.outOfRange(F.json(F.v2Renewal(extra: [field: value]))))
            #expect(refused.code == "out_of_range")
            #expect(refused.message.hasPrefix("\(field) \(value) is outside"), "\(refused.message)")
            let signed = F.json(["signedRenewalInfo": F.signedRenewal(F.v2Renewal(extra: [field: value]))])
            #expect(Self.outOfRange(signed)?.code == "out_of_range")
        }
    }

    @Test(
        "V1 dates are checked under their V1 names, in receipts and notifications",
        arguments: [
            ("purchase_date", "purchase_date_ms"), ("original_purchase_date", "original_purchase_date_ms"),
            ("expires_date", "expires_date_ms"), ("cancellation_date", "cancellation_date_ms"),
        ])
    func v1Instants(base: String, name: String) throws {
        for value in [Int64.max, Self.limit, Self.earliest - 1] {
            var t = F.v1Transaction()
            t[base + "_ms"] = String(value)
            for body in [F.receiptIOS7(inApp: [t]), F.v1Notification(type: "DID_RENEW", latest: [t])] {
                let refused = try #require(Self.outOfRange(body), "\(name) = \(value)")
                #expect(refused.code == "out_of_range")
                #expect(refused.message.hasPrefix("\(name) \(value) is outside"), "\(refused.message)")
            }
        }
        // A formatted date far in the future is refused too (iOS 6 and old notifications send only those).
        var formatted = F.v1Transaction(style: .formattedOnly)
        formatted[base] = "9999-12-31 23:59:59 Etc/GMT"
        #expect(Self.outOfRange(F.v1LegacyNotification(type: "CANCEL", latest: formatted))?.code == "out_of_range")
    }

    @Test("V1 grace period, a receipt's request date, a notification's signedDate, a claim, an envelope's receivedAt")
    func otherInstants() throws {
        let grace = F.receiptIOS7(
            inApp: [F.v1Transaction()], pending: [F.v1PendingRenewal(gracePeriodExpiresDate: Int64.max)])
        #expect(Self.outOfRange(grace)?.message.hasPrefix("grace_period_expires_date_ms 9223372036854775807") == true)

        let request = F.receiptIOS7(requestDate: Self.limit, creationDate: F.epoch, inApp: [F.v1Transaction()])
        #expect(Self.outOfRange(request)?.message.hasPrefix("request_date_ms \(Self.limit) is outside") == true)
        let created = F.receiptIOS7(creationDate: Self.limit, inApp: [F.v1Transaction()])
        #expect(Self.outOfRange(created)?.message.hasPrefix("receipt_creation_date_ms \(Self.limit) is outside") == true)

        let notification = F.v2Notification(type: "DID_RENEW", subtype: nil, signedDate: Int64.max)
        let refusedNotification = Self.outOfRange(notification)
        #expect(refusedNotification?.code == "out_of_range")
        let decodedNotification = F.json(
            F.v2NotificationPayload(type: "TEST", subtype: nil, signedDate: -1))
        #expect(Self.outOfRange(decodedNotification)?.message.hasPrefix("signedDate -1 is outside") == true)

        let claim = F.binding(appUserId: "u1", originalTransactionId: "1", claimedAt: Int64.min)
        #expect(Self.outOfRange(claim)?.message.hasPrefix("claimedAt -9223372036854775808 is outside") == true)

        let envelope = F.envelope(type: "transaction", receivedAt: Int64.max, payload: F.json(F.v2Transaction()))
        #expect(Self.outOfRange(envelope)?.message == "receivedAt 9223372036854775807 is outside 2008-01-01..2200-01-01")

        // The caller's clock is checked too (`ingest --received-at`).
        let early = Self.lenient
        #expect(throws: InputError.outOfRange("")) {
            try early.decode(F.binding(appUserId: "u1", originalTransactionId: "1"), receivedAt: 5)
        }
    }

    @Test("Quantity: 0...1,000,000 accepted, negative or absurd refused")
    func quantity() throws {
        for (value, accepted) in [(Int64(1), true), (0, true), (1_000_000, true), (-1, false), (1_000_001, false), (.max, false)] {
            let refused = Self.outOfRange(F.json(F.v2Transaction(quantity: value)))
            #expect((refused == nil) == accepted, "quantity \(value): \(String(describing: refused))")
            if !accepted {
                #expect(refused?.code == "out_of_range")
                #expect(refused?.message.hasPrefix("quantity \(value) is outside 0...1000000") == true)
            }
        }
        var v1 = F.v1Transaction()
        v1["quantity"] = "-5"
        #expect(Self.outOfRange(F.receiptIOS7(inApp: [v1]))?.code == "out_of_range")
    }
}

// MARK: - Doubtful inputs, decided

/// Inputs a first reading accepted though no Apple document looks like them, each decided one way and tested.
@Suite("Doubtful inputs")
struct DoubtfulInputTests {
    typealias F = AppleFixtures
    static let lenient = InputDecoder(configuration: AppStoreConfiguration())

    static func transaction(_ fields: String) -> [UInt8] {
        Array(#"{"transactionId":"1","originalTransactionId":"1","productId":"p","purchaseDate":1700000000000,"expiresDate":1702592000000\#(fields)}"#.utf8)
    }

    /// A modeled text field holds at most 1 KiB: a product id of megabytes would be copied into every timeline and
    /// answer that names it. One of 1 KiB is kept.
    @Test func aModeledFieldOverOneKiBIsOutOfRange() throws {
        func body(_ product: String) -> [UInt8] {
            Array(#"{"transactionId":"1","originalTransactionId":"1","productId":"\#(product)","purchaseDate":1700000000000}"#.utf8)
        }
        let refused = try #require(refusal(body(String(repeating: "p", count: 1025)), with: Self.lenient, type: .transaction))
        #expect(refused.code == "out_of_range")
        #expect(refused.message.hasPrefix("productId is 1025 bytes long"), "\(refused.message)")
        #expect(refusal(body(String(repeating: "p", count: 1024)), with: Self.lenient, type: .transaction) == nil)
        // The same bound for an envelope's app user id.
        let envelope = Array(#"{"type":"binding","payload":{"appUserId":"\#(String(repeating: "u", count: 1025))","originalTransactionId":"1"}}"#.utf8)
        #expect(refusal(envelope, with: Self.lenient)?.code == "out_of_range")
    }

    /// A price is a non-negative amount of milliunits: a negative one, or one past 10^15, is out of range.
    @Test(arguments: [Int64.min, -1, FactBounds.maxPrice + 1, .max])
    func aNegativeOrAbsurdPriceIsOutOfRange(price: Int64) throws {
        let refused = try #require(refusal(Self.transaction(#","price":\#(price),"currency":"USD""#), with: Self.lenient, type: .transaction))
        #expect(refused.code == "out_of_range" && refused.message.hasPrefix("price \(price) is outside"), "\(refused.message)")
    }

    @Test func aZeroPriceIsKept() throws {
        let decoded = try Self.lenient.decode(Self.transaction(#","price":0,"currency":"USD""#), receivedAt: 1_700_000_000_000)
        guard case .transaction(let t) = decoded.facts.first else { Issue.record("no transaction"); return }
        #expect(t.price == 0)
    }

    /// A numeric transaction id is taken as its decimal text: Apple's ids are decimal strings, and a trusted caller's
    /// decoded JSON may carry them as numbers; the same transaction posted either way is one fact.
    @Test func aNumericTransactionIdIsItsDecimalText() throws {
        let asNumber = try Self.lenient.decode(
            Array(#"{"transactionId":2000000000000001,"originalTransactionId":2000000000000001,"productId":"p","purchaseDate":1700000000000}"#.utf8),
            receivedAt: 1_700_000_000_000)
        let asText = try Self.lenient.decode(
            Array(#"{"transactionId":"2000000000000001","originalTransactionId":"2000000000000001","productId":"p","purchaseDate":1700000000000}"#.utf8),
            receivedAt: 1_700_000_000_000)
        #expect(asNumber.facts == asText.facts)
    }

    /// RFC 7515: a JWS whose `crit` names extensions the recipient does not understand is refused; this verifier
    /// understands none.
    @Test func aJWSWithACritHeaderIsRefused() throws {
        let payload = F.json(F.v2Transaction())
        let jws = TestPKI.shared.sign(payload, header: ["alg": "ES256", "x5c": TestPKI.shared.x5c, "crit": ["exp"], "exp": 1])
        let refused = try #require(refusal(Array(jws.utf8), with: Self.lenient, type: nil))
        #expect(refused.code == "invalid_jws" && refused.message.contains("crit"), "\(refused.message)")
    }
}
