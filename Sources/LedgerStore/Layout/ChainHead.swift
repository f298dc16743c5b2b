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

    /// The head stored in `bytes`; nil when they are not 40 bytes.
    init?(_ bytes: MappedBytes) {
        guard bytes.count == 40 else { return nil }
        (last, link) = bytes.withUnsafeBytes { b in (BigEndian.uint64(b), Array(b[8..<40])) }
    }

    var encoded: [UInt8] { BigEndian.bytes(last) + link }
}
