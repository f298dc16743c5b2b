import Foundation
import LedgerClient
import LedgerErrors

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
    public func send(_ bytes: [UInt8]) -> Bool { Self.send(fd, bytes) }

    /// Waits until `fd` has something to read (bytes, or the peer's close), at most `seconds`; false when the time
    /// passes first. A signal that interrupts the wait (`EINTR`) does not end it: it goes on for the time left. A
    /// fuzzer's thread gets one every few seconds (libFuzzer's `-timeout` alarm), and an answer on its way is not
    /// one that never comes.
    public static func waitReadable(_ fd: Int32, seconds: Double) -> Bool {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, seconds) * 1e9)
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            let left = now < deadline ? Int32(clamping: (deadline - now + 999_999) / 1_000_000) : 0
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, left)
            if ready > 0 { return true }
            if ready < 0 && errno == EINTR { continue }
            return false
        }
    }

    /// Sends every byte of `bytes` on `fd` (false when the peer is gone).
    public static func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// Receives what `fd` has into `buffer`: the count, 0 when the peer closed, -1 on an error.
    public static func receive(_ fd: Int32, into buffer: inout [UInt8]) -> Int {
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            return n
        }
    }

    /// Reads until the peer closes or `seconds` pass; `closed` says which.
    public func readUntilClosed(seconds: Double) -> (text: String, closed: Bool) {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return (String(decoding: received, as: UTF8.self), false) }
            if !Self.waitReadable(fd, seconds: left) { continue }
            let n = Self.receive(fd, into: &buffer)
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
            guard Self.waitReadable(fd, seconds: 0.1) else { continue }
            let n = Self.receive(fd, into: &buffer)
            if n <= 0 { return received.isEmpty ? nil : String(decoding: received, as: UTF8.self) }
            received += buffer[0..<n]
        }
        return nil
    }
}
