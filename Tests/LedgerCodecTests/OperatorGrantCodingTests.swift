import LedgerCodec
import LedgerCore
import Testing

/// The operator's grant (kind 7) round-trips through its stored bytes, every field and an unknown environment kept;
/// bytes that lack the action, user or start are refused, not read as a grant to nobody.
@Suite struct OperatorGrantCodingTests {
    @Test func everyFieldRoundTrips() throws {
        let grant = OperatorGrant(
            action: .grant, appUserId: "alice", environment: .sandbox, grantId: "g_0123456789abcdef",
            entitlement: "premium", from: 1_700_000_000_000, until: 1_702_592_000_000, reason: "support ticket 4411")
        let revoke = OperatorGrant(
            action: .revoke, appUserId: "alice", environment: try #require(AppStoreEnvironment(storedName: "Staging")),
            grantId: nil, entitlement: "premium", from: 1_700_500_000_000, reason: nil)
        for fact in [Fact.grant(grant), Fact.grant(revoke)] {
            let bytes = fact.encoded()
            #expect(try Fact(decoding: bytes) == fact)
            #expect(bytes[1] == 7, "kind code 7")
        }
        #expect(Fact.grant(grant).eventKey == "grant:alice")
        #expect(Fact.grant(grant).originalTransactionId == nil, "on no timeline")
    }

    @Test func aGrantWithoutItsUserIsRefused() {
        // version 1, kind 7, field 1 (varint) = 1, field 7 (varint) = 5: no user.
        let bytes: [UInt8] = [1, 7, 0x08, 1, 0x38, 5]
        #expect(throws: FactDecodingError.self) { try Fact(decoding: bytes) }
    }
}
