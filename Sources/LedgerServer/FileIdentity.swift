#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What lstat(2) says about a path: enough to tell a socket, and to tell this socket from a replacement.
///
/// A trap of release (whole-module) builds with MemberImportVisibility: `struct stat` is attributed to whichever
/// module first brought in sys/stat.h while the files before this one were checked (CDispatch, CoreFoundation), and
/// `Glibc.stat()` is then refused as "not imported". A file that sorts before this one and uses Foundation's or the
/// C library's time functions triggers it (Routes+FastReads.swift is named to sort after it).
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
