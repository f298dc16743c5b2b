import Foundation
import LedgerTestSupport
import Testing

/// The rules a ledger folds with are in its log from its first write: a ledger written with a configuration gives
/// the same answers, and passes its checks, in every command run without that file (an auditor's, a backup's, an
/// import's), and a configuration that says otherwise is refused by a writer, naming the difference.
@Suite("Rules in the log", .serialized, .timeLimit(.minutes(5)), .blocking)
struct RulesInTheLogCLITests {
    static let start: Int64 = 1_740_819_600_000  // 2025-03-01T09:00:00Z
    static let day: Int64 = 86_400_000
    static let product = "com.example.premium.monthly"
    static let config = #"{"bindingPolicy":"transfer","products":{"com.example.premium.monthly":{"type":"autoRenewable","entitlements":["premium"]}}}"#

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    /// `customer alice --json` at day 10, and `why alice premium --json`, in `data` without a configuration.
    func answers(_ data: String) async throws -> (customer: [String: Any], why: [String: Any]) {
        let at = "\(Self.start + 10 * Self.day)"
        let customer = try json(try await storeLedgerSucceeds(["customer", "alice", "--data", data, "--at", at, "--json"]))
        let why = try json(try await storeLedgerSucceeds(["why", "alice", "premium", "--data", data, "--at", at, "--json"]))
        return (customer, why)
    }

    func premiumActive(_ customer: [String: Any]) -> Bool? {
        ((customer["entitlements"] as? [String: Any])?["premium"] as? [String: Any])?["active"] as? Bool
    }

    @Test func aLedgerWrittenWithAConfigurationAnswersTheSameWithoutIt() async throws {
        let dir = try TemporaryDirectory(prefix: "sl-rules")
        defer { dir.remove() }
        let config = dir.file("config.json")
        try Self.config.write(toFile: config, atomically: true, encoding: .utf8)
        let data = dir.file("ledger")
        let inputs = [
            #"{"type":"transaction","appUserId":"alice","receivedAt":\#(Self.start),"payload":{"transactionId":"7001","originalTransactionId":"7001","webOrderLineItemId":"97001","productId":"\#(Self.product)","purchaseDate":\#(Self.start),"expiresDate":\#(Self.start + 30 * Self.day),"signedDate":\#(Self.start),"type":"Auto-Renewable Subscription","environment":"Production"}}"#
        ]
        let file = dir.file("inputs.ndjson")
        try inputs.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        _ = try await storeLedgerSucceeds(["ingest", "--data", data, "--config", config, file])

        // The first event is the rules the ledger was created with.
        let rules = try await storeLedgerSucceeds(["rules", "--data", data])
        #expect(rules.contains("seq 1"), "\(rules)")

        // Without the file: the catalog's entitlement, not one named after the product.
        let (customer, why) = try await answers(data)
        #expect(premiumActive(customer) == true, "\(customer)")
        #expect((customer["entitlements"] as? [String: Any])?[Self.product] == nil, "folded without the catalog")
        #expect(why["reason"] as? String == "purchase", "\(why)")
        for command in [["verify"], ["replay", "--check"]] {
            let out = try await runStoreLedger(command + ["--data", data])
            #expect(out.status == 0, "\(command): \(out.stdout) \(out.stderr)")
        }

        // A backup, restored and checked without the file, answers the same.
        let backup = dir.file("backup")
        _ = try await storeLedgerSucceeds(["backup", backup, "--data", data])
        let restored = dir.file("restored")
        _ = try await storeLedgerSucceeds(["restore", backup, "--data", restored])
        #expect(premiumActive(try await answers(restored).customer) == true)
        #expect((try await runStoreLedger(["verify", "--data", restored])).status == 0)

        // So does an export imported without it.
        let export = dir.file("ledger.ndjson")
        try (try await storeLedgerSucceeds(["export", "--complete", "--data", data]))
            .write(toFile: export, atomically: true, encoding: .utf8)
        let imported = dir.file("imported")
        _ = try await storeLedgerSucceeds(["import", export, "--data", imported])
        #expect(premiumActive(try await answers(imported).customer) == true)
        #expect((try await runStoreLedger(["verify", "--data", imported])).status == 0)
        #expect((try await runStoreLedger(["replay", "--check", "--data", imported])).status == 0)

        // A configuration that says otherwise is refused by a writer, naming the difference and the way to record
        // it; nothing is written.
        let other = dir.file("other.json")
        try #"{"bindingPolicy":"keep","products":{"com.example.premium.monthly":{"type":"autoRenewable","entitlements":["gold"]}}}"#
            .write(toFile: other, atomically: true, encoding: .utf8)
        let before = try await ledgerStats(data)
        let refused = try await runStoreLedger(["ingest", "--data", data, "--config", other, file])
        #expect(refused.status == 1)
        #expect(refused.stderr.hasPrefix("error: rules_differ:"), "\(refused.stderr)")
        #expect(refused.stderr.contains("bindingPolicy transfer → keep"), "\(refused.stderr)")
        #expect(refused.stderr.contains("rules apply"), "\(refused.stderr)")
        let serve = try await runStoreLedger(["serve", "--data", data, "--config", other, "--socket", dir.file("s.sock")])
        #expect(serve.status == 1 && serve.stderr.contains("rules_differ"), "\(serve.stderr)")
        #expect((try await ledgerStats(data))["lastSeq"] as? Int == before["lastSeq"] as? Int)
        // A reader with it folds with the log's all the same, and says so.
        let at = "\(Self.start + 10 * Self.day)"
        let read = try await runStoreLedger(["customer", "alice", "--data", data, "--config", other, "--at", at, "--json"])
        #expect(read.status == 0)
        #expect(premiumActive(try json(read.stdout)) == true)
        #expect(read.stderr.contains("note: the ledger folds with the rules its log recorded at seq 1"), "\(read.stderr)")

        // Recorded with `rules apply`, the new rules hold from their seq on, for every command.
        _ = try await storeLedgerSucceeds(["rules", "apply", other, "--data", data])
        let (afterCustomer, _) = try await answers(data)
        #expect(premiumActive(afterCustomer) == nil && ((afterCustomer["entitlements"] as? [String: Any])?["gold"] as? [String: Any])?["active"] as? Bool == true)
        _ = try await storeLedgerSucceeds(["ingest", "--data", data, "--config", other, file])
        #expect((try await runStoreLedger(["verify", "--data", data])).status == 0)
    }
}
