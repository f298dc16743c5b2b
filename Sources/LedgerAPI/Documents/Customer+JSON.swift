import LedgerCore

// MARK: - Customer (docs/socket-api.md, the customer document: `customer --json`, `GET /v1/customers/{id}`)

/// Entitlements and credits by name in sorted order; absent values as `null`. The members after `refusedClaims` (and
/// an entitlement's after `grantedBy`) are those of RevenueCat's CustomerInfo and EntitlementInfo, written after the
/// others so that a reader of the others finds them at the same bytes: add new members at the end.
extension CustomerView: JSONDocument {
    public func write(to json: inout JSONWriter) { _ = writeLocatingClocks(to: &json) }

    /// Writes the document, and where the digits of `at` and `asOf` lie in the writer's text (`ClockedAnswer`).
    func writeLocatingClocks(to json: inout JSONWriter) -> ClockSpans {
        var spans = ClockSpans()
        json.object { o in
            o.key("appUserId"); o.string(appUserId)
            o.key("environment"); o.string(environment)
            spans.writeClocks(at: at, asOf: asOf, to: &o)
            o.key("entitlements")
            o.object { e in
                for name in entitlements.keys.sorted() {
                    e.key(name)
                    entitlements[name]!.write(to: &e)
                }
            }
            o.key("subscriptions"); o.array(subscriptions) { $0.string($1) }
            o.key("credits")
            o.object { c in
                for name in credits.keys.sorted() {
                    c.key(name); c.number(credits[name]!)
                }
            }
            o.key("bindings"); o.array(bindings) { $1.write(to: &$0) }
            o.key("refusedClaims"); o.array(refusedClaims) { $1.write(to: &$0) }
            o.key("activeProductIds"); o.array(activeProductIds) { $0.string($1) }
            o.key("allPurchasedProductIds"); o.array(allPurchasedProductIds) { $0.string($1) }
            o.key("managementURL"); o.string(managementURL)
            o.key("grants"); o.array(grants) { $1.write(to: &$0) }
        }
        return spans
    }
}

/// Decided by the operator's grant (`grantId`), the answer names no product, subscription or transaction (`null`).
extension EntitlementView: JSONDocument {
    public func write(to json: inout JSONWriter) {
        let bought = grantId == nil
        json.object { o in
            o.key("active"); o.bool(active)
            o.key("expiresAt"); o.number(expiresAt)
            o.key("productId"); o.string(bought ? productId : nil)
            o.key("originalTransactionId"); o.string(bought ? originalTransactionId : nil)
            o.key("grantedBy"); o.array(grantedBy) { $1.write(to: &$0) }
            o.key("transactionId"); o.string(bought ? transactionId : nil)
            o.key("willRenew"); o.bool(willRenew)
            o.key("periodType"); o.string(periodType.rawValue)
            o.key("latestPurchaseDate"); o.number(latestPurchaseDate)
            o.key("originalPurchaseDate"); o.number(originalPurchaseDate)
            o.key("unsubscribeDetectedAt"); o.number(unsubscribeDetectedAt)
            o.key("billingIssueDetectedAt"); o.number(billingIssueDetectedAt)
            o.key("ownershipType"); o.string(ownershipType)
            o.key("isSandbox"); o.bool(isSandbox)
            if let grantId { o.key("grantId"); o.string(grantId) }
        }
    }
}

/// A period: its subscription, transaction and product. The operator's grant: its id and reason. `expiresAt` only
/// when the grant ends.
extension GrantView: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            if let grantId {
                o.key("grantId"); o.string(grantId)
                o.key("reason"); o.string(reason)
            } else {
                o.key("originalTransactionId"); o.string(originalTransactionId)
                o.key("transactionId"); o.string(transactionId)
                o.key("productId"); o.string(productId)
            }
            if let expiresAt { o.key("expiresAt"); o.number(expiresAt) }
        }
    }
}

/// One of the operator's grants: what it grants over which span, why, whether it grants at the answer's instant,
/// and the revoke that ended it early (`null` when none did).
extension GrantState: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("grantId"); o.string(record.grantId)
            o.key("entitlement"); o.string(record.entitlement)
            o.key("active"); o.bool(active)
            o.key("from"); o.number(record.from)
            o.key("until"); o.number(record.grantedUntil)
            o.key("reason"); o.string(record.reason)
            o.key("seq"); o.number(record.seq)
            o.key("revokedAt"); o.number(record.revokedAt)
            o.key("revokeSeq"); o.number(record.revokeSeq)
            o.key("revokeReason"); o.string(record.revokeReason)
        }
    }
}

/// `to` is `null` while the binding holds.
extension BindingView: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("originalTransactionId"); o.string(originalTransactionId)
            o.key("from"); o.number(from)
            o.key("to"); o.number(to)
            o.key("cause"); o.string(cause)
            o.key("seq"); o.number(seq)
        }
    }
}
