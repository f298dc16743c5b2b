import Foundation
import Hummingbird
import LedgerStore
import NIOCore

// MARK: - APIError

/// A refusal of a whole request, answered as `{"error":{"code","message"}}` (API.md "Errors").
///
/// Compared on the code only, like the other error types of the project.
public struct APIError: Error, HTTPResponseError, Hashable, CustomStringConvertible, Sendable {
    public let status: HTTPResponse.Status
    public let code: String
    public let message: String
    /// Seconds the client should wait before retrying (503 answers).
    public let retryAfter: Int?
    /// Answer with `Connection: close` and close once it is written: the rest of the request is not worth reading
    /// (a body over the limit) or cannot be framed (a body that does not parse).
    public let closesConnection: Bool

    public init(
        _ status: HTTPResponse.Status, code: String, message: String, retryAfter: Int? = nil, closesConnection: Bool = false
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
        self.closesConnection = closesConnection
    }

    public static func == (a: APIError, b: APIError) -> Bool { a.code == b.code }
    public func hash(into h: inout Hasher) { h.combine(code) }
    public var description: String { "\(status.code) \(code): \(message)" }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = JSONBody.response(status: status, ErrorDocument(error: .init(code: code, message: message)))
        if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        if closesConnection { response.headers[.connection] = "close" }
        return response
    }

    /// The document every error answer carries.
    struct ErrorDocument: Codable, Sendable {
        struct Info: Codable, Sendable {
            var code: String
            var message: String
        }
        var error: Info
    }

    // MARK: - The errors of API.md

    static func invalidJSON(_ message: String) -> APIError { APIError(.badRequest, code: "invalid_json", message: message) }
    static func invalidQuery(_ message: String) -> APIError {
        APIError(.badRequest, code: "invalid_query", message: message)
    }
    static func tooLarge(limit: Int) -> APIError {
        APIError(
            .contentTooLarge, code: "too_large", message: "the request body exceeds \(limit) bytes", closesConnection: true)
    }
    /// The body's framing does not parse (a bad chunk size, too many trailers, an unsupported transfer coding):
    /// the caller's fault, and the connection cannot be trusted to find the next request.
    static func invalidBody(_ message: String) -> APIError {
        APIError(.badRequest, code: "invalid_body", message: message, closesConnection: true)
    }
    /// A transfer coding other than `chunked`: the body cannot be read, so the connection closes after the answer.
    static func unsupportedTransferEncoding(_ codings: String) -> APIError {
        APIError(
            .notImplemented, code: "unsupported_transfer_encoding",
            message: "Transfer-Encoding '\(codings)' is not supported; send the body plain with Content-Length, or chunked",
            closesConnection: true)
    }
    static func batchTooLarge(count: Int, limit: Int) -> APIError {
        APIError(.contentTooLarge, code: "batch_too_large", message: "the batch holds \(count) inputs; at most \(limit) are accepted")
    }
    static func unsupportedMediaType(_ type: String) -> APIError {
        APIError(
            .unsupportedMediaType, code: "unsupported_media_type",
            message: "content type '\(type)' is not accepted; use application/json, application/x-ndjson or text/plain")
    }
    static func forbidden(_ message: String) -> APIError { APIError(.forbidden, code: "forbidden", message: message) }
    static func notFound(_ message: String) -> APIError { APIError(.notFound, code: "not_found", message: message) }

    /// The answer for a store failure: 503 with Retry-After when retrying helps, 500 otherwise.
    static func from(_ error: LedgerError) -> APIError {
        switch error.code {
        case "overloaded": APIError(.serviceUnavailable, code: error.code, message: error.message, retryAfter: 1)
        case "shutting_down": APIError(.serviceUnavailable, code: error.code, message: error.message, retryAfter: 5)
        case "storage_error": APIError(.serviceUnavailable, code: error.code, message: error.message, retryAfter: 30)
        // 503 rather than 507: API.md promises 503 for a full disk, and clients already retry 503 after Retry-After.
        case "storage_full": APIError(.serviceUnavailable, code: error.code, message: error.message, retryAfter: 30)
        default: APIError(.internalServerError, code: error.code, message: error.message)
        }
    }
}

// MARK: - JSON bodies

/// Encodes answers; one encoder for every route, so documents look alike (keys in declaration order).
enum JSONBody {
    static func encode(_ value: some Encodable) -> ByteBuffer {
        if let direct = value as? any DirectJSON {
            var json = JSONWriter()
            direct.write(to: &json)
            return ByteBuffer(bytes: json.bytes)
        }
        do {
            return ByteBuffer(bytes: try StreamingJSONEncoder.encode(value))
        } catch {
            // Our own documents always encode; this is a programming error, but it must not take the server down.
            return ByteBuffer(string: #"{"error":{"code":"internal","message":"the answer could not be encoded"}}"#)
        }
    }

    static func response(status: HTTPResponse.Status = .ok, _ value: some Encodable) -> Response {
        var buffer = encode(value)
        buffer.writeString("\n")
        return Response(
            status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: buffer))
    }
}
