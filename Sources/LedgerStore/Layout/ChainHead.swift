import LMDB

/// A `meta` value naming where a chain ends: the last seq (`chain_head`) or the count of refusals (`rejected_head`)
/// (BE, 8) ‖ the link there (32).
struct ChainHead: Equatable {
    /// The seq of the last event, or the number of the last refusal.
    var last: UInt64
    var link: [UInt8]

    init(last: UInt64, link: [UInt8]) {
        self.last = last
        self.link = link
    }

    /// The head stored in `bytes`, the value of `meta` key `name`; a value that is not 40 bytes is `corrupted`.
    init(_ bytes: MappedBytes, name: StaticString) throws(LedgerError) {
        last = try BigEndian.uint64(value: bytes, of: "meta", name: "key `\(name)`", length: 40)
        link = bytes.withUnsafeBytes { b in Array(b[8..<40]) }  // measured by the read of `last`
    }

    var encoded: [UInt8] { BigEndian.bytes(last) + link }
}
