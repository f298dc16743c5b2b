import Foundation
import LedgerTestSupport
import LedgerClient
import LedgerServer
import LedgerStore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Runs blocking socket work off the cooperative pool, which the in-process server's handlers need.
func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: body()) }
    }
}

/// Waits until the server counts `expected` open connections (closing is noticed asynchronously).
func waitForConnections(_ server: TestServer, _ expected: Int) async throws {
    let deadline = ContinuousClock.now + .seconds(20)
    while server.service.openConnections != expected && ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(20))
    }
    #expect(server.service.openConnections == expected)
}

@Suite("Connection timeouts and limits", .serialized, .timeLimit(.minutes(2)), .blocking)
struct ConnectionGuardTests {
    /// A header timeout shorter than the idle timeout, so the tests can tell which one closed a connection. Upper bounds
    /// are loose: on a loaded two-core machine timers fire late, never early.
    static let timeouts = #"{"limits":{"headerTimeoutSeconds":1,"idleTimeoutSeconds":3}}"#

    @Test func halfARequestLineIsAnswered408AndClosedAfterTheHeaderTimeout() async throws {
        try await withServer(configuration: Self.timeouts) { server in
            let connection = try RawConnection(server.socketPath)
            let start = Date()
            connection.send("POST /v1/ev")
            let (text, closed) = await offThePool { connection.readUntilClosed(seconds: 30) }
            let elapsed = Date().timeIntervalSince(start)
            #expect(closed)
            #expect(elapsed >= 0.9 && elapsed < 15, "closed after \(elapsed) s")
            #expect(text.hasPrefix("HTTP/1.1 408 "), "\(text)")
            #expect(text.contains(#""code":"request_timeout""#), "\(text)")
            #expect(try await server.client().get("/v1/health").status == 200)
            let metrics = try await server.client().get("/metrics").text
            #expect(metrics.contains(#"storeledger_connections_closed_total{reason="header_timeout"} 1"#), "\(metrics)")
        }
    }

    /// Slowloris: a byte every half second never completes the head; the header timeout counts from the first.
    @Test func aHeadTrickledByteByByteIsClosedAfterTheHeaderTimeout() async throws {
        try await withServer(configuration: Self.timeouts) { server in
            let connection = try RawConnection(server.socketPath)
            let start = Date()
            let closedAfter: Double? = await offThePool {
                for byte in "GET /v1/health HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaa".utf8 {
                    if !connection.send([byte]) { return Date().timeIntervalSince(start) }
                    if connection.readUntilClosed(seconds: 0.25).closed { return Date().timeIntervalSince(start) }
                }
                return nil
            }
            let elapsed = try #require(closedAfter, "the trickling connection was never closed")
            #expect(elapsed >= 0.9 && elapsed < 15, "closed after \(elapsed) s")
        }
    }

    @Test func anIdleKeepAliveConnectionIsClosedAfterTheIdleTimeout() async throws {
        try await withServer(configuration: Self.timeouts) { server in
            let connection = try RawConnection(server.socketPath)
            connection.send("GET /v1/health HTTP/1.1\r\nHost: ledger\r\n\r\n")
            let answer = await offThePool { connection.readAnswer() }
            #expect(answer?.hasPrefix("HTTP/1.1 200 ") == true, "\(answer ?? "no answer")")
            let start = Date()
            let (text, closed) = await offThePool { connection.readUntilClosed(seconds: 30) }
            let elapsed = Date().timeIntervalSince(start)
            #expect(closed)
            #expect(text.isEmpty, "nothing is said on an idle close: \(text)")
            // Not the 1 s header timeout: a keep-alive connection between requests has the idle timeout.
            #expect(elapsed >= 2.8 && elapsed < 20, "closed after \(elapsed) s")
        }
    }

    @Test func aConnectionThatNeverSpeaksIsClosedAfterTheHeaderTimeout() async throws {
        try await withServer(configuration: Self.timeouts) { server in
            let connection = try RawConnection(server.socketPath)
            let start = Date()
            let (text, closed) = await offThePool { connection.readUntilClosed(seconds: 30) }
            let elapsed = Date().timeIntervalSince(start)
            #expect(closed && text.isEmpty)
            #expect(elapsed >= 0.9 && elapsed < 15, "closed after \(elapsed) s")
        }
    }

    @Test func aStalledBodyIsClosedAfterTheIdleTimeout() async throws {
        try await withServer(configuration: Self.timeouts) { server in
            let connection = try RawConnection(server.socketPath)
            connection.send(
                "POST /v1/events HTTP/1.1\r\nHost: ledger\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"type\":"
            )
            let start = Date()
            let (_, closed) = await offThePool { connection.readUntilClosed(seconds: 30) }
            let elapsed = Date().timeIntervalSince(start)
            #expect(closed)
            #expect(elapsed >= 2.8 && elapsed < 20, "closed after \(elapsed) s")
            #expect(try server.ledger.lastSeq() == 0)
        }
    }

    /// A request the server is still answering is never timed out: a follow stream outlives the idle timeout.
    @Test func aFollowStreamOutlivesTheIdleTimeout() async throws {
        try await withServer(configuration: Self.timeouts) { server in
            let connection = try RawConnection(server.socketPath)
            connection.send("GET /v1/events?after=0&follow=true HTTP/1.1\r\nHost: ledger\r\n\r\n")
            let (_, closedEarly) = await offThePool { connection.readUntilClosed(seconds: 4) }
            #expect(!closedEarly, "the follow stream was cut")
            let r = try await server.client().post("/v1/events", Sample.transaction("7001"))
            #expect(r.status == 200)
            let (text, _) = await offThePool { connection.readUntilClosed(seconds: 3) }
            #expect(text.contains("7001"), "\(text)")
        }
    }

    /// A head that begins while the answer before it is being written, and never ends, is answered 408 when the
    /// header timeout passes, on both paths. The timer is armed again as that answer ends (behind the HTTP codec);
    /// its 408 is bytes, for the socket.
    @Test func aHeadBegunDuringAnAnswerThatStallsIsAnswered408() async throws {
        // The idle timeout well past the header timeout, as by default.
        try await withServer(configuration: #"{"limits":{"headerTimeoutSeconds":1,"idleTimeoutSeconds":10}}"#) {
            server in
            for fastReads in [true, false] {
                server.service.fastPath.isOn = fastReads
                let connection = try RawConnection(server.socketPath)
                connection.send("GET /v1/health HTTP/1.1\r\nHost: ledger\r\n\r\n")
                let first = await offThePool { connection.readAnswer() }
                #expect(first?.hasPrefix("HTTP/1.1 200 ") == true, "\(first ?? "no answer")")
                // Past the connection's first header deadline: its timer waits for the idle timeout now.
                try await Task.sleep(for: .milliseconds(1300))
                // An answer that takes half a second (a follow stream that times out), and the next head begun
                // during it.
                connection.send("GET /v1/events?after=0&follow=true&timeout=0.5 HTTP/1.1\r\nHost: ledger\r\n\r\n")
                try await Task.sleep(for: .milliseconds(150))
                connection.send("GET /v1/health HTTP/1.1\r\nX-Slow: a")
                let start = Date()
                let (text, closed) = await offThePool { connection.readUntilClosed(seconds: 30) }
                let elapsed = Date().timeIntervalSince(start)
                #expect(closed, "fast reads \(fastReads): \(text)")
                #expect(text.hasPrefix("HTTP/1.1 200 "), "fast reads \(fastReads): \(text)")
                #expect(text.contains("HTTP/1.1 408 "), "fast reads \(fastReads): \(text)")
                #expect(text.contains(#""code":"request_timeout""#), "fast reads \(fastReads): \(text)")
                // A full header timeout from the end of the answer before it.
                #expect(elapsed >= 1.25 && elapsed < 15, "fast reads \(fastReads): closed after \(elapsed) s")
            }
            server.service.fastPath.isOn = true
            #expect(try await server.client().get("/v1/health").status == 200)
        }
    }

    /// One peer user holds at most `maxConnectionsPerPeer` connections, whatever room is left in all: the third
    /// connection of this process's uid makes room among its own (read from the kernel, SO_PEERCRED).
    @Test func onePeerUserHoldsAtMostItsShare() async throws {
        let configuration = #"{"limits":{"maxConnections":10,"maxConnectionsPerPeer":2,"headerTimeoutSeconds":30,"idleTimeoutSeconds":30}}"#
        try await withServer(configuration: configuration) { server in
            try await waitForConnections(server, 0)
            let held = try (0..<2).map { _ in try RawConnection(server.socketPath) }
            try await waitForConnections(server, 2)
            let third = try RawConnection(server.socketPath)
            third.send("GET /v1/health HTTP/1.1\r\nHost: ledger\r\n\r\n")
            let served = await offThePool { third.readAnswer() }
            #expect(served?.hasPrefix("HTTP/1.1 200 ") == true, "\(served ?? "no answer")")
            let closedOnes = await offThePool { held.filter { $0.readUntilClosed(seconds: 1).closed } }
            #expect(closedOnes.count == 1, "\(closedOnes.count) of the peer's idle connections were closed")
        }
    }

    /// Over the limit, a new connection takes the place of the one that has waited longest with no request in
    /// progress (connections opened and left idle hold no place a client with a request needs); only when every
    /// connection is in a request is it answered 503.
    @Test func overTheLimitAnIdleConnectionMakesRoomAndOnlyBusyOnesRefuse() async throws {
        let configuration = #"{"limits":{"maxConnections":4,"headerTimeoutSeconds":30,"idleTimeoutSeconds":30}}"#
        try await withServer(configuration: configuration) { server in
            try await waitForConnections(server, 0)
            var held = try (0..<4).map { _ in try RawConnection(server.socketPath) }
            try await waitForConnections(server, 4)
            let waiting = held

            // A fifth is served; one of the idle ones (the one the server admitted first) made room.
            let extra = try RawConnection(server.socketPath)
            extra.send("GET /v1/health HTTP/1.1\r\nHost: ledger\r\n\r\n")
            let served = await offThePool { extra.readAnswer() }
            #expect(served?.hasPrefix("HTTP/1.1 200 ") == true, "\(served ?? "no answer")")
            let closedOnes = await offThePool { waiting.filter { $0.readUntilClosed(seconds: 1).closed } }
            #expect(closedOnes.count == 1, "\(closedOnes.count) idle connections were closed")
            #expect(server.service.openConnections <= 4)

            // Every place in a request (four follow streams): the next connection is refused.
            held.removeAll()
            let streams = try (0..<4).map { _ in try RawConnection(server.socketPath) }
            for s in streams { s.send("GET /v1/events?after=0&follow=true HTTP/1.1\r\nHost: ledger\r\n\r\n") }
            try await Task.sleep(for: .milliseconds(300))
            let refused = try RawConnection(server.socketPath)
            let (refusal, closed) = await offThePool { refused.readUntilClosed(seconds: 5) }
            #expect(closed)
            #expect(refusal.hasPrefix("HTTP/1.1 503 "), "\(refusal)")
            #expect(refusal.lowercased().contains("retry-after: 1"), "\(refusal)")
            #expect(refusal.contains(#""code":"overloaded""#) && refusal.contains("each in a request"), "\(refusal)")
            _ = streams
        }
    }
}
