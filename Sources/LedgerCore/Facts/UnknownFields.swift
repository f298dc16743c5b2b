/// One field a newer version of the ledger stored that this version does not model, kept as it was read so that it is
/// written back unchanged: an older reader never loses what a newer writer stored.
public struct UnknownField: Hashable, Codable, Sendable {
    /// How the field's value is written: a number, or a string of bytes.
    public enum WireType: UInt8, Hashable, Codable, Sendable {
        case varint = 0
        case bytes = 2
    }

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
    public var fields: [UnknownField]

    /// None. Inlinable: every fact the codec decodes starts with none.
    @inlinable
    public init() { fields = [] }

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
