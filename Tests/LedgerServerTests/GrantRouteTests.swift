import Foundation
import Hummingbird
import HummingbirdTesting
import LedgerAPI
import LedgerCore
import LedgerServer
import LedgerStore
import Logging
import Testing

/// `POST` and `GET /v1/customers/{id}/grants` through the router, with the answer cache on: a grant shows in the
/// customer's answer the moment it is acknowledged (a kept answer is dropped), the kept answer stops at the grant's
/// end, an earlier log position does not see it, a revoke ends it, and refusals keep their bytes for the auditor.
@Suite("Grant routes", .timeLimit(.minutes(3)))
struct GrantRouteTests {
    static let day: Int64 = 86_400_000
    static let t0: Int64 = 1_709_283_600_000  // 2024-03-01T09:00:00Z

    static func call(
        _ client: some TestClientProtocol, _ method: HTTPRequest.Method, _ uri: String, _ body: String? = nil
    ) async throws -> (HTTPResponse.Status, [String: Any]) {
        try await client.execute(
            uri: uri, method: method, headers: body == nil ? [:] : [.contentType: "application/json"],
            body: body.map { ByteBuffer(string: $0) }
        ) { response in
            let object = (try? JSONSerialization.jsonObject(with: Data(String(buffer: response.body).utf8)) as? [String: Any]) ?? [:]
            return (response.status, object)
        }
    }

    static func premium(_ customer: [String: Any]) -> [String: Any]? {
        (customer["entitlements"] as? [String: Any])?["premium"] as? [String: Any]
    }

    @Test func grantShowsAtOnceEndsAtItsEndAndARevokeEndsItEarly() async throws {
        let (api, directory) = try RouterTests.makeAPI()
        defer {
            api.ledger.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let app = Application(router: api.makeRouter())
        try await app.test(.router) { client in
            let during = Self.t0 + 3 * Self.day
            // A write first, so that the answer cache follows the writer's commits from here on.
            let (sb, _) = try await Self.call(
                client, .post, "/v1/bindings", #"{"appUserId":"bob","originalTransactionId":"900","environment":"Production"}"#)
            #expect(sb == .ok)
            // Kept before the grant: an answer with no entitlement (read twice: the second comes from the cache).
            _ = try await Self.call(client, .get, "/v1/customers/alice?at=\(during)")
            let (s0, before) = try await Self.call(client, .get, "/v1/customers/alice?at=\(during)")
            #expect(s0 == .ok)
            #expect(Self.premium(before) == nil)
            let beforeGrant = try api.ledger.lastSeq()

            let (s1, granted) = try await Self.call(
                client, .post, "/v1/customers/alice/grants?receivedAt=\(Self.t0)",
                #"{"entitlement":"premium","duration":"P7D","reason":"support ticket 4411"}"#)
            #expect(s1 == .ok)
            #expect(granted["status"] as? String == "appended")
            let events = granted["events"] as? [[String: Any]]
            #expect(events?.first?["kind"] as? String == "grant")
            let grantId = try #require(events?.first?["grantId"] as? String)
            #expect(grantId.hasPrefix("g_"))

            // The same grant again is a duplicate: its id is derived from its fields.
            let (s2, again) = try await Self.call(
                client, .post, "/v1/customers/alice/grants?receivedAt=\(Self.t0)",
                #"{"entitlement":"premium","duration":"P7D","reason":"support ticket 4411"}"#)
            #expect(s2 == .ok)
            #expect(again["status"] as? String == "duplicate")

            let (_, now) = try await Self.call(client, .get, "/v1/customers/alice?at=\(during)")
            let premium = try #require(Self.premium(now), "the grant shows as soon as it is acknowledged")
            #expect(premium["active"] as? Bool == true)
            #expect(premium["grantId"] as? String == grantId)
            #expect(premium["expiresAt"] as? Int64 == Self.t0 + 7 * Self.day)
            #expect(premium["productId"] is NSNull, "a grant names no product")
            let grantedBy = premium["grantedBy"] as? [[String: Any]]
            #expect(grantedBy?.first?["grantId"] as? String == grantId)
            #expect(grantedBy?.first?["reason"] as? String == "support ticket 4411")
            let listed = now["grants"] as? [[String: Any]]
            #expect(listed?.map { $0["grantId"] as? String } == [grantId])

            // Past its end, from the kept answer's span: not active.
            let (_, after) = try await Self.call(client, .get, "/v1/customers/alice?at=\(Self.t0 + 8 * Self.day)")
            #expect(Self.premium(after)?["active"] as? Bool == false)
            // As known before the grant: nothing.
            let (_, earlier) = try await Self.call(client, .get, "/v1/customers/alice?at=\(during)&asOf=\(beforeGrant)")
            #expect(Self.premium(earlier) == nil)

            // Why: the grant and its reason.
            let (_, why) = try await Self.call(client, .get, "/v1/customers/alice/entitlements/premium/why?at=\(during)")
            #expect(why["reason"] as? String == "operator_grant")
            #expect(why["grantId"] as? String == grantId)

            // A revoke two days in.
            let (s3, revoked) = try await Self.call(
                client, .post, "/v1/customers/alice/grants",
                #"{"revoke":true,"grantId":"\#(grantId)","at":\#(Self.t0 + 2 * Self.day),"reason":"refund instead"}"#)
            #expect(s3 == .ok)
            #expect(revoked["status"] as? String == "appended")
            let (_, afterRevoke) = try await Self.call(client, .get, "/v1/customers/alice?at=\(during)")
            #expect(Self.premium(afterRevoke)?["active"] as? Bool == false)
            #expect(Self.premium(afterRevoke)?["expiresAt"] as? Int64 == Self.t0 + 2 * Self.day)

            let (s4, list) = try await Self.call(client, .get, "/v1/customers/alice/grants?at=\(during)")
            #expect(s4 == .ok)
            let grants = try #require(list["grants"] as? [[String: Any]])
            #expect(grants.count == 1)
            #expect(grants.first?["active"] as? Bool == false)
            #expect(grants.first?["until"] as? Int64 == Self.t0 + 7 * Self.day)
            #expect(grants.first?["revokedAt"] as? Int64 == Self.t0 + 2 * Self.day)
            #expect(grants.first?["revokeReason"] as? String == "refund instead")
            let (_, listEarlier) = try await Self.call(client, .get, "/v1/customers/alice/grants?at=\(during)&asOf=\(beforeGrant)")
            #expect((listEarlier["grants"] as? [Any])?.isEmpty == true)
            #expect((try api.ledger.customer("bob", at: during)).entitlements.isEmpty, "another user is untouched")
        }
    }

    @Test func refusedGrantsAreAnsweredWithTheirCodeAndKept() async throws {
        let (api, directory) = try RouterTests.makeAPI()
        defer {
            api.ledger.close()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let app = Application(router: api.makeRouter())
        try await app.test(.router) { client in
            let (s1, bad) = try await Self.call(client, .post, "/v1/customers/alice/grants", #"{"entitlement":"premium","duration":"a month"}"#)
            #expect(s1 == .unprocessableContent)
            #expect(bad["status"] as? String == "rejected")
            #expect((bad["error"] as? [String: Any])?["code"] as? String == "invalid_grant")
            let (s2, missing) = try await Self.call(client, .post, "/v1/customers/alice/grants", #"{"duration":"P1M"}"#)
            #expect(s2 == .unprocessableContent)
            #expect((missing["error"] as? [String: Any])?["code"] as? String == "missing_field")
            let (s3, query) = try await Self.call(
                client, .post, "/v1/customers/alice/grants?appUserId=bob", #"{"entitlement":"premium","lifetime":true}"#)
            #expect(s3 == .badRequest)
            #expect((query["error"] as? [String: Any])?["code"] as? String == "invalid_query")
            #expect(try api.ledger.lastSeq() == 0, "nothing appended")
            let kept = try api.ledger.log.rejectedInputs()
            #expect(kept.count >= 2)
            #expect(kept.prefix(2).map { String(decoding: $0.raw, as: UTF8.self) } == [
                #"{"entitlement":"premium","duration":"a month"}"#, #"{"duration":"P1M"}"#,
            ])
        }
    }
}
