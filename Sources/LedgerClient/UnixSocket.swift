#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LedgerErrors

// MARK: - UnixSocket

/// Reaching a Unix socket by its path: the server asks it whether another server already answers on the path it is
/// about to take, and the client refuses a path longer than a socket address holds before it tries.
public enum UnixSocket {
    /// The longest path a Unix socket address holds, in bytes (without the terminating NUL).
    public static let maxPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// A new stream socket connected to the Unix socket at `path`; the caller owns (and closes) the descriptor.
    /// Throws `path_too_long`, `socket` or `connect`.
    public static func connect(_ path: String) throws(CodedError) -> Int32 {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count <= maxPathLength else {
            throw CodedError(.pathTooLong, "socket path longer than \(maxPathLength) bytes")
        }
        #if canImport(Glibc)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw CodedError(.socket, String(cString: strerror(errno))) }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            raw[bytes.count] = 0
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                #if canImport(Glibc)
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                #else
                Darwin.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                #endif
            }
        }
        guard rc == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw CodedError(.connect, "\(path): \(message)")
        }
        return fd
    }

    /// Whether something accepts connections on the socket at `path`.
    public static func isLive(_ path: String) -> Bool {
        guard let fd = try? connect(path) else { return false }
        close(fd)
        return true
    }
}
