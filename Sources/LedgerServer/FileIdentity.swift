#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What lstat(2) says about a path: enough to tell a socket, and to tell this socket from a replacement.
struct FileIdentity {
    var mode: UInt32
    var inode: UInt64

    init?(_ path: String) {
        #if canImport(Glibc)
        var info = Glibc.stat()
        #else
        var info = Darwin.stat()
        #endif
        guard lstat(path, &info) == 0 else { return nil }
        mode = UInt32(info.st_mode)
        inode = UInt64(info.st_ino)
    }

    var isSocket: Bool { (mode & UInt32(S_IFMT)) == UInt32(S_IFSOCK) }
}
