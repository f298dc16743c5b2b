import Foundation
import LedgerCore
import LedgerStore
import Testing

@testable import LedgerServer

/// The server's streaming encoder must say exactly what Foundation's `JSONEncoder` says, as JSON values.
@Suite("Streaming JSON encoder")
struct StreamingJSONEncoderTests {
    struct Inner: Codable, Equatable {
        var name: String
        var values: [Int64]
        var nested: [String: [Double]]
        var flag: Bool?
    }

    struct Outer: Codable, Equatable {
        var text: String
        var optional: String?
        var inners: [Inner]
        var empty: [Inner]
        var emptyObject: [String: Int]
        var big: UInt64
        var negative: Int
        var fraction: Double
    }

    static func sameJSON(_ value: some Encodable) throws -> Bool {
        let ours = try JSONSerialization.jsonObject(with: Data(StreamingJSONEncoder.encode(value)), options: [.fragmentsAllowed])
        let theirs = try JSONSerialization.jsonObject(with: JSONEncoder().encode(value), options: [.fragmentsAllowed])
        return NSDictionary(dictionary: ["v": ours]).isEqual(NSDictionary(dictionary: ["v": theirs]))
    }

    @Test func nestedContainersEscapesAndNumbers() throws {
        let value = Outer(
            text: "quote \" backslash \\ newline \n tab \t bell \u{07} é 🍎", optional: nil,
            inners: [
                Inner(name: "a", values: [1, -2, Int64.max], nested: ["x": [0.5, 2, -1e-7]], flag: true),
                Inner(name: "b", values: [], nested: [:], flag: nil),
            ],
            empty: [], emptyObject: [:], big: UInt64.max, negative: Int.min, fraction: 1234.5678)
        #expect(try Self.sameJSON(value))
        let decoded = try JSONDecoder().decode(Outer.self, from: Data(StreamingJSONEncoder.encode(value)))
        #expect(decoded == value)
        #expect(try Self.sameJSON(["a", "b"]))
        #expect(try Self.sameJSON(42))
        #expect(throws: (any Error).self) { try StreamingJSONEncoder.encode(Double.nan) }
    }

    @Test func everyAnswerOfARealLedgerEncodesAlike() async throws {
        try await withServer { server in
            let client = try server.client()
            _ = try await client.post("/v1/events", Sample.transaction("1", user: "u1"))
            _ = try await client.post("/v1/events", Sample.transaction("2", otid: "1", month: 1))
            _ = try await client.post("/v1/apple/notifications", Sample.notificationV1("11", otid: "10", type: "REFUND"))
            _ = try await client.post("/v1/bindings", #"{"appUserId":"u1","originalTransactionId":"10"}"#)
            let ledger = server.ledger
            let at = Sample.start + Sample.day
            let timeline = try #require(try ledger.timeline(OriginalTransactionID("1"), at: at))
            #expect(try Self.sameJSON(timeline))
            #expect(try Self.sameJSON(try ledger.customer(AppUserID("u1"), at: at)))
            for stored in try ledger.events(after: 0, limit: 100) {
                #expect(try Self.sameJSON(EventDocument(stored)))
            }
        }
    }
}
