import Crypto

/// The `rejected` store's running hash: record n's link is SHA-256(link n−1 ‖ n ‖ stored record), and `meta` keeps
/// the last (`rejected_head`, a `ChainHead`). Refusals carry no seq and no event chain, so without it a record altered
/// in place would still decode and `verify` could not tell.
enum RejectedChain {
    static func link(previous: [UInt8], number: UInt64, record: UnsafeRawBufferPointer) -> [UInt8] {
        var h = SHA256()
        h.update(data: previous)
        withUnsafeBytes(of: number.bigEndian) { h.update(bufferPointer: $0) }
        h.update(bufferPointer: record)
        return Array(h.finalize())
    }

    static func link(previous: [UInt8], number: UInt64, record: [UInt8]) -> [UInt8] {
        record.withUnsafeBytes { link(previous: previous, number: number, record: $0) }
    }
}
