import Foundation
import LedgerClient
import LedgerStore
import LedgerTestSupport
import Testing

/// Ids as clients send them: every HTTP library percent-encodes a path segment (`encodeURIComponent`,
/// `urllib.parse.quote`), so `user%2B1%40example.org` must be the app user `user+1@example.org` on every route
/// family, and a target that does not decode is refused, never taken as an id. Through the real socket.
@Suite(.serialized, .blocking) struct EncodedIdTests {
    /// Ids with what clients encode: `+`, `@`, `/`, a space, `%`, non-ASCII letters, an emoji.
    static let ids = ["user+1@example.org", "o/x 1", "100%", "Zoë Ångström", "🦊 fox", "a:b;c=d,e!$&'()*"]

    /// `s` with every byte but RFC 3986's unreserved characters percent-encoded, as `encodeURIComponent` does.
    static func encoded(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn:
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"))!
    }

    /// Whether `s` may stand in a path segment as it is (RFC 3986 pchar: unreserved, sub-delims, `:` and `@`).
    static func isPathSafe(_ s: String) -> Bool {
        s.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-._~!$&'()*+,;=:@".unicodeScalars.contains($0)) }
    }

    static func json(_ object: [String: Any]) -> [UInt8] {
        Array(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    static func transaction(tid: String, otid: String) -> [UInt8] {
        json([
            "type": "transaction", "receivedAt": Sample.start,
            "payload": [
                "transactionId": tid, "originalTransactionId": otid, "productId": Sample.product,
                "purchaseDate": Sample.start, "expiresDate": Sample.start + 30 * Sample.day,
                "type": "Auto-Renewable Subscription", "environment": "Production",
            ] as [String: Any],
        ])
    }

    @Test(arguments: ids)
    func anEncodedIdIsTheDecodedId(_ id: String) async throws {
        let server = try await TestServer()
        let client = try server.client()
        let user = Self.encoded(id)
        let otid = "sub " + id
        let tid = "tx/" + id
        let at = Sample.start + Sample.day

        // Writes: the claim's user in the query, the grant's in the path, both encoded.
        let appended = try await client.post(
            "/v1/events?appUserId=\(user)", body: Self.transaction(tid: tid, otid: otid))
        #expect(appended.status == 200, "\(appended.text)")
        let grant = try await client.post(
            "/v1/customers/\(user)/grants",
            body: Self.json(["entitlement": "beta", "duration": "P1M", "reason": "support", "from": Sample.start]))
        #expect(grant.status == 200, "\(grant.text)")

        // Reads of the customer: the answer names the decoded id, with its subscription and its grant.
        let customer = try await client.get("/v1/customers/\(user)?at=\(at)")
        #expect(customer.status == 200)
        #expect(customer.object["appUserId"] as? String == id, "\(customer.text)")
        #expect(customer.object["subscriptions"] as? [String] == [otid], "\(customer.text)")
        let entitlements = customer.object["entitlements"] as? [String: Any] ?? [:]
        #expect(Set(entitlements.keys) == ["beta", Sample.product], "\(customer.text)")
        if Self.isPathSafe(id) {
            let asIs = try Self.raw(server, "GET", "/v1/customers/\(id)?at=\(at)")
            #expect(asIs.body == customer.text, "the id as-is and encoded are one customer")
        }
        // The query's `at` encoded is the same instant.
        let encodedQuery = try await client.get("/v1/customers/\(user)?%61t=\(Self.encoded(String(at)))")
        #expect(encodedQuery.text == customer.text)

        let grants = try await client.get("/v1/customers/\(user)/grants?at=\(at)")
        #expect(grants.object["appUserId"] as? String == id)
        #expect((grants.object["grants"] as? [Any])?.count == 1, "\(grants.text)")
        let why = try await client.get("/v1/customers/\(user)/entitlements/\(Self.encoded("beta"))/why?at=\(at)")
        #expect(why.status == 200, "\(why.text)")
        #expect(why.text.contains(#""active":true"#), "\(why.text)")
        let revenue = try await client.get("/v1/customers/\(user)/revenue")
        #expect(revenue.status == 200)
        #expect(revenue.object["appUserId"] as? String == id, "\(revenue.text)")

        // Reads of the subscription and the transaction, their ids encoded (`/` as %2F).
        let subscription = try await client.get("/v1/subscriptions/\(Self.encoded(otid))?at=\(at)")
        #expect(subscription.status == 200, "\(subscription.text)")
        #expect(subscription.object["originalTransactionId"] as? String == otid)
        #expect(subscription.text.contains(Self.jsonString(id)), "the owner is the decoded user: \(subscription.text)")
        let transaction = try await client.get("/v1/transactions/\(Self.encoded(tid))")
        #expect(transaction.status == 200, "\(transaction.text)")
        #expect(transaction.object["transactionId"] as? String == tid)
        for picture in ["timeline.svg", "timeline.html"] {
            let answer = try await client.get("/v1/subscriptions/\(Self.encoded(otid))/\(picture)?at=\(at)")
            #expect(answer.status == 200, "\(picture): \(answer.text)")
            #expect(answer.headers["x-content-type-options"] == "nosniff", "\(picture): \(answer.headers)")
            #expect(answer.headers["content-security-policy"]?.hasPrefix("default-src 'none'") == true)
        }

        // The console: its subscription page by path, its customer page by the form's query (`+` a space there).
        let page = try await client.get("/console/subscriptions/\(Self.encoded(otid))")
        #expect(page.status == 200, "\(page.text)")
        #expect(page.text.contains(Self.html(otid)))
        let lookup = try await client.get("/console/customers?appUserId=\(Self.encoded(id))&at=\(at)")
        #expect(lookup.status == 200)
        #expect(lookup.text.contains(Self.html(otid)), "the console finds the customer's subscription")
        if id.contains(" ") {
            let form = try await client.get(
                "/console/customers?appUserId=\(Self.encoded(id).replacingOccurrences(of: "%20", with: "+"))&at=\(at)")
            #expect(form.text == lookup.text, "a form's + is a space")
        }

        // The stream's query decodes the same way.
        let events = try await client.get("/v1/events?after=%30&limit=%31%30")
        #expect(events.status == 200)
        #expect(events.text == (try await client.get("/v1/events?after=0&limit=10")).text)
        #expect(events.lines.first.map { $0.contains(Self.jsonString(tid)) } == true, "\(events.text)")
        try await server.stop()
    }

    /// One request written byte for byte on a connection of its own (no client library re-encodes its target); the
    /// answer's status and body.
    static func raw(_ server: TestServer, _ method: String, _ target: String, body: String = "") throws
        -> (status: Int, body: String)
    {
        let connection = try RawConnection(server.socketPath)
        var head = "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\n"
        if method == "POST" { head += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
        #expect(connection.send(head + "\r\n" + body))
        let answer = try #require(connection.readAnswer(seconds: 30), "\(method) \(target): no answer")
        let status = Int(answer.split(separator: " ", maxSplits: 2).dropFirst().first ?? "") ?? 0
        let text = answer.range(of: "\r\n\r\n").map { String(answer[$0.upperBound...]) } ?? ""
        return (status, text)
    }

    /// The JSON text of `s` (how an answer spells it).
    static func jsonString(_ s: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: [s], options: [.withoutEscapingSlashes]), as: UTF8.self)
            .dropFirst().dropLast().description
    }

    /// `s` as the console's HTML writes it.
    static func html(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "'", with: "&#39;")
    }

    /// A target that does not decode is refused with `invalid_query` naming it, on reads and writes; a write
    /// appends nothing.
    @Test func aTargetThatDoesNotDecodeIsRefused() async throws {
        let server = try await TestServer()
        let cases: [(method: String, target: String, named: String)] = [
            ("GET", "/v1/customers/a%zz", "a%zz"),
            ("GET", "/v1/customers/a%2", "a%2"),
            ("GET", "/v1/customers/a%", "a%"),
            ("GET", "/v1/customers/a%00b", "a%00b"),
            ("GET", "/v1/customers/%C3%28", "%C3%28"),
            ("GET", "/v1/subscriptions/%FF%FE", "%FF%FE"),
            ("GET", "/v1/subscriptions/1%2/timeline.svg", "1%2"),
            ("GET", "/v1/customers/u%zz/entitlements/premium/why", "u%zz"),
            ("GET", "/v1/transactions/%E2%82", "%E2%82"),
            ("GET", "/console/subscriptions/%zz", "%zz"),
            ("GET", "/v1/customers/u1?at=%zz", "%zz"),
            ("GET", "/v1/customers/u1?a%zzt=1", "a%zzt"),
            ("GET", "/v1/events?after=1%00", "1%00"),
            ("GET", "/console/customers?appUserId=%C0%80", "%C0%80"),
            ("POST", "/v1/customers/a%zz/grants", "a%zz"),
            ("POST", "/v1/customers/a%00/forget", "a%00"),
            ("POST", "/v1/events?appUserId=%FF", "%FF"),
        ]
        for c in cases {
            let answer = try Self.raw(server, c.method, c.target, body: c.method == "POST" ? Sample.transaction("9001") : "")
            #expect(answer.status == 400, "\(c.target): \(answer.status) \(answer.body)")
            if c.target.hasPrefix("/console") {
                #expect(answer.body.contains("invalid_query"), "\(c.target): \(answer.body)")
            } else {
                let object = (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [String: Any]
                let error = object?["error"] as? [String: Any]
                #expect(error?["code"] as? String == "invalid_query", "\(c.target): \(answer.body)")
                #expect((error?["message"] as? String)?.contains("'\(c.named)'") == true, "\(c.target): \(answer.body)")
            }
        }
        #expect(try server.ledger.lastSeq() == 0, "nothing refused was appended")
        try await server.stop()
    }

    /// The story of a deletion request for an email: the grant and the erasure reach the real person through the
    /// encoded path, and the person is forgotten, not a look-alike named by the encoding.
    @Test func theForgetOfAnEncodedEmailForgetsThePerson() async throws {
        let server = try await TestServer(pseudonyms: true)
        let client = try server.client()
        let alice = "alice+work@example.com"
        let path = Self.encoded(alice)
        #expect(path == "alice%2Bwork%40example.com")
        var claim = try JSONSerialization.jsonObject(with: Data(Self.transaction(tid: "5001", otid: "500"))) as! [String: Any]
        claim["appUserId"] = alice
        #expect(try await client.post("/v1/events", body: Self.json(claim)).status == 200)
        let grant = try await client.post(
            "/v1/customers/\(path)/grants",
            body: Self.json(["entitlement": "beta", "duration": "P1M", "reason": "support", "from": Sample.start]))
        #expect(grant.status == 200)
        let before = try await client.get("/v1/customers/\(path)?at=\(Sample.start + Sample.day)")
        #expect(before.object["subscriptions"] as? [String] == ["500"], "\(before.text)")
        #expect((before.object["grants"] as? [Any])?.count == 1, "the grant went to her: \(before.text)")

        let forgot = try await client.post(
            "/v1/customers/\(path)/forget", body: Self.json(["requestedBy": "ticket 12", "reason": "GDPR Art. 17"]))
        #expect(forgot.status == 200, "\(forgot.text)")
        #expect(!forgot.text.contains(alice))
        let after = try await client.get("/v1/customers/\(alice)?at=\(Sample.start + Sample.day)")
        #expect(after.object["subscriptions"] as? [String] == [], "\(after.text)")
        #expect((after.object["grants"] as? [Any])?.isEmpty == true, "\(after.text)")
        let again = try await client.post("/v1/customers/\(path)/forget", body: Self.json(["requestedBy": "ticket 12"]))
        #expect(again.status == 404, "she is nobody now: \(again.text)")
        try await server.stop()
    }
}
