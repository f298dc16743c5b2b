import ArgumentParser
import Foundation
import LedgerAPI
import LedgerCore
import LedgerStore

/// `storeledger revenue`: what the customers paid and what was given back over an interval, per currency.
struct RevenueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revenue",
        abstract: "Revenue over an interval [--from, --to), per currency and product, as known at a point of the log.",
        discussion: """
            Each period counts at its purchase date for its price (milliunits, as Apple states it: 9990 is 9.99); a \
            refund at its date for the price, or for the revocationPercentage share of a prorated refund; a \
            REFUND_REVERSED gives it back. Family-shared periods bring nothing, and periods whose price Apple did \
            not state (V1 receipts) are counted as unpriced. Amounts stay in their currencies unless the \
            configuration has a rate table ("revenue": {"currency": "EUR", "rates": {"USD": 0.92}}). With --user: \
            the periods that user bought, each listed. --json: the document of GET /v1/revenue (with --user: of \
            GET /v1/customers/{id}/revenue).
            """)

    @OptionGroup var ledger: LedgerOptions
    @Option(name: .long, help: "The interval's start, included: ISO-8601 or ms since epoch (default: the beginning).")
    var from: String?
    @Option(name: .long, help: "The interval's end, excluded: ISO-8601 or ms since epoch (default: no end).")
    var to: String?
    @Option(name: .customLong("as-of"), help: "Knowledge time: a log sequence number (default: latest).")
    var asOf: UInt64?
    @Option(name: .long, help: "Production (default), Sandbox, Xcode or LocalTesting.")
    var environment: String = "Production"
    @Option(name: .long, help: "Only the periods this app user bought (each listed).") var user: String?
    @Option(name: .long, help: "Only this product.") var product: String?
    @Flag(name: .long, help: "One JSON document on stdout.") var json = false

    func validate() throws {
        let (from, to) = try interval()
        if let from, let to, to < from { throw ValidationError("--to must not be before --from") }
        try checkSeqArgument("as-of", asOf)
        _ = try appStoreEnvironment()
        if user?.isEmpty == true { throw ValidationError("--user must not be empty") }
        if product?.isEmpty == true { throw ValidationError("--product must not be empty") }
    }

    func interval() throws -> (from: UnixMillis?, to: UnixMillis?) {
        return (try from.map { try instantArgument("from", $0) }, try to.map { try instantArgument("to", $0) })
    }

    func appStoreEnvironment() throws -> AppStoreEnvironment {
        guard let e = AppStoreEnvironment(appleName: environment) else {
            throw ValidationError("--environment must be Production, Sandbox, Xcode or LocalTesting")
        }
        return e
    }

    func run() throws {
        let configuration = try ledger.loadConfiguration(json: json)
        let store = try ledger.openLedger(configuration, readOnly: true, json: json)
        let (from, to) = try interval()
        let summary = try store.revenue(
            user: user.map { AppUserID($0) }, product: product, environment: try appStoreEnvironment(), from: from,
            to: to, asOf: asOf)
        let document = RevenueDocument(summary, rates: configuration.revenueRates, withEntries: user != nil)
        if json {
            printJSON(document)
        } else {
            printRevenueTable(document)
        }
    }
}

/// Milliunits as a decimal amount: 9990 → 9.990.
func milliunits(_ amount: Int64) -> String {
    let sign = amount < 0 ? "-" : ""
    let magnitude = amount.magnitude
    let fraction = String(magnitude % 1000)
    return sign + "\(magnitude / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
}

func printRevenueTable(_ d: RevenueDocument) {
    let s = d.summary
    print("environment   \(s.environment)")
    if let user = s.appUserId { print("appUserId     \(user)") }
    print("interval      [\(s.from.map { formatInstant($0) } ?? "beginning"), \(s.to.map { formatInstant($0) } ?? "no end"))")
    print("asOf          \(s.asOf.map(String.init) ?? "-")")
    if let p = s.productId { print("product       \(p)") }
    func row(_ label: String, _ currency: String, _ t: RevenueTotals) {
        print(
            "  " + pad(label, 34) + pad(currency, 5) + pad("\(t.purchases)", 11) + pad(milliunits(t.gross), 14)
                + pad("\(t.refunds)/\(t.reversals)", 11) + pad(milliunits(t.refunded), 14)
                + pad(milliunits(t.credited), 14) + milliunits(t.net))
    }
    print("\n  " + pad("", 34) + pad("CUR", 5) + pad("PURCHASES", 11) + pad("GROSS", 14) + pad("REF/REV", 11)
        + pad("REFUNDED", 14) + pad("CREDITED*", 14) + "NET")
    for c in s.totals.keys.sorted() { row("TOTAL", c, s.totals[c]!) }
    for p in s.products.keys.sorted() {
        for c in s.products[p]!.keys.sorted() { row(p, c, s.products[p]![c]!) }
    }
    if s.totals.isEmpty { print("  (no revenue in the interval)") }
    if s.totals.values.contains(where: { $0.upgradeCredits > 0 }) {
        print("\n* estimated: the unused share of periods upgraded mid-way, which Apple refunds without stating an amount")
    }
    if s.unpriced > 0 { print("\n\(s.unpriced) period(s) without a price Apple stated (not counted)") }
    if let c = d.converted {
        let unconverted = c.unconverted.isEmpty ? "" : "; not converted (no rate): " + c.unconverted.joined(separator: ", ")
        print("\nIN \(c.currency)    gross \(milliunits(c.gross))   refunded \(milliunits(c.refunded))   credited \(milliunits(c.credited))   net \(milliunits(c.net))\(unconverted)")
    }
    if d.withEntries && !s.entries.isEmpty {
        print("\nENTRIES")
        for e in s.entries {
            var detail = e.periodType == .normal ? "" : e.periodType.rawValue
            if e.kind != .purchase, let type = e.revocationType { detail = type }
            if let pct = e.percentage, e.kind != .purchase { detail += " \(milliunits(pct))%" }
            if e.kind == .upgradeCredit { detail = "estimated" }
            print(
                "  " + pad(formatInstant(e.at), 22) + pad(e.kind.rawValue, 17) + pad(e.currency, 5)
                    + pad(milliunits(e.amount), 14) + pad(e.productId, 34) + pad(e.transactionId, 20) + detail)
        }
    }
}
