import Foundation
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerStore
import LedgerErrors

// MARK: - GET /v1/revenue, /v1/customers/{appUserId}/revenue, /v1/metrics/{name}

extension LedgerRoutes {

    /// The query of a revenue read: the interval `[from, to)` (ms or ISO-8601; either end open when absent), the
    /// product, the log position `asOf` and the environment.
    struct RevenueQuery {
        var from: UnixMillis?
        var to: UnixMillis?
        var product: String?
        var asOf: UInt64?
        var environment = AppStoreEnvironment.production
        /// `timeZone` (the metrics route's; UTC elsewhere), where a date alone (`from=2024-01-01`) has its midnight.
        var timeZoneName = "UTC"
        var timeZone = Instant.utc
        /// Every parameter, decoded (the metrics route reads more of them).
        var parameters: Parameters

        /// `product` names the product parameter (the metrics route's is `productId`).
        init(_ request: Request, _ endpoint: Endpoint, product productName: String = "product") throws {
            let query = try RequestTarget.query(request)
            parameters = query
            try LedgerRoutes.checkQuery(query.map(\.key), endpoint)
            if let name = query["timeZone"].map(String.init) {
                guard let zone = name == "UTC" ? Instant.utc : TimeZone(identifier: name) else {
                    throw CodedError(.invalidQuery, "timeZone '\(name)' is not a time zone (an IANA name: Europe/Paris)")
                }
                (timeZoneName, timeZone) = (name, zone)
            }
            for (name, target) in [("from", \RevenueQuery.from), ("to", \RevenueQuery.to)] {
                guard let text = query[Substring(name)] else { continue }
                self[keyPath: target] = try LedgerRoutes.instantQuery(name, text, timeZone: timeZone)
            }
            if let from, let to, to < from {
                throw CodedError(.invalidQuery, "the interval [from, to) must not end before it starts")
            }
            if let text = query[Substring(productName)] {
                guard !text.isEmpty else { throw CodedError(.invalidQuery, "\(productName) must not be empty") }
                product = String(text)
            }
            asOf = try query["asOf"].map { try LedgerRoutes.seqQuery("asOf", $0) }
            if let text = query["environment"] {
                guard let env = AppStoreEnvironment(appleName: String(text)) else {
                    throw CodedError(.invalidQuery, "environment must be Production, Sandbox, Xcode or LocalTesting")
                }
                environment = env
            }
        }
    }

    /// The revenue of `user` (its entries included), or of every subscription (totals only).
    func revenueAnswer(user: String?, _ q: RevenueQuery) throws -> BufferedResponse {
        let summary = try read {
            try ledger.revenue(
                user: user.map { AppUserID($0) }, product: q.product, environment: q.environment, from: q.from,
                to: q.to, asOf: q.asOf)
        }
        return JSONBody.buffered(
            RevenueDocument(summary, rates: configuration.revenueRates, withEntries: user != nil))
    }

    /// `GET /v1/metrics/{name}`: the metric by `interval` (day, week, month; default day) over `[from, to)` in
    /// `timeZone` (default UTC), of `productId` when given, as known at `asOf`; JSON, or CSV with `format=csv`.
    func metricsAnswer(name: String, _ request: Request) throws -> BufferedResponse {
        let q = try RevenueQuery(request, .metrics, product: "productId")
        let (zoneName, zone) = (q.timeZoneName, q.timeZone)
        guard let metric = MetricName(rawValue: name) else {
            throw CodedError(
                .notFound, "no metric '\(name)': one of \(MetricName.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let query = q.parameters
        guard let from = q.from, let to = q.to else {
            throw CodedError(.invalidQuery, "from and to are required: the buckets cover [from, to)")
        }
        let interval = try query["interval"].map {
            guard let i = MetricInterval(rawValue: String($0)) else {
                throw CodedError(.invalidQuery, "interval must be day, week or month")
            }
            return i
        } ?? .day
        let csv: Bool
        switch query["format"] {
        case nil, "json": csv = false
        case "csv": csv = true
        default: throw CodedError(.invalidQuery, "format must be json or csv")
        }
        guard let boundaries = MetricBuckets.boundaries(from: from, to: to, interval: interval, timeZone: zone) else {
            throw CodedError(
                .invalidQuery, "to must be after from, with at most \(MetricBuckets.maxBuckets) buckets between them")
        }
        let entitlement = try query["entitlement"].map { text -> String in
            guard !text.isEmpty else { throw CodedError(.invalidQuery, "entitlement must not be empty") }
            return String(text)
        }
        let figures = try read {
            try ledger.metrics(
                environment: q.environment, boundaries: boundaries, product: q.product, entitlement: entitlement,
                asOf: q.asOf)
        }
        let table = MetricTable(
            metric, buckets: figures.buckets, environment: q.environment, interval: interval, timeZone: zoneName,
            productId: q.product, entitlement: entitlement, asOf: figures.asOf, maintained: figures.maintained,
            rates: configuration.revenueRates)
        guard csv else { return JSONBody.buffered(table) }
        return BufferedResponse(status: .ok, contentType: "text/csv; charset=utf-8", body: ByteBuffer(string: table.csv))
    }
}
