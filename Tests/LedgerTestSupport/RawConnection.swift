import Foundation
import LedgerWire

#if canImport(Glibc)
import Glibc
#endif

/// A bare Unix-socket connection, for what a well-behaved client never sends: half a request line, a stall, bytes
/// that do not parse.
public final class RawConnection: @unchecked Sendable {
    public let fd: Int32

    public init(_ path: String) throws {
        fd = try UnixSocket.connect(path)
    }

    deinit { close(fd) }

    /// Sends every byte (false when the peer is gone).
    @discardableResult
    public func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// Reads until the peer closes or `seconds` pass; `closed` says which.
    public func readUntilClosed(seconds: Double) -> (text: String, closed: Bool) {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return (String(decoding: received, as: UTF8.self), false) }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, Int32(left * 1000) + 1)
            if ready <= 0 { continue }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return (String(decoding: received, as: UTF8.self), true) }
            received += buffer[0..<n]
        }
    }

    /// Reads one answer with a Content-Length body (enough for the server's JSON answers), or nil on close/timeout.
    public func readAnswer(seconds: Double = 10) -> String? {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while deadline.timeIntervalSinceNow > 0 {
            let text = String(decoding: received, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let head = text[..<end.lowerBound].lowercased()
                let length =
                    head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                if text[end.upperBound...].utf8.count >= length { return text }
            }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return received.isEmpty ? nil : String(decoding: received, as: UTF8.self) }
            received += buffer[0..<n]
        }
        return nil
    }
}
