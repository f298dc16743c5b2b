import Foundation
import LedgerCore
@testable import LedgerServer
@testable import LedgerStore
import Testing

/// The hand-written customer answer says exactly what its `Codable` encoding says.
@Suite struct JSONWriterTests {
    static func sameDocument(_ value: some Encodable & DirectJSON) throws -> Bool {
        var json = JSONWriter()
        value.write(to: &json)
        let ours = try JSONSerialization.jsonObject(with: Data(json.bytes))
        let theirs = try JSONSerialization.jsonObject(with: JSONEncoder().encode(value))
        return NSDictionary(dictionary: ["v": ours]).isEqual(NSDictionary(dictionary: ["v": theirs]))
    }

    @Test func customersOfARealLedgerWriteAlike() async throws {
        let config = #"{"bindingPolicy":"keep","products":{"com.example.premium.monthly":{"type":"autoRenewable","entitlements":["premium","ads_free"]},"gems":{"type":"consumable","credits":{"gems":60}}}}"#
        try await withServer(configuration: config) { server in
            let client = try server.client()
            _ = try await client.post("/v1/events", Sample.transaction("1", user: "u1"))
            _ = try await client.post("/v1/events", Sample.transaction("2", otid: "1", month: 1))
            _ = try await client.post("/v1/apple/notifications", Sample.notificationV1("11", otid: "10", type: "REFUND"))
            _ = try await client.post("/v1/bindings", #"{"appUserId":"u1","originalTransactionId":"10"}"#)
            _ = try await client.post("/v1/bindings", #"{"appUserId":"u\"2\n","originalTransactionId":"1"}"#)  // refused under keep
            _ = try await client.post("/v1/events", #"{"type":"transaction","appUserId":"u1","payload":{"transactionId":"30","originalTransactionId":"30","productId":"gems","purchaseDate":1700000000000,"quantity":2,"type":"Consumable","environment":"Production"}}"#)
            for user in ["u1", "u\"2\n", "nobody"] {
                for at in [Sample.start - 1, Sample.start + Sample.day, Sample.start + 40 * Sample.day] {
                    let view = try server.ledger.customer(AppUserID(user), at: at)
                    #expect(try Self.sameDocument(view), "\(user) at \(at)")
                }
            }
            let u1 = try server.ledger.customer(AppUserID("u1"), at: Sample.start + Sample.day)
            #expect(!u1.entitlements.isEmpty, "the sample must exercise entitlements")
            #expect(!u1.bindings.isEmpty)
            let refused = try server.ledger.customer(AppUserID("u\"2\n"), at: Sample.start + Sample.day)
            #expect(!refused.refusedClaims.isEmpty, "the sample must exercise refused claims and escapes")
        }
    }

    @Test func nestingAndSeparators() throws {
        var json = JSONWriter()
        json.object { o in
            o.key("a"); o.array([1, 2] as [Int64]) { $0.number($1) }
            o.key("b"); o.object { _ in }
            o.key("c"); o.array([[Int64]]([[], [3]])) { j, inner in j.array(inner) { $0.number($1) } }
            o.key("d"); o.null()
            o.key("e\t"); o.bool(false)
        }
        #expect(String(decoding: json.bytes, as: UTF8.self) == #"{"a":[1,2],"b":{},"c":[[],[3]],"d":null,"e\t":false}"#)
    }
}

@Suite struct AppendResultJSONTests {
    @Test func resultsWriteAlike() throws {
        let results = [
            AppendResult(
                events: [
                    .init(seq: 6, kind: .transaction, transactionId: "1", originalTransactionId: "1"),
                    .init(seq: 7, kind: .notification, transactionId: nil, originalTransactionId: nil),
                ]),
            AppendResult.duplicate,
            AppendResult.rejected(code: "invalid_json", message: "unexpected \"end\"\n"),
        ]
        for r in results { #expect(try JSONWriterTests.sameDocument(r)) }
        #expect(try JSONWriterTests.sameDocument(LedgerAPI.ResultsDocument(results: results)))
    }
}
