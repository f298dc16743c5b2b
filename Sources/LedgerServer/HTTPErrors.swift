import Hummingbird
import LedgerAPI
import LedgerStore
import LedgerErrors
import NIOCore

// MARK: - Error codes over HTTP

/// How the server answers each error code (docs/socket-api.md, "Errors"): the one table from code to HTTP status,
/// `Retry-After` and whether the connection closes after the answer. The body is always the code's `ErrorDocument`.
enum HTTPErrors {
    /// The HTTP side of one code.
    struct Answer: Hashable, Sendable {
        var status: HTTPResponse.Status
        /// Seconds the client should wait before retrying (503 answers).
        var retryAfter: Int?
        /// Answer with `Connection: close` and close once it is written: the rest of the request is not worth reading
        /// (a body over the limit) or cannot be framed (a body that does not parse, a coding the server cannot read).
        var closesConnection: Bool

        init(_ status: HTTPResponse.Status, retryAfter: Int? = nil, closesConnection: Bool = false) {
            self.status = status
            self.retryAfter = retryAfter
            self.closesConnection = closesConnection
        }
    }

    /// Every code the server answers with a status of its own. A refused input's code that is not listed answers
    /// 422 (well-formed but not acceptable); any other code, 500.
    static let table: [ErrorCode: Answer] = [
        // The caller's mistakes.
        .invalidJSON: Answer(.badRequest),
        .invalidQuery: Answer(.badRequest),
        .invalidBody: Answer(.badRequest, closesConnection: true),
        .badRequest: Answer(.badRequest),
        .forbidden: Answer(.forbidden),
        .notFound: Answer(.notFound),
        .methodNotAllowed: Answer(.methodNotAllowed),
        .requestTimeout: Answer(.requestTimeout, closesConnection: true),
        .tooLarge: Answer(.contentTooLarge, closesConnection: true),
        .batchTooLarge: Answer(.contentTooLarge),
        .unsupportedMediaType: Answer(.unsupportedMediaType),
        // A ledger made without pseudonyms: the request is sound, the ledger cannot do it (RFC 9110 §15.5.10).
        .cannotForget: Answer(.conflict),
        // RFC 9112 §6.1: 501 for a transfer coding the server does not understand.
        .unsupportedTransferEncoding: Answer(.notImplemented, closesConnection: true),
        // Back-pressure and storage: retrying helps, after a while.
        .overloaded: Answer(.serviceUnavailable, retryAfter: 1),
        .shuttingDown: Answer(.serviceUnavailable, retryAfter: 5),
        .intakeUnavailable: Answer(.serviceUnavailable, retryAfter: 1),
        // RFC 9110 §15.5.20: the request went to a server that does not hold what it names.
        .wrongPartition: Answer(.misdirectedRequest),
        .storageError: Answer(.serviceUnavailable, retryAfter: 30),
        // 503 rather than 507: the socket API promises 503 for a full disk, and clients retry 503 after Retry-After.
        .storageFull: Answer(.serviceUnavailable, retryAfter: 30),
        .internal: Answer(.internalServerError),
    ]

    /// The answer for `code`; `otherwise` for a code the table does not name.
    static func answer(for code: ErrorCode, otherwise: HTTPResponse.Status = .internalServerError) -> Answer {
        table[code] ?? Answer(otherwise)
    }

    /// The status of an input the ledger refused (a `rejected` result): 400 when it is not JSON, 422 otherwise.
    static func status(ofRefusedInput code: ErrorCode) -> HTTPResponse.Status {
        answer(for: code, otherwise: .unprocessableContent).status
    }

    /// The error answer for `error`, by the table; `status`, `retryAfter` and `closesConnection` override it where one
    /// refusal of a code differs (Hummingbird's own errors keep their status; followers wait longer).
    static func response(
        _ error: CodedError, status: HTTPResponse.Status? = nil, retryAfter: Int?? = nil, closesConnection: Bool? = nil
    ) -> Response {
        buffered(error, status: status, retryAfter: retryAfter, closesConnection: closesConnection).response
    }

    /// `response(…)` before it becomes a Hummingbird `Response`: what the fast path writes itself.
    static func buffered(
        _ error: CodedError, status: HTTPResponse.Status? = nil, retryAfter: Int?? = nil, closesConnection: Bool? = nil
    ) -> BufferedResponse {
        let answer = answer(for: error.code)
        var response = JSONBody.buffered(status: status ?? answer.status, ErrorDocument(error))
        if let retryAfter = retryAfter ?? answer.retryAfter { response[.retryAfter] = String(retryAfter) }
        if closesConnection ?? answer.closesConnection { response[.connection] = "close" }
        return response
    }
}

// MARK: - Answers written before the HTTP pipeline

extension HTTPErrors {
    /// The whole answer, head and body, for a connection the server closes before (or instead of) reading a request:
    /// a head that stalled, a connection over the limit. Written to the channel as bytes; the connection closes after.
    static func closingAnswer(_ error: CodedError) -> ByteBuffer {
        let answer = answer(for: error.code)
        let body = JSONWriter.bytes(of: ErrorDocument(error)) + [UInt8(ascii: "\n")]
        var head = "HTTP/1.1 \(answer.status.code) \(answer.status.reasonPhrase)\r\nContent-Type: application/json\r\n"
        if let retryAfter = answer.retryAfter { head += "Retry-After: \(retryAfter)\r\n" }
        head += "Connection: close\r\nContent-Length: \(body.count)\r\n\r\n"
        var buffer = ByteBuffer(string: head)
        buffer.writeBytes(body)
        return buffer
    }
}

extension CodedError {
    /// The refusal of a store failure, with the store's code and message.
    init(_ error: LedgerError) { self.init(error.code, error.message) }
}

// MARK: - JSON bodies

/// Answers with a JSON document: the one encoder for every route, so documents look alike.
enum JSONBody {
    /// `document`'s JSON text and a newline.
    static func response(status: HTTPResponse.Status = .ok, _ document: some JSONDocument) -> Response {
        buffered(status: status, document).response
    }

    /// `response(status:_:)` before it becomes a Hummingbird `Response` (the fast path writes it itself).
    static func buffered(status: HTTPResponse.Status = .ok, _ document: some JSONDocument) -> BufferedResponse {
        var json = JSONWriter()
        document.write(to: &json)
        var buffer = ByteBuffer()
        json.withBytes { bytes in
            buffer.reserveCapacity(bytes.count + 1)
            buffer.writeBytes(bytes)
        }
        buffer.writeString("\n")
        return BufferedResponse(status: status, contentType: "application/json", body: buffer)
    }

    /// `value`'s `Codable` form (an event document) and a newline.
    static func response(status: HTTPResponse.Status = .ok, encoding value: some Encodable) throws -> Response {
        buffered(status: status, try JSONWriter.bytes(encoding: value)).response
    }

    private static func buffered(status: HTTPResponse.Status, _ bytes: [UInt8]) -> BufferedResponse {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(bytes.count + 1)
        buffer.writeBytes(bytes)
        buffer.writeString("\n")
        return BufferedResponse(status: status, contentType: "application/json", body: buffer)
    }
}

/// A whole answer with its body in one buffer: a Hummingbird `Response` for the router, or written whole by
/// `RequestPhaseHandler` for the fast path (`FastPathHandler`). Its fields are the `Response`'s, in the same order: `Content-Type`, then
/// `Content-Length` (which `Response` would append itself), then whatever the caller sets (`Retry-After`,
/// `Connection`); the server adds `Date` last. Kept as plain names and values (an `HTTPFields` made and walked
/// per answer cost the fast path a twelfth of a read); `response` makes the `HTTPFields`.
struct BufferedResponse {
    var status: HTTPResponse.Status
    /// Each field and its value, in order.
    private(set) var fields: [(field: Field, value: String)]
    var body: ByteBuffer

    /// The fields an answer of the ledger carries (besides `Date`).
    enum Field {
        case contentType, contentLength, retryAfter, connection

        /// The name as written (`HTTPField.Name`'s `rawName`).
        var name: String {
            switch self {
            case .contentType: "Content-Type"
            case .contentLength: "Content-Length"
            case .retryAfter: "Retry-After"
            case .connection: "Connection"
            }
        }
    }

    init(status: HTTPResponse.Status, contentType: String, body: ByteBuffer) {
        self.status = status
        self.fields = [(.contentType, contentType), (.contentLength, String(body.readableBytes))]
        self.body = body
    }

    /// A field's value; setting one replaces the value of that field, or adds the field last (as `HTTPFields` does
    /// for a name it holds once).
    subscript(field: Field) -> String? {
        get { fields.first { $0.field == field }?.value }
        set {
            if let index = fields.firstIndex(where: { $0.field == field }) {
                if let newValue { fields[index].value = newValue } else { fields.remove(at: index) }
            } else if let newValue {
                fields.append((field, newValue))
            }
        }
    }

    var headers: HTTPFields {
        var headers = HTTPFields()
        for (field, value) in fields {
            switch field {
            case .contentType: headers[.contentType] = value
            case .contentLength: headers[.contentLength] = value
            case .retryAfter: headers[.retryAfter] = value
            case .connection: headers[.connection] = value
            }
        }
        return headers
    }

    var response: Response {
        Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body))
    }

    /// The head as NIO's `HTTPResponseEncoder` writes what Hummingbird gives it: `HTTP/1.1`, the status code and
    /// reason phrase, each field as `Name: value`, then `Date`, then an empty line. One capacity check and plain
    /// copies (a `ByteBuffer` write per piece cost more than the rest of the head).
    func writeHead(date: String, to out: inout ByteBuffer) {
        let code = String(status.code)
        let reason = status.reasonPhrase
        var size = 9 + code.utf8.count + 1 + reason.utf8.count + 2 + 6 + date.utf8.count + 4
        for (field, value) in fields { size += field.name.utf8.count + 2 + value.utf8.count + 2 }
        out.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { raw in
            var head = ByteCopier(to: UnsafeMutableRawBufferPointer(rebasing: raw[..<size]))
            head.put("HTTP/1.1 ")
            head.put(code)
            head.put(" ")
            head.put(reason)
            head.put("\r\n")
            for (field, value) in fields {
                head.put(field.name)
                head.put(": ")
                head.put(value)
                head.put("\r\n")
            }
            head.put("Date: ")
            head.put(date)
            head.put("\r\n\r\n")
            return head.written
        }
    }

}

/// Copies bytes one after the other into memory with room for them (a struct, so no captured variable is boxed and
/// checked on every access). Every copy checks the room left: a size computed short traps rather than writing
/// past the buffer.
struct ByteCopier {
    let start: UnsafeMutableRawPointer
    let capacity: Int
    var written = 0

    init(to buffer: UnsafeMutableRawBufferPointer) {
        start = buffer.baseAddress!
        capacity = buffer.count
    }

    mutating func put(_ text: StaticString) {
        put(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func put(_ text: String) {
        var text = text
        text.withUTF8 { put(UnsafeRawBufferPointer($0)) }
    }

    mutating func put(_ bytes: UnsafeRawBufferPointer) {
        guard let from = bytes.baseAddress, !bytes.isEmpty else { return }
        precondition(written + bytes.count <= capacity, "a head larger than the room computed for it")
        (start + written).copyMemory(from: from, byteCount: bytes.count)
        written += bytes.count
    }
}
