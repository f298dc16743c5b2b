import LMDB
import LedgerCodec
import LedgerCore
import LedgerErrors

/// An input refused with a reason, kept for the auditor.
public struct RejectedInput: Sendable, Hashable {
    /// Inputs larger than this keep only their first bytes (with their full size and digest).
    public static let keptBytesLimit = 1 << 20

    public var receivedAt: UnixMillis
    public var code: ErrorCode
    public var message: String
    /// The input's bytes (at most `keptBytesLimit`).
    public var raw: [UInt8]
    /// The input's full size in bytes.
    public var size: Int
    /// Position in the rejected store (set when stored).
    public var number: UInt64
    /// For a request the server refused as a whole (too large, wrong media type, bad query, a body or head that
    /// does not parse): its method and target (`POST /v1/events?type=x`), nil for inputs refused one by one.
    public var request: String?
    /// For such a request: the size of its header fields as received (`name: value` CRLF each), nil otherwise.
    public var headerBytes: Int?
    /// In a ledger with pseudonyms: SHA-256 of the refusal's content (its message, bytes and request, which are
    /// kept sealed apart, in `rejected_sealed`), so that the record the chain covers names nobody.
    public var contentDigest: [UInt8]?
    /// The content was sealed and is no longer readable: it named a person the ledger forgot.
    public var erased = false

    public init(raw: some Collection<UInt8>, code: ErrorCode, message: String, receivedAt: UnixMillis) {
        self.receivedAt = receivedAt
        self.code = code
        self.message = message
        self.size = raw.count
        self.raw = Array(raw.prefix(Self.keptBytesLimit))
        self.number = 0
    }

    var isTruncated: Bool { raw.count < size }

    /// The record as the `rejected` store keeps it (tagged binary, unknown tags skipped when read).
    public func encoded() -> [UInt8] {
        var w = BinaryWriter(capacity: raw.count + message.utf8.count + 32)
        w.write(1, receivedAt)
        w.write(2, code.rawValue)
        w.write(3, message)
        w.write(4, bytes: raw)
        w.write(5, Int64(size))
        if let request { w.write(6, request) }
        if let headerBytes { w.write(7, Int64(headerBytes)) }
        if let contentDigest { w.write(9, bytes: contentDigest) }
        return w.finish()
    }

    /// The refusal as a ledger with pseudonyms keeps it: the record without its message, bytes and request but with
    /// their digest, and that content (`content()`), to be sealed apart.
    func sealedForm() -> (record: RejectedInput, content: [UInt8]) {
        let content = self.content()
        var record = self
        record.message = ""
        record.raw = []
        record.request = nil
        record.contentDigest = sha256(content)
        return (record, content)
    }

    /// The message, bytes and request: fields 3, 4 and 6 of `encoded()`.
    func content() -> [UInt8] {
        var w = BinaryWriter(capacity: raw.count + message.utf8.count + 16)
        w.write(3, message)
        w.write(4, bytes: raw)
        if let request { w.write(6, request) }
        return w.finish()
    }

    /// The record with its sealed content read back (`content()`).
    func withContent(_ content: [UInt8]) throws(LedgerError) -> RejectedInput {
        let inner: RejectedInput
        do {
            inner = try content.withUnsafeBytes { (b) throws(FactDecodingError) in try RejectedInput(number: number, decoding: b) }
        } catch {
            throw LedgerError.corrupted("the sealed content of refused input \(number) does not decode: \(error)")
        }
        var out = self
        out.message = inner.message
        out.raw = inner.raw
        out.request = inner.request
        return out
    }

    /// Decodes a record of the `rejected` store (`encoded()`), numbered `number`.
    public init(number: UInt64, decoding bytes: UnsafeRawBufferPointer) throws(FactDecodingError) {
        var r = BinaryReader(bytes)
        var at: Int64 = 0, code = "", message = "", raw: [UInt8] = [], size: Int64 = 0
        var request: String?, headerBytes: Int64?, contentDigest: [UInt8]?
        while let (tag, wire) = try r.nextField() {
            switch (tag, wire) {
            case (1, .varint): at = try r.readInt64()
            case (2, .bytes): code = try r.readString()
            case (3, .bytes): message = try r.readString()
            case (4, .bytes): raw = Array(try r.readBytes())
            case (5, .varint): size = try r.readInt64()
            case (6, .bytes): request = try r.readString()
            case (7, .varint): headerBytes = try r.readInt64()
            case (9, .bytes): contentDigest = Array(try r.readBytes())
            default:
                var ignored = UnknownFields()
                try r.readUnknown(tag: tag, wire: wire, into: &ignored)
            }
        }
        self.init(raw: raw, code: ErrorCode(code), message: message, receivedAt: at)
        self.size = Int(size)
        self.number = number
        self.request = request
        self.headerBytes = headerBytes.map { Int($0) }
        self.contentDigest = contentDigest
    }

    /// The record numbered `number` as the `rejected` store holds it; one that does not decode is `corrupted`.
    init(number: UInt64, stored bytes: MappedBytes) throws(LedgerError) {
        do {
            self = try bytes.withUnsafeBytes { (b) throws(FactDecodingError) in
                try RejectedInput(number: number, decoding: b)
            }
        } catch {
            throw LedgerError.corrupted("rejected record \(number) does not decode: \(error.reason)")
        }
    }
}
