import ArgumentParser
import Foundation
import LedgerAPI
import LedgerCore
import LedgerStore

/// `storeledger metrics NAME`: a subscription metric by day, week or month, as known at a point of the log.
struct MetricsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "metrics",
        abstract: "A subscription metric by day, week or month over [--from, --to), as known at a point of the log.",
        discussion: """
            NAME is subscriptions (live, active, trials, offers, in grace period, in billing retry at each bucket's \
            end), movements (new, renewals, reactivations, churned by reason), conversion (free trials ended and \
            converted), mrr (monthly recurring revenue per currency, milliunits; in the operator's currency too with \
            a rate table), refunds or retention (each cohort of first purchases to its 24th period). Buckets start at midnight, on Monday or on the 1st in --time-zone. Every \
            figure is folded from the log as known after --as-of: the figures a dashboard showed then, and a late \
            refund's restatement as the difference from now. Definitions: docs/metrics.md. --json: the document of \
            GET /v1/metrics/{name}; --csv: one line per bucket.
            """)

    @OptionGroup var ledger: LedgerOptions
    @Argument(help: "subscriptions, movements, conversion, mrr, refunds or retention.") var name: String
    @Option(name: .long, help: "The first bucket holds this instant: ISO-8601 or ms since epoch.") var from: String
    @Option(name: .long, help: "The last bucket holds the instant before this one: ISO-8601 or ms since epoch.")
    var to: String
    @Option(name: .long, help: "day, week or month (default: day).") var interval: String = "day"
    @Option(name: .customLong("time-zone"), help: "The buckets' time zone, an IANA name (default: UTC).")
    var timeZone: String = "UTC"
    @Option(name: .customLong("as-of"), help: "Knowledge time: a log sequence number (default: latest).")
    var asOf: UInt64?
    @Option(name: .long, help: "Production (default), Sandbox, Xcode or LocalTesting.")
    var environment: String = "Production"
    @Option(name: .long, help: "Only this product's periods.") var product: String?
    @Option(name: .long, help: "Only the periods of the products that grant this entitlement (the ledger's catalog).")
    var entitlement: String?
    @Flag(name: .long, help: "One JSON document on stdout.") var json = false
    @Flag(name: .long, help: "CSV on stdout: a header line, then one line per bucket.") var csv = false

    func validate() throws {
        guard MetricName(rawValue: name) != nil else {
            throw ValidationError("NAME must be one of \(MetricName.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard MetricInterval(rawValue: interval) != nil else { throw ValidationError("--interval must be day, week or month") }
        guard TimeZone(identifier: timeZone) != nil else { throw ValidationError("--time-zone '\(timeZone)' is not a time zone") }
        guard AppStoreEnvironment(appleName: environment) != nil else {
            throw ValidationError("--environment must be Production, Sandbox, Xcode or LocalTesting")
        }
        if json && csv { throw ValidationError("--json and --csv exclude each other") }
        try checkSeqArgument("as-of", asOf)
        _ = try boundaries()
    }

    func boundaries() throws -> [UnixMillis] {
        // A date alone is its midnight in the buckets' time zone.
        let zone = TimeZone(identifier: timeZone) ?? Instant.utc
        let from = try instantArgument("from", from, timeZone: zone)
        let to = try instantArgument("to", to, timeZone: zone)
        guard
            let boundaries = MetricBuckets.boundaries(
                from: from, to: to, interval: MetricInterval(rawValue: interval)!, timeZone: TimeZone(identifier: timeZone)!)
        else {
            throw ValidationError(
                "--to must be after --from, with at most \(MetricBuckets.maxBuckets) buckets of a \(interval) between them")
        }
        return boundaries
    }

    func run() throws {
        let configuration = try ledger.loadConfiguration(json: json)
        let store = try ledger.openLedger(configuration, readOnly: true, json: json)
        let environment = AppStoreEnvironment(appleName: environment)!
        let figures = try store.metrics(
            environment: environment, boundaries: try boundaries(), product: product, entitlement: entitlement,
            asOf: asOf)
        let table = MetricTable(
            MetricName(rawValue: name)!, buckets: figures.buckets, environment: environment,
            interval: MetricInterval(rawValue: interval)!, timeZone: timeZone, productId: product,
            entitlement: entitlement, asOf: figures.asOf, maintained: figures.maintained, rates: configuration.revenueRates)
        if json {
            printJSON(table)
        } else if csv {
            print(table.csv, terminator: "")
        } else {
            print("\(table.name.rawValue) · \(table.environment) · by \(table.interval.rawValue) in \(table.timeZone) · asOf \(table.asOf)")
            print(pad("START", 22) + table.columns.map { pad($0.uppercased(), max(10, $0.count + 2)) }.joined())
            for row in table.rows {
                print(
                    pad(formatInstant(row.start), 22)
                        + zip(table.columns, row.values).map { pad(String($1), max(10, $0.count + 2)) }.joined())
            }
        }
    }
}
