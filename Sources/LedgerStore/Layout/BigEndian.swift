import LMDB

/// The integers in the ledger's keys and values (seqs, counts, stamps): eight bytes, most significant first, so
/// that LMDB's bytewise order of keys is their numeric order.
enum BigEndian {
    /// The eight bytes of `value`.
    static func bytes(_ value: UInt64) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    /// Appends the eight bytes of `value` to `bytes`.
    static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// The integer in the eight bytes at `offset`.
    static func uint64(_ bytes: UnsafeRawBufferPointer, at offset: Int = 0) -> UInt64 {
        precondition(offset >= 0 && offset + 8 <= bytes.count, "need 8 bytes for a UInt64")
        return UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// The integer in the eight bytes at `offset` of a key or value read from LMDB.
    static func uint64(_ bytes: MappedBytes, at offset: Int = 0) -> UInt64 {
        bytes.withUnsafeBytes { uint64($0, at: offset) }
    }
}
