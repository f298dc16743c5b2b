#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LedgerAPI
import LedgerClient
import LedgerServer
import LedgerStore
import LedgerTestSupport
import LedgerErrors
import Logging
import ServiceLifecycle
import Testing

/// The server over a real Unix socket, driven by `LedgerClient`.
@Suite("Socket end to end", .serialized, .timeLimit(.minutes(1)), .blocking)
struct SocketEndToEndTests {
    // MARK: - Appends and reads

    @Test func appendsThenReadsEveryView() async throws {
        try await withServer { server in
            let client = try server.client()
            let first = try await client.post("/v1/events", Sample.transaction("1001", user: "u1"))
            #expect(first.status == 200)
            #expect(first.resultStatuses == ["appended"])
            #expect(first.headers["content-type"] == "application/json")

            let again = try await client.post("/v1/events", Sample.transaction("1001", user: "u1"))
            #expect(again.status == 200)
            #expect(again.resultStatuses == ["duplicate"])

            let transaction = try await client.get("/v1/transactions/1001")
            #expect(transaction.status == 200)
            let events = transaction.object["events"] as? [[String: Any]] ?? []
            #expect(events.count == 1)
            #expect(events.first?["transactionId"] as? String == "1001")

            let timeline = try await client.get("/v1/subscriptions/1001?at=\(Sample.start + Sample.day)")
            #expect(timeline.status == 200)
            #expect(timeline.object["status"] as? String == "active")
            #expect(timeline.object["originalTransactionId"] as? String == "1001")

            let expired = try await client.get("/v1/subscriptions/1001?at=\(Sample.start + 40 * Sample.day)")
            #expect(expired.object["status"] as? String == "expired")

            let customer = try await client.get("/v1/customers/u1?at=\(Sample.start + Sample.day)")
            #expect(customer.status == 200)
            let entitlements = customer.object["entitlements"] as? [String: [String: Any]] ?? [:]
            #expect(entitlements[Sample.product]?["active"] as? Bool == true)

            let health = try await client.get("/v1/health")
            #expect(health.status == 200)
            #expect(health.object["status"] as? String == "ok")
            let lastSeq = health.object["lastSeq"] as? Int ?? 0
            #expect(lastSeq >= 1)

            let log = try await client.get("/v1/events?after=0&limit=100")
            #expect(log.status == 200)
            #expect(log.headers["content-type"] == "application/x-ndjson")
            #expect(log.lines.count == lastSeq)
        }
    }

    @Test func missingThingsAre404WithErrorDocuments() async throws {
        try await withServer { server in
            let client = try server.client()
            let subscription = try await client.get("/v1/subscriptions/nope")
            #expect(subscription.status == 404)
            #expect(subscription.errorCode == "not_found")
            let transaction = try await client.get("/v1/transactions/nope")
            #expect(transaction.status == 404)
            #expect(transaction.errorCode == "not_found")
            let route = try await client.get("/v2/whatever")
            #expect(route.status == 404)
            #expect(route.errorCode == "not_found")
            let query = try await client.get("/v1/subscriptions/x?asOf=minus-one")
            #expect(query.status == 400)
            #expect(query.errorCode == "invalid_query")
        }
    }

    @Test func ndjsonBatchWithOneRefusedInputIs207() async throws {
        try await withServer { server in
            let client = try server.client()
            let batch = [Sample.transaction("2001"), #"{"type":"transaction","payload":{"productId":"x"}}"#, Sample.transaction("2002")]
                .joined(separator: "\n") + "\n"
            let r = try await client.post("/v1/events", batch, contentType: "application/x-ndjson")
            #expect(r.status == 207)
            #expect(r.resultStatuses == ["appended", "rejected", "appended"])
            let refused = (r.object["results"] as? [[String: Any]])?[1]["error"] as? [String: Any]
            #expect(refused?["code"] as? String != nil)
            #expect(try server.ledger.statistics().rejected == 1)
        }
    }

    @Test func appleRoutesAnswerOneResult() async throws {
        try await withServer { server in
            let client = try server.client()
            let v1 = try await client.post("/v1/apple/notifications", Sample.notificationV1("3001", otid: "3000"))
            #expect(v1.status == 200)
            #expect(v1.object["status"] as? String == "appended")
            let replay = try await client.post("/v1/apple/notifications", Sample.notificationV1("3001", otid: "3000"))
            #expect(replay.status == 200)
            #expect(replay.object["status"] as? String == "duplicate")

            let refused = try await client.post("/v1/apple/notifications", #"{"hello":"world"}"#)
            #expect(refused.status == 422)
            #expect(refused.object["status"] as? String == "rejected")
            #expect(refused.errorCode != nil)

            let notJSON = try await client.post("/v1/apple/notifications", "{not json")
            #expect(notJSON.status == 400)
            #expect(notJSON.errorCode == "invalid_json")

            let transaction = try await client.post(
                "/v1/apple/transactions?appUserId=u7",
                #"{"transactionId":"3101","originalTransactionId":"3100","productId":"\#(Sample.product)","purchaseDate":\#(Sample.start)}"#)
            #expect(transaction.status == 200)

            let binding = try await client.post("/v1/bindings", #"{"appUserId":"u8","originalTransactionId":"3000"}"#)
            #expect(binding.status == 200)
            #expect(binding.object["status"] as? String == "appended")
            let owner = try await client.get("/v1/customers/u8")
            #expect((owner.object["subscriptions"] as? [String] ?? []).contains("3000"))

            let receipt = try await client.post("/v1/apple/receipts?appUserId=u9", #"{"status":21002}"#)
            #expect(receipt.status == 422)
        }
    }

    // MARK: - Refusals

    @Test func malformedBodiesAre400() async throws {
        try await withServer { server in
            let client = try server.client()
            let garbage = try await client.post("/v1/events", "{\"type\": oops")
            #expect(garbage.status == 400)
            #expect(garbage.errorCode == "invalid_json")
            let empty = try await client.post("/v1/events", "  \n")
            #expect(empty.status == 400)
            #expect(empty.errorCode == "invalid_json")
            let badType = try await client.post("/v1/events?type=coupon", Sample.transaction("1"))
            #expect(badType.status == 400)
            #expect(badType.errorCode == "invalid_query")
            // The server is still fine.
            #expect(try await client.get("/v1/health").status == 200)
        }
    }

    @Test func oversizedBodiesAndBatchesAre413() async throws {
        let configuration = #"{"limits":{"maxBodyBytes":4096,"maxBatchInputs":3}}"#
        try await withServer(configuration: configuration) { server in
            let client = try server.client()
            let big = String(repeating: " ", count: 10_000) + Sample.transaction("1")
            let tooLarge = try await client.post("/v1/events", big)
            #expect(tooLarge.status == 413)
            #expect(tooLarge.errorCode == "too_large")

            let batch = (1...5).map { Sample.transaction("40\($0)") }.joined(separator: "\n")
            let tooMany = try await client.post("/v1/events", batch, contentType: "application/x-ndjson")
            #expect(tooMany.status == 413)
            #expect(tooMany.errorCode == "batch_too_large")
            #expect(try server.ledger.lastSeq() == 0)

            // The same connection still works after both refusals.
            let fine = try await client.post("/v1/events", Sample.transaction("4100"))
            #expect(fine.status == 200)
        }
    }

    @Test func wrongContentTypeIs415() async throws {
        try await withServer { server in
            let client = try server.client()
            let r = try await client.post("/v1/events", Sample.transaction("1"), contentType: "application/x-www-form-urlencoded")
            #expect(r.status == 415)
            #expect(r.errorCode == "unsupported_media_type")
            let charset = try await client.post("/v1/events", Sample.transaction("5001"), contentType: "application/json; charset=utf-8")
            #expect(charset.status == 200)
        }
    }

    @Test func writersOutsideTheAllowListAre403() async throws {
        let stranger = getuid() &+ 4242
        try await withServer(configuration: #"{"socket":{"writers":{"uids":[\#(stranger)]}}}"#) { server in
            let client = try server.client()
            let r = try await client.post("/v1/events", Sample.transaction("6001"))
            #expect(r.status == 403)
            #expect(r.errorCode == "forbidden")
            let apple = try await client.post("/v1/bindings", #"{"appUserId":"u","originalTransactionId":"1"}"#)
            #expect(apple.status == 403)
            // Reads stay open to anyone who can open the socket.
            #expect(try await client.get("/v1/health").status == 200)
            #expect(try server.ledger.lastSeq() == 0)
        }
        try await withServer(configuration: #"{"socket":{"writers":{"uids":[\#(stranger)],"gids":[\#(getgid())]}}}"#) {
            server in
            let r = try await server.client().post("/v1/events", Sample.transaction("6002"))
            #expect(r.status == 200)
        }
    }

    @Test func aFullWriterQueueIs503WithRetryAfter() async throws {
        try await withServer(configuration: #"{"limits":{"maxQueuedInputs":1}}"#) { server in
            let path = server.socketPath
            let answers = try await withThrowingTaskGroup(of: [LedgerResponse].self) { group in
                for t in 0..<16 {
                    group.addTask {
                        let client = try AsyncLedgerClient(socketPath: path, timeoutSeconds: 10)
                        var out: [LedgerResponse] = []
                        for i in 0..<10 {
                            let batch = (0..<10).map { Sample.transaction("q\(t)-\(i)-\($0)") }.joined(separator: "\n")
                            out.append(try await client.post("/v1/events", batch, contentType: "application/x-ndjson"))
                        }
                        return out
                    }
                }
                var all: [LedgerResponse] = []
                for try await part in group { all += part }
                return all
            }
            let refused = answers.filter { $0.status == 503 }
            #expect(answers.count == 160)
            #expect(answers.allSatisfy { $0.status == 200 || $0.status == 503 })
            #expect(!refused.isEmpty, "16 concurrent writers against a queue of 1 input must overflow it")
            #expect(refused.allSatisfy { $0.errorCode == "overloaded" && $0.headers["retry-after"] != nil })
            // What was acknowledged is there; what was refused was not written.
            let written = try server.ledger.statistics().events
            #expect(written >= (answers.count - refused.count) * 10)
        }
    }

    // MARK: - Concurrency

    @Test func concurrentClientsAreAllAcknowledgedAndDurable() async throws {
        try await withServer { server in
            let threads = 8
            let perThread = 40
            let path = server.socketPath
            let acknowledged = try await withThrowingTaskGroup(of: [String].self) { group in
                for t in 0..<threads {
                    group.addTask {
                        let client = try AsyncLedgerClient(socketPath: path, timeoutSeconds: 10)
                        var ids: [String] = []
                        for i in 0..<perThread {
                            let tid = "7\(t)\(String(format: "%04d", i))"
                            let r = try await client.post("/v1/events", Sample.transaction(tid, user: "c\(t)"))
                            if r.status == 200 { ids.append(tid) }
                        }
                        return ids
                    }
                }
                var all: [String] = []
                for try await ids in group { all += ids }
                return all
            }
            #expect(acknowledged.count == threads * perThread)
            let client = try server.client()
            for tid in acknowledged.prefix(50) {
                #expect(try await client.get("/v1/transactions/\(tid)").status == 200)
            }
            let commits = try await client.get("/metrics").text
            #expect(commits.contains("storeledger_appends_total{status=\"appended\"} \(threads * perThread)"))
        }
    }

    /// Requests sent back to back on one connection (HTTP pipelining, which no HTTP client library sends, so the
    /// bytes are written by hand) are answered in order, each read seeing the write before it.
    @Test func pipelinedRequestsAnswerInOrder() async throws {
        try await withServer { server in
            var requests = ""
            for i in 0..<20 {
                let body = Sample.transaction("80\(i)")
                requests += "POST /v1/events HTTP/1.1\r\nHost: l\r\nContent-Type: application/json\r\n"
                requests += "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
                requests += "GET /v1/transactions/80\(i) HTTP/1.1\r\nHost: l\r\n\r\n"
            }
            let connection = try RawConnection(server.socketPath)
            connection.send(requests)
            let answers = await offThePool { connection.readAnswers(40) }
            #expect(answers.count == 40)
            for (i, answer) in answers.enumerated() {
                #expect(answer.hasPrefix("HTTP/1.1 200 "), "request \(i)")
            }
            let reads = stride(from: 1, to: answers.count, by: 2).map { answer -> String? in
                guard let start = answers[answer].range(of: "\r\n\r\n") else { return nil }
                let object = try? JSONSerialization.jsonObject(with: Data(answers[answer][start.upperBound...].utf8))
                return (object as? [String: Any])?["transactionId"] as? String
            }
            #expect(reads == (0..<20).map { "80\($0)" })
        }
    }

    // MARK: - Following the log

    @Test func followStreamsEventsAsTheyCommit() async throws {
        try await withServer { server in
            let path = server.socketPath
            let follower = Task {
                let client = try AsyncLedgerClient(socketPath: path, timeoutSeconds: 10)
                return try await client.get("/v1/events?follow=true&limit=3&timeout=8")
            }
            try await Task.sleep(for: .milliseconds(200))
            let writer = try server.client()
            for i in 0..<3 {
                #expect(try await writer.post("/v1/events", Sample.transaction("90\(i)")).status == 200)
            }
            let streamed = try await follower.value
            #expect(streamed.status == 200)
            #expect(streamed.headers["transfer-encoding"] == "chunked")
            let seqs = streamed.lines.compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["seq"] as? Int
            }
            #expect(seqs == [1, 2, 3])
        }
    }

    @Test func followEndsOnShutdown() async throws {
        let server = try await TestServer()
        let path = server.socketPath
        // A stream followed without `timeout` never ends by itself: an answer (rather than the client's timeout,
        // which throws) says the shutdown ended it.
        let follower = Task {
            let client = try AsyncLedgerClient(socketPath: path, timeoutSeconds: 120)
            return try await client.get("/v1/events?follow=true")
        }
        try await Task.sleep(for: .milliseconds(200))
        try await server.stop()
        let answer = try await follower.value
        #expect(answer.status == 200)
    }

    // MARK: - The socket file

    @Test func socketHasTheConfiguredModeAndIsRemovedOnShutdown() async throws {
        let server = try await TestServer(configuration: #"{"socket":{"mode":"0600"}}"#)
        var info = stat()
        #expect(lstat(server.socketPath, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        let path = server.socketPath
        try await server.stop()
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func refusesALiveSocketAndReplacesAStaleOne() async throws {
        try await withServer { server in
            var logger = Logger(label: "test.second")
            logger.logLevel = .critical
            let other = try Ledger(directory: server.directory + "/other", logger: logger)
            let second = LedgerService(
                ledger: other, configuration: LedgerConfiguration(), socketPath: server.socketPath, logger: logger)
            await #expect(throws: CodedError(.socketInUse, "")) { try await second.run() }
            // The first server still answers.
            #expect(try await server.client().get("/v1/health").status == 200)
        }

        // A socket file nobody listens on, as kill -9 leaves it.
        let directory = try TestServer.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stale = directory + "/stale.sock"
        let fd = try #require(boundUnixSocket(stale))
        close(fd)
        #expect(FileManager.default.fileExists(atPath: stale))

        var logger = Logger(label: "test.stale")
        logger.logLevel = .warning
        let ledger = try Ledger(directory: directory + "/data", logger: logger)
        let service = LedgerService(ledger: ledger, configuration: LedgerConfiguration(), socketPath: stale, logger: logger)
        let group = ServiceGroup(services: [service], logger: logger)
        let task = Task { try await group.run() }
        var answered = false
        for _ in 0..<200 where !answered {
            if let c = try? AsyncLedgerClient(socketPath: stale, timeoutSeconds: 2),
                (try? await c.get("/v1/health"))?.status == 200
            {
                answered = true
            } else {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        #expect(answered)
        await group.triggerGracefulShutdown()
        try await task.value
    }
}
