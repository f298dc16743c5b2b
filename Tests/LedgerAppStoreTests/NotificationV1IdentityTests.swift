import Foundation
import LedgerAppStore
import LedgerCore
import LedgerTestSupport
import Testing

// MARK: - One V1 notification, one id, whatever its whitespace

/// A V1 notification has no id of its own: its `notificationUUID` is the SHA-256 of its canonical JSON, so the same
/// body sent as `curl --data @file` (newlines stripped) or `--data-binary @file` (kept) is one event.
@Suite("V1 notification identity")
struct NotificationV1IdentityTests {
    typealias F = AppleFixtures

    /// A V1 body as Apple writes it: pretty-printed (newlines, indentation), keys in no particular order.
    static let pretty: [UInt8] = {
        let object = try! JSONSerialization.jsonObject(
            with: Data(F.v1Notification(type: "DID_RENEW", latest: [F.v1Transaction()]))
        )
        return [UInt8](try! JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted]))
    }()

    /// What `curl --data @file` sends: the file without its carriage returns and newlines.
    static func curlData(_ bytes: [UInt8]) -> [UInt8] { bytes.filter { $0 != 0x0A && $0 != 0x0D } }

    static func id(_ raw: [UInt8]) throws -> String {
        try #require(try decode(raw).notifications.first).notificationUUID
    }

    @Test func prettyStrippedCompactAndEnvelopedBodiesShareOneID() throws {
        #expect(Self.pretty.contains(0x0A), "the sample must span lines for this test to mean anything")
        let stripped = Self.curlData(Self.pretty)
        #expect(stripped != Self.pretty)
        let compact = F.v1Notification(type: "DID_RENEW", latest: [F.v1Transaction()])
        let crlf = Array(String(decoding: Self.pretty, as: UTF8.self).replacingOccurrences(of: "\n", with: "\r\n").utf8)
        let enveloped = F.envelope(type: "notification", appUserId: "u1", receivedAt: F.epoch, payload: Self.pretty)

        let expected = try Self.id(Self.pretty)
        for (name, body) in [("--data", stripped), ("compact", compact), ("CRLF", crlf), ("envelope", enveloped)] {
            #expect(try Self.id(body) == expected, "\(name) gives another id")
        }
        // The raw bytes still differ, and are kept as received.
        #expect(try decode(stripped).raw != decode(Self.pretty).raw)
    }

    @Test func theIDIsTheDigestOfTheCanonicalText() throws {
        // Members out of order, whitespace everywhere, an integral number written as 0.0, escapes that need none.
        let body = """
            { "unified_receipt" : { "status" : 0.0, "latest_receipt_info" : [ ] },
              "notification_type" : "TEST\\u0021", "bid" : "com.example.app", "environment": "PROD" }
            """
        let canonical =
            #"{"bid":"com.example.app","environment":"PROD","notification_type":"TEST!","unified_receipt":{"latest_receipt_info":[],"status":0}}"#
        #expect(try Self.id(Array(body.utf8)) == sha256Hex(Array(canonical.utf8)))
        #expect(try Self.id(Array(canonical.utf8)) == sha256Hex(Array(canonical.utf8)))
    }

    @Test func anyChangedValueIsAnotherNotification() throws {
        let base = try Self.id(Self.pretty)
        let text = String(decoding: Self.pretty, as: UTF8.self)
        let renamed = Array(text.replacingOccurrences(of: "DID_RENEW", with: "INTERACTIVE_RENEWAL").utf8)
        // A space inside a string value is content, not layout (and fields the facts leave out count too).
        let spaced = Array(
            text.replacingOccurrences(of: "0123456789abcdef0123456789abcdef", with: "0123456789abcdef 0123456789abcdef")
                .utf8
        )
        #expect(try Self.id(renamed) != base)
        #expect(try Self.id(spaced) != base)
    }
}
