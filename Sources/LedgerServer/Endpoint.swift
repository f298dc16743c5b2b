import Hummingbird

/// Every endpoint of the socket API (docs/socket-api.md, openapi.yaml), in one table: its method, its path as the
/// router and openapi.yaml write it (parameters as `{name}`), and the query parameters it reads. The router is built
/// from it (`LedgerRoutes.makeRouter`, whose switch over the endpoints gives each its handler, so none can lack one
/// or be served outside the table), the fast path's matcher reads its paths (`FastRequest`), and a query parameter
/// an endpoint does not read is refused from it (`LedgerRoutes.checkQuery`). A test holds openapi.yaml to it.
enum Endpoint: Int, CaseIterable, Sendable {
    case appendEvents, appleNotifications, appleReceipts, appleTransactions, bindings
    case subscription, timelineSVG, timelineHTML
    case customer, why, customerRevenue, appendGrant, grants, forget
    case transaction, events, lifecycle, revenue, metrics
    case health, prometheus
    case console, consoleCustomers, consoleSubscription

    /// The table.
    private var definition: (method: HTTPRequest.Method, path: String, query: [String]) {
        let clocks = ["at", "asOf", "environment"]
        let stream = ["after", "limit", "follow", "timeout"]
        let revenue = ["from", "to", "product", "asOf", "environment"]
        switch self {
        case .appendEvents: return (.post, "/v1/events", ["type", "appUserId", "receivedAt"])
        case .appleNotifications: return (.post, "/v1/apple/notifications", ["appUserId", "receivedAt"])
        case .appleReceipts: return (.post, "/v1/apple/receipts", ["appUserId", "receivedAt"])
        case .appleTransactions: return (.post, "/v1/apple/transactions", ["appUserId", "receivedAt"])
        case .bindings: return (.post, "/v1/bindings", ["receivedAt"])
        case .subscription: return (.get, "/v1/subscriptions/{otid}", clocks)
        case .timelineSVG: return (.get, "/v1/subscriptions/{otid}/timeline.svg", clocks)
        case .timelineHTML: return (.get, "/v1/subscriptions/{otid}/timeline.html", clocks)
        case .customer: return (.get, "/v1/customers/{appUserId}", clocks)
        case .why: return (.get, "/v1/customers/{appUserId}/entitlements/{entitlement}/why", clocks)
        case .customerRevenue: return (.get, "/v1/customers/{appUserId}/revenue", revenue)
        case .appendGrant: return (.post, "/v1/customers/{appUserId}/grants", ["receivedAt"])
        case .grants: return (.get, "/v1/customers/{appUserId}/grants", clocks)
        case .forget: return (.post, "/v1/customers/{appUserId}/forget", [])
        case .transaction: return (.get, "/v1/transactions/{transactionId}", [])
        case .events: return (.get, "/v1/events", stream)
        case .lifecycle: return (.get, "/v1/lifecycle", stream)
        case .revenue: return (.get, "/v1/revenue", revenue)
        case .metrics:
            return (
                .get, "/v1/metrics/{name}",
                ["from", "to", "interval", "timeZone", "productId", "entitlement", "asOf", "environment", "format"]
            )
        case .health: return (.get, "/v1/health", [])
        case .prometheus: return (.get, "/metrics", [])
        // `/console` and `/console/` are one route to the router (the pages link to `/console/`).
        case .console: return (.get, "/console", ["environment", "asOf", "to", "productId", "entitlement"])
        case .consoleCustomers: return (.get, "/console/customers", ["appUserId", "environment", "at", "asOf"])
        case .consoleSubscription: return (.get, "/console/subscriptions/{otid}", ["environment", "at", "asOf"])
        }
    }

    // Read once: a request reads its endpoint's entry by index, and makes no string of its own.
    private static let definitions = allCases.map(\.definition)
    private static let routes = allCases.map { "\($0.definition.method.rawValue) \($0.definition.path)" }
    private static let pathPrefixes = allCases.map { String($0.definition.path.prefix { $0 != "{" }) }

    var method: HTTPRequest.Method { Self.definitions[rawValue].method }
    var path: String { Self.definitions[rawValue].path }
    /// The query parameters the endpoint reads; any other is refused with 400 `invalid_query`.
    var query: [String] { Self.definitions[rawValue].query }
    /// "GET /v1/events", as refusals name it.
    var route: String { Self.routes[rawValue] }

    /// The path up to its first parameter: `/v1/customers/` for `/v1/customers/{appUserId}`; the whole path when it
    /// has none.
    var pathPrefix: String { Self.pathPrefixes[rawValue] }
}
