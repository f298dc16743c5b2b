import LedgerAppStore
import LedgerCore
import LedgerErrors
import Testing

/// The operator's grant and revoke as inputs (`"type": "grant"`): what each field becomes, the id derived when none
/// is given (the same for the same grant, so a resend is a duplicate), and each refusal with its code.
@Suite struct GrantDecodingTests {
    static let decoder = InputDecoder(configuration: AppStoreConfiguration())
    static let received: UnixMillis = 1_709_283_600_000  // 2024-03-01T09:00:00Z

    static func decode(_ json: String, user: AppUserID? = "alice") throws(InputError) -> OperatorGrant? {
        let input = try decoder.decode(Array(json.utf8), forcedType: .grant, appUserId: user, receivedAt: received)
        guard input.facts.count == 1, case .grant(let g) = input.facts[0] else { return nil }
        #expect(input.metadata.source == .grant)
        return g
    }

    static func refusal(_ json: String, user: AppUserID? = "alice") -> InputError? {
        do {
            _ = try decode(json, user: user)
            return nil
        } catch {
            return error
        }
    }

    @Test func aGrantForAMonthFromWhenReceived() throws {
        let g = try #require(try Self.decode(#"{"entitlement":"premium","duration":"P1M","reason":"support"}"#))
        #expect(g.action == .grant)
        #expect(g.appUserId == "alice")
        #expect(g.environment == .production)
        #expect(g.entitlement == "premium")
        #expect(g.from == Self.received)
        #expect(g.until == 1_711_962_000_000, "2024-04-01T09:00:00Z: one calendar month")
        #expect(g.reason == "support")
        let id = try #require(g.grantId)
        #expect(id.hasPrefix("g_") && id.utf8.count == 18)
        let again = try #require(try Self.decode(#"{"entitlement":"premium","duration":"P1M","reason":"support"}"#))
        #expect(again.grantId == id, "the same grant derives the same id")
        let other = try #require(try Self.decode(#"{"entitlement":"premium","duration":"P2M","reason":"support"}"#))
        #expect(other.grantId != id)
    }

    @Test func explicitInstantsIdsAndEnvironments() throws {
        let g = try #require(
            try Self.decode(
                #"{"appUserId":"alice","entitlement":"pro","from":"2024-03-05T00:00:00Z","until":1710460800000,"grantId":"beta-7","environment":"Sandbox"}"#))
        #expect(g.from == 1_709_596_800_000)
        #expect(g.until == 1_710_460_800_000)
        #expect(g.grantId == "beta-7")
        #expect(g.environment == .sandbox)
        let lifetime = try #require(try Self.decode(#"{"entitlement":"pro","lifetime":true}"#))
        #expect(lifetime.until == nil)
        let revoke = try #require(try Self.decode(#"{"revoke":true,"grantId":"beta-7","at":1709600000000,"reason":"left"}"#))
        #expect(revoke.action == .revoke)
        #expect(revoke.grantId == "beta-7")
        #expect(revoke.from == 1_709_600_000_000)
        #expect(revoke.reason == "left")
        let byEntitlement = try #require(try Self.decode(#"{"revoke":true,"entitlement":"pro"}"#))
        #expect(byEntitlement.grantId == nil)
        #expect(byEntitlement.from == Self.received)
        // The user from the body when the caller names none (an envelope, `ingest --type grant`).
        #expect(try Self.decode(#"{"appUserId":"bob","entitlement":"pro","lifetime":true}"#, user: nil)?.appUserId == "bob")
    }

    @Test func refusalsNameTheFieldAndCode() {
        let cases: [(String, AppUserID?, ErrorCode, String)] = [
            (#"{"duration":"P1M"}"#, "alice", .missingField, "entitlement"),
            (#"{"entitlement":"pro"}"#, "alice", .missingField, "duration"),
            (#"{"entitlement":"pro","duration":"1 month"}"#, "alice", .invalidGrant, "P7D"),
            (#"{"entitlement":"pro","duration":"P0D"}"#, "alice", .invalidGrant, "duration"),
            (#"{"entitlement":"pro","duration":"P1M","until":1710460800000}"#, "alice", .invalidGrant, "one of"),
            (#"{"entitlement":"pro","until":1709000000000}"#, "alice", .outOfRange, "after the grant's start"),
            (#"{"entitlement":"pro","duration":"P1M","at":1}"#, "alice", .invalidGrant, "'at' belongs to a revoke"),
            (#"{"revoke":true}"#, "alice", .missingField, "grantId"),
            (#"{"revoke":true,"grantId":"g","duration":"P1M"}"#, "alice", .invalidGrant, "'duration' belongs to a grant"),
            (#"{"entitlement":"pro","lifetime":true}"#, nil, .missingField, "appUserId"),
            (#"{"appUserId":"bob","entitlement":"pro","lifetime":true}"#, "alice", .invalidGrant, "addressed to 'alice'"),
            (#"{"entitlement":"pro","duration":"P1M","from":"yesterday"}"#, "alice", .wrongType, "from"),
            (#"{"entitlement":"pro","duration":"P1M","from":5}"#, "alice", .outOfRange, "from"),
            (#"{"entitlement":"pro","duration":"P1M","grantId":""}"#, "alice", .invalidGrant, "grantId"),
        ]
        for (json, user, code, mention) in cases {
            let refused = Self.refusal(json, user: user)
            #expect(refused?.code == code, "\(json)")
            #expect(refused?.message.contains(mention) == true, "\(json): \(refused?.message ?? "accepted")")
        }
    }
}
