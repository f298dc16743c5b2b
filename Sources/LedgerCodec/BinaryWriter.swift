import LedgerCore

/// The compact binary form of facts, events and timelines: a version byte, then tagged fields (protobuf-like: a varint
/// key `tag << 3 | wireType`, then a varint or a length-prefixed byte string). Absent optionals are omitted. Fields
/// with a tag a version does not know are kept (`UnknownFields`) and written back, so an older reader never loses
/// what a newer writer stored.

/// Appends tagged fields to a buffer of raw memory it owns: a field is a capacity check and a few stores (appending
/// to an array checks its uniqueness and capacity for every byte). Not copyable, so the memory has one owner; the
/// result is taken with `finish()` (or copied with `bytes`).
package struct BinaryWriter: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Bytes written so far.
    package private(set) var count: Int

    package init(capacity: Int = 256) {
        self.capacity = max(capacity, 16)
        base = .allocate(capacity: self.capacity)
        count = 0
    }

    deinit { base.deallocate() }

    /// A copy of the bytes written so far.
    package var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// The bytes written, as an array (the writer is used up).
    package consuming func finish() -> [UInt8] { bytes }

    /// The bytes written so far, in place.
    package func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(start: base, count: count))
    }

    /// Forgets what was written, keeping the memory (for a writer reused from one message to the next).
    package mutating func removeAll() { count = 0 }

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

    package mutating func writeVarint(_ value: UInt64) {
        reserve(10)
        putVarint(value)
    }

    /// An id's text, as a string field (a decimal id written digit by digit, without making a string of it).
    /// Inlined, so that the id is matched where it lies: a decimal id is then read as its number, with no copy of
    /// the enclosing value (a copy retains, for fear of the text case).
    @inline(__always)
    package mutating func write(_ tag: UInt32, _ id: CompactID) {
        switch id.storage {
        case .decimal(let value): write(tag, decimal: value)
        case .text(let text): write(tag, text)
        }
    }

    /// The decimal text of `value`, as a string field: digits written in place.
    package mutating func write(_ tag: UInt32, decimal value: UInt64) {
        let n = CompactID.digitCount(value)
        reserve(12 + n)
        putVarint(UInt64(tag) << 3 | UInt64(WireType.bytes.rawValue))
        put(UInt8(truncatingIfNeeded: n))  // At most 20 digits: a one-byte length.
        CompactID.writeDigits(value, count: n, to: base + count)
        count &+= n
    }

    package mutating func write(_ tag: UInt32, _ id: CompactID?) {
        if let id { write(tag, id) }
    }

    /// Bytes already in this format (fields encoded before), as they are.
    package mutating func append(raw: UnsafeRawBufferPointer) {
        if let p = raw.baseAddress { put(p.assumingMemoryBound(to: UInt8.self), count: raw.count) }
    }

    /// Eight big-endian bytes, untagged (a header before the tagged fields).
    package mutating func writeBigEndian(_ value: UInt64) {
        reserve(8)
        UnsafeMutableRawPointer(base + count).storeBytes(of: value.bigEndian, as: UInt64.self)
        count &+= 8
    }

    package mutating func write(_ tag: UInt32, _ value: UInt64) {
        reserve(20)
        putVarint(UInt64(tag) << 3 | UInt64(WireType.varint.rawValue))
        putVarint(value)
    }

    /// Signed integers are zigzag-encoded so small negatives stay small.
    package mutating func write(_ tag: UInt32, _ value: Int64) {
        write(tag, UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    package mutating func write(_ tag: UInt32, _ value: Int64?) { if let value { write(tag, value) } }
    package mutating func write(_ tag: UInt32, _ value: Bool?) { if let value { write(tag, UInt64(value ? 1 : 0)) } }

    package mutating func write(_ tag: UInt32, bytes value: some Collection<UInt8>) {
        let done: Void? = value.withContiguousStorageIfAvailable { b in write(tag, bytes: b) }
        if done == nil { write(tag, bytes: Array(value)) }
    }

    /// A byte string field from contiguous memory.
    package mutating func write(_ tag: UInt32, bytes value: UnsafeBufferPointer<UInt8>) {
        reserve(20)
        putVarint(UInt64(tag) << 3 | UInt64(WireType.bytes.rawValue))
        putVarint(UInt64(value.count))
        if let p = value.baseAddress { put(p, count: value.count) }
    }

    /// A byte string field whose bytes are `count` bytes this writer wrote at `offset` (a value that repeats).
    package mutating func write(_ tag: UInt32, bytesAt offset: Int, count n: Int) {
        reserve(20)
        putVarint(UInt64(tag) << 3 | UInt64(WireType.bytes.rawValue))
        putVarint(UInt64(n))
        write(bytesAt: offset, count: n)
    }

    /// A copy of `count` bytes this writer wrote at `offset` (whole fields that repeat).
    package mutating func write(bytesAt offset: Int, count n: Int) {
        reserve(n)
        (base + count).update(from: base + offset, count: n)  // Earlier bytes: the regions never overlap.
        count &+= n
    }

    package mutating func write(_ tag: UInt32, _ value: String?) {
        if let value { write(tag, value) }
    }

    /// A string field. Native strings are copied from their contiguous UTF-8 in one go.
    package mutating func write(_ tag: UInt32, _ value: String) {
        let done: Void? = value.utf8.withContiguousStorageIfAvailable { u in write(tag, bytes: u) }
        if done == nil { write(tag, bytes: Array(value.utf8)) }
    }

    /// A nested message written in place: the key, a one-byte length placeholder, the body, then the real length.
    /// Avoids a writer (an allocation) per nested message; a body of 128 bytes or more (rare) shifts right to make
    /// room for its longer length. Same bytes as `write(tag, bytes:)` of the body written separately.
    /// - Complexity: O(body), plus O(body) once more when the body is 128 bytes or longer.
    @inline(__always)
    package mutating func writeNested(_ tag: UInt32, _ body: (inout BinaryWriter) -> Void) {
        let at = beginNested(tag)
        body(&self)
        endNested(at)
    }

    /// `writeNested` in two halves, for callers that write the body without a closure: returns where the length
    /// goes, to pass to `endNested` once the body is written.
    @inline(__always)
    package mutating func beginNested(_ tag: UInt32) -> Int {
        reserve(11)
        putVarint(UInt64(tag) << 3 | UInt64(WireType.bytes.rawValue))
        put(0)
        return count - 1
    }

    /// Completes a nested message begun at `at` by `beginNested`. Returns how far the body moved right to make room
    /// for a length of more than one byte (0 for a body under 128 bytes): offsets into it taken before are stale.
    @discardableResult
    package mutating func endNested(_ at: Int) -> Int {
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
    package mutating func write(_ tag: UInt32, _ map: [String: String]) {
        if map.isEmpty { return }
        for (k, v) in map.sorted(by: { $0.key < $1.key }) {
            writeNested(tag) { pair in
                pair.write(1, k)
                pair.write(2, v)
            }
        }
    }

    package mutating func write(_ unknown: UnknownFields) {
        for f in unknown.fields {
            switch f.wireType {
            case .varint: write(f.tag, f.varint)
            case .bytes: write(f.tag, bytes: f.bytes)
            }
        }
    }
}
