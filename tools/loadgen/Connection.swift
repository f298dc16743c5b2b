#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LedgerClient
import LedgerErrors

/// One keep-alive HTTP/1.1 connection to the ledger's socket with blocking calls, as lean as the peers' own load
/// tools (pgbench, redis-benchmark): a request is one `write`, an answer is read into one reused buffer. The load
/// generator measures the server, so its client must cost far less than the server's answer; `LedgerClient` (on
/// AsyncHTTPClient, a task and a semaphore per call) costs more than a kept answer does.
///
/// It reads only what the ledger answers these requests with: a head, then a `Content-Length` body. Errors are the
/// client's codes (`connect`, `timeout`, `closed`, `send`, `recv`, `protocol`); after one, the next request connects
/// anew.
final class Connection {
    let socketPath: String
    let timeoutSeconds: Int
    private var fd: Int32 = -1
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    /// Bytes of `buffer` received and not yet read.
    private var received = 0..<0

    init(socketPath: String, timeoutSeconds: Int) {
        self.socketPath = socketPath
        self.timeoutSeconds = timeoutSeconds
    }

    deinit { disconnect() }

    /// Sends one request and returns the answer's status (its body is read and dropped).
    func request(method: String, path: String, body: [UInt8] = [], contentType: String = "application/json")
        throws(CodedError) -> Int
    {
        if fd < 0 { try connect() }
        // A GET carries no body and says so by sending no body fields (as curl and browsers do).
        let fields = method == "GET" ? "" : "Content-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n"
        var message = Array("\(method) \(path) HTTP/1.1\r\nHost: ledger\r\n\(fields)\r\n".utf8)
        message += body
        do throws(CodedError) {
            try sendAll(message)
            let (status, closes) = try readAnswer()
            if closes { disconnect() }
            return status
        } catch {
            disconnect()
            throw error
        }
    }

    private func connect() throws(CodedError) {
        fd = try UnixSocket.connect(socketPath)
        if timeoutSeconds > 0 {
            var limit = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        }
        received = 0..<0
    }

    private func disconnect() {
        if fd >= 0 { close(fd) }
        fd = -1
    }

    private func sendAll(_ bytes: [UInt8]) throws(CodedError) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw Self.failure(errno, .send, "sending") }
            sent += n
        }
    }

    /// Reads one answer: its status, and whether it said `Connection: close`.
    private func readAnswer() throws(CodedError) -> (status: Int, closes: Bool) {
        var headEnd: Int?
        while true {
            headEnd = Self.endOfHead(buffer[received])
            if headEnd != nil { break }
            try receiveMore()
        }
        let head = buffer[received.lowerBound..<headEnd!]
        received = headEnd!..<received.upperBound
        let text = String(decoding: head, as: UTF8.self)
        let lines = text.split(separator: "\r\n")
        guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1.1 "),
            let status = Int(statusLine.dropFirst(9).prefix(3))
        else { throw CodedError(.protocol, "not an HTTP/1.1 answer: \(text.prefix(80))") }
        var length = 0
        var closes = false
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].drop { $0 == " " }
            if name == "content-length" {
                guard let n = Int(value) else { throw CodedError(.protocol, "Content-Length '\(value)'") }
                length = n
            } else if name == "connection" {
                closes = value.lowercased() == "close"
            } else if name == "transfer-encoding" {
                throw CodedError(.protocol, "a chunked answer (the load generator reads Content-Length bodies)")
            }
        }
        while received.count < length { try receiveMore() }
        received = (received.lowerBound + length)..<received.upperBound
        return (status, closes)
    }

    /// Moves what is unread to the front of the buffer (growing it when full) and receives more after it.
    private func receiveMore() throws(CodedError) {
        if received.lowerBound > 0 {
            let count = received.count
            buffer.withUnsafeMutableBytes { raw in
                raw.baseAddress!.copyMemory(from: raw.baseAddress! + received.lowerBound, byteCount: count)
            }
            received = 0..<count
        }
        if received.upperBound == buffer.count { buffer += [UInt8](repeating: 0, count: buffer.count) }
        let end = received.upperBound
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + end, $0.count - end, 0) }
        if n < 0 && errno == EINTR { return }
        guard n > 0 else {
            throw n == 0 ? CodedError(.closed, "the server closed the connection") : Self.failure(errno, .recv, "receiving")
        }
        received = received.lowerBound..<(end + n)
    }

    /// The index just past the `\r\n\r\n` that ends a head at the start of `bytes`.
    private static func endOfHead(_ bytes: ArraySlice<UInt8>) -> Int? {
        var i = bytes.startIndex
        while i + 3 < bytes.endIndex {
            if bytes[i] == 13, bytes[i + 1] == 10, bytes[i + 2] == 13, bytes[i + 3] == 10 { return i + 4 }
            i += 1
        }
        return nil
    }

    private static func failure(_ number: Int32, _ code: ErrorCode, _ doing: String) -> CodedError {
        number == EAGAIN || number == EWOULDBLOCK
            ? CodedError(.timeout, "no answer within the timeout while \(doing)")
            : CodedError(code, "\(doing): \(String(cString: strerror(number)))")
    }
}
