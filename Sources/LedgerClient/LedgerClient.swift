#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a request over the socket failed.
public struct LedgerClientError: Error, Hashable, CustomStringConvertible, Sendable {
    public let code: String
    public let message: String
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
    public var description: String { "\(code): \(message)" }
}

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
/// the C library, so any Swift service can embed it.
public final class LedgerClient {
    public let socketPath: String
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []
    private var readOffset = 0

    /// Seconds a send or receive may block before the request fails with `timeout` (0: forever).
    public let timeoutSeconds: Int

    /// Connects to the server listening on `socketPath`.
    public init(socketPath: String, timeoutSeconds: Int = 30) throws(LedgerClientError) {
        self.socketPath = socketPath
        self.timeoutSeconds = timeoutSeconds
        try connect()
    }

    deinit { if fd >= 0 { close(fd) } }

    private func connect() throws(LedgerClientError) {
        if fd >= 0 { close(fd) }
        fd = -1
        fd = try connectUnixSocket(socketPath)
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
        throws(LedgerClientError) -> LedgerResponse
    {
        do {
            return try exchange(method: method, path: path, body: body, contentType: contentType)
        } catch let error where error.code == "closed" {
            try connect()
            return try exchange(method: method, path: path, body: body, contentType: contentType)
        }
    }

    /// Convenience for `GET`.
    public func get(_ path: String) throws(LedgerClientError) -> LedgerResponse {
        try request(method: "GET", path: path)
    }

    /// Sends `requests` back to back on the connection (HTTP pipelining), then reads every response in order.
    public func pipeline(
        _ requests: [(method: String, path: String, body: [UInt8])], contentType: String = "application/json"
    ) throws(LedgerClientError) -> [LedgerResponse] {
        var out: [UInt8] = []
        for r in requests { out += Self.encode(method: r.method, path: r.path, body: r.body, contentType: contentType) }
        try send(out)
        var responses: [LedgerResponse] = []
        for _ in requests { responses.append(try readResponse()) }
        return responses
    }

    private func exchange(method: String, path: String, body: [UInt8], contentType: String) throws(LedgerClientError)
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

    private func send(_ bytes: [UInt8]) throws(LedgerClientError) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EPIPE || errno == ECONNRESET { throw LedgerClientError(code: "closed", message: "connection closed") }
                if errno == EAGAIN || errno == EWOULDBLOCK { throw LedgerClientError(code: "timeout", message: "send timed out") }
                throw LedgerClientError(code: "send", message: String(cString: strerror(errno)))
            }
            sent += n
        }
    }

    /// Appends what the socket has to `buffer` (offsets into it stay valid).
    private func fill() throws(LedgerClientError) {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 65536, 0) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                throw LedgerClientError(code: "timeout", message: "no answer within \(timeoutSeconds) s")
            }
            if n < 0 && errno == ECONNRESET { throw LedgerClientError(code: "closed", message: "connection reset by the server") }
            if n < 0 { throw LedgerClientError(code: "recv", message: String(cString: strerror(errno))) }
            if n == 0 { throw LedgerClientError(code: "closed", message: "connection closed by the server") }
            buffer += chunk[0..<n]
            return
        }
    }

    private func readResponse() throws(LedgerClientError) -> LedgerResponse {
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
        guard !lines.isEmpty else { throw LedgerClientError(code: "protocol", message: "empty response head") }
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw LedgerClientError(code: "protocol", message: "bad status line")
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
                    throw LedgerClientError(code: "protocol", message: "bad chunk size '\(line)'")
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

    private func readLine() throws(LedgerClientError) -> String {
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

/// A new stream socket connected to the Unix socket at `path`; the caller owns (and closes) the descriptor.
public func connectUnixSocket(_ path: String) throws(LedgerClientError) -> Int32 {
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    let capacity = MemoryLayout.size(ofValue: addr.sun_path)
    guard bytes.count < capacity else {
        throw LedgerClientError(code: "path_too_long", message: "socket path longer than \(capacity - 1) bytes")
    }
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw LedgerClientError(code: "socket", message: String(cString: strerror(errno))) }
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in
        for (i, b) in bytes.enumerated() { raw[i] = b }
        raw[bytes.count] = 0
    }
    let rc = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    guard rc == 0 else {
        let message = String(cString: strerror(errno))
        close(fd)
        throw LedgerClientError(code: "connect", message: "\(path): \(message)")
    }
    return fd
}
