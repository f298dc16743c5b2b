import LMDB

/// The value of `log` for one event: the chain link after the event (32), where its raw input is (the `raw` key,
/// BE, 8), and the event's key.
struct LogRecord {
    var link: [UInt8]
    var rawKey: UInt64
    var eventKey: [UInt8]

    static func encode(link: [UInt8], rawKey: UInt64, eventKey: String) -> [UInt8] {
        var v = link
        v.reserveCapacity(40 + eventKey.utf8.count)
        BigEndian.append(rawKey, to: &v)
        v.append(contentsOf: eventKey.utf8)
        return v
    }

    /// The record stored in `bytes`, the `log` value of event `seq`; bytes too short to be one are `corrupted`.
    init(_ bytes: MappedBytes, seq: UInt64) throws(LedgerError) {
        guard bytes.count > 40 else { throw LedgerError.corrupted(Self.tooShort(seq: seq, bytes)) }
        // Measured above: the link, the raw key, and an event key of one byte or more.
        (link, rawKey, eventKey) = bytes.withUnsafeBytes { b in
            (Array(b[0..<32]), BigEndian.uint64(b, at: 32), Array(b[40...]))
        }
    }

    /// What is wrong with `bytes`, the `log` value of event `seq`, too short to be a record.
    static func tooShort(seq: UInt64, _ bytes: MappedBytes) -> String {
        "`log` entry \(seq) is \(bytes.count) bytes, shorter than a record (41 or more)"
    }

    /// The `events` key of the event, which was written at `seq`.
    func revisionKey(seq: UInt64) -> [UInt8] { StoreLayout.revisionKey(eventKey, seq: seq) }
}
