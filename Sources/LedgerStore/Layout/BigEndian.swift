import LMDB

/// The integers in the ledger's keys and values (seqs, counts, stamps): eight bytes, most significant first, so
/// that LMDB's bytewise order of keys is their numeric order.
///
/// Bytes read from LMDB go through the throwing reads (`uint64(key:of:length:)`, `uint64(value:of:name:length:)`):
/// a damaged page can hand out a key or value of any length, and that is `corrupted`, never a trap. The trapping
/// `uint64(_:at:)` is for bytes the caller made, or measured just before.
enum BigEndian {
    /// The eight bytes of `value`.
    static func bytes(_ value: UInt64) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    /// Appends the eight bytes of `value` to `bytes`.
    static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// The integer in the eight bytes at `offset` of bytes whose length the caller knows (it made them, or checked
    /// their length): traps when they are too short.
    static func uint64(_ bytes: UnsafeRawBufferPointer, at offset: Int = 0) -> UInt64 {
        precondition(offset >= 0 && offset + 8 <= bytes.count, "need 8 bytes for a UInt64")
        return UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// The integer in the first eight bytes of `key`, a key of `database`, which its layout makes `length` bytes
    /// long (a seq alone: 8); a key of another length is `corrupted`.
    @inline(__always)
    static func uint64(key: MappedBytes, of database: StaticString, length: Int = 8) throws(LedgerError) -> UInt64 {
        assert(length >= 8)
        guard key.count == length else {
            throw LedgerError.corrupted("a key of `\(database)` is \(key.count) bytes, not \(length): \(shortHex(key))")
        }
        return key.withUnsafeBytes { UInt64(bigEndian: $0.loadUnaligned(as: UInt64.self)) }
    }

    /// The integer at the start of `value`, the value of `meta` key `name` (or of another database's entry), which
    /// its layout makes `length` bytes long; a value of another length is `corrupted`.
    @inline(__always)
    static func uint64(value: MappedBytes, of database: StaticString, name: @autoclosure () -> String, length: Int = 8)
        throws(LedgerError) -> UInt64
    {
        assert(length >= 8)
        guard value.count == length else {
            throw LedgerError.corrupted("the value of `\(database)` \(name()) is \(value.count) bytes, not \(length)")
        }
        return value.withUnsafeBytes { UInt64(bigEndian: $0.loadUnaligned(as: UInt64.self)) }
    }

    /// Up to the first 16 bytes of `bytes` in hex, for a message naming a damaged key.
    static func shortHex(_ bytes: MappedBytes) -> String {
        hex(bytes.prefix(16)) + (bytes.count > 16 ? "…" : "")
    }
}
