/// The compact binary encoding of facts and events: a version byte, then tagged fields (protobuf-like: a varint key
/// `tag << 3 | wireType`, then a varint or a length-prefixed byte string). Absent optionals are omitted. Fields with a
/// tag this version does not know are kept verbatim (`UnknownFields`) and written back, so an older reader never
/// loses what a newer writer stored.

/// Why a byte string is not a valid encoding.
public struct FactDecodingError: Error, Hashable, CustomStringConvertible, Sendable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { "invalid encoded fact: \(reason)" }
}

/// The two wire types.
public enum WireType: UInt8, Hashable, Codable, Sendable {
    case varint = 0
    case bytes = 2
}

/// One field of a newer format, kept as it was read.
public struct UnknownField: Hashable, Codable, Sendable {
    public var tag: UInt32
    public var wireType: WireType
    /// The varint's value, or the byte string.
    public var varint: UInt64
    public var bytes: [UInt8]

    public init(tag: UInt32, wireType: WireType, varint: UInt64, bytes: [UInt8]) {
        self.tag = tag
        self.wireType = wireType
        self.varint = varint
        self.bytes = bytes
    }
}

/// Fields kept for forward compatibility, in the order they were read.
public struct UnknownFields: Hashable, Codable, Sendable {
    public var fields: [UnknownField] = []
    public init() {}
    public var isEmpty: Bool { fields.isEmpty }

    // Encoded in JSON as nothing when empty, so exports of today's facts stay clean.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        fields = (try? c.decode([UnknownField].self)) ?? []
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(fields)
    }
}

// MARK: - Writing

/// Appends tagged fields to a byte buffer.
public struct BinaryWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public mutating func writeVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func key(_ tag: UInt32, _ wire: WireType) { writeVarint(UInt64(tag) << 3 | UInt64(wire.rawValue)) }

    public mutating func write(_ tag: UInt32, _ value: UInt64) {
        key(tag, .varint)
        writeVarint(value)
    }

    /// Signed integers are zigzag-encoded so small negatives stay small.
    public mutating func write(_ tag: UInt32, _ value: Int64) {
        write(tag, UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    public mutating func write(_ tag: UInt32, _ value: Int64?) { if let value { write(tag, value) } }
    public mutating func write(_ tag: UInt32, _ value: Bool?) { if let value { write(tag, UInt64(value ? 1 : 0)) } }

    public mutating func write(_ tag: UInt32, bytes value: some Collection<UInt8>) {
        key(tag, .bytes)
        writeVarint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    public mutating func write(_ tag: UInt32, _ value: String?) {
        if let value { write(tag, bytes: value.utf8) }
    }

    /// A map of strings, as repeated (key, value) pairs in key order so that equal maps encode equally.
    public mutating func write(_ tag: UInt32, _ map: [String: String]) {
        for k in map.keys.sorted() {
            var pair = BinaryWriter(capacity: k.utf8.count + map[k]!.utf8.count + 4)
            pair.write(1, k)
            pair.write(2, map[k]!)
            write(tag, bytes: pair.bytes)
        }
    }

    public mutating func write(_ unknown: UnknownFields) {
        for f in unknown.fields {
            switch f.wireType {
            case .varint: write(f.tag, f.varint)
            case .bytes: write(f.tag, bytes: f.bytes)
            }
        }
    }
}

// MARK: - Reading

/// Reads tagged fields from a byte buffer, refusing anything malformed (never trapping).
public struct BinaryReader {
    let buffer: UnsafeRawBufferPointer
    var offset: Int

    public init(_ buffer: UnsafeRawBufferPointer) {
        self.buffer = buffer
        self.offset = 0
    }

    public var isAtEnd: Bool { offset >= buffer.count }

    public mutating func readByte() throws(FactDecodingError) -> UInt8 {
        guard offset < buffer.count else { throw FactDecodingError("truncated") }
        defer { offset += 1 }
        return buffer[offset]
    }

    public mutating func readVarint() throws(FactDecodingError) -> UInt64 {
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
    public mutating func nextField() throws(FactDecodingError) -> (tag: UInt32, wire: WireType)? {
        guard !isAtEnd else { return nil }
        let key = try readVarint()
        guard let wire = WireType(rawValue: UInt8(key & 7)) else {
            throw FactDecodingError("unknown wire type \(key & 7)")
        }
        guard key >> 3 <= UInt64(UInt32.max), key >> 3 > 0 else { throw FactDecodingError("bad tag") }
        return (UInt32(key >> 3), wire)
    }

    public mutating func readBytes() throws(FactDecodingError) -> UnsafeRawBufferPointer {
        let n = try readVarint()
        guard n <= UInt64(buffer.count - offset) else { throw FactDecodingError("length \(n) past the end") }
        defer { offset += Int(n) }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + Int(n))])
    }

    public mutating func readString() throws(FactDecodingError) -> String {
        String(decoding: try readBytes(), as: UTF8.self)
    }

    public mutating func readInt64() throws(FactDecodingError) -> Int64 {
        let u = try readVarint()
        return Int64(bitPattern: u >> 1) ^ -Int64(bitPattern: u & 1)
    }

    public mutating func readBool() throws(FactDecodingError) -> Bool { try readVarint() != 0 }

    public mutating func readMapEntry(into map: inout [String: String]) throws(FactDecodingError) {
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
    public mutating func readUnknown(tag: UInt32, wire: WireType, into unknown: inout UnknownFields)
        throws(FactDecodingError)
    {
        switch wire {
        case .varint: unknown.fields.append(UnknownField(tag: tag, wireType: .varint, varint: try readVarint(), bytes: []))
        case .bytes:
            unknown.fields.append(UnknownField(tag: tag, wireType: .bytes, varint: 0, bytes: Array(try readBytes())))
        }
    }

    /// Checks that a field has the wire type its tag requires.
    public func expect(_ wire: WireType, _ expected: WireType, _ name: StaticString) throws(FactDecodingError) {
        guard wire == expected else { throw FactDecodingError("field \(name) has the wrong wire type") }
    }
}
