import Foundation
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerCore
import LedgerServer
import LedgerStore
import Logging
import Testing

/// `GET /v1/revenue` and `GET /v1/customers/{id}/revenue` through the router: decoded Apple transactions with their
/// prices, a prorated refund, two currencies, a log position, the operator's rates, and refused queries.
@Suite("Revenue routes", .timeLimit(.minutes(3)))
struct RevenueRouteTests {
    static let day: Int64 = 86_400_000
    static let start: Int64 = 1_700_000_000_000

    /// A decoded V2 transaction bought by `user`, at `price` milliunits of `currency`; refunded when `refund` says so.
    static func transaction(
        _ tid: String, otid: String, user: String, product: String, price: Int64, currency: String, at: Int64,
        refund: (at: Int64, type: String, percentage: Int64?)? = nil
    ) -> String {
        var revocation = ""
        if let refund {
            revocation = #","revocationDate":\#(refund.at),"revocationReason":0,"revocationType":"\#(refund.type)""#
            if let p = refund.percentage { revocation += #","revocationPercentage":\#(p)"# }
        }
        return #"{"type":"transaction","appUserId":"\#(user)","receivedAt":\#(refund?.at ?? at),"payload":{"transactionId":"\#(tid)","originalTransactionId":"\#(otid)","productId":"\#(product)","purchaseDate":\#(at),"originalPurchaseDate":\#(at),"expiresDate":\#(at + 30 * day),"type":"Auto-Renewable Subscription","environment":"Production","price":\#(price),"currency":"\#(currency)","inAppOwnershipType":"PURCHASED","signedDate":\#(refund?.at ?? at)\#(revocation)}}"#
    }

    static func get(_ client: some TestClientProtocol, _ uri: String) async throws -> (HTTPResponse.Status, [String: Any]) {
        try await client.execute(uri: uri, method: .get) { response in
            let object = (try? JSONSerialization.jsonObject(with: Data(String(buffer: response.body).utf8)) as? [String: Any]) ?? [:]
            return (response.status, object)
        }
    }

    @Test func revenuePerCurrencyProductAndCustomerAsOfALogPosition() async throws {
        let (api, directory) = try RouterTests.makeAPI(#"{"revenue":{"currency":"EUR","rates":{"USD":0.92}}}"#)
        defer {
            api.ledger.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let monthly = "com.example.premium.monthly"
        let yearly = "com.example.premium.yearly"
        let app = Application(router: api.makeRouter())
        try await app.test(.router) { client in
            for body in [
                Self.transaction("11", otid: "10", user: "alice", product: monthly, price: 9990, currency: "USD", at: Self.start),
                Self.transaction(
                    "12", otid: "10", user: "alice", product: monthly, price: 9990, currency: "USD", at: Self.start + 30 * Self.day),
                Self.transaction("21", otid: "20", user: "bob", product: yearly, price: 89_990, currency: "JPY", at: Self.start),
            ] {
                try await client.execute(
                    uri: "/v1/events", method: .post, headers: [.contentType: "application/json"],
                    body: ByteBuffer(string: body)
                ) { #expect($0.status == .ok) }
            }
            let beforeRefund = try api.ledger.lastSeq()
            // A 50% refund of alice's second month, ten days in.
            try await client.execute(
                uri: "/v1/events", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(
                    string: Self.transaction(
                        "12", otid: "10", user: "alice", product: monthly, price: 9990, currency: "USD",
                        at: Self.start + 30 * Self.day, refund: (Self.start + 40 * Self.day, "REFUND_PRORATED", 50_000)))
            ) { #expect($0.status == .ok) }

            let (status, all) = try await Self.get(client, "/v1/revenue")
            #expect(status == .ok)
            let totals = all["totals"] as? [String: [String: Int]]
            #expect(totals?["USD"]?["gross"] == 19_980)
            #expect(totals?["USD"]?["refunded"] == 4995)
            #expect(totals?["USD"]?["net"] == 14_985)
            #expect(totals?["JPY"]?["gross"] == 89_990, "JPY stays JPY")
            #expect(all["entries"] == nil, "the whole ledger's summary lists no entries")
            let converted = all["converted"] as? [String: Any]
            #expect(converted?["currency"] as? String == "EUR")
            // Gross and refunded are each converted (19.980 × 0.92 = 18.3816 → 18.382; 4.995 × 0.92 = 4.5954 → 4.595).
            #expect(converted?["gross"] as? Int == 18_382)
            #expect(converted?["net"] as? Int == 13_787)
            #expect(converted?["unconverted"] as? [String] == ["JPY"])

            // The product and the interval narrow it; [from, to) with ISO-8601 ends.
            let (_, yearlyOnly) = try await Self.get(client, "/v1/revenue?product=\(yearly)")
            #expect((yearlyOnly["totals"] as? [String: Any])?.keys.sorted() == ["JPY"])
            let (_, firstMonth) = try await Self.get(client, "/v1/revenue?from=\(Self.start)&to=\(Self.start + 30 * Self.day)")
            #expect(((firstMonth["totals"] as? [String: [String: Int]])?["USD"])?["gross"] == 9990)

            // As known before the refund arrived.
            let (_, asOf) = try await Self.get(client, "/v1/customers/alice/revenue?asOf=\(beforeRefund)")
            #expect(asOf["asOf"] as? Int == Int(beforeRefund))
            #expect(((asOf["totals"] as? [String: [String: Int]])?["USD"])?["refunded"] == 0)

            let (_, alice) = try await Self.get(client, "/v1/customers/alice/revenue")
            #expect(alice["appUserId"] as? String == "alice")
            let entries = alice["entries"] as? [[String: Any]] ?? []
            #expect(entries.map { $0["kind"] as? String } == ["purchase", "purchase", "refund"])
            #expect(entries.last?["amount"] as? Int == -4995)
            #expect(entries.last?["percentage"] as? Int == 50_000)
            #expect((alice["totals"] as? [String: Any])?.keys.sorted() == ["USD"], "bob's purchase is not alice's")

            for (uri, code) in [
                ("/v1/revenue?from=yesterday", "invalid_query"), ("/v1/revenue?from=2000&to=1000", "invalid_query"),
                ("/v1/revenue?at=1000", "invalid_query"), ("/v1/customers/alice/revenue?asOf=-1", "invalid_query"),
                ("/v1/revenue?product=", "invalid_query"),
            ] {
                let (status, body) = try await Self.get(client, uri)
                #expect(status == .badRequest, "\(uri)")
                #expect((body["error"] as? [String: Any])?["code"] as? String == code, "\(uri)")
            }
        }
    }

    @Test func aRateTableIsCheckedWhenTheConfigurationIsRead() throws {
        for bad in [
            #"{"revenue":{"currency":"euro","rates":{}}}"#, #"{"revenue":{"currency":"EUR","rates":{"USD":-1}}}"#,
            #"{"revenue":{"currency":"EUR","rates":{"USD":0.1234567}}}"#, #"{"revenue":{"currency":"EUR"}}"#,
            #"{"revenue":{"currency":"EUR","rates":{"usd":1}}}"#, #"{"revenue":{"currency":"EUR","rates":{},"guess":true}}"#,
        ] {
            #expect(throws: LedgerConfiguration.Invalid.self, "\(bad)") {
                try LedgerConfiguration(json: Array(bad.utf8), baseDirectory: "/")
            }
        }
        let good = try LedgerConfiguration(
            json: Array(#"{"revenue":{"currency":"EUR","rates":{"USD":0.92,"GBP":1.171234,"JPY":0.006}}}"#.utf8),
            baseDirectory: "/")
        #expect(good.revenueRates?.currency == "EUR")
        #expect(good.revenueRates?.micros == ["USD": 920_000, "GBP": 1_171_234, "JPY": 6_000])
        #expect(try LedgerConfiguration(json: Array("{}".utf8), baseDirectory: "/").revenueRates == nil)
    }
}
