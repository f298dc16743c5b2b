import LedgerCore

// MARK: - Revenue (`storeledger revenue --json`, `GET /v1/revenue`, `GET /v1/customers/{id}/revenue`)

/// A revenue summary as the API answers it: the interval and clocks, totals per currency and per product and
/// currency, the periods whose price is unknown, the totals in the operator's currency when the configuration has a
/// rate table (else `null`), and, for a customer, the entries behind the totals. Amounts are milliunits.
public struct RevenueDocument: JSONDocument, Sendable {
    public var summary: RevenueSummary
    public var converted: ConvertedRevenue?
    /// Whether `entries` are written (a customer's answer; the whole ledger's would be every purchase ever).
    public var withEntries: Bool

    /// `summary` converted by `rates` when given.
    public init(_ summary: RevenueSummary, rates: ExchangeRates?, withEntries: Bool) {
        self.summary = summary
        self.converted = rates.map { summary.converted(by: $0) }
        self.withEntries = withEntries
    }

    public func write(to json: inout JSONWriter) {
        let s = summary
        json.object { o in
            if let user = s.appUserId { o.key("appUserId"); o.string(user) }
            o.key("environment"); o.string(s.environment)
            o.key("from"); o.number(s.from)
            o.key("to"); o.number(s.to)
            o.key("asOf"); o.number(s.asOf)
            o.key("productId"); o.string(s.productId)
            o.key("totals"); Self.write(s.totals, to: &o)
            o.key("products")
            o.object { p in
                for product in s.products.keys.sorted() {
                    p.key(product); Self.write(s.products[product]!, to: &p)
                }
            }
            o.key("unpriced"); o.number(s.unpriced)
            o.key("converted")
            if let c = converted { c.write(to: &o) } else { o.null() }
            if withEntries { o.key("entries"); o.array(s.entries) { $1.write(to: &$0) } }
        }
    }

    /// Currency → totals, in currency order.
    static func write(_ totals: [String: RevenueTotals], to json: inout JSONWriter) {
        json.object { c in
            for currency in totals.keys.sorted() {
                c.key(currency); totals[currency]!.write(to: &c)
            }
        }
    }
}

extension RevenueTotals: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("purchases"); o.number(purchases)
            o.key("gross"); o.number(gross)
            o.key("refunds"); o.number(refunds)
            o.key("reversals"); o.number(reversals)
            o.key("refunded"); o.number(refunded)
            o.key("upgradeCredits"); o.number(upgradeCredits)
            o.key("credited"); o.number(credited)
            o.key("net"); o.number(net)
        }
    }
}

/// `rates` in millionths (920000 is 0.92), as exact as the configuration states them.
extension ConvertedRevenue: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("currency"); o.string(currency)
            o.key("gross"); o.number(gross)
            o.key("refunded"); o.number(refunded)
            o.key("credited"); o.number(credited)
            o.key("net"); o.number(net)
            o.key("ratesMicros")
            o.object { r in
                for c in rates.keys.sorted() {
                    r.key(c); r.number(rates[c]!)
                }
            }
            o.key("unconverted"); o.array(unconverted) { $0.string($1) }
        }
    }
}

/// `revocationType` and `percentage` only on refunds and reversals; `estimated` on an upgrade's credit, the one
/// amount Apple does not state.
extension RevenueEntry: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("kind"); o.string(kind.rawValue)
            o.key("at"); o.number(at)
            o.key("originalTransactionId"); o.string(originalTransactionId)
            o.key("transactionId"); o.string(transactionId)
            o.key("productId"); o.string(productId)
            o.key("appUserId"); o.string(appUserId)
            o.key("periodType"); o.string(periodType.rawValue)
            o.key("currency"); o.string(currency)
            o.key("price"); o.number(price)
            o.key("amount"); o.number(amount)
            switch kind {
            case .purchase: break
            case .refund, .refundReversed:
                o.key("revocationType"); o.string(revocationType)
                o.key("percentage"); o.number(percentage)
            case .upgradeCredit:
                o.key("estimated"); o.bool(true)
            }
        }
    }
}
