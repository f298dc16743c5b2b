#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LedgerWire

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

/// A small HTTP/1.1 client for the ledger's Unix socket: one keep-alive connection, blocking calls.
///
/// Not thread-safe: use one client per thread (load tools) or the `AsyncLedgerClient` wrapper. No dependency beyond
/// the C library and the error codes (`LedgerWire`), so any Swift service can embed it. Failures of the transport are
/// `CodedError`s: `closed`, `timeout`, `protocol`, `send`, `recv`, and `UnixSocket.connect`'s.
public final class LedgerClient {
    public let socketPath: String
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []
    private var readOffset = 0

    /// Seconds a send or receive may block before the request fails with `timeout` (0: forever).
    public let timeoutSeconds: Int

    /// Connects to the server listening on `socketPath`.
    public init(socketPath: String, timeoutSeconds: Int = 30) throws(CodedError) {
        self.socketPath = socketPath
        self.timeoutSeconds = timeoutSeconds
        try connect()
    }

    deinit { if fd >= 0 { close(fd) } }

    private func connect() throws(CodedError) {
        if fd >= 0 { close(fd) }
        fd = -1
        fd = try UnixSocket.connect(socketPath)
        if timeoutSeconds > 0 {
            var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        }
        buffer.removeAll(keepingCapacity: true)
        readOffset = 0
    }

    /// Sends one request and reads its response. Reconnects once if the server closed the idle connection.
    public func request(method: String, path: String, body: [UInt8] = [], contentType: String = "application/json")
        throws(CodedError) -> LedgerResponse
    {
        do {
            return try exchange(method: method, path: path, body: body, contentType: contentType)
        } catch let error where error.code == .closed {
            try connect()
            return try exchange(method: method, path: path, body: body, contentType: contentType)
        }
    }

    /// Convenience for `GET`.
    public func get(_ path: String) throws(CodedError) -> LedgerResponse {
        try request(method: "GET", path: path)
    }

    /// Sends `requests` back to back on the connection (HTTP pipelining), then reads every response in order.
    public func pipeline(
        _ requests: [(method: String, path: String, body: [UInt8])], contentType: String = "application/json"
    ) throws(CodedError) -> [LedgerResponse] {
        var out: [UInt8] = []
        for r in requests { out += Self.encode(method: r.method, path: r.path, body: r.body, contentType: contentType) }
        try send(out)
        var responses: [LedgerResponse] = []
        for _ in requests { responses.append(try readResponse()) }
        return responses
    }

    private func exchange(method: String, path: String, body: [UInt8], contentType: String) throws(CodedError)
        -> LedgerResponse
    {
        try send(Self.encode(method: method, path: path, body: body, contentType: contentType))
        return try readResponse()
    }

    static func encode(method: String, path: String, body: [UInt8], contentType: String) -> [UInt8] {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\n"
        if method != "GET" || !body.isEmpty {
            head += "Content-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n"
        }
        head += "\r\n"
        return Array(head.utf8) + body
    }

    private func send(_ bytes: [UInt8]) throws(CodedError) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE || errno == ECONNRESET { throw CodedError(.closed, "connection closed") }
                if errno == EAGAIN || errno == EWOULDBLOCK { throw CodedError(.timeout, "send timed out") }
                throw CodedError(.send, String(cString: strerror(errno)))
            }
            sent += n
        }
    }

    /// Appends what the socket has to `buffer` (offsets into it stay valid).
    private func fill() throws(CodedError) {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 65536, 0) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                throw CodedError(.timeout, "no answer within \(timeoutSeconds) s")
            }
            if n < 0 && errno == ECONNRESET { throw CodedError(.closed, "connection reset by the server") }
            if n < 0 { throw CodedError(.recv, String(cString: strerror(errno))) }
            if n == 0 { throw CodedError(.closed, "connection closed by the server") }
            buffer += chunk[0..<n]
            return
        }
    }

    private func readResponse() throws(CodedError) -> LedgerResponse {
        // Drop what earlier responses consumed, so the buffer holds only unread bytes.
        if readOffset == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readOffset = 0
        } else if readOffset > 65536 {
            buffer.removeFirst(readOffset)
            readOffset = 0
        }
        // Head.
        var headEnd: Int?
        var searchFrom = readOffset
        while headEnd == nil {
            if buffer.count - searchFrom >= 4 {
                for i in max(searchFrom, readOffset)...(buffer.count - 4)
                where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
                    headEnd = i
                    break
                }
            }
            if headEnd == nil {
                searchFrom = max(readOffset, buffer.count - 3)
                try fill()
            }
        }
        let head = String(decoding: buffer[readOffset..<headEnd!], as: UTF8.self)
        readOffset = headEnd! + 4
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard !lines.isEmpty else { throw CodedError(.protocol, "empty response head") }
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw CodedError(.protocol, "bad status line")
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingSpaces
        }
        // Body: Content-Length or chunked.
        var body: [UInt8] = []
        if let length = headers["content-length"].flatMap({ Int($0) }) {
            while buffer.count - readOffset < length { try fill() }
            body = Array(buffer[readOffset..<(readOffset + length)])
            readOffset += length
        } else if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            while true {
                let line = try readLine()
                guard let size = Int(line.split(separator: ";").first.map(String.init) ?? "", radix: 16) else {
                    throw CodedError(.protocol, "bad chunk size '\(line)'")
                }
                if size == 0 {
                    _ = try readLine()
                    break
                }
                while buffer.count - readOffset < size + 2 { try fill() }
                body += buffer[readOffset..<(readOffset + size)]
                readOffset += size + 2
            }
        }
        return LedgerResponse(status: status, headers: headers, body: body)
    }

    private func readLine() throws(CodedError) -> String {
        while true {
            if let i = buffer[readOffset...].firstIndex(of: 10) {
                let line = String(decoding: buffer[readOffset..<i], as: UTF8.self).trimmingSpaces
                readOffset = i + 1
                return line
            }
            try fill()
        }
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\r" || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\r" || l == "\t" { s.removeLast() }
        return String(s)
    }
}
