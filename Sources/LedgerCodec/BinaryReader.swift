import LedgerCore

/// Why a byte string is not a valid encoding.
public struct FactDecodingError: Error, Hashable, CustomStringConvertible, Sendable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { "invalid encoded fact: \(reason)" }
}

/// The two wire types: a field's value is a varint or a length-prefixed byte string. The same as those of the unknown
/// fields a fact keeps.
package typealias WireType = UnknownField.WireType

/// Reads tagged fields from a byte buffer, refusing anything malformed (never trapping).
package struct BinaryReader {
    let buffer: UnsafeRawBufferPointer
    package var offset: Int

    package init(_ buffer: UnsafeRawBufferPointer) {
        self.buffer = buffer
        self.offset = 0
    }

    package var isAtEnd: Bool {
        @inline(__always) get { offset >= buffer.count }
    }

    package mutating func readByte() throws(FactDecodingError) -> UInt8 {
        guard offset < buffer.count else { throw FactDecodingError("truncated") }
        defer { offset += 1 }
        return buffer[offset]
    }

    /// Inlined for its one-byte case (keys, small lengths, flags: almost every varint); longer ones are read out of
    /// line.
    @inline(__always)
    package mutating func readVarint() throws(FactDecodingError) -> UInt64 {
        if offset < buffer.count, buffer[offset] < 0x80 {
            defer { offset += 1 }
            return UInt64(buffer[offset])
        }
        return try readLongVarint()
    }

    @inline(never)
    package mutating func readLongVarint() throws(FactDecodingError) -> UInt64 {
        // With room for the longest varint (ten bytes) left, the bytes are read without a check of the end for each
        // (a timestamp is six bytes, a two-byte key or a price two): the same values as the loop below, and the
        // same bytes refused (ten bytes that all say more follows are too long, whatever comes after them).
        if buffer.count &- offset >= 10, let base = buffer.baseAddress {
            let p = base + offset
            // Two bytes first: a stored period's length, a price, most keys above 15.
            let b0 = p.load(as: UInt8.self), b1 = p.load(fromByteOffset: 1, as: UInt8.self)
            if b0 >= 0x80, b1 < 0x80 {
                offset &+= 2
                return UInt64(b0 & 0x7F) | UInt64(b1) << 7
            }
            var result: UInt64 = 0
            for i in 0..<10 {
                let b = p.load(fromByteOffset: i, as: UInt8.self)
                result |= UInt64(b & 0x7F) << UInt64(7 &* i)
                if b & 0x80 == 0 {
                    offset &+= i &+ 1
                    return result
                }
            }
            offset &+= 10
            throw FactDecodingError("varint too long")
        }
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try readByte()
            guard shift < 64 else { throw FactDecodingError("varint too long") }
            result |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return result }
            shift += 7
        }
    }

    /// The next field's tag and wire type, or nil at the end.
    @inline(__always)
    package mutating func nextField() throws(FactDecodingError) -> (tag: UInt32, wire: WireType)? {
        guard !isAtEnd else { return nil }
        let key = try readVarint()
        guard let wire = WireType(rawValue: UInt8(key & 7)) else {
            throw FactDecodingError("unknown wire type \(key & 7)")
        }
        guard key >> 3 <= UInt64(UInt32.max), key >> 3 > 0 else { throw FactDecodingError("bad tag") }
        return (UInt32(key >> 3), wire)
    }

    @inline(__always)
    package mutating func readBytes() throws(FactDecodingError) -> UnsafeRawBufferPointer {
        let n = try readVarint()
        guard n <= UInt64(buffer.count - offset) else { throw FactDecodingError("length \(n) past the end") }
        defer { offset += Int(n) }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + Int(n))])
    }

    package mutating func readString() throws(FactDecodingError) -> String {
        // As typed bytes, so String's contiguous UTF-8 fast path applies (validation, then one copy).
        String(decoding: try readBytes().assumingMemoryBound(to: UInt8.self), as: UTF8.self)
    }

    /// Reads an id written as a string field.
    package mutating func readID() throws(FactDecodingError) -> CompactID {
        CompactID(utf8: try readBytes().assumingMemoryBound(to: UInt8.self))
    }

    /// Reads a string, returning `previous` itself when the bytes are the same: strings that repeat across the items
    /// of a message (a product id on every period) then cost no allocation. Updates `previous` otherwise.
    package mutating func readString(reusing previous: inout String) throws(FactDecodingError) -> String {
        let b = try readBytes().assumingMemoryBound(to: UInt8.self)
        let same = previous.utf8.withContiguousStorageIfAvailable { u in bytesEqual(u, b) } ?? false
        if !same { previous = String(decoding: b, as: UTF8.self) }
        return previous
    }

    @inline(__always)
    package mutating func readInt64() throws(FactDecodingError) -> Int64 {
        let u = try readVarint()
        return Int64(bitPattern: u >> 1) ^ -Int64(bitPattern: u & 1)
    }

    package mutating func readBool() throws(FactDecodingError) -> Bool { try readVarint() != 0 }

    package mutating func readMapEntry(into map: inout [String: String]) throws(FactDecodingError) {
        var inner = BinaryReader(try readBytes())
        var k: String?
        var v: String?
        while let (tag, _) = try inner.nextField() {
            switch tag {
            case 1: k = try inner.readString()
            case 2: v = try inner.readString()
            default: throw FactDecodingError("bad map entry")
            }
        }
        guard let k, let v else { throw FactDecodingError("incomplete map entry") }
        map[k] = v
    }

    /// Reads a field this version does not model, to keep it.
    package mutating func readUnknown(tag: UInt32, wire: WireType, into unknown: inout UnknownFields)
        throws(FactDecodingError)
    {
        switch wire {
        case .varint: unknown.fields.append(UnknownField(tag: tag, wireType: .varint, varint: try readVarint(), bytes: []))
        case .bytes:
            unknown.fields.append(UnknownField(tag: tag, wireType: .bytes, varint: 0, bytes: Array(try readBytes())))
        }
    }
}

extension BinaryReader {
    /// Skips a field this version does not know (projections are rebuilt from the log, never upgraded in place).
    package mutating func skip(_ wire: WireType) throws(FactDecodingError) {
        switch wire {
        case .varint: _ = try readVarint()
        case .bytes: _ = try readBytes()
        }
    }
}

/// Byte-wise equality of two buffers, eight bytes at a time.
@inline(__always)
func bytesEqual(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
    guard a.count == b.count else { return false }
    guard let pa = a.baseAddress, let pb = b.baseAddress else { return a.count == 0 }
    let ra = UnsafeRawPointer(pa), rb = UnsafeRawPointer(pb)
    var i = 0
    while i + 8 <= a.count {
        if ra.loadUnaligned(fromByteOffset: i, as: UInt64.self) != rb.loadUnaligned(fromByteOffset: i, as: UInt64.self) {
            return false
        }
        i += 8
    }
    while i < a.count {
        if pa[i] != pb[i] { return false }
        i += 1
    }
    return true
}
