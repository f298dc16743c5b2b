import LedgerCore

// MARK: - Timeline (docs/socket-api.md, the timeline document: `timeline --json`, `GET /v1/subscriptions/{otid}`)

/// Every field of the documented shape is written, absent values as `null`; the extras after `owners` too.
extension TimelineView: JSONDocument {
    public func write(to json: inout JSONWriter) { _ = writeLocatingClocks(to: &json) }

    /// Writes the document, and where the digits of `at` and `asOf` lie in the writer's text (`ClockedAnswer`).
    func writeLocatingClocks(to json: inout JSONWriter) -> ClockSpans {
        var spans = ClockSpans()
        json.object { o in
            o.key("originalTransactionId"); o.string(originalTransactionId)
            o.key("environment"); o.string(environment)
            spans.writeClocks(at: at, asOf: asOf, to: &o)
            o.key("status"); o.string(status)
            o.key("productId"); o.string(productId)
            o.key("expiresAt"); o.number(expiresAt)
            o.key("autoRenew"); o.bool(autoRenew)
            o.key("pendingProductId"); o.string(pendingProductId)
            o.key("periods"); o.array(periods) { $1.write(to: &$0) }
            o.key("changes"); o.array(changes) { $1.write(to: &$0) }
            o.key("owners"); o.array(owners) { $1.write(to: &$0) }
            o.key("expirationReason"); o.string(expirationReason)
            o.key("gracePeriodExpiresAt"); o.number(gracePeriodExpiresAt)
            o.key("productType"); o.string(productType)
            o.key("inBillingRetry"); o.bool(inBillingRetry)
            o.key("priceIncreaseStatus"); o.number(priceIncreaseStatus)
            o.key("refusedClaims"); o.array(refusedClaims) { $1.write(to: &$0) }
            o.key("lastSeq"); o.number(lastSeq)
            o.key("renewalPrice"); o.number(renewalPrice)
            o.key("renewalCurrency"); o.string(renewalCurrency)
            o.key("eligibleWinBackOfferIds")
            if let ids = eligibleWinBackOfferIds { o.array(ids) { $0.string($1) } } else { o.null() }
            o.key("reconciliation")
            if let reconciliation { reconciliation.write(to: &o) } else { o.null() }
        }
        return spans
    }
}

/// The latest check against Apple: what an auditor needs to know which answers were checked, when, and what the
/// check found (`complete` when the ledger lacked nothing).
extension ReconciliationView: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("seq"); o.number(seq)
            o.key("checkedAt"); o.number(check.checkedAt)
            o.key("mode"); o.string(check.mode)
            o.key("windowStart"); o.number(check.windowStart)
            o.key("revision"); o.string(check.revision)
            o.key("complete"); o.bool(check.complete)
            o.key("transactionsSeen"); o.number(check.transactionsSeen)
            o.key("transactionsAdded"); o.array(check.transactionsAdded) { $0.string($1) }
            o.key("renewalInfoAdded"); o.bool(check.renewalInfoAdded)
            o.key("notificationsSeen"); o.number(check.notificationsSeen)
            o.key("notificationsAdded"); o.array(check.notificationsAdded) { $0.string($1) }
            o.key("notificationsUndelivered"); o.array(check.notificationsUndelivered) { $0.string($1) }
            o.key("refundsSeen"); o.number(check.refundsSeen)
        }
    }
}

/// Every field, absent values as `null`, but `originalApplicationVersion` only when known.
extension PeriodView: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("transactionId"); o.string(transactionId)
            o.key("webOrderLineItemId"); o.string(webOrderLineItemId)
            o.key("productId"); o.string(productId)
            o.key("start"); o.number(start)
            o.key("end"); o.number(end)
            o.key("offer")
            if let offer { offer.write(to: &o) } else { o.null() }
            o.key("revokedAt"); o.number(revokedAt)
            o.key("revocation")
            if let revocation { revocation.write(to: &o) } else { o.null() }
            o.key("upgraded"); o.bool(upgraded)
            o.key("observedAs"); o.array(observedAs) { $0.string($1) }
            o.key("reinstatedAt"); o.number(reinstatedAt)
            o.key("expiresDate"); o.number(expiresDate)
            o.key("quantity"); o.number(quantity)
            o.key("productType"); o.string(productType)
            o.key("price"); o.number(price)
            o.key("currency"); o.string(currency)
            o.key("transactionReason"); o.string(transactionReason)
            o.key("billingPlanType"); o.string(billingPlanType)
            o.key("commitmentExpiresDate"); o.number(commitmentExpiresDate)
            if let originalApplicationVersion {
                o.key("originalApplicationVersion"); o.string(originalApplicationVersion)
            }
        }
    }
}

/// Only the fields an offer states.
extension Offer: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            if let type { o.key("type"); o.number(type) }
            if let identifier { o.key("identifier"); o.string(identifier) }
            if let discountType { o.key("discountType"); o.string(discountType) }
            o.key("isTrial"); o.bool(isTrial)
            if let period { o.key("period"); o.string(period) }
        }
    }
}

/// Only the fields the revocation states.
extension RevocationView: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("date"); o.number(date)
            if let reason { o.key("reason"); o.number(reason) }
            if let type { o.key("type"); o.string(type) }
            if let percentage { o.key("percentage"); o.number(percentage) }
            if let reversedAt { o.key("reversedAt"); o.number(reversedAt) }
        }
    }
}

/// `detail` and `until` only when the change has them.
extension ChangeView: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("at"); o.number(at)
            o.key("kind"); o.string(kind)
            o.key("seq"); o.number(seq)
            if let detail { o.key("detail"); o.string(detail) }
            if let until { o.key("until"); o.number(until) }
        }
    }
}

/// `to` is `null` while the owner still owns it.
extension OwnerView: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("appUserId"); o.string(appUserId)
            o.key("from"); o.number(from)
            o.key("to"); o.number(to)
            o.key("seq"); o.number(seq)
            o.key("cause"); o.string(cause)
        }
    }
}

extension RefusedClaimView: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("appUserId"); o.string(appUserId)
            o.key("at"); o.number(at)
            o.key("seq"); o.number(seq)
            o.key("cause"); o.string(cause)
        }
    }
}
