import Foundation
import LedgerTestSupport
import Testing

/// `storeledger metrics` on a ledger made by `ingest`: the figures by month, the same question as known before a late
/// refund, CSV, and the arguments it refuses.
@Suite("storeledger metrics", .serialized, .blocking)
struct MetricsCLITests {
    static let product = "com.example.premium.monthly"

    /// `2024-01-10T00:00:00Z` in ms (midnight UTC only), without the date formatter.
    static func ms(_ iso: String) -> Int64 {
        let parts = iso.prefix(10).split(separator: "-").map { Int64($0)! }
        return Scenario.utc(parts[0], parts[1], parts[2])
    }

    static func transaction(
        _ id: String, start: String, end: String, revoked: String? = nil, received: String? = nil
    ) -> String {
        let revocation = revoked.map { #","revocationDate":\#(ms($0)),"revocationReason":0"# } ?? ""
        return #"{"type":"transaction","receivedAt":\#(ms(received ?? start)),"payload":{"transactionId":"\#(id)","originalTransactionId":"1001","productId":"\#(product)","purchaseDate":\#(ms(start)),"originalPurchaseDate":\#(ms("2024-01-10T00:00:00Z")),"expiresDate":\#(ms(end)),"signedDate":\#(ms(received ?? start))\#(revocation),"price":9990,"currency":"USD","type":"Auto-Renewable Subscription","environment":"Production"}}"#
    }

    /// Bought 10 January, renewed 10 February and 10 March; February's period refunded on 20 February, told in April
    /// (the fourth input).
    static func ledger() async throws -> (TemporaryDirectory, String) {
        let scratch = try TemporaryDirectory(prefix: "metrics-cli")
        let data = scratch.file("data")
        let lines = [
            transaction("1001", start: "2024-01-10T00:00:00Z", end: "2024-02-10T00:00:00Z"),
            transaction("1002", start: "2024-02-10T00:00:00Z", end: "2024-03-10T00:00:00Z"),
            transaction("1003", start: "2024-03-10T00:00:00Z", end: "2024-04-10T00:00:00Z"),
            transaction(
                "1002", start: "2024-02-10T00:00:00Z", end: "2024-03-10T00:00:00Z", revoked: "2024-02-20T00:00:00Z",
                received: "2024-04-02T00:00:00Z"),
        ]
        let file = scratch.file("inputs.ndjson")
        try lines.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        _ = try await storeLedgerSucceeds(["ingest", "--data", data, file])
        return (scratch, data)
    }

    static func rows(_ json: String) throws -> [[String: Any]] {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        return try #require(document["rows"] as? [[String: Any]])
    }

    @Test func monthsAsKnownNowAndBeforeTheLateRefund() async throws {
        let (scratch, data) = try await Self.ledger()
        defer { scratch.remove() }
        let range = ["--from", "2024-01-01T00:00:00Z", "--to", "2024-05-01T00:00:00Z", "--interval", "month"]
        let now = try Self.rows(
            try await storeLedgerSucceeds(["metrics", "subscriptions", "--data", data, "--json"] + range))
        #expect(now.map { $0["active"] as? Int } == [1, 0, 1, 0])
        #expect(now.first?["start"] as? Int == Int(Self.ms("2024-01-01T00:00:00Z")))
        let before = try Self.rows(
            try await storeLedgerSucceeds(["metrics", "subscriptions", "--data", data, "--json", "--as-of", "3"] + range))
        #expect(before.map { $0["active"] as? Int } == [1, 1, 1, 0], "February before the refund was told")

        let movements = try Self.rows(try await storeLedgerSucceeds(["metrics", "movements", "--data", data, "--json"] + range))
        #expect(movements.map { $0["churned_refunded"] as? Int } == [0, 1, 0, 0])
        #expect(movements.map { $0["reactivations"] as? Int } == [0, 0, 1, 0])
        #expect(movements.map { $0["new"] as? Int } == [1, 0, 0, 0])

        let retention = try Self.rows(try await storeLedgerSucceeds(["metrics", "retention", "--data", data, "--json"] + range))
        #expect(
            retention.first.map { row in (1...4).map { row["period_\($0)"] as? Int } } == [1, 0, 1, 0],
            "January's cohort: its 2nd period refunded, its 3rd bought")

        let csv = try await storeLedgerSucceeds(["metrics", "refunds", "--data", data, "--csv"] + range)
        #expect(
            csv == "start,end,refunds,reversals,purchases,refund_permille,refunded_USD\r\n"
                + "2024-01-01T00:00:00Z,2024-02-01T00:00:00Z,0,0,1,0,0\r\n"
                + "2024-02-01T00:00:00Z,2024-03-01T00:00:00Z,1,0,1,1000,9990\r\n"
                + "2024-03-01T00:00:00Z,2024-04-01T00:00:00Z,0,0,1,0,0\r\n"
                + "2024-04-01T00:00:00Z,2024-05-01T00:00:00Z,0,0,0,0,0\r\n")
    }

    /// A date alone, as docs/metrics.md writes it: its midnight in --time-zone (UTC by default), the same buckets as
    /// the instants written whole.
    @Test func aDateAloneIsItsMidnightInTheBucketsTimeZone() async throws {
        let (scratch, data) = try await Self.ledger()
        defer { scratch.remove() }
        let whole = try await storeLedgerSucceeds(
            ["metrics", "subscriptions", "--data", data, "--json", "--interval", "month", "--from", "2024-01-01T00:00:00Z",
             "--to", "2024-05-01T00:00:00Z"])
        let dates = try await storeLedgerSucceeds(
            ["metrics", "subscriptions", "--data", data, "--json", "--interval", "month", "--from", "2024-01-01",
             "--to", "2024-05-01"])
        #expect(dates == whole)
        let paris = try Self.rows(
            try await storeLedgerSucceeds(
                ["metrics", "mrr", "--data", data, "--json", "--time-zone", "Europe/Paris", "--from", "2024-01-01",
                 "--to", "2024-02-01"]))
        #expect(paris.first?["start"] as? Int == 1_704_063_600_000, "midnight in Paris: 2023-12-31T23:00:00Z")
        let bad = try await runStoreLedger(["metrics", "mrr", "--data", data, "--from", "2024-02-30", "--to", "2024-05-01"])
        #expect(bad.status == 2 && bad.stderr.contains("nor a date YYYY-MM-DD"), "\(bad.stderr)")
    }

    @Test func badArgumentsAreRefusedWithTheirReason() async throws {
        let (scratch, data) = try await Self.ledger()
        defer { scratch.remove() }
        for (arguments, message) in [
            (["revenue-ish"], "NAME must be one of"),
            (["mrr", "--interval", "year"], "--interval must be day, week or month"),
            (["mrr", "--time-zone", "Mars/Olympus"], "is not a time zone"),
            (["mrr", "--to", "2023-01-01T00:00:00Z"], "--to must be after --from"),
        ] {
            var full = ["metrics"] + arguments + ["--data", data]
            if !arguments.contains("--to") { full += ["--to", "2024-05-01T00:00:00Z"] }
            full += ["--from", "2024-01-01T00:00:00Z"]
            let out = try await runStoreLedger(full)
            #expect(out.status != 0, "\(arguments)")
            #expect(out.stderr.contains(message), "\(arguments): \(out.stderr)")
        }
    }
}
