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

/// Appends tagged fields to a buffer of raw memory it owns: a field is a capacity check and a few stores (appending
/// to an array checked its uniqueness and capacity for every byte). Not copyable, so the memory has one owner; the
/// result is taken with `finish()` (or copied with `bytes`).
public struct BinaryWriter: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Bytes written so far.
    public private(set) var count: Int

    public init(capacity: Int = 256) {
        self.capacity = max(capacity, 16)
        base = .allocate(capacity: self.capacity)
        count = 0
    }

    deinit { base.deallocate() }

    /// A copy of the bytes written so far.
    public var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// The bytes written, as an array (the writer is used up).
    public consuming func finish() -> [UInt8] { bytes }

    /// The bytes written so far, in place.
    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(start: base, count: count))
    }

    /// Forgets what was written, keeping the memory (for a writer reused from one message to the next).
    public mutating func removeAll() { count = 0 }

    /// Makes room for `n` more bytes.
    @inline(__always)
    private mutating func reserve(_ n: Int) {
        if count &+ n > capacity { grow(to: count + n) }
    }

    private mutating func grow(to needed: Int) {
        let larger = max(capacity * 2, needed)
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: larger)
        moved.update(from: base, count: count)
        base.deallocate()
        base = moved
        capacity = larger
    }

    /// One byte, room already made.
    @inline(__always)
    private mutating func put(_ byte: UInt8) {
        base[count] = byte
        count &+= 1
    }

    /// A varint, room already made (at most ten bytes).
    @inline(__always)
    private mutating func putVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            put(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        put(UInt8(truncatingIfNeeded: v))
    }

    /// `n` bytes from `source`.
    @inline(__always)
    private mutating func put(_ source: UnsafePointer<UInt8>, count n: Int) {
        reserve(n)
        (base + count).update(from: source, count: n)
        count &+= n
    }

    public mutating func writeVarint(_ value: UInt64) {
        reserve(10)
        putVarint(value)
    }

    /// An id's text, as a string field (a decimal id written digit by digit, without making a string of it).
    /// Inlined, so that the id is matched where it lies: a decimal id is then read as its number, with no copy of
    /// the enclosing value (a copy retains, for fear of the text case).
    @inline(__always)
    mutating func write(_ tag: UInt32, _ id: CompactID) {
        switch id.storage {
        case .decimal(let value): write(tag, decimal: value)
        case .text(let text): write(tag, text)
        }
    }

    /// The decimal text of `value`, as a string field: digits written in place.
    mutating func write(_ tag: UInt32, decimal value: UInt64) {
        let n = CompactID.digitCount(value)
        reserve(12 + n)
        putVarint(UInt64(tag) << 3 | UInt64(WireType.bytes.rawValue))
        put(UInt8(truncatingIfNeeded: n))  // At most 20 digits: a one-byte length.
        CompactID.writeDigits(value, count: n, to: base + count)
        count &+= n
    }

    mutating func write(_ tag: UInt32, _ id: CompactID?) {
        if let id { write(tag, id) }
    }

    /// Bytes already in this format (fields encoded before), as they are.
    mutating func append(raw: [UInt8]) {
        raw.withUnsafeBufferPointer { b in
            if let p = b.baseAddress { put(p, count: b.count) }
        }
    }

    /// Eight big-endian bytes, untagged (a header before the tagged fields).
    public mutating func writeBigEndian(_ value: UInt64) {
        reserve(8)
        UnsafeMutableRawPointer(base + count).storeBytes(of: value.bigEndian, as: UInt64.self)
        count &+= 8
    }

    public mutating func write(_ tag: UInt32, _ value: UInt64) {
        reserve(20)
        putVarint(UInt64(tag) << 3 | UInt64(WireType.varint.rawValue))
        putVarint(value)
    }

    /// Signed integers are zigzag-encoded so small negatives stay small.
    public mutating func write(_ tag: UInt32, _ value: Int64) {
        write(tag, UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    public mutating func write(_ tag: UInt32, _ value: Int64?) { if let value { write(tag, value) } }
    public mutating func write(_ tag: UInt32, _ value: Bool?) { if let value { write(tag, UInt64(value ? 1 : 0)) } }

    public mutating func write(_ tag: UInt32, bytes value: some Collection<UInt8>) {
        let done: Void? = value.withContiguousStorageIfAvailable { b in write(tag, bytes: b) }
        if done == nil { write(tag, bytes: Array(value)) }
    }

    /// A byte string field from contiguous memory.
    public mutating func write(_ tag: UInt32, bytes value: UnsafeBufferPointer<UInt8>) {
        reserve(20)
        putVarint(UInt64(tag) << 3 | UInt64(WireType.bytes.rawValue))
        putVarint(UInt64(value.count))
        if let p = value.baseAddress { put(p, count: value.count) }
    }

    /// A byte string field whose bytes are `count` bytes this writer wrote at `offset` (a value that repeats).
    mutating func write(_ tag: UInt32, bytesAt offset: Int, count n: Int) {
        reserve(20)
        putVarint(UInt64(tag) << 3 | UInt64(WireType.bytes.rawValue))
        putVarint(UInt64(n))
        write(bytesAt: offset, count: n)
    }

    /// A copy of `count` bytes this writer wrote at `offset` (whole fields that repeat).
    mutating func write(bytesAt offset: Int, count n: Int) {
        reserve(n)
        (base + count).update(from: base + offset, count: n)  // Earlier bytes: the regions never overlap.
        count &+= n
    }

    public mutating func write(_ tag: UInt32, _ value: String?) {
        if let value { write(tag, value) }
    }

    /// A string field. Native strings are copied from their contiguous UTF-8 in one go.
    public mutating func write(_ tag: UInt32, _ value: String) {
        let done: Void? = value.utf8.withContiguousStorageIfAvailable { u in write(tag, bytes: u) }
        if done == nil { write(tag, bytes: Array(value.utf8)) }
    }

    /// A nested message written in place: the key, a one-byte length placeholder, the body, then the real length.
    /// Avoids a writer (an allocation) per nested message; a body of 128 bytes or more (rare) shifts right to make
    /// room for its longer length. Same bytes as `write(tag, bytes:)` of the body written separately.
    /// - Complexity: O(body), plus O(body) once more when the body is 128 bytes or longer.
    @inline(__always)
    mutating func writeNested(_ tag: UInt32, _ body: (inout BinaryWriter) -> Void) {
        let at = beginNested(tag)
        body(&self)
        endNested(at)
    }

    /// `writeNested` in two halves, for callers that write the body without a closure: returns where the length
    /// goes, to pass to `endNested` once the body is written.
    @inline(__always)
    mutating func beginNested(_ tag: UInt32) -> Int {
        reserve(11)
        putVarint(UInt64(tag) << 3 | UInt64(WireType.bytes.rawValue))
        put(0)
        return count - 1
    }

    /// Completes a nested message begun at `at` by `beginNested`. Returns how far the body moved right to make room
    /// for a length of more than one byte (0 for a body under 128 bytes): offsets into it taken before are stale.
    @discardableResult
    mutating func endNested(_ at: Int) -> Int {
        let n = count - at - 1
        if n < 0x80 {
            base[at] = UInt8(truncatingIfNeeded: n)
            return 0
        }
        // The length takes more than its one-byte placeholder: shift the body right.
        var width = 1
        while UInt64(n) >> (7 * width) != 0 { width += 1 }
        reserve(width - 1)
        UnsafeMutableRawPointer(base + at + width).copyMemory(from: base + at + 1, byteCount: n)  // memmove
        count = at
        putVarint(UInt64(n))
        count += n
        return width - 1
    }

    /// A map of strings, as repeated (key, value) pairs in key order so that equal maps encode equally.
    public mutating func write(_ tag: UInt32, _ map: [String: String]) {
        if map.isEmpty { return }
        for (k, v) in map.sorted(by: { $0.key < $1.key }) {
            writeNested(tag) { pair in
                pair.write(1, k)
                pair.write(2, v)
            }
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

    public var isAtEnd: Bool {
        @inline(__always) get { offset >= buffer.count }
    }

    public mutating func readByte() throws(FactDecodingError) -> UInt8 {
        guard offset < buffer.count else { throw FactDecodingError("truncated") }
        defer { offset += 1 }
        return buffer[offset]
    }

    /// Inlined for its one-byte case (keys, small lengths, flags: almost every varint); longer ones are read out of
    /// line.
    @inline(__always)
    public mutating func readVarint() throws(FactDecodingError) -> UInt64 {
        if offset < buffer.count, buffer[offset] < 0x80 {
            defer { offset += 1 }
            return UInt64(buffer[offset])
        }
        return try readLongVarint()
    }

    @inline(never)
    mutating func readLongVarint() throws(FactDecodingError) -> UInt64 {
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
    public mutating func nextField() throws(FactDecodingError) -> (tag: UInt32, wire: WireType)? {
        guard !isAtEnd else { return nil }
        let key = try readVarint()
        guard let wire = WireType(rawValue: UInt8(key & 7)) else {
            throw FactDecodingError("unknown wire type \(key & 7)")
        }
        guard key >> 3 <= UInt64(UInt32.max), key >> 3 > 0 else { throw FactDecodingError("bad tag") }
        return (UInt32(key >> 3), wire)
    }

    @inline(__always)
    public mutating func readBytes() throws(FactDecodingError) -> UnsafeRawBufferPointer {
        let n = try readVarint()
        guard n <= UInt64(buffer.count - offset) else { throw FactDecodingError("length \(n) past the end") }
        defer { offset += Int(n) }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + Int(n))])
    }

    public mutating func readString() throws(FactDecodingError) -> String {
        // As typed bytes, so String's contiguous UTF-8 fast path applies (validation, then one copy).
        String(decoding: try readBytes().assumingMemoryBound(to: UInt8.self), as: UTF8.self)
    }

    /// Reads an id written as a string field.
    mutating func readID() throws(FactDecodingError) -> CompactID {
        CompactID(utf8: try readBytes().assumingMemoryBound(to: UInt8.self))
    }

    /// Reads a string, returning `previous` itself when the bytes are the same: strings that repeat across the items
    /// of a message (a product id on every period) then cost no allocation. Updates `previous` otherwise.
    mutating func readString(reusing previous: inout String) throws(FactDecodingError) -> String {
        let b = try readBytes().assumingMemoryBound(to: UInt8.self)
        let same = previous.utf8.withContiguousStorageIfAvailable { u in bytesEqual(u, b) } ?? false
        if !same { previous = String(decoding: b, as: UTF8.self) }
        return previous
    }

    @inline(__always)
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

/// An enum stored as one byte: its position among `allCases` (so a new case goes at the end and none is removed).
protocol ByteCoded: CaseIterable, Equatable where AllCases == [Self] {
    /// `allCases`, copied once into memory that is never freed (`makeCodeTable()`): the synthesized `allCases`
    /// builds an array on every call, and even a stored array is retained and released on every read, by every
    /// thread of a replay at once.
    static var byCode: UnsafeBufferPointer<Self> { get }
}

extension ByteCoded {
    /// The table `byCode` is made of.
    static func makeCodeTable() -> UnsafeBufferPointer<Self> {
        let cases = allCases
        let table = UnsafeMutableBufferPointer<Self>.allocate(capacity: cases.count)
        _ = table.initialize(from: cases)
        return UnsafeBufferPointer(table)
    }

    var code: UInt8 {
        let table = Self.byCode
        var i = 0
        while table[i] != self { i += 1 }
        return UInt8(i)
    }

    init?(code: UInt8) {
        let table = Self.byCode
        guard Int(code) < table.count else { return nil }
        self = table[Int(code)]
    }
}
