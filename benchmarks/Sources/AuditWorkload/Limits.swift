import Crypto

#if canImport(Glibc)
import Glibc
#endif

// MARK: - The machine's limits for the same bytes

/// Reads `path` start to end in 1 MiB reads (what `cat path > /dev/null` does), passing each to `body`; returns the
/// bytes read.
public func readWhole(_ path: String, _ body: (UnsafeRawBufferPointer) -> Void = { _ in }) -> Int {
    let fd = open(path, O_RDONLY)
    precondition(fd >= 0, "cannot open \(path)")
    defer { close(fd) }
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
    defer { buffer.deallocate() }
    var total = 0
    while true {
        let n = read(fd, buffer.baseAddress, buffer.count)
        precondition(n >= 0, "read failed")
        if n == 0 { return total }
        body(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
        total += n
    }
}

/// SHA-256 over the whole of `path` (what `sha256sum path` does); returns the bytes hashed.
public func hashWhole(_ path: String) -> Int {
    var hash = SHA256()
    let total = readWhole(path) { hash.update(bufferPointer: $0) }
    withExtendedLifetime(hash.finalize()) {}
    return total
}
