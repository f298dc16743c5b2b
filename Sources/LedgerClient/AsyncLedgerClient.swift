import Dispatch
import LedgerWire

// MARK: - AsyncLedgerClient

/// An async face over `LedgerClient` for Swift concurrency: requests run one at a time, in order, on a serial queue
/// of their own, so no cooperative thread blocks on the socket.
public final class AsyncLedgerClient: @unchecked Sendable {
    // Only touched on `queue`.
    private let client: LedgerClient
    private let queue: DispatchQueue

    /// Connects to the server listening on `socketPath`.
    public init(socketPath: String, timeoutSeconds: Int = 30) throws(CodedError) {
        client = try LedgerClient(socketPath: socketPath, timeoutSeconds: timeoutSeconds)
        queue = DispatchQueue(label: "storeledger.client")
    }

    /// Sends one request and returns its response.
    public func request(
        method: String, path: String, body: [UInt8] = [], contentType: String = "application/json"
    ) async throws -> LedgerResponse {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                do {
                    continuation.resume(
                        returning: try self.client.request(method: method, path: path, body: body, contentType: contentType))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Sends every request back to back (HTTP pipelining), then reads the responses in order.
    public func pipeline(
        _ requests: [(method: String, path: String, body: [UInt8])], contentType: String = "application/json"
    ) async throws -> [LedgerResponse] {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                do {
                    continuation.resume(returning: try self.client.pipeline(requests, contentType: contentType))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
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
}
