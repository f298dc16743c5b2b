import Foundation
import LedgerAppStore
import LedgerCore
import LedgerTestSupport
import LedgerErrors
import Testing

// MARK: - Envelopes, detection, bindings, limits

@Suite("Input detection and envelopes")
struct InputDecoderTests {
    typealias F = AppleFixtures

    @Test("Bare documents are detected")
    func detection() throws {
        let cases: [([UInt8], InputType, FactSource)] = [
            (F.receiptIOS7(inApp: [F.v1Transaction()]), .receipt, .receipt),
            (F.v1Notification(type: "DID_RENEW", latest: [F.v1Transaction()]), .notification, .notificationV1),
            (F.v2Notification(type: "DID_RENEW", subtype: nil), .notification, .notificationV2),
            (F.json(["signedTransactionInfo": F.signedTransaction()]), .transaction, .signedTransaction),
            (F.json(["signedRenewalInfo": F.signedRenewal()]), .renewal, .signedTransaction),
            (Array(F.signedRenewal().utf8), .renewal, .signedTransaction),
            (F.json(F.v2Transaction()), .transaction, .decodedJSON),
            (F.json(F.v2Renewal()), .renewal, .decodedJSON),
            (F.binding(appUserId: "u1", originalTransactionId: "2000000000000001"), .binding, .binding),
        ]
        for (body, type, source) in cases {
            let input = try decode(body)
            #expect(input.type == type)
            #expect(input.metadata.source == source)
            #expect(input.raw == body)
        }
    }

    @Test("JSON text as Apple may write it: escapes, surrogate pairs, 1.0 and exponents, whitespace; malformed refused")
    func jsonEdges() throws {
        let text = #"""
             { "originalTransactionId" : "2000000000000001", "productId": "com.example.premium.monthly",
              "autoRenewStatus": 1.0, "expirationIntent": 1e0, "renewalDate": 1.6052435700E12,
              "note": "caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \t tab, long enough to take the slow path",
              "nested": {"a": [1, -2, 3.5, true, false, null, ""]}, "signedDate": 1605243570000 }
            """#
        let input = try decode(Array(text.utf8))
        let r = try #require(input.renewals.first)
        #expect(r.autoRenewStatus == true)
        #expect(r.expirationIntent == 1)
        #expect(r.renewalDate == 1_605_243_570_000)
        #expect(r.extra["note"] == #""café 😀 \"q\" \\ / \t tab, long enough to take the slow path""#)
        #expect(r.extra["nested"] == #"{"a":[1,-2,3.5,true,false,null,""]}"#)
        for bad in [
            #"{"originalTransactionId": 01}"#, #"{"a": "\x"}"#,
            "{\"a\": \"tab\there\"}", #"{"a": tru}"#, #"{"a": 1} x"#, #"{"a": -}"#, #"{"a": 1.}"#,
        ] {
            let refused = refusal(Array(bad.utf8))
            #expect(refused?.code == "invalid_json", "\(bad): \(String(describing: refused))")
        }
        // JSONSerialization let a trailing comma through; there is one parser now, and it does not.
        let trailingComma = refusal(Array(#"{"originalTransactionId": "1",}"#.utf8))
        #expect(trailingComma?.code == "invalid_json")
        let invalidUTF8 = Array(#"{"originalTransactionId": ""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        let refusedUTF8 = refusal(invalidUTF8)
        #expect(refusedUTF8?.code == "invalid_json")
    }

    @Test("Decoded renewal JSON keeps Apple's values and unknown fields")
    func decodedRenewal() throws {
        let input = try decode(
            F.json(
                F.v2Renewal(
                    autoRenewProductId: F.yearly, autoRenewStatus: 0, expirationIntent: 3, isInBillingRetryPeriod: false,
                    priceIncreaseStatus: 0, extra: ["renewalPrice": 4990])))
        let r = try #require(input.renewals.first)
        #expect(r.autoRenewStatus == false)
        #expect(r.autoRenewProductId == F.yearly)
        #expect(r.expirationIntent == 3)
        #expect(r.isInBillingRetryPeriod == false)
        #expect(r.priceIncreaseStatus == 0)
        #expect(r.renewalDate == F.epoch + 30 * F.day)
        #expect(r.renewalPrice == 4990)
        #expect(input.metadata.signature == .unsigned)
    }

    @Test("The Server API pair {signedTransactionInfo, signedRenewalInfo} yields both facts")
    func signedPair() throws {
        let body = F.json(["signedTransactionInfo": F.signedTransaction(), "signedRenewalInfo": F.signedRenewal()])
        let input = try decode(body)
        #expect(input.transactions.count == 1)
        #expect(input.renewals.count == 1)
        #expect(input.metadata.signature == .verified)
    }

    @Test("Forced type overrides detection; an unknown envelope type is refused")
    func forced() throws {
        let refused0 = refusal(F.json(F.v2Renewal()), type: .transaction)
        #expect(refused0?.code == "missing_field")
        let body = F.envelope(type: "purchase", payload: F.json(F.v2Transaction()))
        let refused1 = refusal(body)
        #expect(refused1?.code == "unknown_input_type")
        let refused2 = refusal(F.json(["hello": "world"]))
        #expect(refused2?.code == "unknown_input_type")
        let refused3 = refusal(F.json([1, 2, 3]))
        #expect(refused3?.code == "unknown_input_type")
    }

    @Test("Binding envelope: the payload's claim, claimedAt defaulting to receivedAt")
    func binding() throws {
        let body = F.envelope(
            type: "binding", receivedAt: F.epoch + 1000, payload: F.binding(appUserId: "u1", originalTransactionId: "1000000741475761"))
        let input = try decode(body)
        let claim = try #require(input.bindings.first)
        #expect(input.facts.count == 1)
        #expect(claim.appUserId == "u1")
        #expect(claim.originalTransactionId == "1000000741475761")
        #expect(claim.claimedAt == F.epoch + 1000)
        #expect(claim.cause == .claim)

        let explicit = try decode(F.binding(appUserId: "u2", originalTransactionId: "9", claimedAt: F.epoch + 77))
        #expect(explicit.bindings.first?.claimedAt == F.epoch + 77)
        let refused4 = refusal(F.json(["appUserId": "u3"]), type: .binding)
        #expect(refused4?.code == "missing_field")
    }

    @Test("Caller appUserId claims each OTID once, plus appAccountToken claims")
    func claims() throws {
        let jws = F.signedTransaction(F.v2Transaction(appAccountToken: "AAAAAAAA-0000-0000-0000-000000000001"))
        let input = try decode(Array(jws.utf8), appUserId: "u9")
        #expect(input.bindings.count == 2)
        // The claim speaks from the instant Apple signed the transaction, so re-posting it states the same claim.
        let signed = try #require(input.facts.compactMap { fact -> Int64? in
            if case .transaction(let t) = fact { return t.signedDate }
            return nil
        }.first)
        #expect(signed != receivedAt)
        #expect(input.bindings[0] == BindingClaim(
            appUserId: "u9", originalTransactionId: "2000000000000001", claimedAt: signed, cause: .claim))
        // The token's claim is for the user the caller named, and says which token (docs/domain.md, "Owners").
        #expect(input.bindings[1].appUserId == "u9")
        #expect(input.bindings[1].appAccountToken == "aaaaaaaa-0000-0000-0000-000000000001")
        #expect(input.bindings[1].cause == .appAccountToken)
    }

    @Test("Limits: too large, too deep (100k brackets, no stack overflow), malformed JSON")
    func limits() throws {
        let small = InputDecoder(configuration: AppStoreConfiguration(maxInputBytes: 1024))
        let big = F.receiptIOS7(inApp: (0..<20).map { F.v1Transaction(transactionId: "\($0)") })
        let refused5 = refusal(big, with: small)
        #expect(refused5?.code == "too_large")

        let deep = [UInt8](repeating: UInt8(ascii: "["), count: 100_000) + [UInt8](repeating: UInt8(ascii: "]"), count: 100_000)
        let refused6 = refusal(deep)
        #expect(refused6?.code == "too_deep")
        let deepObject = Array(#"{"status":0,"receipt":"#.utf8) + [UInt8](repeating: UInt8(ascii: "{"), count: 65) + [UInt8](repeating: UInt8(ascii: "}"), count: 66)
        let refused7 = refusal(deepObject)
        #expect(refused7?.code == "too_deep")
        // Brackets inside strings do not count.
        let bracketsInString = F.receiptIOS7(inApp: [F.v1Transaction(extra: ["note": String(repeating: "[", count: 500)])])
        let refused8 = refusal(bracketsInString)
        #expect(refused8 == nil)

        let refused9 = refusal(Array(#"{"status":0,"#.utf8))
        #expect(refused9?.code == "invalid_json")
        let refused10 = refusal([])
        #expect(refused10?.code == "invalid_json")
        let refused11 = refusal(Array("not.a.jws".utf8))
        #expect(refused11?.code == "invalid_jws")
    }

    @Test("Bare text that cannot be a compact JWS is invalid_json; JWS-shaped text that fails to decode is invalid_jws")
    func bareTextRefusals() {
        for text in ["this is not json {", "hello world", "  <xml/>  ", "abc.def.gh!", "a.b.c d", "{not json"] {
            let refused = refusal(Array(text.utf8))
            #expect(refused?.code == "invalid_json", "\(text): \(String(describing: refused))")
        }
        for text in ["not.a.jws", "abc", "a.b", "a.b.c.d", "  x.y.z\n"] {
            let refused = refusal(Array(text.utf8))
            #expect(refused?.code == "invalid_jws", "\(text): \(String(describing: refused))")
        }
        // A JSON string is JSON: its content is read as a JWS whatever it holds.
        let quoted = refusal(Array(#""this is not json {""#.utf8))
        #expect(quoted?.code == "invalid_jws")
    }

    @Test("Default size limit is 16 MiB")
    func defaultLimit() {
        #expect(AppStoreConfiguration().maxInputBytes == 16 << 20)
        let huge = [UInt8](repeating: 0x20, count: (16 << 20) + 1)
        let refused12 = refusal(huge)
        #expect(refused12?.code == "too_large")
    }

    @Test("Configuration file: bundleId, trustedRoots paths, requireSignatures, environments")
    func configurationFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-appstore-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data(TestPKI.shared.rootDER).write(to: dir.appendingPathComponent("root.der"))
        let json = F.json([
            "bundleId": F.bundleId, "trustedRoots": ["root.der"], "requireSignatures": true,
            "environments": ["Production"], "bindingPolicy": "transfer",
        ] as [String: Any])
        let configuration = try AppStoreConfiguration(configFile: json, baseDirectory: dir.path)
        #expect(configuration.bundleId == F.bundleId)
        #expect(configuration.trustedRootsDER == [TestPKI.shared.rootDER])
        #expect(configuration.requireSignatures)
        #expect(configuration.acceptedEnvironments == [.production])
        let input = try decode(F.v2Notification(type: "DID_RENEW", subtype: nil), with: InputDecoder(configuration: configuration))
        #expect(input.metadata.signature == .verified)
        #expect(throws: InputError(code: "invalid_configuration", message: "")) {
            _ = try AppStoreConfiguration(configFile: F.json(["trustedRoots": ["missing.der"]]), baseDirectory: dir.path)
        }
    }

    @Test("Decoding is thread-safe: concurrent decodes share one chain cache")
    func concurrent() async throws {
        let decoder = trustingDecoder()
        let bodies = (0..<16).map { F.v2Notification(type: "DID_RENEW", subtype: nil, notificationUUID: "c-\($0)") }
        let count = await withTaskGroup(of: Bool.self) { group in
            for body in bodies {
                group.addTask { (try? decoder.decode(body, receivedAt: receivedAt))?.metadata.signature == .verified }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(count == 16)
        #expect(decoder.cachedChainCount == 1)
    }
}
