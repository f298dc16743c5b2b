import Crypto
import LedgerCore
import LedgerErrors

// MARK: - InputDecoder+Grants

extension InputDecoder {
    /// The operator's grant or revoke (`"type": "grant"`, `POST /v1/customers/{id}/grants`; docs/socket-api.md):
    ///
    /// - grant: `{"entitlement", "duration" | "until", "from"?, "reason"?, "grantId"?, "environment"?}`. `from`
    ///   defaults to when the input was received; `duration` is an ISO-8601 calendar length (`P7D`, `P1M`, `P1Y`)
    ///   counted from `from`; neither `duration` nor `until` grants with no end only when `"lifetime": true` says so.
    /// - revoke: `{"revoke": true, "grantId" | "entitlement", "at"?, "reason"?, "environment"?}`: ends the named
    ///   grant, or every grant of the entitlement known before it, from `at` (default: when received) on.
    ///
    /// The user is the body's `appUserId`, else the caller's (the route's path, `appUserId` in the query). Instants
    /// are milliseconds since epoch or ISO-8601 UTC (`2026-12-01T00:00:00Z`). A grant without `grantId` gets one
    /// derived from its fields (`g_` and 16 hex digits of their SHA-256), so sending the same grant again is a
    /// duplicate, and every replica of a replicated ledger derives the same id.
    func decodeGrant(_ root: AppleObject, context: Context) throws(InputError) -> Decoded {
        let user: AppUserID
        if let stated = try root.string("appUserId") {
            guard !stated.isEmpty else { throw .emptyField("appUserId") }
            if let caller = context.appUserId, caller.rawValue != stated {
                throw InputError(
                    code: .invalidGrant,
                    message: "field 'appUserId' is '\(stated)' but the grant is addressed to '\(caller.rawValue)'")
            }
            user = AppUserID(stated)
        } else if let caller = context.appUserId {
            user = caller
        } else {
            throw .missingField("appUserId")
        }
        let environment = try root.environment("environment") ?? .production
        let reason = try root.string("reason")
        if let reason, reason.utf8.count > 1000 {
            throw .outOfRange("field 'reason' is \(reason.utf8.count) bytes; at most 1000")
        }
        let grantId = try root.string("grantId")
        if let grantId, grantId.isEmpty || grantId.utf8.count > 200 {
            throw InputError(code: .invalidGrant, message: "field 'grantId' must be 1 to 200 bytes")
        }
        let entitlement = try root.string("entitlement")
        if let entitlement, entitlement.isEmpty { throw .emptyField("entitlement") }

        let fact: OperatorGrant
        if try root.bool("revoke") == true {
            guard grantId != nil || entitlement != nil else {
                throw InputError(
                    code: .missingField, message: "a revoke names the grant ('grantId') or the entitlement ('entitlement')")
            }
            for field in ["duration", "until", "from", "lifetime"] where root.has(field) {
                throw InputError(code: .invalidGrant, message: "field '\(field)' belongs to a grant, not a revoke (use 'at')")
            }
            fact = OperatorGrant(
                action: .revoke, appUserId: user, environment: environment, grantId: grantId, entitlement: entitlement,
                from: try Self.instant(root, "at") ?? context.receivedAt, reason: reason)
        } else {
            guard let entitlement else { throw .missingField("entitlement") }
            if root.has("at") {
                throw InputError(code: .invalidGrant, message: "field 'at' belongs to a revoke; a grant starts at 'from'")
            }
            let from = try Self.instant(root, "from") ?? context.receivedAt
            let until: UnixMillis?
            switch (try root.string("duration"), try Self.instant(root, "until"), try root.bool("lifetime") ?? false) {
            case (let text?, nil, false):
                guard let duration = CalendarDuration(iso8601: text), duration.months > 0 || duration.days > 0 else {
                    throw InputError(
                        code: .invalidGrant, message: "field 'duration' is '\(text)': expected ISO-8601 like P7D, P1M, P1Y")
                }
                until = duration.added(to: from)
            case (nil, let end?, false):
                guard end > from else {
                    throw .outOfRange("field 'until' (\(end)) must be after the grant's start (\(from))")
                }
                until = end
            case (nil, nil, true):
                until = nil
            case (nil, nil, false):
                throw InputError(
                    code: .missingField,
                    message: "a grant states how long: 'duration' (P1M), 'until' (an instant) or 'lifetime': true")
            default:
                throw InputError(code: .invalidGrant, message: "a grant states one of 'duration', 'until' or 'lifetime'")
            }
            var grant = OperatorGrant(
                action: .grant, appUserId: user, environment: environment, grantId: grantId, entitlement: entitlement,
                from: from, until: until, reason: reason)
            if grant.grantId == nil { grant.grantId = Self.derivedGrantId(grant) }
            fact = grant
        }
        return Decoded(facts: [.grant(fact)], type: .grant, source: .grant, signature: .unsigned, observedAt: nil)
    }

    /// An instant field: milliseconds since epoch, or an ISO-8601 UTC string.
    static func instant(_ root: AppleObject, _ key: String) throws(InputError) -> UnixMillis? {
        guard root.has(key) else { return nil }
        if let text = try? root.string(key) {
            guard let ms = AppleDate.parse(text) else {
                throw .wrongType(key, expected: "milliseconds since epoch or an ISO-8601 UTC instant (2026-12-01T00:00:00Z)")
            }
            return ms
        }
        return try root.int64(key)
    }

    /// `g_` and the first 16 hex digits of the SHA-256 of the grant's fields, one per line.
    static func derivedGrantId(_ g: OperatorGrant) -> String {
        let text = [
            g.appUserId.rawValue, g.environment.rawValue, g.entitlement ?? "", String(g.from),
            g.until.map { String($0) } ?? "-", g.reason ?? "",
        ].joined(separator: "\n")
        let digest = SHA256.hash(data: Array(text.utf8))
        let hex = Array("0123456789abcdef".utf8)
        var out = Array("g_".utf8)
        for byte in digest.prefix(8) {
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
