#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A key or a value as LMDB hands it out: bytes inside the memory map, not a copy.
///
/// Valid until the transaction it came from ends (in a write transaction, until the next write to its database); copy
/// what must outlive that (`Array(bytes)`). It reads like any collection of bytes, bounds-checked; a pointer to the
/// bytes exists only inside `withUnsafeBytes`, for code that decodes them in place.
public struct MappedBytes {
    @usableFromInline let buffer: UnsafeRawBufferPointer

    @inlinable init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    /// Calls `body` with a pointer to the bytes, valid inside `body` only.
    @inlinable @inline(__always)
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(buffer)
    }

    /// The bytes in `range`, still in the map.
    @inlinable
    public func extracting(_ range: Range<Int>) -> MappedBytes {
        precondition(range.lowerBound >= 0 && range.upperBound <= buffer.count, "range out of bounds")
        return MappedBytes(UnsafeRawBufferPointer(rebasing: buffer[range]))
    }

    /// Whether these are exactly the bytes of `other`.
    /// - Complexity: O(n), eight bytes at a time (see `sameBytes`).
    @inlinable @inline(__always)
    public func hasSameBytes(as other: UnsafeRawBufferPointer) -> Bool { sameBytes(buffer, other) }

    /// Whether these are exactly the bytes of `other`.
    @inlinable @inline(__always)
    public func hasSameBytes(as other: [UInt8]) -> Bool {
        other.withUnsafeBytes { sameBytes(buffer, $0) }
    }
}

extension MappedBytes: RandomAccessCollection {
    public typealias Index = Int

    @inlinable public var startIndex: Int { 0 }
    @inlinable public var endIndex: Int { buffer.count }
    @inlinable public var count: Int { buffer.count }

    @inlinable
    public subscript(position: Int) -> UInt8 {
        precondition(position >= 0 && position < buffer.count, "index out of bounds")
        return buffer.load(fromByteOffset: position, as: UInt8.self)
    }

    /// The bytes as one buffer, so that copies (`Array(bytes)`, `append(contentsOf:)`) are one `memcpy`.
    @inlinable
    public func withContiguousStorageIfAvailable<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        try buffer.withMemoryRebound(to: UInt8.self) { try body($0) }
    }
}

/// Whether `a` and `b` hold the same bytes: the comparison of every key a forward lookup tries and of every value a
/// caller checks. Short ones (keys) eight bytes at a time, inline, because a call to `memcmp` costs more than such
/// a comparison; long ones (values) with `memcmp`, which is vectorised.
@inlinable @inline(__always)
func sameBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    let count = a.count
    guard count == b.count else { return false }
    guard let x = a.baseAddress, let y = b.baseAddress else { return count == 0 }
    if count > 64 { return memcmp(x, y, count) == 0 }
    var i = 0
    while i + 8 <= count {
        if x.loadUnaligned(fromByteOffset: i, as: UInt64.self) != y.loadUnaligned(fromByteOffset: i, as: UInt64.self) {
            return false
        }
        i += 8
    }
    while i < count {
        if x.load(fromByteOffset: i, as: UInt8.self) != y.load(fromByteOffset: i, as: UInt8.self) { return false }
        i += 1
    }
    return true
}
