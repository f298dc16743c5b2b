import Foundation
import LedgerTestSupport
import NIOCore
import Testing

@testable import NATSClient

@Suite("NATS frames")
struct NATSFrameTests {
    private func frames(_ text: String, chunk: Int) throws -> [NATSFrame] {
        var buffer = ByteBuffer()
        var out: [NATSFrame] = []
        let bytes = Array(text.utf8)
        var start = 0
        while start < bytes.count {
            buffer.writeBytes(bytes[start..<min(start + chunk, bytes.count)])
            start += chunk
            while let frame = try NATSFrameDecoder.parse(&buffer) { out.append(frame) }
        }
        #expect(buffer.readableBytes == 0)
        return out
    }

    @Test("MSG, HMSG with a status and headers, PING, INFO and -ERR, whole or a byte at a time")
    func parsesEveryOperation() throws {
        let text = "INFO {\"server_id\":\"x\"}\r\nPING\r\nMSG a.b 7 _INBOX.r 5\r\nhello\r\n"
            + "HMSG $JS.x 2 24 24\r\nNATS/1.0 408 Timeout\r\n\r\n\r\n"
            + "HMSG s 3 r 20 23\r\nNATS/1.0\r\nA: one\r\n\r\nabc\r\n-ERR 'Unknown Protocol Operation'\r\n+OK\r\n"
        for chunk in [1, 7, text.utf8.count] {
            let parsed = try frames(text, chunk: chunk)
            #expect(parsed.count == 7)
            guard case .info(let info) = parsed[0] else { Issue.record("not INFO: \(parsed[0])"); continue }
            #expect(info == "{\"server_id\":\"x\"}")
            guard case .ping = parsed[1] else { Issue.record("not PING"); continue }
            guard case .message(let m) = parsed[2] else { Issue.record("not MSG"); continue }
            #expect(m.subject == "a.b" && m.sid == 7 && m.replyTo == "_INBOX.r" && m.payload == Array("hello".utf8))
            guard case .message(let status) = parsed[3] else { Issue.record("not HMSG"); continue }
            #expect(status.status == 408 && status.statusDescription == "Timeout" && status.payload.isEmpty)
            #expect(status.replyTo == nil)
            guard case .message(let h) = parsed[4] else { Issue.record("not HMSG"); continue }
            #expect(h.header("a") == "one" && h.payload == Array("abc".utf8) && h.replyTo == "r")
            guard case .error(let error) = parsed[5] else { Issue.record("not -ERR"); continue }
            #expect(error == "Unknown Protocol Operation")
        }
    }

    @Test("a size that does not fit is a protocol violation, not a crash")
    func refusesBrokenSizes() {
        var buffer = ByteBuffer(string: "HMSG s 1 30 20\r\n")
        #expect(throws: NATSError.self) { try NATSFrameDecoder.parse(&buffer) }
        var unknown = ByteBuffer(string: "HELLO\r\n")
        #expect(throws: NATSError.self) { try NATSFrameDecoder.parse(&unknown) }
    }

    @Test("JetStream's reply subject gives the stream sequence, deliveries and timestamp, in both forms")
    func readsAckSubjects() {
        let old = NATSMessage(
            subject: "s", sid: 1, replyTo: "$JS.ACK.ST.C.2.17.9.1700000000123456789.4", headers: [], status: nil,
            statusDescription: nil, payload: [1])
        let message = JetStreamMessage(old)
        #expect(message?.stream == "ST" && message?.streamSequence == 17 && message?.consumerSequence == 9)
        #expect(message?.deliveries == 2 && message?.timestamp == 1_700_000_000_123_456_789 && message?.pending == 4)
        var new = old
        new.replyTo = "$JS.ACK.dom.acchash.ST.C.1.18.10.1700000000999000000.0.tok"
        #expect(JetStreamMessage(new)?.streamSequence == 18)
        #expect(JetStreamMessage(new)?.timestamp == 1_700_000_000_999_000_000)
        new.replyTo = "_INBOX.x.y"
        #expect(JetStreamMessage(new) == nil)
    }

    @Test("server lists: scheme and port optional, garbage refused")
    func parsesServerLists() throws {
        #expect(try NATSServer.parseList("nats://127.0.0.1:4223, localhost") == [
            NATSServer(host: "127.0.0.1", port: 4223), NATSServer(host: "localhost", port: 4222),
        ])
        #expect(throws: NATSError.self) { try NATSServer.parseList("nats://h:99999") }
        #expect(throws: NATSError.self) { try NATSServer.parseList("") }
    }
}

@Suite("NATS client against a real nats-server", .serialized, .timeLimit(.minutes(3)), .blocking)
struct NATSServerTests {
    @Test(.enabled(if: natsServerPath != nil, natsMissing))
    func publishSubscribeRequestAndJetStream() async throws {
        try await withTaskExecutorPreference(TestExecutor.shared) {
            let scratch = try TemporaryDirectory(prefix: "sl-nats")
            let cluster = try NATSCluster(size: 1, scratch: scratch.path)
            defer {
                cluster.stopAll()
                scratch.remove()
            }
            let connection = try await NATSConnection.connect(to: cluster.servers, timeout: .seconds(20))
            try await NATSCluster.waitForJetStream(connection)

            // Core NATS: a subscription sees a published message with its headers; a request gets its reply.
            let seen = Inbox()
            connection.subscribe("t.*") { seen.add($0) }
            connection.subscribe("svc.echo") { message in
                if let reply = message.replyTo {
                    try? connection.publish(reply, payload: Array("echo:".utf8) + message.payload)
                }
            }
            try await connection.flush()
            try connection.publish("t.one", payload: Array("payload".utf8), headers: [("X-Key", "v1")])
            let answer = try await connection.request("svc.echo", payload: Array("ping".utf8))
            #expect(String(decoding: answer.payload, as: UTF8.self) == "echo:ping")
            try await connection.flush()
            let first = try #require(seen.messages.first)
            #expect(first.subject == "t.one" && first.payload == Array("payload".utf8) && first.header("x-key") == "v1")
            await #expect(throws: NATSError.noResponders("nobody.home")) {
                _ = try await connection.request("nobody.home", payload: [])
            }

            // JetStream: a stream, a publish de-duplicated by Nats-Msg-Id, a pull consumer from a sequence, acks.
            let js = JetStream(connection)
            let before = Int64(Date().timeIntervalSince1970 * 1e9)
            let info = try await js.addStream(.init(name: "T", subjects: ["js.>"], numReplicas: 1))
            #expect(info.config.subjects == ["js.>"] && info.state.lastSeq == 0)
            let a = try await js.publish("js.1", payload: Array("a".utf8), messageId: "id-a")
            let again = try await js.publish("js.1", payload: Array("a".utf8), messageId: "id-a")
            let b = try await js.publish("js.2", payload: Array("b".utf8), messageId: "id-b")
            let c = try await js.publish("js.2", payload: Array("c".utf8), messageId: "id-c")
            #expect(a.seq == 1 && a.duplicate != true)
            #expect(again.seq == 1 && again.duplicate == true)
            #expect(b.seq == 2 && c.seq == 3 && c.stream == "T")
            #expect(try await js.streamInfo("T")?.state.messages == 3)
            #expect(try await js.streamInfo("NOPE") == nil)

            try await js.addConsumer(stream: "T", .init(durableName: "d", startSequence: 2, filterSubject: "js.>"))
            let fetched = try await js.fetch(stream: "T", consumer: "d", batch: 10, expires: .seconds(1))
            #expect(fetched.map(\.streamSequence) == [2, 3])
            #expect(fetched.map { String(decoding: $0.payload, as: UTF8.self) } == ["b", "c"])
            #expect(fetched.map(\.subject) == ["js.2", "js.2"])
            let after = Int64(Date().timeIntervalSince1970 * 1e9)
            #expect(fetched.allSatisfy { $0.timestamp >= before - 1_000_000_000 && $0.timestamp <= after })
            for message in fetched { try js.ack(message) }
            try await connection.flush()
            let consumer = try #require(try await js.consumerInfo(stream: "T", name: "d"))
            #expect(consumer.ackFloor.streamSeq == 3 && consumer.numAckPending == 0 && consumer.numPending == 0)
            // Nothing more: the fetch ends empty when it expires.
            let empty = try await js.fetch(stream: "T", consumer: "d", batch: 10, expires: .milliseconds(300))
            #expect(empty.isEmpty)

            // A pull consumer read as a stream hands over each message as it is delivered, long before its request
            // expires (a fetch would hold it until then), and an empty answer only when a request ended with nothing.
            let pull = js.pull(stream: "T", consumer: "d", batch: 100, expires: .seconds(20))
            defer { pull.close() }
            let waiting = Task { () throws -> (ContinuousClock.Duration, [UInt64]) in
                let start = ContinuousClock.now
                let messages = try await pull.next()
                return (ContinuousClock.now - start, messages.map(\.streamSequence))
            }
            try await Task.sleep(for: .milliseconds(300))
            _ = try await js.publish("js.3", payload: Array("d".utf8), messageId: "id-d")
            let (waited, delivered) = try await waiting.value
            #expect(delivered == [4])
            #expect(waited < .seconds(15), "the message waited \(waited) for the request to expire")
            let short = js.pull(stream: "T", consumer: "d", batch: 100, expires: .milliseconds(300))
            defer { short.close() }
            #expect(try await short.next().isEmpty)

            #expect(try await js.deleteConsumer(stream: "T", name: "d"))
            #expect(try await js.deleteConsumer(stream: "T", name: "d") == false)
            await connection.close()
        }
    }

    @Test(.enabled(if: natsServerPath != nil, natsMissing))
    func reconnectsToAnotherClusterNodeAndTheStreamKeepsItsMessages() async throws {
        try await withTaskExecutorPreference(TestExecutor.shared) {
            let scratch = try TemporaryDirectory(prefix: "sl-natsc")
            let cluster = try NATSCluster(size: 3, scratch: scratch.path)
            defer {
                cluster.stopAll()
                scratch.remove()
            }
            let connection = try await NATSConnection.connect(to: cluster.servers, timeout: .seconds(30))
            try await NATSCluster.waitForJetStream(connection)
            #expect(connection.isClustered)
            let js = JetStream(connection)
            let info = try await retry { try await js.addStream(.init(name: "R", subjects: ["r.>"], numReplicas: 3)) }
            #expect(info.config.numReplicas == 3)
            let first = try await retry { try await js.publish("r.x", payload: [1], messageId: "one") }
            let connected = try #require(connection.server)
            let index = try #require(cluster.servers.firstIndex(of: connected))
            cluster.kill9(index)
            // The connection moves to a live node; the stream (R3) keeps its quorum with two of three.
            let second = try await retry { try await js.publish("r.x", payload: [2], messageId: "two") }
            #expect(second.seq == first.seq + 1)
            #expect(connection.server != nil && connection.server != connected)
            // Counted once the new server answered the first PING, which may come after a request already went through.
            let counted = ContinuousClock.now + .seconds(10)
            while connection.reconnects == 0, ContinuousClock.now < counted { try await Task.sleep(for: .milliseconds(20)) }
            #expect(connection.reconnects >= 1)
            #expect(try await retry { try await js.streamInfo("R") }?.state.messages == 2)
            await connection.close()
        }
    }
}

/// Runs `body` again for up to 30 s while the cluster elects leaders or the connection moves.
func retry<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
    let deadline = ContinuousClock.now + .seconds(30)
    while true {
        do {
            return try await body()
        } catch {
            if ContinuousClock.now > deadline { throw error }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}

final class Inbox: @unchecked Sendable {
    private let lock = NSLock()
    private var _messages: [NATSMessage] = []
    var messages: [NATSMessage] { lock.withLock { _messages } }
    func add(_ message: NATSMessage) { lock.withLock { _messages.append(message) } }
}
