import Dispatch
import LedgerErrors
import Synchronization

/// One HTTP response.
public struct LedgerResponse: Sendable {
    public init(status: Int, headers: [String: String], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public var status: Int
    /// Header names lowercased.
    public var headers: [String: String]
    public var body: [UInt8]
    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// The ledger's client with blocking calls, for threads of their own (load tools, scripts): `AsyncLedgerClient`
/// underneath, the calling thread waiting for each answer. From Swift concurrency use `AsyncLedgerClient`, so that no
/// task holds a thread of the cooperative pool while it waits.
///
/// One keep-alive connection; the same `CodedError`s as `AsyncLedgerClient`.
public final class LedgerClient {
    public let socketPath: String
    /// Seconds the connection may stay silent (no byte sent or received) before the request fails with `timeout`
    /// (0: forever).
    public let timeoutSeconds: Int
    private let client: AsyncLedgerClient

    /// A client of the server listening on `socketPath`; it connects with the first request.
    public init(socketPath: String, timeoutSeconds: Int = 30) throws(CodedError) {
        client = try AsyncLedgerClient(socketPath: socketPath, timeoutSeconds: timeoutSeconds)
        self.socketPath = socketPath
        self.timeoutSeconds = timeoutSeconds
    }

    /// Sends one request, once, and waits for its response (as `AsyncLedgerClient.request`).
    public func request(method: String, path: String, body: [UInt8] = [], contentType: String = "application/json")
        throws(CodedError) -> LedgerResponse
    {
        let client = self.client
        return try Self.wait { () async throws(CodedError) in
            try await client.exchange(method: method, path: path, body: body, contentType: contentType)
        }
    }

    /// Convenience for `GET`.
    public func get(_ path: String) throws(CodedError) -> LedgerResponse {
        try request(method: "GET", path: path)
    }

    /// Runs `operation` as a task and blocks the calling thread until it has finished.
    private static func wait(_ operation: @escaping @Sendable () async throws(CodedError) -> LedgerResponse)
        throws(CodedError) -> LedgerResponse
    {
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        Task {
            let result: Result<LedgerResponse, CodedError>
            do throws(CodedError) {
                result = .success(try await operation())
            } catch {
                result = .failure(error)
            }
            outcome.result.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.result.withLock { $0! }.get()
    }

    /// What the task hands back to the waiting thread.
    private final class Outcome: Sendable {
        let result = Mutex<Result<LedgerResponse, CodedError>?>(nil)
    }
}
