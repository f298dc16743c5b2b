import LMDB

/// The value of `by_otid` and `bindings_any`: which event an index entry names, as seq (BE, 8) ‖ event key. The seq
/// first, so a subscription's entries sort in log order; the event key beside it, so reading an event takes one
/// lookup in `events` (its revision key), not two (`log`, then `events`).
enum EventReference {
    /// The reference to the revision of `eventKey` written at `seq`.
    static func encode(seq: UInt64, eventKey: String) -> [UInt8] {
        var v: [UInt8] = []
        v.reserveCapacity(8 + eventKey.utf8.count)
        BigEndian.append(seq, to: &v)
        v.append(contentsOf: eventKey.utf8)
        return v
    }

    /// The seq a reference names, with the `events` key of that revision written into `revisionKey` (a buffer the
    /// caller reuses from one reference to the next); nil when the reference is malformed.
    static func decode(_ reference: MappedBytes, revisionKey: inout [UInt8]) -> UInt64? {
        reference.withUnsafeBytes { value in
            guard value.count > 8 else { return nil }
            let seq = BigEndian.uint64(value)  // measured above
            revisionKey.removeAll(keepingCapacity: true)
            revisionKey.append(contentsOf: UnsafeRawBufferPointer(rebasing: value[8...]))
            revisionKey.append(0)
            BigEndian.append(seq, to: &revisionKey)
            return seq
        }
    }
}
