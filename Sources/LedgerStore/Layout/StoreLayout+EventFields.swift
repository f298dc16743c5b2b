import LMDB
import LedgerCodec
import LedgerCore

/// Parts of a stored event read where they lie, without decoding it (`verify` reads every event, and decodes only
/// what its checks need).
extension StoreLayout {
    /// The raw input's digest in a stored event's metadata (field 5 of the metadata, field 2 of the event; the last
    /// one when written twice, as a decoder keeps), found without decoding the fact or the metadata. Nil when the
    /// event holds none or is malformed.
    static func rawDigestRange(ofStoredEvent stored: UnsafeRawBufferPointer) -> Range<Int>? {
        guard let base = stored.baseAddress else { return nil }
        var r = BinaryReader(stored)
        guard (try? r.readVarint()) == UInt64(Fact.formatVersion) else { return nil }
        var found: Range<Int>?
        while let (tag, wire) = try? r.nextField() {
            guard wire == .bytes, let bytes = try? r.readBytes() else { return nil }
            guard tag == 2 else { continue }
            var m = BinaryReader(bytes)
            while let (field, kind) = try? m.nextField() {
                if field == 5, kind == .bytes {
                    guard let digest = try? m.readBytes(), let start = digest.baseAddress else { return nil }
                    found = (start - base)..<(start - base + digest.count)
                } else {
                    guard (try? m.skip(kind)) != nil else { return nil }
                }
            }
        }
        return found
    }
}

extension StoreLayout {
    /// The kinds of event key told apart by their first byte: Apple's transaction ids (digits), then
    /// `notification:`, `renewal:` and `binding:` keys, and any other. Keys of one kind sort together in `events`, and
    /// arrive there nearly in key order (Apple's ids grow with time): a reader with a cursor per kind finds most of
    /// them on the page its cursor stands on, or the entry after it.
    static let eventKeyKinds = 5

    /// The kind (0 ..< `eventKeyKinds`) of the event key that starts with `first`.
    @inline(__always)
    static func eventKeyKind(first: UInt8?) -> Int {
        switch first {
        case let c? where c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9"): 0
        case UInt8(ascii: "n"): 1
        case UInt8(ascii: "r"): 2
        case UInt8(ascii: "b"): 3
        default: 4
        }
    }

    /// The kind of the fact whose canonical bytes (`Fact.encoded()`: version, kind, fields) are `fact`, read without
    /// decoding it; nil when the bytes do not start as a fact does.
    static func factKind(_ fact: UnsafeRawBufferPointer) -> Fact.Kind? {
        var r = BinaryReader(fact)
        guard (try? r.readVarint()) == UInt64(Fact.formatVersion), let code = try? r.readVarint(), code <= 255 else {
            return nil
        }
        return Fact.Kind(code: UInt8(code))
    }
}

extension Fact {
    /// Whether `key` is this fact's event key (`eventKey`), compared without making the key.
    func hasEventKey(_ key: MappedBytes) -> Bool {
        func prefixed(_ prefix: StaticString, _ rest: UnsafeBufferPointer<UInt8>) -> Bool {
            let p = prefix.utf8CodeUnitCount
            guard key.count == p + rest.count else { return false }
            return prefix.withUTF8Buffer { key.extracting(0..<p).hasSameBytes(as: UnsafeRawBufferPointer($0)) }
                && key.extracting(p..<key.count).hasSameBytes(as: UnsafeRawBufferPointer(rest))
        }
        switch self {
        case .transaction(let t): return t.transactionId.id.withUTF8 { key.hasSameBytes(as: UnsafeRawBufferPointer($0)) }
        case .renewal(let r): return r.originalTransactionId.withUTF8 { prefixed("renewal:", $0) }
        case .binding(let b): return b.originalTransactionId.withUTF8 { prefixed("binding:", $0) }
        case .reconciliation(let c): return c.originalTransactionId.withUTF8 { prefixed("reconciliation:", $0) }
        case .notification(let n):
            var uuid = n.notificationUUID
            return uuid.withUTF8 { prefixed("notification:", $0) }
        case .rules: return key.hasSameBytes(as: Array(RulesChange.eventKey.utf8))
        case .grant(let g): return key.hasSameBytes(as: Array(OperatorGrant.eventKey(g.appUserId).utf8))
        case .erasure(let e): return key.hasSameBytes(as: Array(Erasure.eventKey(e.pseudonyms.first ?? "").utf8))
        }
    }
}
