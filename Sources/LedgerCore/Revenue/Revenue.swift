// MARK: - Revenue: what the customers paid and what was given back, per currency

/// One movement of money a timeline states: a period bought at its price, a refund of it, a refund reversed. Amounts
/// are milliunits of `currency`, as Apple sends `price` (9990 is 9.99), signed: a refund is negative.
public struct RevenueEntry: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// A period bought (a purchase or renewal) at its price.
        case purchase
        /// A refund: the price, or the share a prorated refund states.
        case refund
        /// A refund reversed (REFUND_REVERSED): the refunded amount comes back.
        case refundReversed = "refund_reversed"
        /// What an upgrade gave back of the old period, **estimated**: Apple refunds the unused part of a period
        /// upgraded mid-way, prorated, but states no amount. The estimate is the period's price × the unused share
        /// of its length (`Revenue.upgradeCredit`), dated at the upgrade.
        case upgradeCredit = "upgrade_credit"
    }

    public var kind: Kind
    /// Valid time: the period's purchase date, the refund's date, the reversal's instant.
    public var at: UnixMillis
    public var originalTransactionId: String
    public var transactionId: String
    public var productId: String
    /// Who bought the period: its owner at the purchase date (nil: nobody claimed it). A refund and its reversal
    /// belong to the buyer of the period they give back.
    public var appUserId: String?
    public var currency: String
    /// The period's price.
    public var price: Int64
    /// What this entry adds to the revenue: `price`, minus what a refund gave back, plus what a reversal restored,
    /// minus an upgrade's estimated credit.
    public var amount: Int64
    public var periodType: LifecyclePeriodType
    /// A refund's revocation type (`REFUND_FULL`, `REFUND_PRORATED`) and Apple's `revocationPercentage`.
    public var revocationType: String?
    public var percentage: Int64?
}

/// What the entries of one currency add up to.
public struct RevenueTotals: Hashable, Sendable {
    /// Periods bought, and what they were bought for.
    public var purchases = 0
    public var gross: Int64 = 0
    /// Refunds, reversals, and what the refunds gave back less what the reversals restored.
    public var refunds = 0
    public var reversals = 0
    public var refunded: Int64 = 0
    /// Upgrades mid-period, and the estimated credit of their old periods' unused parts (`RevenueEntry.Kind.upgradeCredit`).
    public var upgradeCredits = 0
    public var credited: Int64 = 0

    public init() {}

    /// `gross - refunded - credited`.
    public var net: Int64 { gross.saturatingSubtract(refunded).saturatingSubtract(credited) }

    mutating func add(_ e: RevenueEntry) {
        switch e.kind {
        case .purchase:
            purchases += 1
            gross = gross.saturatingAdd(e.amount)
        case .refund:
            refunds += 1
            refunded = refunded.saturatingAdd(-e.amount)
        case .refundReversed:
            reversals += 1
            refunded = refunded.saturatingSubtract(e.amount)
        case .upgradeCredit:
            upgradeCredits += 1
            credited = credited.saturatingAdd(-e.amount)
        }
    }
}

/// The revenue over `[from, to)` (valid time) as known after log seq `asOf`: totals per currency, per product and
/// currency, and the entries behind them. Amounts of different currencies are never added together; `converted`
/// does that only with an operator's rate table.
public struct RevenueSummary: Hashable, Sendable {
    public var environment: String
    /// The interval, `nil` for an open end.
    public var from: UnixMillis?
    public var to: UnixMillis?
    public var asOf: UInt64?
    /// The customer the summary is about (nil: every subscription).
    public var appUserId: String?
    /// The product it is restricted to (nil: every product).
    public var productId: String?
    /// Currency → totals.
    public var totals: [String: RevenueTotals]
    /// Product → currency → totals.
    public var products: [String: [String: RevenueTotals]]
    /// Periods in the interval whose price Apple did not state (V1 receipts): counted here, never guessed.
    public var unpriced: Int
    /// The entries in the interval, in time order (then subscription and transaction).
    public var entries: [RevenueEntry]
}

public enum Revenue {
    /// The money one period of `t` states, bought by `buyer`: its price at its purchase date, each refund at its
    /// date (the price, or the share a prorated refund states: `Lifecycle.refundedAmount`), each reversal at its
    /// instant; for the old side of an upgrade without a refund, the estimated credit of its unused part at the
    /// upgrade (`upgradeCredit`). Empty for a period shared through Family Sharing (`inAppOwnershipType` `FAMILY_SHARED`): it brought
    /// nothing (the family organizer's own purchase did), and neither does its revoke; a Family Sharing revoke is
    /// never a refund. Nil when Apple stated no price or currency (V1 receipts): unpriced, never guessed.
    public static func entries(of p: Period, in t: Timeline, buyer: AppUserID?) -> [RevenueEntry]? {
        guard p.terms?.ownershipType != "FAMILY_SHARED" else { return [] }
        guard let price = p.terms?.price, let currency = p.terms?.currency else { return nil }
        let entry = RevenueEntry(
            kind: .purchase, at: p.start, originalTransactionId: t.originalTransactionId.rawValue,
            transactionId: p.transactionId.rawValue, productId: p.productId, appUserId: buyer?.rawValue,
            currency: currency, price: price, amount: price, periodType: LifecyclePeriodType(p.offer))
        var out = [entry]
        if let credit = upgradeCredit(of: p, price: price), !p.revocations.contains(where: { !$0.isFamilyRevoke }) {
            out.append(entry.following(.upgradeCredit, at: p.end ?? p.start, amount: -credit))
        }
        for r in p.revocations where !r.isFamilyRevoke {
            let back = Lifecycle.refundedAmount(price: price, revocation: r)
            var refund = entry.following(.refund, at: r.date, amount: -back)
            refund.revocationType = r.type
            refund.percentage = r.percentage
            out.append(refund)
            if let reversed = r.reversedAt { out.append(refund.following(.refundReversed, at: reversed, amount: back)) }
        }
        return out
    }

    /// The estimated credit of an upgraded period's unused part: `price` × (its `expiresDate` − the upgrade) ÷
    /// (its `expiresDate` − its start), rounded half away from zero. Nil when the period was not upgraded or no part
    /// of it was left. A refund of the period (a different statement, with its own amount) replaces the estimate.
    public static func upgradeCredit(of p: Period, price: Int64) -> Int64? {
        guard p.upgraded, let upgradedAt = p.end, let billedUntil = p.billedUntil, billedUntil > upgradedAt,
            upgradedAt >= p.start
        else { return nil }
        var unused = Int128(billedUntil) - Int128(upgradedAt)
        var length = Int128(billedUntil) - Int128(p.start)
        // Instants at the ends of the range make lengths past 2^62 ms; halving both keeps the product in range.
        while length > Int128(1) << 62 {
            unused >>= 1
            length >>= 1
        }
        let credit = (Int128(price) * unused + length / 2) / length
        return credit > 0 ? Int64(clamping: credit) : nil
    }

    /// The summary of `timelines` over `[from, to)` (either end open when nil): the entries of `environment` whose
    /// instant lies in the interval, of `product` when given, of the periods `user` bought when given (its owner
    /// at the purchase date; with the `share` policy a period two users owned counts for each of them).
    /// - Complexity: O(total size of the timelines + entries · log entries).
    public static func summary(
        timelines: [Timeline], environment: AppStoreEnvironment, from: UnixMillis?, to: UnixMillis?, asOf: UInt64?,
        user: AppUserID? = nil, product: String? = nil
    ) -> RevenueSummary {
        var entries: [RevenueEntry] = []
        var unpriced = 0
        func inInterval(_ at: UnixMillis) -> Bool { (from.map { at >= $0 } ?? true) && (to.map { at < $0 } ?? true) }
        for t in timelines where t.environment == environment {
            let owners = t.ownerIntervals
            for p in t.periods where product.map({ p.productId == $0 }) ?? true {
                let buyers = owners.filter { $0.covers(p.start) }.map(\.appUserId)
                if let user, !buyers.contains(user) { continue }
                guard let stated = Self.entries(of: p, in: t, buyer: user ?? buyers.first) else {
                    if inInterval(p.start) { unpriced += 1 }
                    continue
                }
                entries += stated.filter { inInterval($0.at) }
            }
        }
        entries.sort {
            ($0.at, $0.originalTransactionId, $0.transactionId, $0.kind.order)
                < ($1.at, $1.originalTransactionId, $1.transactionId, $1.kind.order)
        }
        var totals: [String: RevenueTotals] = [:]
        var products: [String: [String: RevenueTotals]] = [:]
        for e in entries {
            totals[e.currency, default: RevenueTotals()].add(e)
            products[e.productId, default: [:]][e.currency, default: RevenueTotals()].add(e)
        }
        return RevenueSummary(
            environment: environment.rawValue, from: from, to: to, asOf: asOf, appUserId: user?.rawValue,
            productId: product, totals: totals, products: products, unpriced: unpriced, entries: entries)
    }
}

extension RevenueEntry {
    /// A later movement of the same period's money: this entry's period and buyer, another kind, instant and amount.
    func following(_ kind: Kind, at: UnixMillis, amount: Int64) -> RevenueEntry {
        var e = self
        e.kind = kind
        e.at = at
        e.amount = amount
        return e
    }
}

extension RevenueEntry.Kind {
    /// Entries of one instant: the purchase before its refund before the reversal.
    var order: Int { Self.allCases.firstIndex(of: self)! }
}

// MARK: - Conversion with the operator's rates

/// The operator's exchange rates (`"revenue": {"currency": "EUR", "rates": {"USD": 0.92}}` in the configuration): how
/// many units of `currency` one unit of each other currency is worth. Nothing else converts: the ledger never guesses
/// a rate, and an amount in a currency the table does not name stays unconverted.
public struct ExchangeRates: Hashable, Sendable {
    /// The currency amounts are converted into (ISO 4217 code, as Apple states currencies).
    public var currency: String
    /// Currency → rate, in millionths (0.92 is 920,000): exact to the sixth decimal, as the configuration states it.
    public var micros: [String: Int64]

    public init(currency: String, micros: [String: Int64]) {
        self.currency = currency
        self.micros = micros
    }

    /// `amount` milliunits of `from` in milliunits of `currency`, rounded half away from zero; nil without a rate.
    public func convert(_ amount: Int64, from: String) -> Int64? {
        if from == currency { return amount }
        guard let rate = micros[from] else { return nil }
        let product = Int128(amount) * Int128(rate)
        let half = Int128(500_000)
        let rounded = (product >= 0 ? product + half : product - half) / 1_000_000
        return Int64(clamping: rounded)
    }
}

/// A summary's totals in the operator's currency: the currencies the rate table converts, and those it does not
/// (listed, never guessed).
public struct ConvertedRevenue: Hashable, Sendable {
    public var currency: String
    public var gross: Int64 = 0
    public var refunded: Int64 = 0
    /// Upgrades' estimated credits (`RevenueTotals.credited`).
    public var credited: Int64 = 0
    public var net: Int64 { gross.saturatingSubtract(refunded).saturatingSubtract(credited) }
    /// The currencies converted, with the rate used (millionths).
    public var rates: [String: Int64] = [:]
    /// Currencies of the summary the table has no rate for: their totals are left out of the sums above.
    public var unconverted: [String] = []
}

extension RevenueSummary {
    /// The totals converted by `rates`: each currency's gross and refunded amounts at its rate, summed.
    public func converted(by rates: ExchangeRates) -> ConvertedRevenue {
        var c = ConvertedRevenue(currency: rates.currency)
        for currency in totals.keys.sorted() {
            let t = totals[currency]!
            guard let gross = rates.convert(t.gross, from: currency), let refunded = rates.convert(t.refunded, from: currency),
                let credited = rates.convert(t.credited, from: currency)
            else {
                c.unconverted.append(currency)
                continue
            }
            c.gross = c.gross.saturatingAdd(gross)
            c.refunded = c.refunded.saturatingAdd(refunded)
            c.credited = c.credited.saturatingAdd(credited)
            c.rates[currency] = currency == rates.currency ? 1_000_000 : rates.micros[currency]
        }
        return c
    }
}
