import LedgerCore

// MARK: - OperatorGrant (kind 7)

extension OperatorGrant {
    /// Field by field: the action's code (1 grant, 2 revoke), the user, the environment, then what is stated.
    func encode(into w: inout BinaryWriter) {
        w.write(1, UInt64(action == .grant ? 1 : 2))
        w.write(2, appUserId.rawValue)
        w.write(3, environment, nameTag: 4)
        w.write(5, grantId)
        w.write(6, entitlement)
        w.write(7, from)
        w.write(8, until)
        w.write(9, reason)
        w.write(unknownFields)
    }

    init(reading r: inout BinaryReader) throws(FactDecodingError) {
        var action: Action?, user: String?, from: Int64?
        self = OperatorGrant(action: .grant, appUserId: AppUserID(""), grantId: nil, entitlement: nil, from: 0)
        while let (tag, wire) = try r.nextField() {
            let s = wire == .bytes, n = wire == .varint
            switch tag {
            case 1 where n:
                switch try r.readVarint() {
                case 1: action = .grant
                case 2: action = .revoke
                case let code: throw FactDecodingError("grant action \(code) is unknown")
                }
            case 2 where s: user = try r.readString()
            case 3 where n: self.environment = try readEnvironment(&r)
            case 4 where s: self.environment = try readEnvironmentName(&r)
            case 5 where s: self.grantId = try r.readString()
            case 6 where s: self.entitlement = try r.readString()
            case 7 where n: from = try r.readInt64()
            case 8 where n: self.until = try r.readInt64()
            case 9 where s: self.reason = try r.readString()
            case 1...9: throw FactDecodingError("grant field \(tag) has the wrong wire type")
            default: try r.readUnknown(tag: tag, wire: wire, into: &self.unknownFields)
            }
        }
        guard let action, let user, let from else { throw FactDecodingError("grant lacks its action, user or start") }
        self.action = action
        self.appUserId = AppUserID(user)
        self.from = from
    }
}
