import Foundation
import LedgerAppStore
import LedgerCore
import LedgerTestSupport
import LedgerErrors
import Testing

// MARK: - JWS verification

@Suite("JWS verification")
struct SignatureTests {
    typealias F = AppleFixtures

    static let transaction = F.json(F.v2Transaction())
    static func ms(_ year: Int, _ month: Int = 1) -> Int64 {
        var c = DateComponents()
        c.year = year
        c.month = month
        c.day = 1
        c.timeZone = TimeZone(identifier: "UTC")
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return Int64(calendar.date(from: c)!.timeIntervalSince1970 * 1000)
    }

    @Test("A genuine signed transaction verifies (bare text, JSON string, signedTransactionInfo, envelope)")
    func valid() throws {
        let jws = TestPKI.shared.sign(Self.transaction)
        for body in [
            Array(jws.utf8), F.json(jws), F.json(["signedTransactionInfo": jws]),
            F.envelope(type: "transaction", appUserId: "u1", jws: jws),
        ] {
            let input = try decode(body)
            #expect(input.type == .transaction)
            #expect(input.metadata.source == .signedTransaction)
            #expect(input.metadata.signature == .verified)
            #expect(input.transactions.first?.transactionId == "2000000000000001")
        }
    }

    @Test(
        "Each forgery is refused with its own code",
        arguments: [
            (TestPKI.Forgery.badSignature, "signature_invalid"), (.tamperedPayload, "signature_invalid"),
            (.algNone, "unsupported_alg"), (.algHS256, "unsupported_alg"), (.missingX5C, "missing_x5c"),
        ])
    func forgeries(forgery: TestPKI.Forgery, code: String) throws {
        let jws = TestPKI.shared.forge(Self.transaction, forgery)
        let refused0 = refusal(Array(jws.utf8), type: .transaction)
        let error = try #require(refused0)
        #expect(error.code.rawValue == code)
        #expect(!error.message.isEmpty)
    }

    @Test("A forged transaction nested inside a genuine notification is refused")
    func nestedForgery() throws {
        var payload = F.v2NotificationPayload(type: "DID_RENEW", subtype: nil)
        var data = payload["data"] as! [String: Any]
        data["signedTransactionInfo"] = TestPKI.shared.forge(Self.transaction, .tamperedPayload)
        payload["data"] = data
        let body = F.v2Notification(signedPayload: TestPKI.shared.sign(json: payload))
        let refused1 = refusal(body)
        #expect(refused1?.code == "signature_invalid")
    }

    @Test("A chain to a root that is not configured is untrusted")
    func untrustedRoot() throws {
        let other = try TestPKI(name: "Impostor")
        let refused2 = refusal(Array(other.sign(Self.transaction).utf8))
        let error = try #require(refused2)
        #expect(error.code == "untrusted_chain")
    }

    @Test("A leaf or intermediate without Apple's OID is untrusted")
    func missingOIDs() throws {
        let noLeafOID = try TestPKI(name: "No leaf OID", leafOID: false)
        let noIntermediateOID = try TestPKI(name: "No intermediate OID", intermediateOID: false)
        for pki in [noLeafOID, noIntermediateOID] {
            let decoder = trustingDecoder(roots: [pki.rootDER])
            let refused3 = refusal(Array(pki.sign(Self.transaction).utf8), with: decoder)
            let error = try #require(refused3)
            #expect(error.code == "untrusted_chain")
            #expect(error.message.contains("OID"))
        }
    }

    @Test("Validity is judged at signedDate: expired then refused, signed within validity still verifies later")
    func validityAtSignedDate() throws {
        let from = Date(timeIntervalSince1970: TimeInterval(Self.ms(2019) / 1000))
        let to = Date(timeIntervalSince1970: TimeInterval(Self.ms(2020) / 1000))
        let pki = try TestPKI(name: "Short leaf", leafValidity: from...to)
        let decoder = trustingDecoder(roots: [pki.rootDER])

        let late = F.json(F.v2Transaction(signedDate: Self.ms(2020, 6)))
        let refused4 = refusal(Array(pki.sign(late).utf8), with: decoder)
        let error = try #require(refused4)
        #expect(error.code == "certificate_expired")

        let early = F.json(F.v2Transaction(signedDate: Self.ms(2018, 6)))
        let refused5 = refusal(Array(pki.sign(early).utf8), with: decoder)
        #expect(refused5?.code == "certificate_not_yet_valid")

        // Signed in 2019 while the leaf was valid; verified today (years after the leaf expired): still genuine.
        let inWindow = F.json(F.v2Transaction(signedDate: Self.ms(2019, 6)))
        let input = try decode(Array(pki.sign(inWindow).utf8), with: decoder)
        #expect(input.metadata.signature == .verified)
    }

    @Test("A payload for another bundle is refused")
    func wrongBundle() throws {
        let body = Array(TestPKI.shared.sign(json: F.v2Transaction(bundleId: "com.evil.app")).utf8)
        let refused6 = refusal(body)
        #expect(refused6?.code == "wrong_bundle")
        let notification = F.v2Notification(type: "DID_RENEW", subtype: nil, bundleId: "com.evil.app")
        let refused7 = refusal(notification)
        #expect(refused7?.code == "wrong_bundle")
    }

    @Test("A sandbox payload is refused by a production-only configuration")
    func sandboxIntoProduction() throws {
        let decoder = trustingDecoder(environments: [.production])
        let body = F.v2Notification(type: "SUBSCRIBED", subtype: "INITIAL_BUY", environment: "Sandbox")
        let refused8 = refusal(body, with: decoder)
        let error = try #require(refused8)
        #expect(error.code == "environment_not_accepted")
        #expect(error.message.contains("Sandbox"))
        let refused9 = refusal(F.v2Notification(type: "SUBSCRIBED", subtype: "INITIAL_BUY"), with: decoder)
        #expect(refused9 == nil)
    }

    @Test("No trusted roots: decoded and marked unverified; with requireSignatures: refused")
    func noRoots() throws {
        let lenient = trustingDecoder(roots: [])
        let input = try decode(F.v2Notification(type: "DID_RENEW", subtype: nil), with: lenient)
        #expect(input.metadata.signature == .unverified)
        #expect(input.transactions.count == 1)

        let strict = trustingDecoder(roots: [], requireSignatures: true)
        let refused10 = refusal(F.v2Notification(type: "DID_RENEW", subtype: nil), with: strict)
        let error = try #require(refused10)
        #expect(error.code == "signature_required")
        // Unsigned inputs are still accepted: there is nothing to verify.
        let refused11 = refusal(F.receiptIOS7(inApp: [F.v1Transaction()]), with: strict)
        #expect(refused11 == nil)
    }

    @Test("Verified chains are cached: one entry however many payloads it signs")
    func cache() throws {
        let decoder = trustingDecoder()
        for i in 0..<20 {
            let body = F.v2Notification(type: "DID_RENEW", subtype: nil, notificationUUID: "uuid-\(i)")
            #expect(try decode(body, with: decoder).metadata.signature == .verified)
        }
        #expect(decoder.cachedChainCount == 1)
    }

    @Test("A JWS verified once is remembered; forgeries of it are still refused; with capacity 0 nothing is")
    func verifiedJWSCache() throws {
        for capacity in [0, 2, 4096] {
            let decoder = InputDecoder(
                configuration: AppStoreConfiguration(
                    bundleId: F.bundleId, trustedRootsDER: [TestPKI.shared.rootDER], verifiedJWSCacheCapacity: capacity))
            let payload = F.json(F.v2Transaction())
            let jws = Array(TestPKI.shared.sign(payload).utf8)
            for _ in 0..<3 {
                let input = try decode(jws, with: decoder)
                #expect(input.metadata.signature == .verified)
            }
            for forgery in [TestPKI.Forgery.badSignature, .tamperedPayload] {
                let refused = refusal(Array(TestPKI.shared.forge(payload, forgery).utf8), with: decoder)
                #expect(refused?.code == "signature_invalid", "capacity \(capacity) \(forgery)")
            }
            // Validity at signedDate is still judged for a remembered JWS.
            let short = try TestPKI(
                name: "Short", leafValidity: Date(timeIntervalSince1970: 946_684_800)...Date(timeIntervalSince1970: 1_500_000_000))
            let expiring = InputDecoder(
                configuration: AppStoreConfiguration(trustedRootsDER: [short.rootDER], verifiedJWSCacheCapacity: capacity))
            let old = Array(short.sign(F.json(F.v2Transaction(signedDate: 1_400_000_000_000))).utf8)
            #expect(try decode(old, with: expiring).metadata.signature == .verified)
            let late = Array(short.sign(F.json(F.v2Transaction(signedDate: 1_600_000_000_000))).utf8)
            let refusedLate = refusal(late, with: expiring)
            #expect(refusedLate?.code == "certificate_expired")
        }
    }

    @Test("A root that is not a certificate is reported by init(validating:)")
    func invalidRoot() {
        #expect(throws: InputError(code: "invalid_trusted_root", message: "")) {
            _ = try InputDecoder(validating: AppStoreConfiguration(trustedRootsDER: [[1, 2, 3]]))
        }
        let decoder = InputDecoder(configuration: AppStoreConfiguration(trustedRootsDER: [[1, 2, 3]]))
        let refused12 = refusal(F.v2Notification(type: "DID_RENEW", subtype: nil), with: decoder)
        #expect(refused12?.code == "untrusted_chain")
    }
}
