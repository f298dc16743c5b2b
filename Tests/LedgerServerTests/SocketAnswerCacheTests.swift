import Foundation
import LedgerTestSupport
import Hummingbird
import LedgerAPI
import LedgerClient
import LedgerStore
import Logging
import NIOCore
import Testing

@testable import LedgerServer

/// The answer cache over the socket against the uncached routes, byte for byte (the date aside): each read is sent
/// twice (made, then kept), at instants on both sides of the periods' ends, with and without `asOf`, before and
/// after commits that renew and refund a subscription and claim one for another user.
@Suite("Answer cache over the socket", .serialized, .timeLimit(.minutes(2)), .blocking)
struct SocketAnswerCacheTests {
    static let at = Sample.start + Sample.day
    static let end = Sample.start + 30 * Sample.day

    static func targets(lastSeq: Int) -> [String] {
        var targets: [String] = []
        for instant in [at, end - 1, end, end + 1, end + 30 * Sample.day, Sample.start + 2 * Sample.day + 1] {
            targets += [
                "/v1/customers/u1?at=\(instant)", "/v1/customers/u2?at=\(instant)",
                "/v1/customers/nobody?at=\(instant)", "/v1/subscriptions/1001?at=\(instant)",
                "/v1/subscriptions/2001?at=\(instant)", "/v1/customers/u1?at=\(instant)&asOf=\(lastSeq)",
                "/v1/customers/u1?at=\(instant)&asOf=\(max(1, lastSeq - 1))",
                "/v1/subscriptions/1001?at=\(instant)&asOf=2", "/v1/customers/u1?at=\(instant)&environment=Sandbox",
            ]
        }
        return targets + ["/v1/subscriptions/nope?at=\(at)"]
    }

    /// What the uncached routes answer to `target`, written as the fast read path writes it.
    static func uncached(_ target: String, _ routes: LedgerRoutes) throws -> String {
        let request = try #require(Array(target.utf8).withUnsafeBytes { FastRequest($0[...]) })
        let response: BufferedResponse
        do {
            response = try request.answer(routes)
        } catch {
            response = ErrorMiddleware.answer(error, method: .get, path: request.path, logger: routes.logger)
        }
        // As NIO's response encoder writes it, with the `Date` field last.
        var head = "HTTP/1.1 \(response.status.code) \(response.status.reasonPhrase)\r\n"
        for (field, value) in response.fields { head += "\(field.name): \(value)\r\n" }
        return head + "Date: -\r\n\r\n" + String(buffer: response.body)
    }

    @Test func keptAnswersAreTheUncachedAnswers() async throws {
        try await withServer { server in
            try await FastReadTests.fill(server)
            #expect(server.service.api.answers != nil, "the server keeps answers by default")
            let routes = LedgerRoutes(
                ledger: server.ledger, configuration: LedgerConfiguration(), logger: Logger(label: "test.uncached"),
                keepAnswers: false)
            let connection = try RawConnection(server.socketPath)
            let client = try server.client()
            func compareAll() async throws {
                let lastSeq = Int(try server.ledger.lastSeq())
                for target in Self.targets(lastSeq: lastSeq) {
                    let expected = try Self.uncached(target, routes)
                    connection.send(FastReadTests.get(target) + FastReadTests.get(target))
                    let answers = await offThePool { connection.readAnswers(2) }
                    #expect(answers.count == 2)
                    for answer in answers {
                        #expect(withoutDate(answer) == withoutDate(expected), "\(target) after seq \(lastSeq)")
                    }
                }
            }
            try await compareAll()
            #expect(server.service.api.answers!.count > 0, "answers were kept")
            // A renewal of 2001, a refund of 1001's first period, then u2 claims 1001: each commit changes answers
            // that were kept.
            #expect(try await client.post("/v1/events", Sample.transaction("2002", otid: "2001", month: 1)).status == 200)
            try await compareAll()
            let refund = #"{"type":"transaction","receivedAt":\#(Sample.start + 2 * Sample.day),"payload":{"transactionId":"1001","originalTransactionId":"1001","productId":"\#(Sample.product)","purchaseDate":\#(Sample.start),"expiresDate":\#(Self.end),"revocationDate":\#(Sample.start + 2 * Sample.day),"revocationReason":0,"signedDate":\#(Sample.start + 2 * Sample.day),"type":"Auto-Renewable Subscription","environment":"Production"}}"#
            #expect(try await client.post("/v1/events", refund).status == 200)
            try await compareAll()
            #expect(
                try await client.post(
                    "/v1/bindings", #"{"appUserId":"u2","originalTransactionId":"1001","claimedAt":\#(Sample.start + 3 * Sample.day)}"#
                ).status == 200)
            try await compareAll()
        }
    }
}
