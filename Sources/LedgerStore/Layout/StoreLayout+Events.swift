import LMDB
import LedgerCodec
import LedgerCore

/// The `events` database: the revisions stored under each event key, and the canonical event each one holds.
extension StoreLayout {
    /// Visits the revisions stored under one event key, oldest first, while `body` returns true. Every key that
    /// starts with the event key and its 0 is one of its revisions (event keys hold no 0): one whose seq is not 8
    /// bytes is `corrupted`.
    func forEachRevision(
        of key: String, _ txn: Transaction, _ body: (_ seq: UInt64, _ stored: MappedBytes) throws -> Bool
    ) throws {
        let prefix = Self.revisionKeyPrefix(key.utf8)
        let cursor = try txn.cursor(events)
        var entry = try cursor.seek(prefix)
        while let e = entry, e.key.withUnsafeBytes({ $0.starts(with: prefix) }) {
            guard e.key.count == prefix.count + 8 else {
                throw LedgerError.corrupted(
                    "a key of `events` under \(key) is \(e.key.count) bytes, not \(prefix.count + 8): "
                        + BigEndian.shortHex(e.key))
            }
            let seq = e.key.withUnsafeBytes { BigEndian.uint64($0, at: prefix.count) }  // measured above
            guard try body(seq, e.value) else { return }
            entry = try cursor.next()
        }
    }

    /// Whether a revision stored under `key` before `seq` states exactly these fact bytes. Equal facts share their
    /// key, so this is the whole idempotency check.
    /// - Complexity: O(revisions of the key), usually one or two.
    func isKnown(_ factBytes: [UInt8], key: String, before seq: UInt64 = .max, _ txn: Transaction) throws -> Bool {
        var known = false
        try forEachRevision(of: key, txn) { revision, stored in
            guard revision < seq else { return false }
            known = stored.withUnsafeBytes(Self.factBytesRange).map { stored.extracting($0).hasSameBytes(as: factBytes) } ?? false
            return !known
        }
        return known
    }

    /// Where the canonical fact bytes lie inside a stored event (see `LedgerEvent.encode`), found without decoding
    /// the fact.
    static func factBytesRange(ofStoredEvent stored: UnsafeRawBufferPointer) -> Range<Int>? {
        var r = BinaryReader(stored)
        guard (try? r.readVarint()) == UInt64(Fact.formatVersion) else { return nil }
        while let (tag, wire) = try? r.nextField() {
            guard wire == .bytes, let bytes = try? r.readBytes() else { return nil }
            if tag == 1, let base = stored.baseAddress, let start = bytes.baseAddress {
                let lower = start - base
                return lower..<(lower + bytes.count)
            }
        }
        return nil
    }

    /// The event a stored revision holds; bytes that do not decode are corruption.
    static func decodeEvent(seq: UInt64, _ stored: MappedBytes) throws -> LedgerEvent {
        var strings = RepeatedStrings()
        return try decodeEvent(seq: seq, stored, strings: &strings)
    }

    /// The event a stored revision holds, sharing the strings that repeat from one event to the next (`strings`);
    /// `.forFold` for events that only go into a fold.
    static func decodeEvent(
        seq: UInt64, _ stored: MappedBytes, strings: inout RepeatedStrings,
        metadata parts: LedgerEvent.MetadataParts = .whole
    ) throws -> LedgerEvent {
        do {
            return try stored.withUnsafeBytes { (bytes) throws(FactDecodingError) in
                try LedgerEvent(seq: seq, decoding: bytes, strings: &strings, metadata: parts)
            }
        } catch {
            throw LedgerError.corrupted("event \(seq) does not decode: \(error.reason)")
        }
    }
}
