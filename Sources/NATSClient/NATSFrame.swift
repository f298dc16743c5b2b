import Foundation
import NIOCore

/// One message delivered to a subscription (`MSG`, or `HMSG` with headers).
public struct NATSMessage: Sendable {
    public var subject: String
    public var sid: Int
    /// Where an answer goes (a request's inbox, or JetStream's `$JS.ACK…` subject), when the sender named one.
    public var replyTo: String?
    /// The headers, in the order sent (`Nats-Msg-Id`, `Nats-Expected-Stream`, …).
    public var headers: [(name: String, value: String)]
    /// A status carried by the header line (`NATS/1.0 408 Request Timeout`): JetStream's pull answers and the
    /// server's "no responders" (503) come as messages without payload.
    public var status: Int?
    public var statusDescription: String?
    public var payload: [UInt8]

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// What the server sends, one protocol operation at a time.
enum NATSFrame: Sendable {
    case info(String)
    case message(NATSMessage)
    case ping
    case pong
    case ok
    case error(String)
}

/// Splits the server's byte stream into operations: control lines end with CRLF; `MSG` and `HMSG` are followed by
/// their size in bytes and a CRLF.
struct NATSFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = NATSFrame
    /// A control line longer than this is a broken server or stream (the server's own limit is 4 KiB).
    static let maxControlLine = 64 * 1024

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let frame = try Self.parse(&buffer) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(frame))
        return .continue
    }

    /// One operation from the front of `buffer`, consuming it; nil when the buffer holds less than one.
    static func parse(_ buffer: inout ByteBuffer) throws -> NATSFrame? {
        let view = buffer.readableBytesView
        guard let cr = view.firstIndex(of: UInt8(ascii: "\r")) else {
            if view.count > maxControlLine { throw NATSError.protocolViolation("control line over \(maxControlLine) bytes") }
            return nil
        }
        guard cr + 1 < view.endIndex else { return nil }
        let lineLength = cr - view.startIndex
        let line = String(decoding: view[view.startIndex..<cr], as: UTF8.self)
        let afterLine = lineLength + 2
        let tokens = line.split(separator: " ", omittingEmptySubsequences: true)
        guard let op = tokens.first?.uppercased() else {
            buffer.moveReaderIndex(forwardBy: afterLine)
            return try parse(&buffer)
        }
        switch op {
        case "MSG", "HMSG":
            let headered = op == "HMSG"
            let fixed = headered ? 5 : 4
            guard tokens.count == fixed || tokens.count == fixed + 1,
                let sid = Int(tokens[2]), let total = Int(tokens[tokens.count - 1]), total >= 0
            else { throw NATSError.protocolViolation("malformed \(op) line: \(line)") }
            let headerLength = headered ? Int(tokens[tokens.count - 2]) ?? -1 : 0
            guard headerLength >= 0, headerLength <= total else {
                throw NATSError.protocolViolation("malformed \(op) sizes: \(line)")
            }
            guard buffer.readableBytes >= afterLine + total + 2 else { return nil }
            buffer.moveReaderIndex(forwardBy: afterLine)
            let body = buffer.readBytes(length: total) ?? []
            buffer.moveReaderIndex(forwardBy: 2)
            var message = NATSMessage(
                subject: String(tokens[1]), sid: sid, replyTo: tokens.count == fixed + 1 ? String(tokens[3]) : nil,
                headers: [], status: nil, statusDescription: nil, payload: Array(body[headerLength...]))
            if headered { parseHeaders(Array(body[..<headerLength]), into: &message) }
            return .message(message)
        case "PING":
            buffer.moveReaderIndex(forwardBy: afterLine)
            return .ping
        case "PONG":
            buffer.moveReaderIndex(forwardBy: afterLine)
            return .pong
        case "+OK":
            buffer.moveReaderIndex(forwardBy: afterLine)
            return .ok
        case "-ERR":
            buffer.moveReaderIndex(forwardBy: afterLine)
            return .error(String(line.dropFirst(4)).trimmed(" '"))
        case "INFO":
            buffer.moveReaderIndex(forwardBy: afterLine)
            return .info(String(line.dropFirst(4)).trimmed(" "))
        default:
            throw NATSError.protocolViolation("unknown operation: \(line.prefix(80))")
        }
    }

    /// `NATS/1.0[ status[ description]]` then `Name: value` lines.
    static func parseHeaders(_ bytes: [UInt8], into message: inout NATSMessage) {
        let text = String(decoding: bytes, as: UTF8.self)
        var lines = text.components(separatedBy: "\r\n").makeIterator()
        if let first = lines.next() {
            let parts = first.split(separator: " ", maxSplits: 2)
            if parts.count >= 2, let code = Int(parts[1]) {
                message.status = code
                message.statusDescription = parts.count == 3 ? String(parts[2]) : nil
            }
        }
        while let line = lines.next() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            message.headers.append(
                (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmed(" ")))
        }
    }
}

extension String {
    fileprivate func trimmed(_ set: String) -> String {
        var s = Substring(self)
        while let c = s.first, set.contains(c) { s = s.dropFirst() }
        while let c = s.last, set.contains(c) { s = s.dropLast() }
        return String(s)
    }
}

/// Why a NATS operation failed.
public enum NATSError: Error, Sendable, CustomStringConvertible, Equatable {
    /// No server of the list accepts connections right now (or the connection was lost during the operation).
    case notConnected
    /// No answer within the time allowed.
    case timeout
    /// Nobody subscribes to the request's subject (the server's 503 status).
    case noResponders(String)
    /// The server sent `-ERR`, or bytes that are not the protocol.
    case server(String)
    case protocolViolation(String)
    /// JetStream's API refused the request (its `error` object).
    case jetStream(code: Int, errorCode: Int, description: String)
    /// The connection was closed by its owner.
    case closed

    public var description: String {
        switch self {
        case .notConnected: "not connected to any NATS server"
        case .timeout: "no answer from NATS in time"
        case .noResponders(let subject): "no responders on \(subject) (is JetStream enabled?)"
        case .server(let message): "NATS server error: \(message)"
        case .protocolViolation(let message): "NATS protocol violation: \(message)"
        case .jetStream(let code, let errorCode, let text): "JetStream error \(code)/\(errorCode): \(text)"
        case .closed: "the NATS connection is closed"
        }
    }
}
