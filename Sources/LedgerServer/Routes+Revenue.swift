import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerStore
import LedgerErrors

// MARK: - GET /v1/revenue, /v1/customers/{appUserId}/revenue

extension LedgerRoutes {
    static let revenueRoute = "/v1/revenue"
    static let customerRevenueRoute = "/v1/customers/{appUserId}/revenue"

    /// The query of a revenue read: the interval `[from, to)` (ms or ISO-8601; either end open when absent), the
    /// product, the log position `asOf` and the environment.
    struct RevenueQuery {
        var from: UnixMillis?
        var to: UnixMillis?
        var product: String?
        var asOf: UInt64?
        var environment = AppStoreEnvironment.production

        init(_ request: Request, route: String) throws {
            let query = request.uri.queryParameters
            try LedgerRoutes.checkQuery(query.map(\.key), route: route)
            for (name, target) in [("from", \RevenueQuery.from), ("to", \RevenueQuery.to)] {
                guard let text = query[Substring(name)] else { continue }
                self[keyPath: target] = try LedgerRoutes.instantQuery(name, text)
            }
            if let from, let to, to < from {
                throw CodedError(.invalidQuery, "the interval [from, to) must not end before it starts")
            }
            if let text = query["product"] {
                guard !text.isEmpty else { throw CodedError(.invalidQuery, "product must not be empty") }
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

    func addRevenueRoutes(to router: Router<LedgerRequestContext>) {
        router.get(RouterPath(stringLiteral: Self.revenueRoute)) { request, _ in
            try self.revenueAnswer(user: nil, RevenueQuery(request, route: "GET " + Self.revenueRoute)).response
        }
        router.get(RouterPath(stringLiteral: Self.customerRevenueRoute)) { request, context in
            let user = try context.parameters.require("appUserId")
            return try self.revenueAnswer(
                user: user, RevenueQuery(request, route: "GET " + Self.customerRevenueRoute)
            ).response
        }
    }
}
