import LedgerCore

// MARK: - Erasure (kind 8)

extension Erasure {
    /// Field by field: each pseudonym, who asked, when, why, and the key generation.
    func encode(into w: inout BinaryWriter) {
        for p in pseudonyms { w.write(1, p) }
        w.write(2, requestedBy)
        w.write(3, requestedAt)
        w.write(4, reason)
        w.write(5, keyGeneration)
        w.write(unknownFields)
    }

    init(reading r: inout BinaryReader) throws(FactDecodingError) {
        var by: String?, at: Int64?, generation: UInt64?
        self = Erasure(pseudonyms: [], requestedBy: "", requestedAt: 0, keyGeneration: 0)
        while let (tag, wire) = try r.nextField() {
            let s = wire == .bytes, n = wire == .varint
            switch tag {
            case 1 where s: self.pseudonyms.append(try r.readString())
            case 2 where s: by = try r.readString()
            case 3 where n: at = try r.readInt64()
            case 4 where s: self.reason = try r.readString()
            case 5 where n: generation = try r.readVarint()
            case 1...5: throw FactDecodingError("erasure field \(tag) has the wrong wire type")
            default: try r.readUnknown(tag: tag, wire: wire, into: &self.unknownFields)
            }
        }
        guard let by, let at, let generation, !pseudonyms.isEmpty else {
            throw FactDecodingError("erasure lacks its pseudonyms, who asked, when or its key generation")
        }
        self.requestedBy = by
        self.requestedAt = at
        self.keyGeneration = generation
    }
}
