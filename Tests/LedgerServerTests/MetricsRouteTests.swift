import Foundation
import LedgerClient
import LedgerStore
import LedgerTestSupport
import Testing

@testable import LedgerServer

/// `GET /v1/metrics/{name}` over the socket: the same table as the command, JSON and CSV, as known at `asOf`, and its
/// refusals.
@Suite("Metrics route", .serialized, .timeLimit(.minutes(2)))
struct MetricsRouteTests {
    @Test func subscriptionsByDayInJSONAndCSVAndItsRefusals() async throws {
        try await withServer { server in
            let client = try server.client()
            // Sample.transaction: a month from Sample.start; a second subscription a day later.
            #expect(try await client.post("/v1/events", Sample.transaction("3001", user: "m1")).status == 200)
            let asOfOne = try server.ledger.lastSeq()
            var later = Sample.transaction("4001", user: "m2")
            later = later.replacingOccurrences(of: "\(Sample.start)", with: "\(Sample.start + Sample.day)")
            #expect(try await client.post("/v1/events", later).status == 200)
            let from = Sample.start - Sample.start % Sample.day
            let range = "from=\(from)&to=\(from + 3 * Sample.day)"

            let json = try await client.get("/v1/metrics/subscriptions?\(range)")
            #expect(json.status == 200, "\(json.text)")
            let document = try #require(try JSONSerialization.jsonObject(with: Data(json.body)) as? [String: Any])
            let rows = try #require(document["rows"] as? [[String: Any]])
            #expect(rows.map { $0["active"] as? Int } == [1, 2, 2])
            #expect(rows.map { $0["start"] as? Int } == (0..<3).map { Int(from + $0 * Sample.day) })
            #expect(document["timeZone"] as? String == "UTC" && document["interval"] as? String == "day")

            let before = try await client.get("/v1/metrics/movements?\(range)&asOf=\(asOfOne)")
            let beforeRows = try #require(
                (try JSONSerialization.jsonObject(with: Data(before.body)) as? [String: Any])?["rows"] as? [[String: Any]])
            #expect(beforeRows.map { $0["new"] as? Int } == [1, 0, 0], "the second subscription was not known yet")

            let csv = try await client.get("/v1/metrics/subscriptions?\(range)&format=csv")
            #expect(csv.status == 200 && csv.headers["content-type"] == "text/csv; charset=utf-8")
            #expect(csv.text.hasPrefix("start,end,live,active,trials,offers,in_grace_period,in_billing_retry\r\n"))
            #expect(csv.text.split(separator: "\r\n").count == 4)

            // A date alone is its midnight in `timeZone`, UTC by default: the same rows as the instants written whole.
            let day = { (ms: Int64) in
                let d = Date(timeIntervalSince1970: Double(ms) / 1000)
                let f = DateFormatter()
                f.dateFormat = "yyyy-MM-dd"
                f.timeZone = TimeZone(secondsFromGMT: 0)
                return f.string(from: d)
            }
            let byDate = try await client.get("/v1/metrics/subscriptions?from=\(day(from))&to=\(day(from + 3 * Sample.day))")
            #expect(byDate.status == 200 && byDate.body == json.body, "\(byDate.text)")
            let paris = try await client.get(
                "/v1/metrics/subscriptions?from=\(day(from))&to=\(day(from + 3 * Sample.day))&timeZone=Europe/Paris")
            let parisRows = try #require(
                (try JSONSerialization.jsonObject(with: Data(paris.body)) as? [String: Any])?["rows"] as? [[String: Any]])
            #expect(parisRows.first?["start"] as? Int == Int(from - 3_600_000) || parisRows.first?["start"] as? Int == Int(from - 7_200_000),
                "midnight in Paris, an hour or two before UTC's: \(parisRows.first ?? [:])")

            for (target, status, code) in [
                ("/v1/metrics/subscriptions?from=2024-02-30&to=2024-03-05", 400, "invalid_query"),
                ("/v1/metrics/ltv?\(range)", 404, "not_found"),
                ("/v1/metrics/mrr?from=\(from)", 400, "invalid_query"),
                ("/v1/metrics/mrr?\(range)&interval=year", 400, "invalid_query"),
                ("/v1/metrics/mrr?\(range)&timeZone=Mars/Olympus", 400, "invalid_query"),
                ("/v1/metrics/mrr?\(range)&format=xml", 400, "invalid_query"),
                ("/v1/metrics/mrr?\(range)&product=x", 400, "invalid_query"),
            ] {
                let answer = try await client.get(target)
                #expect(answer.status == status && answer.text.contains(#""code":"\#(code)""#), "\(target): \(answer.text)")
            }
        }
    }
}
