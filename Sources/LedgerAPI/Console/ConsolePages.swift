import LedgerCore

// MARK: - The web console's pages

/// The read-only web console (`/console/`): plain HTML written on the server, one self-contained page per answer
/// (its style inline, its charts and timeline pictures inline SVG, no script, no request of its own), so that it works
/// without JavaScript and behind any proxy. Every text from the ledger is escaped. Forms use GET, so every page is a
/// link.
public enum ConsolePage {
    /// The page around `body`: the title, the navigation (the current section marked), and `main`.
    static func page(title: String, section: String, body: String) -> String {
        var out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        out += "<title>\(xmlEscaped(title)) · StoreLedger</title>\n<style>\n\(style)</style>\n</head>\n<body>\n"
        out += "<a class=\"skip\" href=\"#main\">Skip to the content</a>\n"
        out += "<header><nav aria-label=\"Console\"><span class=\"brand\">StoreLedger</span>"
        for (name, href) in [("Overview", "/console/"), ("Customers", "/console/customers")] {
            let current = name == section ? " aria-current=\"page\"" : ""
            out += " <a href=\"\(href)\"\(current)>\(name)</a>"
        }
        out += "</nav></header>\n<main id=\"main\">\n<h1>\(xmlEscaped(title))</h1>\n\(body)</main>\n</body>\n</html>\n"
        return out
    }

    /// A page that says what went wrong (a bad query, nothing known), with its error code.
    public static func problem(title: String, code: String, message: String) -> String {
        page(
            title: title, section: "",
            body: "<p class=\"problem\" role=\"alert\"><strong>\(xmlEscaped(code))</strong>: \(xmlEscaped(message))</p>\n"
                + "<p><a href=\"/console/\">Back to the overview</a></p>\n")
    }

    // MARK: Overview

    /// What the overview shows: the day-by-day subscriptions over a year and the months of the same year, as known at
    /// `asOf`.
    public struct Overview {
        public var environment: AppStoreEnvironment
        public var productId: String?
        /// The entitlement whose granting products the figures keep, when asked.
        public var entitlement: String?
        /// The log position the figures are known at, and the last one.
        public var asOf: UInt64
        public var lastSeq: UInt64
        /// Whether the figures were read from those the write path maintains.
        public var maintained: Bool
        /// One bucket per UTC day, and per UTC month, up to `end`.
        public var days: [MetricBucket]
        public var months: [MetricBucket]
        public var end: UnixMillis
        /// The operator's rate table, for MRR in one currency.
        public var rates: ExchangeRates?

        public init(
            environment: AppStoreEnvironment, productId: String?, entitlement: String? = nil, asOf: UInt64,
            lastSeq: UInt64, maintained: Bool, days: [MetricBucket], months: [MetricBucket], end: UnixMillis,
            rates: ExchangeRates?
        ) {
            self.environment = environment
            self.productId = productId
            self.entitlement = entitlement
            self.asOf = asOf
            self.lastSeq = lastSeq
            self.maintained = maintained
            self.days = days
            self.months = months
            self.end = end
            self.rates = rates
        }
    }

    /// The overview's buckets: the 365 UTC days up to the one holding `end` (366 boundaries), and the 12 UTC months
    /// up to the one holding it (13 boundaries).
    public static func overviewBoundaries(through end: UnixMillis) -> (days: [UnixMillis], months: [UnixMillis]) {
        let day = MetricBuckets.day
        let last = MetricBuckets.floorDiv(end, day) + 1
        let days = (0...365).map { (last - 365 + Int64($0)) * day }
        func monthStart(_ ms: UnixMillis) -> UnixMillis {
            let (year, month) = MetricBuckets.civil(fromDays: MetricBuckets.floorDiv(ms, day))
            return MetricBuckets.days(year: year, month: month) * day
        }
        var months = [monthStart(last * day - 1)]
        while months.count < 12 { months.insert(monthStart(months[0] - 1), at: 0) }
        months.append(monthStart(months[months.count - 1] + 32 * day))
        return (days, months)
    }

    public static func overview(_ o: Overview) -> String {
        var b = "<form class=\"controls\" method=\"get\" action=\"/console/\">\n"
        b += environmentSelect(o.environment)
        b += "<label for=\"asOf\">As known at log seq</label> "
        b += "<input id=\"asOf\" name=\"asOf\" type=\"number\" min=\"0\" max=\"\(o.lastSeq)\" value=\"\(o.asOf)\">\n"
        b += "<label for=\"to\">Up to (UTC)</label> "
        b += "<input id=\"to\" name=\"to\" type=\"date\" value=\"\(CivilTime(o.end).iso.prefix(10))\">\n"
        b += "<label for=\"productId\">Product</label> "
        b += "<input id=\"productId\" name=\"productId\" type=\"text\" value=\"\(xmlEscaped(o.productId ?? ""))\" placeholder=\"all\">\n"
        b += "<label for=\"entitlement\">Entitlement</label> "
        b += "<input id=\"entitlement\" name=\"entitlement\" type=\"text\" value=\"\(xmlEscaped(o.entitlement ?? ""))\" placeholder=\"all\">\n"
        b += "<button type=\"submit\">Show</button>\n</form>\n"
        b += "<p class=\"known\">Figures as known at log seq <strong>\(o.asOf)</strong> of \(o.lastSeq)"
        b += o.asOf < o.lastSeq ? " (a past position: later inputs, a late refund among them, are not counted)" : ""
        b += o.maintained ? "; read from the figures the ledger maintains as it appends." : "; folded from every subscription."
        b += "</p>\n"

        if let today = o.days.last {
            let mrr = o.rates.map { today.mrr(in: $0) }
            b += "<dl class=\"tiles\">\n"
            b += tile("Live", today.live) + tile("Active", today.active) + tile("In trial", today.trials)
            b += tile("Grace period", today.inGracePeriod) + tile("Billing retry", today.inBillingRetry)
            if let mrr, let rates = o.rates {
                b += "<div><dt>MRR (\(xmlEscaped(rates.currency)))</dt><dd>\(money(mrr.amount))</dd></div>\n"
            } else {
                for (currency, amount) in today.mrr.sorted(by: { $0.key < $1.key }) {
                    b += "<div><dt>MRR \(xmlEscaped(currency))</dt><dd>\(money(amount))</dd></div>\n"
                }
            }
            b += "</dl>\n"
        }

        let dayStarts = o.days.map(\.start)
        let monthStarts = o.months.map(\.start)
        b += section(
            "Subscriptions by day",
            ConsoleChart(
                title: "Subscriptions by day", kind: .lines, starts: dayStarts,
                series: [
                    .init(name: "live", style: "s1", values: o.days.map { Int64($0.live) }),
                    .init(name: "active", style: "s2", values: o.days.map { Int64($0.active) }),
                    .init(name: "in trial", style: "s3", values: o.days.map { Int64($0.trials) }),
                    .init(name: "billing retry", style: "s4", values: o.days.map { Int64($0.inBillingRetry + $0.inGracePeriod) }),
                ]),
            table: nil)
        let movements = ConsoleChart(
            title: "New and churned by month", kind: .bars, starts: monthStarts,
            series: [
                .init(name: "new", style: "s1", values: o.months.map { Int64($0.new) }),
                .init(name: "reactivated", style: "s3", values: o.months.map { Int64($0.reactivations) }),
                .init(name: "churned", style: "s4", values: o.months.map { Int64($0.churnedTotal) }),
            ])
        b += section("Movements", movements, table: monthTable(o.months, columns: movementColumns))
        let currencies = Set(o.months.flatMap { $0.mrr.keys }).sorted()
        let mrrSeries: [ConsoleChart.Series]
        if let rates = o.rates {
            mrrSeries = [.init(name: "MRR in \(rates.currency)", style: "s2", values: o.months.map { $0.mrr(in: rates).amount })]
        } else {
            mrrSeries = currencies.prefix(4).enumerated().map { i, c in
                .init(name: "MRR \(c)", style: "s\(i + 1)", values: o.months.map { $0.mrr[c] ?? 0 })
            }
        }
        if mrrSeries.isEmpty {
            b += "<section aria-label=\"Monthly recurring revenue\">\n<h2>Monthly recurring revenue</h2>\n"
            b += "<p>No live period in these months states its price (\(o.months.last?.unpriced ?? 0) live without one "
            b += "at the end).</p>\n</section>\n"
        } else {
            b += section(
                "Monthly recurring revenue",
                ConsoleChart(title: "MRR by month", kind: .lines, starts: monthStarts, series: mrrSeries, format: money),
                table: monthTable(
                    o.months,
                    columns: currencies.map { c in ("MRR \(c)", { money($0.mrr[c] ?? 0) }) } + [("unpriced", { String($0.unpriced) })]))
        }
        b += section(
            "Trial conversion",
            ConsoleChart(
                title: "Trials ended and converted by month", kind: .bars, starts: monthStarts,
                series: [
                    .init(name: "trials ended", style: "s3", values: o.months.map { Int64($0.trialsEnded) }),
                    .init(name: "converted", style: "s1", values: o.months.map { Int64($0.trialsConverted) }),
                ]),
            table: monthTable(
                o.months,
                columns: [
                    ("trials ended", { String($0.trialsEnded) }), ("converted", { String($0.trialsConverted) }),
                    ("rate", { percent($0.trialsConverted, of: $0.trialsEnded) }),
                ]))
        b += section(
            "Refunds",
            ConsoleChart(
                title: "Refunds by month", kind: .bars, starts: monthStarts,
                series: [
                    .init(name: "refunds", style: "s4", values: o.months.map { Int64($0.refunds) }),
                    .init(name: "reversals", style: "s2", values: o.months.map { Int64($0.reversals) }),
                ]),
            table: monthTable(
                o.months,
                columns: [
                    ("refunds", { String($0.refunds) }), ("reversals", { String($0.reversals) }),
                    ("purchases", { String($0.purchases) }),
                    ("rate", { percent($0.refunds, of: $0.purchases) }),
                ]
                    + Set(o.months.flatMap { $0.refunded.keys }).sorted().map { c in
                        ("refunded \(c)", { money($0.refunded[c] ?? 0) })
                    }))
        b += "<p class=\"note\">Definitions: <code>docs/metrics.md</code>. The same figures as CSV: "
        b += "<code>GET /v1/metrics/{name}?format=csv</code>.</p>\n"
        return page(title: "Overview · \(o.environment.rawValue)", section: "Overview", body: b)
    }

    static var movementColumns: [(String, (MetricBucket) -> String)] {
        [
            ("new", { String($0.new) }), ("renewals", { String($0.renewals) }),
            ("reactivated", { String($0.reactivations) }), ("churned", { String($0.churnedTotal) }),
        ] + ChurnReason.allCases.map { reason in ("churned \(reason.rawValue)", { String($0.churned[reason] ?? 0) }) }
    }

    static func tile(_ name: String, _ value: Int) -> String {
        "<div><dt>\(name)</dt><dd>\(value)</dd></div>\n"
    }

    /// A chart and, when given, its figures as a table the reader can open.
    static func section(_ heading: String, _ chart: ConsoleChart, table: String?) -> String {
        var out = "<section aria-label=\"\(xmlEscaped(heading))\">\n<h2>\(xmlEscaped(heading))</h2>\n<figure>\(chart.svg)"
        out += "<figcaption>\(xmlEscaped(chart.description))</figcaption></figure>\n"
        if let table { out += "<details><summary>The figures</summary>\n\(table)</details>\n" }
        return out + "</section>\n"
    }

    static func monthTable(_ months: [MetricBucket], columns: [(String, (MetricBucket) -> String)]) -> String {
        var out = "<table>\n<thead><tr><th scope=\"col\">month</th>"
        for (name, _) in columns { out += "<th scope=\"col\">\(xmlEscaped(name))</th>" }
        out += "</tr></thead>\n<tbody>\n"
        for m in months {
            out += "<tr><th scope=\"row\">\(CivilTime(m.start).iso.prefix(7))</th>"
            for (_, value) in columns { out += "<td>\(xmlEscaped(value(m)))</td>" }
            out += "</tr>\n"
        }
        return out + "</tbody></table>\n"
    }

    // MARK: Customer

    /// What the customer page shows.
    public struct Customer {
        public var view: CustomerView
        /// `why` for each entitlement, by name.
        public var explanations: [EntitlementExplanation]
        /// Each subscription the customer was ever bound to, as its timeline at `view.at`.
        public var timelines: [TimelineView]
        public var revenue: RevenueSummary
        /// The lifecycle events said about the customer's subscriptions, newest first.
        public var lifecycle: [LifecycleEvent]
        public var lastSeq: UInt64
        /// The clocks the page was asked for (nil: now, and everything known), kept in its links and form.
        public var clocks: Clocks

        public init(
            view: CustomerView, explanations: [EntitlementExplanation], timelines: [TimelineView],
            revenue: RevenueSummary, lifecycle: [LifecycleEvent], lastSeq: UInt64, clocks: Clocks
        ) {
            self.clocks = clocks
            self.view = view
            self.explanations = explanations
            self.timelines = timelines
            self.revenue = revenue
            self.lifecycle = lifecycle
            self.lastSeq = lastSeq
        }
    }

    /// The two clocks of a customer or subscription page: the instant of valid time (`at`) and the log position
    /// (`asOf`) it is read at, as asked (nil: now, and everything known).
    public struct Clocks: Sendable {
        public var at: UnixMillis?
        public var asOf: UInt64?

        public init(at: UnixMillis?, asOf: UInt64?) {
            self.at = at
            self.asOf = asOf
        }

        /// The clocks as query parameters to add to a link (`&at=…&asOf=…`, escaped for an attribute).
        var linkQuery: String {
            (at.map { "&amp;at=\(queryEscaped(utcText($0)))" } ?? "") + (asOf.map { "&amp;asOf=\($0)" } ?? "")
        }

        /// The form's inputs for the two clocks.
        var inputs: String {
            var out = "<label for=\"at\">At (ISO-8601, UTC)</label> "
            out += "<input id=\"at\" name=\"at\" type=\"text\" placeholder=\"now\" value=\"\(at.map(utcText) ?? "")\">\n"
            out += "<label for=\"asOf\">As known at log seq</label> "
            out += "<input id=\"asOf\" name=\"asOf\" type=\"number\" min=\"0\" placeholder=\"latest\" value=\"\(asOf.map(String.init) ?? "")\">\n"
            return out
        }
    }

    /// The lookup form, alone (no customer asked yet).
    public static func lookup(environment: AppStoreEnvironment) -> String {
        page(
            title: "Customers", section: "Customers",
            body: lookupForm(environment: environment, appUserId: "", clocks: Clocks(at: nil, asOf: nil)))
    }

    static func lookupForm(environment: AppStoreEnvironment, appUserId: String, clocks: Clocks) -> String {
        var out = "<form class=\"controls\" method=\"get\" action=\"/console/customers\" role=\"search\">\n"
        out += "<label for=\"appUserId\">App user id</label> "
        out += "<input id=\"appUserId\" name=\"appUserId\" type=\"search\" required value=\"\(xmlEscaped(appUserId))\">\n"
        out += environmentSelect(environment)
        out += clocks.inputs
        out += "<button type=\"submit\">Look up</button>\n</form>\n"
        return out
    }

    public static func customer(_ c: Customer) -> String {
        let v = c.view
        let environment = AppStoreEnvironment(appleName: v.environment) ?? .production
        var b = lookupForm(environment: environment, appUserId: v.appUserId, clocks: c.clocks)
        b += "<p class=\"known\">At \(utcText(v.at)), as known at log seq \(v.asOf ?? c.lastSeq) of \(c.lastSeq).</p>\n"

        b += "<h2>Entitlements</h2>\n"
        if v.entitlements.isEmpty {
            b += "<p>No entitlement: nothing this customer owns grants one.</p>\n"
        } else {
            b += "<table>\n<thead><tr><th scope=\"col\">entitlement</th><th scope=\"col\">state</th>"
            b += "<th scope=\"col\">until</th><th scope=\"col\">product</th><th scope=\"col\">why</th></tr></thead>\n<tbody>\n"
            for (name, e) in v.entitlements.sorted(by: { $0.key < $1.key }) {
                let why = c.explanations.first { $0.entitlement == name }
                b += "<tr><th scope=\"row\">\(xmlEscaped(name))</th><td>\(e.active ? "active" : "inactive")</td>"
                b += "<td>\(e.expiresAt.map(utcText) ?? "-")</td><td>\(xmlEscaped(e.productId))</td>"
                b += "<td>\(why.map(explanation) ?? "-")</td></tr>\n"
            }
            b += "</tbody></table>\n"
        }
        if !v.grants.isEmpty {
            b += "<h2>Operator grants</h2>\n<ul>\n"
            for g in v.grants {
                b += "<li>\(xmlEscaped(g.record.grantId)): \(xmlEscaped(g.record.entitlement)) from \(utcText(g.record.from))"
                b += g.record.grantedUntil.map { " until \(utcText($0))" } ?? ""
                b += g.active ? " (granting now)" : " (not granting now)"
                b += "</li>\n"
            }
            b += "</ul>\n"
        }

        b += "<h2>Subscriptions</h2>\n"
        if c.timelines.isEmpty { b += "<p>None is bound to this customer.</p>\n" }
        for t in c.timelines {
            let link = subscriptionLink(t.originalTransactionId, environment: environment) + c.clocks.linkQuery
            b += "<section aria-label=\"Subscription \(xmlEscaped(t.originalTransactionId))\">\n"
            b += "<h3><a href=\"\(link)\">\(xmlEscaped(t.originalTransactionId))</a> "
            b += "<small>\(xmlEscaped(t.productId ?? "")) · \(xmlEscaped(t.status))</small></h3>\n"
            b += "<figure class=\"timeline\">\(TimelinePicture(t).svgElement)</figure>\n</section>\n"
        }

        b += "<h2>Revenue</h2>\n"
        if c.revenue.totals.isEmpty {
            b += "<p>No priced purchase.</p>\n"
        } else {
            b += "<table>\n<thead><tr><th scope=\"col\">currency</th><th scope=\"col\">purchases</th><th scope=\"col\">gross</th>"
            b += "<th scope=\"col\">refunds</th><th scope=\"col\">refunded</th>"
            b += "<th scope=\"col\" title=\"estimated: the unused share of periods upgraded mid-way\">upgrade credit (est.)</th>"
            b += "<th scope=\"col\">net</th></tr></thead>\n<tbody>\n"
            for (currency, t) in c.revenue.totals.sorted(by: { $0.key < $1.key }) {
                b += "<tr><th scope=\"row\">\(xmlEscaped(currency))</th><td>\(t.purchases)</td><td>\(money(t.gross))</td>"
                b += "<td>\(t.refunds)</td><td>\(money(t.refunded))</td><td>\(money(t.credited))</td>"
                b += "<td>\(money(t.net))</td></tr>\n"
            }
            b += "</tbody></table>\n"
        }
        if c.revenue.unpriced > 0 { b += "<p>\(c.revenue.unpriced) purchases state no price.</p>\n" }

        b += "<h2>Lifecycle events</h2>\n"
        b += lifecycleTable(c.lifecycle, environment: environment, clocks: c.clocks)
        return page(title: "Customer \(v.appUserId)", section: "Customers", body: b)
    }

    /// An entitlement's `why`: the reason and the facts it rests on, with their log positions.
    static func explanation(_ e: EntitlementExplanation) -> String {
        var out = "<details><summary>\(xmlEscaped(String(e.reason.rawValue.map { $0 == "_" ? " " : $0 })))</summary><ul>"
        for g in e.grantors {
            for f in g.facts {
                out += "<li>\(xmlEscaped(f.role.rawValue))"
                if let at = f.at { out += " at \(utcText(at))" }
                if let seq = f.seq { out += " (seq \(seq))" }
                out += ": \(xmlEscaped(f.detail))</li>"
            }
        }
        return out + "</ul></details>"
    }

    static func lifecycleTable(_ events: [LifecycleEvent], environment: AppStoreEnvironment, clocks: Clocks) -> String {
        guard !events.isEmpty else { return "<p>None.</p>\n" }
        var out = "<table>\n<thead><tr><th scope=\"col\">seq</th><th scope=\"col\">type</th><th scope=\"col\">at</th>"
        out += "<th scope=\"col\">subscription</th><th scope=\"col\">cause</th></tr></thead>\n<tbody>\n"
        for e in events.prefix(200) {
            out += "<tr><td>\(e.seq)</td><td>\(xmlEscaped(e.type.rawValue))\(e.late ? " (late)" : "")\(e.retracted ? " (retracted)" : "")</td>"
            out += "<td>\(utcText(e.statement.at))</td>"
            out += "<td><a href=\"\(subscriptionLink(e.originalTransactionId.rawValue, environment: environment))\(clocks.linkQuery)\">"
            out += "\(xmlEscaped(e.originalTransactionId.rawValue))</a></td><td>\(xmlEscaped(e.statement.cause))</td></tr>\n"
        }
        out += "</tbody></table>\n"
        if events.count > 200 { out += "<p>The 200 latest of \(events.count).</p>\n" }
        return out
    }

    // MARK: Subscription

    /// One event of a subscription as the console lists it: what it is, where it came from, whether its signature
    /// verified, and its raw input.
    public struct Event {
        public var seq: UInt64
        public var kind: String
        public var key: String
        public var source: String
        public var signature: String
        public var receivedAt: UnixMillis
        /// The raw input's bytes as text (an input of several events is the same for each), cut at `rawLimit`.
        public var raw: String?

        public init(
            seq: UInt64, kind: String, key: String, source: String, signature: String, receivedAt: UnixMillis,
            raw: String?
        ) {
            self.seq = seq
            self.kind = kind
            self.key = key
            self.source = source
            self.signature = signature
            self.receivedAt = receivedAt
            self.raw = raw
        }
    }

    /// The most of a raw input the subscription page shows.
    public static let rawLimit = 16_384

    public struct Subscription {
        public var view: TimelineView
        public var events: [Event]
        public var lifecycle: [LifecycleEvent]
        public var lastSeq: UInt64
        public var clocks: Clocks

        public init(view: TimelineView, events: [Event], lifecycle: [LifecycleEvent], lastSeq: UInt64, clocks: Clocks) {
            self.clocks = clocks
            self.view = view
            self.events = events
            self.lifecycle = lifecycle
            self.lastSeq = lastSeq
        }
    }

    public static func subscription(_ s: Subscription) -> String {
        let v = s.view
        let environment = AppStoreEnvironment(appleName: v.environment) ?? .production
        var b = "<form class=\"controls\" method=\"get\" action=\"\(subscriptionPath(v.originalTransactionId))\">\n"
        b += "<input type=\"hidden\" name=\"environment\" value=\"\(xmlEscaped(v.environment))\">\n"
        b += s.clocks.inputs + "<button type=\"submit\">Show</button>\n</form>\n"
        b += "<p class=\"known\">\(xmlEscaped(v.environment)) · status at \(utcText(v.at)): <strong>\(xmlEscaped(v.status))</strong>"
        if let p = v.productId { b += " (\(xmlEscaped(p)))" }
        b += " · as known at log seq \(v.asOf ?? s.lastSeq) of \(s.lastSeq)."
        let owners = Set(v.owners.map(\.appUserId)).sorted()
        if !owners.isEmpty {
            b += " Owners: "
            b += owners.map {
                "<a href=\"/console/customers?appUserId=\(queryEscaped($0))&amp;environment=\(environment.rawValue)\(s.clocks.linkQuery)\">\(xmlEscaped($0))</a>"
            }
                .joined(separator: ", ")
            b += "."
        }
        b += "</p>\n<figure class=\"timeline\">\(TimelinePicture(v).svgElement)</figure>\n"

        b += "<h2>Periods</h2>\n<table>\n<thead><tr><th scope=\"col\">transaction</th><th scope=\"col\">product</th>"
        b += "<th scope=\"col\">start</th><th scope=\"col\">end</th><th scope=\"col\">notes</th></tr></thead>\n<tbody>\n"
        for p in v.periods {
            b += "<tr><td>\(xmlEscaped(p.transactionId))</td><td>\(xmlEscaped(p.productId))</td><td>\(utcText(p.start))</td>"
            b += "<td>\(p.end.map(utcText) ?? "-")</td><td>\(xmlEscaped(TimelinePicture.notes(p).joined(separator: "; ")))</td></tr>\n"
        }
        b += "</tbody></table>\n"

        b += "<h2>Reconciliation with Apple</h2>\n"
        if let r = v.reconciliation {
            let c = r.check
            b += "<p>Checked at \(utcText(c.checkedAt)) (seq \(r.seq)): \(c.transactionsSeen) transactions and "
            b += "\(c.notificationsSeen) notifications seen at Apple; \(c.transactionsAdded.count) transactions and "
            b += "\(c.notificationsAdded.count) notifications were missing and added"
            b += c.notificationsUndelivered.isEmpty ? "" : "; \(c.notificationsUndelivered.count) notifications Apple never delivered"
            b += ".</p>\n"
        } else {
            b += "<p>Never checked against Apple (<code>storeledger reconcile</code>).</p>\n"
        }

        b += "<h2>Events (\(s.events.count))</h2>\n<table>\n<thead><tr><th scope=\"col\">seq</th><th scope=\"col\">kind</th>"
        b += "<th scope=\"col\">key</th><th scope=\"col\">source</th><th scope=\"col\">signature</th>"
        b += "<th scope=\"col\">received</th><th scope=\"col\">raw input</th></tr></thead>\n<tbody>\n"
        for e in s.events {
            b += "<tr><td>\(e.seq)</td><td>\(xmlEscaped(e.kind))</td><td>\(xmlEscaped(e.key))</td><td>\(xmlEscaped(e.source))</td>"
            b += "<td class=\"sig-\(xmlEscaped(e.signature))\">\(xmlEscaped(e.signature))</td><td>\(utcText(e.receivedAt))</td><td>"
            if let raw = e.raw {
                b += "<details><summary>\(raw.utf8.count) bytes</summary><pre>\(xmlEscaped(raw))</pre></details>"
            } else {
                b += "-"
            }
            b += "</td></tr>\n"
        }
        b += "</tbody></table>\n<h2>Lifecycle events</h2>\n"
        b += lifecycleTable(s.lifecycle, environment: environment, clocks: s.clocks)
        return page(title: "Subscription \(v.originalTransactionId)", section: "Customers", body: b)
    }

    // MARK: Pieces

    static func subscriptionPath(_ otid: String) -> String { "/console/subscriptions/\(queryEscaped(otid))" }

    static func subscriptionLink(_ otid: String, environment: AppStoreEnvironment) -> String {
        subscriptionPath(otid) + "?environment=\(environment.rawValue)"
    }

    static func environmentSelect(_ selected: AppStoreEnvironment) -> String {
        var out = "<label for=\"environment\">Environment</label> <select id=\"environment\" name=\"environment\">"
        for e in AppStoreEnvironment.known {
            out += "<option\(e == selected ? " selected" : "")>\(e.rawValue)</option>"
        }
        return out + "</select>\n"
    }

    /// `part` of `whole` as a whole percentage, rounded (`-` of nothing).
    static func percent(_ part: Int, of whole: Int) -> String {
        whole == 0 ? "-" : "\((Int64(part) * 1000 / Int64(whole) + 5) / 10)%"
    }

    /// Milliunits as units with two decimals (`9990` → `9.99`).
    static func money(_ milliunits: Int64) -> String {
        let cents = (milliunits >= 0 ? milliunits + 5 : milliunits - 5) / 10
        let sign = cents < 0 ? "-" : ""
        let a = cents.magnitude
        return "\(sign)\(a / 100).\(a % 100 < 10 ? "0" : "")\(a % 100)"
    }

    /// Text safe in a URL's path segment or query value: unreserved bytes as they are, every other byte as `%XX`.
    static func queryEscaped(_ s: String) -> String {
        var out = ""
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF")
                out += "%" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 15)])
            }
        }
        return out
    }

    /// The console's style: system fonts, a contrast of at least 4.5:1 for text (WCAG AA), focus outlines kept, the
    /// series told apart by dash patterns as well as colours.
    static let style = """
        body { font-family: "DejaVu Sans", Verdana, sans-serif; margin: 0; color: #1a1a1a; background: #fff; }
        header { background: #1f3a5f; padding: 8px 16px; }
        header a, header .brand { color: #fff; margin-right: 16px; }
        header .brand { font-weight: bold; }
        header a[aria-current] { text-decoration: underline; font-weight: bold; }
        main { padding: 8px 16px 32px; max-width: 1280px; }
        .skip { position: absolute; left: -9999px; }
        .skip:focus { left: 8px; top: 8px; background: #fff; color: #1f3a5f; padding: 4px; }
        a { color: #1f4e99; }
        a:focus, input:focus, select:focus, button:focus, summary:focus { outline: 3px solid #c75000; outline-offset: 2px; }
        .controls { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 8px 0; }
        .controls input, .controls select, .controls button { font-size: 14px; padding: 4px 6px; }
        .known, .note { color: #3d3d3d; }
        .problem { color: #8a1c1c; }
        .tiles { display: flex; flex-wrap: wrap; gap: 12px; margin: 12px 0; }
        .tiles div { border: 1px solid #bbb; border-radius: 4px; padding: 8px 12px; min-width: 120px; }
        .tiles dt { font-size: 12px; color: #3d3d3d; }
        .tiles dd { margin: 0; font-size: 22px; font-weight: bold; }
        figure { margin: 8px 0; }
        figcaption { font-size: 12px; color: #3d3d3d; }
        svg.chart { display: block; width: 100%; max-width: 720px; height: auto; border: 1px solid #ccc; }
        svg.timeline { display: block; max-width: 100%; height: auto; border: 1px solid #ccc; }
        .chart .grid { stroke: #e2e2e2; }
        .chart .axis, .chart .legend { fill: #333; font-size: 11px; }
        .chart .line { stroke-width: 2; }
        .chart .s1 { stroke: #1f4e99; fill: #1f4e99; }
        .chart .s2 { stroke: #2e7d32; fill: #2e7d32; stroke-dasharray: 6 3; }
        .chart .s3 { stroke: #8e44ad; fill: #8e44ad; stroke-dasharray: 2 2; }
        .chart .s4 { stroke: #b03a2e; fill: #b03a2e; stroke-dasharray: 8 2 2 2; }
        .chart polyline.line { fill: none; }
        .chart rect.bar, .chart rect.key { stroke: none; }
        table { border-collapse: collapse; font-size: 13px; margin: 8px 0 16px; }
        th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
        thead th { background: #f0f0f0; }
        pre { white-space: pre-wrap; word-break: break-all; max-width: 640px; font-size: 12px; }
        .sig-verified { color: #1e6b24; font-weight: bold; }
        .sig-unverified { color: #8a4b00; }

        """
}
