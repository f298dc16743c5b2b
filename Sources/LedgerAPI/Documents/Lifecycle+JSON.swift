import LedgerCore

// MARK: - Lifecycle events (`storeledger lifecycle --json`, `GET /v1/lifecycle`)

/// One lifecycle event: the same fields for every type (absent values `null`), then those only some types have, only
/// when present. A CORRECTION names the id it corrects (`corrects`), the corrected event's type (`correctedType`)
/// and whether it no longer holds (`retracted`).
extension LifecycleEvent: JSONDocument {
    public func write(to json: inout JSONWriter) {
        let s = statement
        json.object { o in
            o.key("id"); o.string(id)
            o.key("type"); o.string(type.rawValue)
            o.key("seq"); o.number(seq)
            o.key("at"); o.number(s.at)
            o.key("originalTransactionId"); o.string(originalTransactionId.rawValue)
            o.key("environment"); o.string(environment.rawValue)
            o.key("appUserId"); o.string(appUserId)
            o.key("entitlements"); o.array(entitlements) { $0.string($1) }
            o.key("productId"); o.string(s.productId)
            o.key("transactionId"); o.string(s.transactionId)
            o.key("periodType"); o.string(s.periodType?.rawValue)
            o.key("price"); o.number(s.price)
            o.key("currency"); o.string(s.currency)
            o.key("expiresAt"); o.number(s.expiresAt)
            o.key("late"); o.bool(late)
            if let reason = s.reason { o.key("reason"); o.string(reason) }
            if let from = s.fromProductId { o.key("fromProductId"); o.string(from) }
            if let new = s.newProductId { o.key("newProductId"); o.string(new) }
            if s.pending { o.key("pending"); o.bool(true) }
            if let amount = s.refundAmount { o.key("refundAmount"); o.number(amount) }
            if s.type == .transfer {
                o.key("fromAppUserIds"); o.array(s.fromAppUserIds) { $0.string($1) }
                o.key("toAppUserId"); o.string(s.toAppUserId)
            }
            if let corrects {
                o.key("corrects"); o.string(corrects)
                o.key("correctedType"); o.string(s.type.rawValue)
                o.key("retracted"); o.bool(retracted)
            }
        }
    }
}
