#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LedgerClient
import LedgerErrors
import LedgerTestSupport
import Testing

// MARK: - Sockets that misbehave

/// A Unix stream socket bound to `path` (the file made), not listening; nil when it cannot be bound.
func boundUnixSocket(_ path: String) -> Int32? {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (i, b) in path.utf8.enumerated() { raw[i] = b }
    }
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard fd >= 0, bound == 0 else {
        close(fd)
        return nil
    }
    return fd
}

/// A Unix socket listener whose connections get what `serve` does to them (answer nothing, close, answer garbage),
/// each on a thread of its own that closes it after; counts the connections it accepted.
private final class MisbehavingSocket: @unchecked Sendable {
    let path: String
    private let fd: Int32
    private let lock = NSLock()
    private var accepted = 0
    private var open: [Int32] = []

    init(directory: String, serve: @escaping @Sendable (Int32) -> Void) throws {
        path = directory + "/bad.sock"
        guard let fd = boundUnixSocket(path), listen(fd, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        self.fd = fd
        let listener = fd
        Thread.detachNewThread { [self] in
            while true {
                let connection = accept(listener, nil, nil)
                if connection < 0 { return }
                lock.withLock {
                    accepted += 1
                    open.append(connection)
                }
                Thread.detachNewThread { [self] in
                    serve(connection)
                    lock.withLock {
                        open.removeAll { $0 == connection }
                        close(connection)
                    }
                }
            }
        }
    }

    var connections: Int { lock.withLock { accepted } }

    /// Stops accepting and ends every connection still open (its thread closes it).
    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
        lock.withLock {
            for connection in open { shutdown(connection, Int32(SHUT_RDWR)) }
        }
        unlink(path)
    }

    /// Reads until a whole request head has arrived (or the peer is gone).
    static func readHead(_ connection: Int32) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !String(decoding: received, as: UTF8.self).contains("\r\n\r\n") {
            let n = recv(connection, &buffer, buffer.count, 0)
            if n <= 0 { return }
            received += buffer[0..<n]
        }
    }
}

/// The transport failures `LedgerClient` and `AsyncLedgerClient` report, by the codes the CLI and the load tool print,
/// and the answers they hand back whatever their status.
@Suite("The ledger's client", .serialized, .timeLimit(.minutes(2)), .blocking)
struct LedgerClientTests {
    @Test func nothingOnThePathIsConnect() async throws {
        let directory = try TestServer.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let client = try AsyncLedgerClient(socketPath: directory + "/none.sock", timeoutSeconds: 5)
        await #expect(throws: CodedError(.connect, "")) { try await client.get("/v1/health") }

        // A socket file nobody listens on (a server killed -9 leaves one).
        let stale = directory + "/stale.sock"
        close(try #require(boundUnixSocket(stale)))
        let refused = try AsyncLedgerClient(socketPath: stale, timeoutSeconds: 5)
        do {
            _ = try await refused.get("/v1/health")
            Issue.record("a stale socket answered")
        } catch let error as CodedError {
            #expect(error.code == .connect)
            #expect(error.message.contains(stale), "\(error)")
        }
    }

    @Test func aPathLongerThanASocketAddressIsRefusedAtOnce() {
        let long = "/tmp/" + String(repeating: "x", count: UnixSocket.maxPathLength)
        #expect(throws: CodedError(.pathTooLong, "")) { try AsyncLedgerClient(socketPath: long) }
        #expect(throws: CodedError(.pathTooLong, "")) { try LedgerClient(socketPath: long) }
    }

    @Test func noAnswerWithinTheTimeoutIsTimeout() async throws {
        let directory = try TestServer.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let silent = try MisbehavingSocket(directory: directory) { connection in
            MisbehavingSocket.readHead(connection)
            // Holds the connection, answering nothing, until the client goes or the socket stops.
            var byte: UInt8 = 0
            while recv(connection, &byte, 1, 0) > 0 {}
        }
        defer { silent.stop() }
        // The socket never answers: only the client's timeout ends the call.
        let client = try AsyncLedgerClient(socketPath: silent.path, timeoutSeconds: 1)
        await #expect(throws: CodedError(.timeout, "")) { try await client.get("/v1/health") }
    }

    /// Closed without an answer: `closed`, the request not sent again (the server may have carried it out).
    @Test func closedWithoutAnAnswerIsClosedAndNotSentAgain() async throws {
        let directory = try TestServer.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let closing = try MisbehavingSocket(directory: directory) { connection in
            MisbehavingSocket.readHead(connection)
            shutdown(connection, Int32(SHUT_RDWR))
        }
        defer { closing.stop() }
        let client = try AsyncLedgerClient(socketPath: closing.path, timeoutSeconds: 5)
        await #expect(throws: CodedError(.closed, "")) { try await client.post("/v1/events", body: Array("{}".utf8)) }
        #expect(closing.connections == 1)
    }

    @Test func anAnswerThatIsNotHTTPIsProtocol() async throws {
        let directory = try TestServer.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let garbage = try MisbehavingSocket(directory: directory) { connection in
            MisbehavingSocket.readHead(connection)
            let text = Array("SMTP READY\r\n\r\n".utf8)
            _ = text.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        defer { garbage.stop() }
        let client = try AsyncLedgerClient(socketPath: garbage.path, timeoutSeconds: 5)
        await #expect(throws: CodedError(.protocol, "")) { try await client.get("/v1/health") }
    }

    /// A keep-alive connection the server closed for idleness is not used again: the next request goes on a new one.
    @Test func aConnectionTheServerClosedWhileIdleIsReplaced() async throws {
        try await withServer(configuration: #"{"limits":{"idleTimeoutSeconds":0.3}}"#) { server in
            let client = try server.client()
            #expect(try await client.get("/v1/health").status == 200)
            try await Task.sleep(for: .seconds(1))
            #expect(try await client.get("/v1/health").status == 200)
        }
    }

    /// The blocking client, from a thread of its own: answers of every status with their headers and bodies,
    /// several requests on one keep-alive connection, and the same codes for the transport's failures.
    @Test func theBlockingClientAnswersAndFailsAsTheAsyncOne() async throws {
        try await withServer { server in
            let path = server.socketPath
            let outcome = await offThePool { () -> [String] in
                var seen: [String] = []
                do {
                    let client = try LedgerClient(socketPath: path, timeoutSeconds: 10)
                    let appended = try client.request(
                        method: "POST", path: "/v1/events", body: Array(Sample.transaction("4401").utf8))
                    seen.append("\(appended.status) \(appended.headers["content-type"] ?? "-")")
                    let missing = try client.get("/v1/transactions/none")
                    seen.append("\(missing.status) \(missing.errorCode ?? "-")")
                    let found = try client.get("/v1/transactions/4401")
                    seen.append("\(found.status) \(found.object["transactionId"] as? String ?? "-")")
                } catch {
                    seen.append("error \(error)")
                }
                do throws(CodedError) {
                    _ = try LedgerClient(socketPath: path + ".none", timeoutSeconds: 10).get("/v1/health")
                    seen.append("answered")
                } catch {
                    seen.append(error.code.rawValue)
                }
                return seen
            }
            #expect(outcome == ["200 application/json", "404 not_found", "200 4401", "connect"])
        }
    }
}
