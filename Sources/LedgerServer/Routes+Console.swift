import Foundation
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerErrors
import LedgerStore

// MARK: - GET /console/…: the read-only web console

extension LedgerRoutes {
    /// A console page, or the page that says what went wrong with the status its code has in the API (400 for a bad
    /// query, 404 for an unknown subscription).
    func consolePage(path: String, _ body: () throws -> String) -> Response {
        do {
            return Self.html(.ok, try body())
        } catch {
            // Refused as the JSON routes refuse (the same code and status), as a page.
            let refusal = ErrorMiddleware.refusal(error, method: .get, path: path, logger: logger)
            let status = refusal.status ?? HTTPErrors.answer(for: refusal.error.code).status
            let page = ConsolePage.problem(
                title: "\(status.code) \(status.reasonPhrase)", code: refusal.error.code.rawValue,
                message: refusal.error.message)
            return Self.html(status, page)
        }
    }

    static func html(_ status: HTTPResponse.Status, _ page: String) -> Response {
        document(status, contentType: "text/html; charset=utf-8", page)
    }

    /// Every HTML and SVG answer (the console's pages, the timeline pictures), with the same headers: they load
    /// nothing but themselves (no script, style or image from anywhere else), are never read as another type than
    /// the one they are sent as, and are kept by no cache (they show the ledger as it is now).
    static func document(_ status: HTTPResponse.Status, contentType: String, _ text: String) -> Response {
        Response(
            status: status,
            headers: [
                .contentType: contentType,
                .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
                .xContentTypeOptions: "nosniff",
                .cacheControl: "no-store",
            ],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// The environment a console query names (default Production).
    static func consoleEnvironment(_ query: (String) -> Substring?) throws -> AppStoreEnvironment {
        guard let text = query("environment"), !text.isEmpty else { return .production }
        guard let environment = AppStoreEnvironment(appleName: String(text)) else {
            throw CodedError(.invalidQuery, "environment must be Production, Sandbox, Xcode or LocalTesting")
        }
        return environment
    }

    /// The clocks a customer or subscription page is asked for: `at` (ms or ISO-8601) and `asOf` (a log seq); an
    /// empty field is not asked.
    static func consoleClocks(_ query: (String) -> Substring?) throws -> ConsolePage.Clocks {
        ConsolePage.Clocks(
            at: try query("at").flatMap { $0.isEmpty ? nil : try instantQuery("at", $0) },
            asOf: try query("asOf").flatMap { $0.isEmpty ? nil : try seqQuery("asOf", $0) })
    }

    /// `GET /console/`: the overview, by day over the year up to `to` (default: today, or the last day the ledger
    /// knows anything of when that is earlier) and by month over the same year, as known at `asOf`.
    func consoleOverview(_ request: Request) throws -> String {
        let query = try RequestTarget.query(request, form: true)
        try Self.checkQuery(query.map(\.key), .console)
        let environment = try Self.consoleEnvironment { query[Substring($0)] }
        let asOf = try query["asOf"].flatMap { $0.isEmpty ? nil : try Self.seqQuery("asOf", $0) }
        let product = query["productId"].flatMap { $0.isEmpty ? nil : String($0) }
        let entitlement = query["entitlement"].flatMap { $0.isEmpty ? nil : String($0) }
        var end: UnixMillis
        if let text = query["to"], !text.isEmpty {
            end = try Self.instantQuery("to", text)
        } else {
            end = currentMillis()
            if let last = try read({ try ledger.lastMetricDay(environment: environment) }), last < end { end = last }
        }
        let (days, months) = ConsolePage.overviewBoundaries(through: end)
        // Both sets of buckets in one read, as known at the same log position.
        let (figures, lastSeq) = try read {
            (
                try ledger.metrics(
                    environment: environment, bucketings: [days, months], product: product, entitlement: entitlement,
                    asOf: asOf),
                try ledger.lastSeq()
            )
        }
        let (byDay, byMonth) = (figures[0], figures[1])
        return ConsolePage.overview(
            .init(
                environment: environment, productId: product, entitlement: entitlement, asOf: byDay.asOf,
                lastSeq: lastSeq,
                maintained: byDay.maintained, days: byDay.buckets, months: byMonth.buckets,
                end: days[days.count - 2], rates: configuration.revenueRates))
    }

    /// `GET /console/customers?appUserId=…&environment=…`: the lookup form, and the customer when one is asked.
    func consoleCustomer(_ request: Request) throws -> String {
        let query = try RequestTarget.query(request, form: true)
        try Self.checkQuery(query.map(\.key), .consoleCustomers)
        let environment = try Self.consoleEnvironment { query[Substring($0)] }
        let clocks = try Self.consoleClocks { query[Substring($0)] }
        guard let user = query["appUserId"].map(String.init), !user.isEmpty else {
            return ConsolePage.lookup(environment: environment)
        }
        let at = clocks.at ?? currentMillis()
        // Every part of the page as known at one log position, though it is read in several transactions.
        let asOf = try clocks.asOf ?? read { try ledger.lastSeq() }
        return try read {
            let id = AppUserID(user)
            let view = try ledger.customer(id, environment: environment, at: at, asOf: asOf)
            let explanations = try view.entitlements.keys.sorted().map {
                try ledger.explain(id, entitlement: $0, environment: environment, at: at, asOf: asOf)
            }
            let timelines = try view.subscriptions.compactMap {
                try ledger.timeline(OriginalTransactionID($0), environment: environment, at: at, asOf: asOf)
            }
            let lifecycle = try view.subscriptions.flatMap {
                try ledger.lifecycleEvents(of: OriginalTransactionID($0), environment: environment)
                    .filter { ($0.appUserId == nil || $0.appUserId == user) && $0.seq <= asOf }
            }
            .sorted { ($0.seq, $0.id) > ($1.seq, $1.id) }
            return ConsolePage.customer(
                .init(
                    view: view, explanations: explanations, timelines: timelines,
                    revenue: try ledger.revenue(user: id, environment: environment, asOf: asOf), lifecycle: lifecycle,
                    lastSeq: try ledger.lastSeq(), clocks: clocks))
        }
    }

    /// `GET /console/subscriptions/{otid}?environment=…`: the timeline, the events with their raw inputs and
    /// signature status, the reconciliation check, the lifecycle events.
    func consoleSubscription(otid: String, _ request: Request) throws -> String {
        let query = try RequestTarget.query(request, form: true)
        try Self.checkQuery(query.map(\.key), .consoleSubscription)
        let environment = try Self.consoleEnvironment { query[Substring($0)] }
        let clocks = try Self.consoleClocks { query[Substring($0)] }
        let id = OriginalTransactionID(otid)
        return try read {
            // Every part of the page as known at one log position, though it is read in several transactions.
            let asOf = try clocks.asOf ?? ledger.lastSeq()
            guard
                let view = try ledger.timeline(id, environment: environment, at: clocks.at ?? currentMillis(), asOf: asOf)
            else {
                throw CodedError(.notFound, "no \(environment.rawValue) subscription \(otid) is known")
            }
            var raws: [UInt64: String] = [:]
            let events = try ledger.log.events(original: id, environment: environment, upTo: asOf).compactMap { event -> ConsolePage.Event? in
                guard let stored = try ledger.log.event(seq: event.seq) else { return nil }
                let e = stored.event
                if raws[stored.rawKey] == nil {
                    raws[stored.rawKey] = try ledger.log.raw(of: stored).map { bytes in
                        String(decoding: bytes.prefix(ConsolePage.rawLimit), as: UTF8.self)
                            + (bytes.count > ConsolePage.rawLimit ? "\n… (\(bytes.count) bytes in all)" : "")
                    } ?? ""
                }
                return ConsolePage.Event(
                    seq: e.seq, kind: e.fact.kind.rawValue, key: e.fact.eventKey, source: e.metadata.source.rawValue,
                    signature: e.metadata.signature.rawValue, receivedAt: e.metadata.receivedAt,
                    raw: raws[stored.rawKey].flatMap { $0.isEmpty ? nil : $0 })
            }
            return ConsolePage.subscription(
                .init(
                    view: view, events: events,
                    lifecycle: try ledger.lifecycleEvents(of: id, environment: environment)
                        .filter { $0.seq <= asOf }.reversed(),
                    lastSeq: try ledger.lastSeq(), clocks: clocks))
        }
    }
}
