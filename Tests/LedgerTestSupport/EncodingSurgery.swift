import LedgerCodec
import LedgerCore

/// `bytes` (a version varint, then tagged fields, as `BinaryWriter` writes them) with every top-level field `tag`
/// left out: how a test makes what an older version wrote.
public func removingField(_ tag: UInt32, from bytes: [UInt8]) throws -> [UInt8] {
    try rewritingFields(of: bytes) { fields in fields.removeAll { $0.tag == tag } }
}

/// `bytes` with its top-level field `tag` moved to just after the first field `after` (each field's bytes kept as
/// they were): an encoding `encoded()` never writes, but a valid one, for a decoder that must not assume an order.
public func movingField(_ tag: UInt32, toAfterTheFirst after: UInt32, in bytes: [UInt8]) throws -> [UInt8] {
    try rewritingFields(of: bytes) { fields in
        guard let moved = fields.firstIndex(where: { $0.tag == tag }) else { return }
        let field = fields.remove(at: moved)
        guard let anchor = fields.firstIndex(where: { $0.tag == after }) else { return fields.insert(field, at: moved) }
        fields.insert(field, at: anchor + 1)
    }
}

/// `bytes`' top-level fields (each one's tag and where its key and value lie), changed by `change`, written back
/// after the version varint, each field's bytes as they were.
private func rewritingFields(
    of bytes: [UInt8], _ change: (inout [(tag: UInt32, bytes: Range<Int>)]) -> Void
) throws -> [UInt8] {
    try bytes.withUnsafeBytes { buffer in
        var r = BinaryReader(buffer)
        let version = try r.readVarint()
        var fields: [(tag: UInt32, bytes: Range<Int>)] = []
        var at = r.offset
        while let (tag, wire) = try r.nextField() {
            try r.skip(wire)
            fields.append((tag, at..<r.offset))
            at = r.offset
        }
        change(&fields)
        var w = BinaryWriter()
        w.writeVarint(version)
        for f in fields { w.append(raw: UnsafeRawBufferPointer(rebasing: buffer[f.bytes])) }
        return w.bytes
    }
}
