import AsyncHTTPClient
import Foundation
import LedgerErrors
import NIOCore
import NIOHTTP1
import NIOPosix

// MARK: - AsyncLedgerClient

/// The ledger's client for Swift concurrency: HTTP/1.1 over the server's Unix socket, through AsyncHTTPClient
/// (`http+unix://`).
///
/// One keep-alive connection: requests made while one is in flight wait for it and are sent in the order they were
/// made. Failures of the transport are `CodedError`s: `connect` (nothing accepts on the path), `closed` (the server
/// closed the connection without an answer), `timeout` (no byte of the answer for `timeoutSeconds`), `protocol` (the
/// answer is not HTTP), `recv` (anything else the connection reports), and `path_too_long` from the initialiser. An answer is never an error: a 4xx or 5xx comes back as a `LedgerResponse` with its status and body.
public final class AsyncLedgerClient: Sendable {
    public let socketPath: String
    /// Seconds the connection may stay silent (no byte sent or received) before the request fails with `timeout`
    /// (0: forever).
    public let timeoutSeconds: Int
    private let http: HTTPClient

    /// A client of the server listening on `socketPath`; it connects with the first request.
    public init(socketPath: String, timeoutSeconds: Int = 30) throws(CodedError) {
        guard socketPath.utf8.count <= UnixSocket.maxPathLength else {
            throw CodedError(.pathTooLong, "socket path longer than \(UnixSocket.maxPathLength) bytes")
        }
        self.socketPath = socketPath
        self.timeoutSeconds = timeoutSeconds
        var timeout = HTTPClient.Configuration.Timeout()
        if timeoutSeconds > 0 {
            let seconds = TimeAmount.seconds(Int64(timeoutSeconds))
            timeout = .init(connect: seconds, read: seconds, write: seconds)
        }
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: timeout)
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 1
        // Closed by the client before the server's idle timeout (`limits.idleTimeoutSeconds`, 60 s by default)
        // closes it, so a request rarely meets a connection the server is closing.
        configuration.connectionPool.idleTimeout = .seconds(30)
        // A server that is not running is `connect` at once, not retried until the connect timeout.
        configuration.connectionPool.retryConnectionEstablishment = false
        http = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }

    deinit {
        // Nothing can be in flight (a request holds the client), so this only closes the idle connection.
        http.shutdown { _ in }
    }

    /// Sends one request and returns its response (throws only `CodedError`). Sent once: a connection the server
    /// closed while idle is dropped by the client and a new one made, but a request the connection was closed under
    /// may have been carried out, so whether to send it again is the caller's choice.
    public func request(
        method: String, path: String, body: [UInt8] = [], contentType: String = "application/json"
    ) async throws -> LedgerResponse {
        try await exchange(method: method, path: path, body: body, contentType: contentType)
    }

    /// `GET path`.
    public func get(_ path: String) async throws -> LedgerResponse {
        try await request(method: "GET", path: path)
    }

    /// `POST path` with a JSON (or NDJSON, by `contentType`) body.
    public func post(_ path: String, body: [UInt8], contentType: String = "application/json") async throws
        -> LedgerResponse
    {
        try await request(method: "POST", path: path, body: body, contentType: contentType)
    }

    func exchange(method: String, path: String, body: [UInt8], contentType: String) async throws(CodedError)
        -> LedgerResponse
    {
        guard let url = URL(httpURLWithSocketPath: socketPath, uri: path) else {
            throw CodedError(.protocol, "'\(path)' is not a request target")
        }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = HTTPMethod(rawValue: method)
        // HTTP/1.1 wants a Host; a Unix socket has none, so the name every local client uses.
        request.headers.add(name: "Host", value: "localhost")
        if method != "GET" || !body.isEmpty {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        do {
            // No deadline for the whole answer: a follow stream lasts as long as the server streams, and
            // `timeoutSeconds` bounds each silence instead.
            let response = try await http.execute(request, deadline: .distantFuture)
            let bytes = try await response.body.collect(upTo: .max)
            var headers: [String: String] = [:]
            for (name, value) in response.headers { headers[name.lowercased()] = value }
            return LedgerResponse(status: Int(response.status.code), headers: headers, body: Array(buffer: bytes))
        } catch {
            throw transportError(error)
        }
    }

    /// What went wrong on the way, as the codes the ledger's tools print.
    private func transportError(_ error: any Error) -> CodedError {
        if let error = error as? HTTPClientError {
            if [.readTimeout, .writeTimeout, .connectTimeout, .deadlineExceeded].contains(error) {
                return CodedError(.timeout, "no answer within \(timeoutSeconds) s")
            }
            if error == .remoteConnectionClosed {
                return CodedError(.closed, "connection closed by the server")
            }
            return CodedError(.protocol, "\(error)")
        }
        if let error = error as? IOError {
            let message = String(cString: strerror(error.errnoCode))
            switch error.errnoCode {
            case ECONNRESET, EPIPE: return CodedError(.closed, "connection closed by the server: \(message)")
            case ENOENT, ECONNREFUSED, EACCES, ENOTSOCK: return CodedError(.connect, "\(socketPath): \(message)")
            default: return CodedError(.recv, message)
            }
        }
        if error is HTTPParserError {
            return CodedError(.protocol, "the answer is not HTTP/1.1: \(error)")
        }
        return CodedError(.recv, "\(error)")
    }
}
