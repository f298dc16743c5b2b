import Foundation
import LedgerTestSupport
import Testing

/// A forgotten person's pseudonym is never taken by anyone else: once `forget` reports `anon-…`, an input naming
/// `anon-…` as its user became a new user the ledger answered under that same name, mixing a stranger into the
/// forgotten history. In a ledger with pseudonyms an id of that form is refused (`pseudonym_shaped_id`), whoever
/// sends it; a ledger without pseudonyms names nobody so, and takes it as any id.
@Suite("A forgotten name is not taken over", .serialized, .timeLimit(.minutes(5)), .blocking)
struct ForgottenNameTests {
    static let start: Int64 = 1_700_000_000_000
    static let day: Int64 = 86_400_000

    static func transaction(_ id: String, user: String) -> String {
        #"{"type":"transaction","appUserId":"\#(user)","receivedAt":\#(start),"payload":{"transactionId":"\#(id)","originalTransactionId":"\#(id)","productId":"com.example.premium.monthly","purchaseDate":\#(start),"expiresDate":\#(start + 30 * day),"type":"Auto-Renewable Subscription"}}"#
    }

    @Test func anInputNamingAForgottenPseudonymIsRefused() async throws {
        let dir = try TemporaryDirectory(prefix: "sl-forgotten-name")
        defer { dir.remove() }
        let data = dir.file("ledger")
        let first = dir.file("first.ndjson")
        try Self.transaction("1001", user: "alice@example.com").write(toFile: first, atomically: true, encoding: .utf8)
        _ = try await storeLedgerSucceeds(["ingest", first, "--data", data, "--pseudonyms"])
        let report = try #require(
            try JSONSerialization.jsonObject(
                with: Data(try await storeLedgerSucceeds(
                    ["forget", "alice@example.com", "--requested-by", "ticket 1", "--data", data, "--json"]).utf8))
                as? [String: Any])
        let pseudonym = try #require(report["pseudonym"] as? String)
        #expect(pseudonym.hasPrefix("anon-"), "\(report)")
        let at = "\(Self.start + Self.day)"
        let forgotten = try await storeLedgerSucceeds(["customer", pseudonym, "--data", data, "--at", at, "--json"])

        // A stranger's purchase and claim under that name: each refused, nothing appended.
        let second = dir.file("second.ndjson")
        try [
            Self.transaction("2001", user: pseudonym),
            #"{"type":"binding","appUserId":"\#(pseudonym)","originalTransactionId":"1001","receivedAt":\#(Self.start + Self.day)}"#,
            #"{"type":"binding","appUserId":"bob","originalTransactionId":"1001","appAccountToken":"\#(pseudonym)","receivedAt":\#(Self.start + Self.day)}"#,
        ].joined(separator: "\n").write(toFile: second, atomically: true, encoding: .utf8)
        let before = try await ledgerStats(data)
        let ingest = try await runStoreLedger(["ingest", second, "--data", data, "--json"])
        #expect(ingest.status == 1, "\(ingest.stderr)")
        #expect(ingest.stdout.components(separatedBy: #""code":"pseudonym_shaped_id""#).count == 4, "\(ingest.stdout)")
        let after = try await ledgerStats(data)
        #expect(after["lastSeq"] as? Int == before["lastSeq"] as? Int, "nothing appended")
        #expect(try await storeLedgerSucceeds(["customer", pseudonym, "--data", data, "--at", at, "--json"]) == forgotten)
        #expect((try await runStoreLedger(["verify", "--data", data])).status == 0)

        // Without pseudonyms the ledger names nobody so: such an id is an id.
        let plain = dir.file("plain")
        let third = dir.file("third.ndjson")
        try Self.transaction("3001", user: pseudonym).write(toFile: third, atomically: true, encoding: .utf8)
        _ = try await storeLedgerSucceeds(["ingest", third, "--data", plain])
        let customer = try await storeLedgerSucceeds(["customer", pseudonym, "--data", plain, "--at", at, "--json"])
        #expect(customer.contains("3001"), "\(customer)")
    }
}
