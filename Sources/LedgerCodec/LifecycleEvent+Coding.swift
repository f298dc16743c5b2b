import LedgerCore

// The stored form of a lifecycle event (the `lifecycle` projection): a version, then tagged fields (BinaryWriter's
// format), absent optionals omitted, lists in their own order, so equal events encode to identical bytes (a replay
// compares bytes). Tags are forever.

extension LifecycleEvent {
    /// The format version written first.
    public static let formatVersion: UInt8 = 1

    /// The event's compact binary form. Equal events give identical bytes.
    public func encoded() -> [UInt8] {
        var w = BinaryWriter(capacity: 160 + id.utf8.count)
        encode(into: &w)
        return w.finish()
    }

    /// Appends `encoded()` to `w` (a replay encodes every event into one buffer, emptied between them).
    package func encode(into w: inout BinaryWriter) {
        w.writeVarint(UInt64(Self.formatVersion))
        w.write(1, id)
        w.write(2, seq)
        w.write(3, originalTransactionId.rawValue)
        w.write(4, environment, nameTag: 5)
        w.write(6, appUserId)
        for e in entitlements { w.write(7, e) }
        if late { w.write(8, true) }
        w.write(9, corrects)
        if retracted { w.write(10, true) }
        let s = statement
        w.write(11, s.type.rawValue)
        w.write(12, s.cause)
        w.write(13, s.at)
        w.write(14, s.productId)
        w.write(15, s.transactionId)
        w.write(16, s.periodType?.rawValue)
        w.write(17, s.price)
        w.write(18, s.currency)
        w.write(19, s.expiresAt)
        w.write(20, s.reason)
        w.write(21, s.fromProductId)
        w.write(22, s.newProductId)
        if s.pending { w.write(23, true) }
        w.write(24, s.refundAmount)
        for u in s.fromAppUserIds { w.write(25, u) }
        w.write(26, s.toAppUserId)
    }

    /// Decodes what `encoded()` wrote.
    public init(decoding bytes: UnsafeRawBufferPointer) throws(FactDecodingError) {
        var r = BinaryReader(bytes)
        let version = try r.readVarint()
        guard version == UInt64(Self.formatVersion) else {
            throw FactDecodingError("lifecycle event format \(version) is not \(Self.formatVersion)")
        }
        var id: String?, seq: UInt64?, otid: String?, env: AppStoreEnvironment = .production
        var user: String?, entitlements: [String] = [], late = false, corrects: String?, retracted = false
        var type: LifecycleEventType?, cause: String?, at: Int64?
        var s = LifecycleStatement(type: .renewal, cause: "", at: 0)
        while let (tag, wire) = try r.nextField() {
            let b = wire == .bytes, n = wire == .varint
            switch tag {
            case 1 where b: id = try r.readString()
            case 2 where n: seq = try r.readVarint()
            case 3 where b: otid = try r.readString()
            case 4 where n: env = try readEnvironment(&r)
            case 5 where b: env = try readEnvironmentName(&r)
            case 6 where b: user = try r.readString()
            case 7 where b: entitlements.append(try r.readString())
            case 8 where n: late = try r.readBool()
            case 9 where b: corrects = try r.readString()
            case 10 where n: retracted = try r.readBool()
            case 11 where b:
                let name = try r.readString()
                guard let t = LifecycleEventType(rawValue: name) else {
                    throw FactDecodingError("unknown lifecycle event type \(name)")
                }
                type = t
            case 12 where b: cause = try r.readString()
            case 13 where n: at = try r.readInt64()
            case 14 where b: s.productId = try r.readString()
            case 15 where b: s.transactionId = try r.readString()
            case 16 where b:
                let name = try r.readString()
                guard let p = LifecyclePeriodType(rawValue: name) else {
                    throw FactDecodingError("unknown period type \(name)")
                }
                s.periodType = p
            case 17 where n: s.price = try r.readInt64()
            case 18 where b: s.currency = try r.readString()
            case 19 where n: s.expiresAt = try r.readInt64()
            case 20 where b: s.reason = try r.readString()
            case 21 where b: s.fromProductId = try r.readString()
            case 22 where b: s.newProductId = try r.readString()
            case 23 where n: s.pending = try r.readBool()
            case 24 where n: s.refundAmount = try r.readInt64()
            case 25 where b: s.fromAppUserIds.append(try r.readString())
            case 26 where b: s.toAppUserId = try r.readString()
            case 1...26: throw FactDecodingError("lifecycle event field \(tag) has the wrong wire type")
            default: try r.skip(wire)
            }
        }
        guard let id, let seq, let otid, let type, let cause, let at else {
            throw FactDecodingError("a lifecycle event lacks its id, seq, subscription, type, cause or instant")
        }
        s.type = type
        s.cause = cause
        s.at = at
        self.init(
            id: id, seq: seq, originalTransactionId: OriginalTransactionID(otid), environment: env, appUserId: user,
            entitlements: entitlements, late: late, corrects: corrects, retracted: retracted, statement: s)
    }
}
