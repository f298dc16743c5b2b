import LedgerCodec
import LedgerCore

/// `bytes` (a version varint, then tagged fields, as `BinaryWriter` writes them) with every top-level field `tag`
/// left out: how a test makes what an older version wrote.
public func removingField(_ tag: UInt32, from bytes: [UInt8]) throws -> [UInt8] {
    try bytes.withUnsafeBytes { buffer in
        var r = BinaryReader(buffer)
        var w = BinaryWriter()
        w.writeVarint(try r.readVarint())
        while let (t, wire) = try r.nextField() {
            switch wire {
            case .varint:
                let v = try r.readVarint()
                if t != tag { w.write(t, v) }
            case .bytes:
                let b = try r.readBytes()
                if t != tag { w.write(t, bytes: b) }
            }
        }
        return w.bytes
    }
}
