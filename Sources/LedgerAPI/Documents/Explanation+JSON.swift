import LedgerCore

// MARK: - Why (`why --json`, `GET /v1/customers/{id}/entitlements/{entitlement}/why`)

/// The answer (as the customer document states it), the deciding reason, and each grantor's chain of facts.
/// Absent values as `null`; digests as lowercase hex.
extension EntitlementExplanation: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("appUserId"); o.string(appUserId)
            o.key("entitlement"); o.string(entitlement)
            o.key("environment"); o.string(environment)
            o.key("at"); o.number(at)
            o.key("asOf"); o.number(asOf)
            o.key("active"); o.bool(active)
            o.key("expiresAt"); o.number(expiresAt)
            o.key("productId"); o.string(productId)
            o.key("originalTransactionId"); o.string(originalTransactionId)
            o.key("reason"); o.string(reason.rawValue)
            o.key("grantors"); o.array(grantors) { $1.write(to: &$0) }
            if let grantId { o.key("grantId"); o.string(grantId) }
        }
    }
}

extension GrantorExplanation: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("originalTransactionId"); o.string(originalTransactionId)
            o.key("transactionId"); o.string(transactionId)
            o.key("productId"); o.string(productId)
            o.key("grants"); o.bool(grants)
            o.key("until"); o.number(until)
            o.key("reason"); o.string(reason.rawValue)
            o.key("facts"); o.array(facts) { $1.write(to: &$0) }
            if let grantId { o.key("grantId"); o.string(grantId) }
        }
    }
}

extension ExplainedFact: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("role"); o.string(role.rawValue)
            o.key("at"); o.number(at)
            o.key("seq"); o.number(seq)
            o.key("receivedAt"); o.number(receivedAt)
            o.key("source"); o.string(source?.rawValue)
            o.key("rawDigest"); o.string(rawDigest.map { lowercaseHex($0) })
            o.key("detail"); o.string(detail)
        }
    }
}
