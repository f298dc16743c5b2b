import LedgerCore

// MARK: - Timeline picture (`timeline --svg/--html`, `GET /v1/subscriptions/{otid}/timeline.svg|.html`)

/// A subscription's timeline drawn on a time axis: one row of period bars per product (trial, offer and normal
/// periods told apart; refunded and revoked spans hatched; grace period and billing retry shaded behind them), the
/// owners as a lane of their ownership intervals with each move marked, the other changes (plan changes,
/// notifications, refunds) as marks, and the instant `at` as a cursor. The header says what was known (`asOf`).
///
/// A pure function of the view: the same view gives the same bytes (no clock, no locale, no dictionary order), and
/// every string from the ledger (ids, products, users, details) is escaped for XML, so a hostile product id or user
/// id cannot end an attribute or open an element. Period bars carry `class="period …"`, one per period, so a
/// browser check can count them.
public struct TimelinePicture {
    public let view: TimelineView

    public init(_ view: TimelineView) { self.view = view }

    // Geometry (SVG user units).
    static let width = 1200.0
    static let left = 190.0
    static let right = 30.0
    static let rowHeight = 26.0
    static let barHeight = 16.0

    /// The standalone SVG document.
    public var svg: String {
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += svgElement
        out += "\n"
        return out
    }

    /// A self-contained HTML page: the picture, then the periods and changes as tables (no script, no external
    /// resource).
    public var html: String {
        let v = view
        var out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        out += "<title>Subscription \(xmlEscaped(v.originalTransactionId)) (\(xmlEscaped(v.environment)))</title>\n"
        out += "<style>\n" + Self.pageStyle + "</style>\n</head>\n<body>\n"
        out += "<h1>Subscription \(xmlEscaped(v.originalTransactionId)) <small>\(xmlEscaped(v.environment))</small></h1>\n"
        out += "<p>Status at \(utcText(v.at)): <strong>\(xmlEscaped(v.status))</strong>"
        if let p = v.productId { out += " (\(xmlEscaped(p)))" }
        out += v.asOf.map { "; as known at log seq \($0)" } ?? ""
        out += ".</p>\n"
        out += svgElement
        out += "\n<h2>Periods (\(v.periods.count))</h2>\n<table class=\"periods\">\n"
        out += "<tr><th>transaction</th><th>product</th><th>start</th><th>end</th><th>notes</th></tr>\n"
        for p in v.periods {
            out += "<tr><td>\(xmlEscaped(p.transactionId))</td><td>\(xmlEscaped(p.productId))</td>"
            out += "<td>\(utcText(p.start))</td><td>\(p.end.map(utcText) ?? "-")</td>"
            out += "<td>\(xmlEscaped(Self.notes(p).joined(separator: "; ")))</td></tr>\n"
        }
        out += "</table>\n<h2>Changes (\(v.changes.count))</h2>\n<table class=\"changes\">\n"
        out += "<tr><th>at</th><th>change</th><th>detail</th><th>seq</th></tr>\n"
        for c in v.changes {
            out += "<tr><td>\(utcText(c.at))</td><td>\(xmlEscaped(c.kind))</td><td>\(xmlEscaped(c.detail ?? ""))</td>"
            out += "<td>\(c.seq)</td></tr>\n"
        }
        out += "</table>\n</body>\n</html>\n"
        return out
    }

    // MARK: - The SVG

    /// The kinds of change the marks lane shows: the rest (purchases, renewals, owner changes) are the bars and the
    /// owners lane already.
    static let shownAsBars: Set<String> = ["purchase", "renewal", "owner_changed"]

    var svgElement: String {
        let v = view
        let products = Self.productRows(v.periods)
        let users = Self.ownerRows(v)
        let marks = v.changes.filter { !Self.shownAsBars.contains($0.kind) }
        let (t0, t1) = Self.range(v)
        let axisY = 78.0
        let periodsTop = axisY + 14
        let ownersTop = periodsTop + Double(max(products.count, 1)) * Self.rowHeight + 14
        let marksTop = ownersTop + Double(max(users.count, 1)) * Self.rowHeight + 14
        let marksHeight = marks.isEmpty ? Self.rowHeight : 3 * Self.rowHeight
        let legendY = marksTop + marksHeight + 22
        let height = legendY + 24
        let scale = Scale(activity: Self.activity(v), t0: t0, t1: t1, x0: Self.left, x1: Self.width - Self.right)

        var s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Self.width.svg)\" height=\"\(height.svg)\" "
        s += "viewBox=\"0 0 \(Self.width.svg) \(height.svg)\" font-family=\"DejaVu Sans, Verdana, sans-serif\" "
        s += "font-size=\"11\" class=\"timeline\" data-periods=\"\(v.periods.count)\">\n"
        s += "<title>Subscription \(xmlEscaped(v.originalTransactionId)) (\(xmlEscaped(v.environment)))</title>\n"
        s += "<style>\n" + Self.svgStyle + "</style>\n"
        s += "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
        s += "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fde2e2\"/>"
        s += "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#c0392b\" stroke-width=\"3\"/></pattern></defs>\n"
        s += "<rect x=\"0\" y=\"0\" width=\"\(Self.width.svg)\" height=\"\(height.svg)\" fill=\"#ffffff\"/>\n"

        // Header: what, when, as known when.
        s += "<text x=\"12\" y=\"22\" class=\"heading\">Subscription \(xmlEscaped(v.originalTransactionId)) · "
        s += "\(xmlEscaped(v.environment))</text>\n"
        var line = "status at \(utcText(v.at)): \(v.status)"
        if let p = v.productId { line += " (\(p))" }
        line += v.asOf.map { " · as known at log seq \($0)" } ?? ""
        line += " · \(v.periods.count) periods, \(v.owners.count) owner intervals, \(v.changes.count) changes"
        s += "<text x=\"12\" y=\"42\" class=\"subheading\">\(xmlEscaped(line))</text>\n"

        // Axis.
        s += "<line x1=\"\(Self.left.svg)\" y1=\"\(axisY.svg)\" x2=\"\((Self.width - Self.right).svg)\" "
        s += "y2=\"\(axisY.svg)\" class=\"axis\"/>\n"
        let bottom = marksTop + marksHeight
        for gap in scale.segments where gap.compressed {
            let mid = (gap.x0 + gap.x1) / 2
            s += "<rect x=\"\(gap.x0.svg)\" y=\"\((axisY - 2).svg)\" width=\"\((gap.x1 - gap.x0).svg)\" "
            s += "height=\"\((bottom - axisY + 2).svg)\" class=\"gap\"><title>\(durationText(gap.t1 - gap.t0)) "
            s += "without anything to draw, shortened</title></rect>\n"
            s += "<path d=\"M\((mid - 6).svg) \((axisY + 4).svg) l4 -8 m4 8 l4 -8\" class=\"break\"/>\n"
            s += "<text x=\"\(mid.svg)\" y=\"\((axisY - 8).svg)\" text-anchor=\"middle\" class=\"gap-label\">"
            s += "\(durationText(gap.t1 - gap.t0))</text>\n"
        }
        for (tick, label) in scale.ticks() {
            let x = scale.x(tick)
            s += "<line x1=\"\(x.svg)\" y1=\"\((axisY - 4).svg)\" x2=\"\(x.svg)\" y2=\"\(bottom.svg)\" class=\"grid\"/>\n"
            s += "<text x=\"\(x.svg)\" y=\"\((axisY - 8).svg)\" text-anchor=\"middle\" class=\"tick\">"
            s += "\(xmlEscaped(label))</text>\n"
        }

        // Lane labels.
        for (i, product) in products.enumerated() {
            let y = periodsTop + Double(i) * Self.rowHeight + Self.barHeight / 2 + 4
            s += "<text x=\"\((Self.left - 8).svg)\" y=\"\(y.svg)\" text-anchor=\"end\" class=\"lane\">"
            s += "\(xmlEscaped(Self.shortened(product)))</text>\n"
        }
        if products.isEmpty {
            s += "<text x=\"\((Self.left - 8).svg)\" y=\"\((periodsTop + 12).svg)\" text-anchor=\"end\" "
            s += "class=\"lane\">no periods</text>\n"
        }
        let periodsBottom = periodsTop + Double(max(products.count, 1)) * Self.rowHeight - 6

        // Grace period and billing retry, shaded behind the bars.
        for span in Self.renewalTrouble(v, until: t1) {
            let x = scale.x(span.from), w = max(scale.x(span.to) - x, 1)
            s += "<rect x=\"\(x.svg)\" y=\"\((periodsTop - 4).svg)\" width=\"\(w.svg)\" "
            s += "height=\"\((periodsBottom - periodsTop + 8).svg)\" class=\"\(span.kind)\">"
            s += "<title>\(xmlEscaped(span.kind.replacingDashes)) from \(utcText(span.from)) to \(utcText(span.to))"
            s += "</title></rect>\n"
        }

        // Periods.
        for p in v.periods {
            let row = products.firstIndex(of: p.productId) ?? 0
            let y = periodsTop + Double(row) * Self.rowHeight
            let x = scale.x(p.start)
            let open = p.end == nil
            let end = p.end ?? t1
            let w = max(scale.x(end) - x, 2)
            let kind = p.offer.map { $0.isTrial ? "trial" : "offer" } ?? "normal"
            var classes = "period \(kind)"
            if p.revocation != nil && p.revocation?.reversedAt == nil { classes += " revoked" }
            if p.upgraded { classes += " upgraded" }
            if open { classes += " open" }
            s += "<rect x=\"\(x.svg)\" y=\"\(y.svg)\" width=\"\(w.svg)\" height=\"\(Self.barHeight.svg)\" rx=\"2\" "
            s += "class=\"\(classes)\" data-transaction=\"\(xmlEscaped(p.transactionId))\">"
            s += "<title>\(xmlEscaped(Self.periodTitle(p)))</title></rect>\n"
            if let r = p.revocation {
                let from = scale.x(r.date)
                let to = scale.x(min(r.reversedAt ?? end, end))
                if to > from {
                    s += "<rect x=\"\(from.svg)\" y=\"\(y.svg)\" width=\"\((to - from).svg)\" "
                    s += "height=\"\(Self.barHeight.svg)\" class=\"revoked-span\"/>\n"
                }
                s += "<line x1=\"\(from.svg)\" y1=\"\((y - 3).svg)\" x2=\"\(from.svg)\" "
                s += "y2=\"\((y + Self.barHeight + 3).svg)\" class=\"revocation\"/>\n"
            }
            if !p.observedAs.isEmpty {
                s += "<text x=\"\((x + 2).svg)\" y=\"\((y + Self.barHeight + 8).svg)\" class=\"restores\">"
                s += "+\(p.observedAs.count)</text>\n"
            }
        }

        // Owners.
        for (i, user) in users.enumerated() {
            let y = ownersTop + Double(i) * Self.rowHeight
            s += "<text x=\"\((Self.left - 8).svg)\" y=\"\((y + Self.barHeight / 2 + 4).svg)\" text-anchor=\"end\" "
            s += "class=\"lane\">\(xmlEscaped(Self.shortened(user)))</text>\n"
        }
        if users.isEmpty {
            s += "<text x=\"\((Self.left - 8).svg)\" y=\"\((ownersTop + 12).svg)\" text-anchor=\"end\" "
            s += "class=\"lane\">no owner</text>\n"
        }
        for o in v.owners {
            let row = users.firstIndex(of: o.appUserId) ?? 0
            let y = ownersTop + Double(row) * Self.rowHeight
            let x = scale.x(o.from)
            let w = max(scale.x(o.to ?? t1) - x, 2)
            s += "<rect x=\"\(x.svg)\" y=\"\(y.svg)\" width=\"\(w.svg)\" height=\"\(Self.barHeight.svg)\" rx=\"2\" "
            s += "class=\"owner \(xmlEscaped(o.cause))\"><title>\(xmlEscaped(o.appUserId)) owns it from \(utcText(o.from))"
            s += o.to.map { " to \(utcText($0))" } ?? ""
            s += " (\(xmlEscaped(o.cause)), seq \(o.seq))</title></rect>\n"
            if o.cause == "transfer" {
                s += "<path d=\"M\(x.svg) \((y - 4).svg) l-5 -6 h10 z\" class=\"move\"><title>moved to "
                s += "\(xmlEscaped(o.appUserId)) at \(utcText(o.from)) (seq \(o.seq))</title></path>\n"
            }
        }
        for r in v.refusedClaims {
            let row = users.firstIndex(of: r.appUserId) ?? 0
            let y = ownersTop + Double(row) * Self.rowHeight + Self.barHeight / 2
            let x = scale.x(r.at)
            s += "<path d=\"M\((x - 4).svg) \((y - 4).svg) l8 8 m0 -8 l-8 8\" class=\"refused\"><title>claim by "
            s += "\(xmlEscaped(r.appUserId)) refused at \(utcText(r.at)) (seq \(r.seq))</title></path>\n"
        }

        // Marks: plan changes, refunds, notifications, in three staggered rows so neighbours do not collide.
        s += "<text x=\"\((Self.left - 8).svg)\" y=\"\((marksTop + 12).svg)\" text-anchor=\"end\" class=\"lane\">"
        s += "changes</text>\n"
        for (i, c) in marks.enumerated() {
            let x = scale.x(c.at)
            let y = marksTop + Double(i % 3) * Self.rowHeight + 8
            s += "<g class=\"mark \(Self.markClass(c.kind))\"><path d=\"M\(x.svg) \((y - 6).svg) l5 6 l-5 6 l-5 -6 z\"/>"
            s += "<text x=\"\((x + 7).svg)\" y=\"\((y + 4).svg)\">\(xmlEscaped(c.kind.replacingUnderscores))</text>"
            s += "<title>\(xmlEscaped(c.kind))\(c.detail.map { " " + xmlEscaped($0) } ?? "") at \(utcText(c.at))"
            s += " (seq \(c.seq))</title></g>\n"
        }

        // The cursor: `at`, or an arrow at the edge when it lies outside the picture.
        let cursorTop = axisY - 2
        if v.at >= t0 && v.at <= t1 {
            let x = scale.x(v.at)
            s += "<line x1=\"\(x.svg)\" y1=\"\(cursorTop.svg)\" x2=\"\(x.svg)\" y2=\"\(bottom.svg)\" class=\"cursor\"/>\n"
            s += "<text x=\"\(x.svg)\" y=\"\((axisY + 10).svg)\" class=\"cursor-label\" text-anchor=\"middle\">at "
            s += "\(utcText(v.at))</text>\n"
        } else {
            let after = v.at > t1
            let x = after ? Self.width - Self.right : Self.left
            s += "<text x=\"\(x.svg)\" y=\"\((axisY + 10).svg)\" class=\"cursor-label\" "
            s += "text-anchor=\"\(after ? "end" : "start")\">\(after ? "at \(utcText(v.at)) →" : "← at \(utcText(v.at))")"
            s += "</text>\n"
        }

        // Legend.
        var lx = 12.0
        for (cls, label) in Self.legend {
            s += "<rect x=\"\(lx.svg)\" y=\"\((legendY - 10).svg)\" width=\"14\" height=\"10\" class=\"swatch \(cls)\"/>"
            s += "<text x=\"\((lx + 18).svg)\" y=\"\(legendY.svg)\" class=\"legend\">\(label)</text>\n"
            lx += 26 + Double(label.count) * 6.5
        }
        s += "</svg>"
        return s
    }

    static let legend: [(String, String)] = [
        ("period normal", "period"), ("period trial", "free trial"), ("period offer", "offer"),
        ("revoked-span", "refunded / revoked"), ("grace-period", "grace period"), ("billing-retry", "billing retry"),
        ("owner claim", "owner"), ("owner transfer", "owner by transfer"),
    ]

    static let svgStyle = """
        .heading { font-size: 15px; font-weight: bold; fill: #222; }
        .subheading { font-size: 12px; fill: #444; }
        .axis { stroke: #555; stroke-width: 1; }
        .grid { stroke: #e4e4e4; stroke-width: 1; }
        .tick { fill: #555; font-size: 10px; }
        .lane { fill: #333; font-size: 11px; }
        .period { stroke: #1f4e79; stroke-width: 0.6; }
        .period.normal { fill: #4a90d9; }
        .period.trial { fill: #8fd18f; stroke: #2e7d32; }
        .period.offer { fill: #f5c26b; stroke: #b7791f; }
        .period.upgraded { stroke-dasharray: 3 2; }
        .period.open { fill-opacity: 0.6; }
        .revoked-span { fill: url(#hatch); stroke: #c0392b; stroke-width: 0.6; }
        .revocation { stroke: #c0392b; stroke-width: 2; }
        .restores { fill: #555; font-size: 9px; }
        .grace-period { fill: #ffe08a; fill-opacity: 0.55; }
        .billing-retry { fill: #f4a6a6; fill-opacity: 0.45; }
        .owner { stroke: #4b2e83; stroke-width: 0.6; }
        .owner.claim, .owner.appAccountToken { fill: #b39ddb; }
        .owner.transfer { fill: #7e57c2; }
        .move { fill: #4b2e83; }
        .refused { stroke: #c0392b; stroke-width: 2; }
        .mark path { fill: #777; }
        .mark text { fill: #333; font-size: 10px; }
        .mark.plan path { fill: #1f77b4; }
        .mark.refund path { fill: #c0392b; }
        .mark.trouble path { fill: #e67e22; }
        .cursor { stroke: #d62728; stroke-width: 1.5; stroke-dasharray: 5 3; }
        .cursor-label { fill: #d62728; font-size: 10px; }
        .legend { fill: #333; font-size: 11px; }
        .gap { fill: #f3f3f3; }
        .break { stroke: #555; stroke-width: 1.5; fill: none; }
        .gap-label { fill: #777; font-size: 9px; }

        """

    static let pageStyle = """
        body { font-family: "DejaVu Sans", Verdana, sans-serif; margin: 16px; color: #222; }
        h1 small { color: #666; font-weight: normal; }
        svg.timeline { display: block; max-width: 100%; height: auto; border: 1px solid #ddd; }
        table { border-collapse: collapse; font-size: 12px; margin-bottom: 16px; }
        th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; }

        """

    static func markClass(_ kind: String) -> String {
        switch kind {
        case "upgrade", "downgrade", "crossgrade", "resubscribe", "pending_change", "pending_change_cancelled":
            "plan"
        case "refund", "revoked", "refund_reversed", "refund_declined", "refund_requested": "refund"
        case "billing_retry", "grace_period", "grace_period_expired", "expired", "recovered": "trouble"
        default: "other"
        }
    }

    // MARK: - Layout

    /// Product ids in the order their first period starts.
    static func productRows(_ periods: [PeriodView]) -> [String] {
        var rows: [String] = []
        for p in periods where !rows.contains(p.productId) { rows.append(p.productId) }
        return rows
    }

    /// App users in the order they first owned the subscription, then those whose claims were refused.
    static func ownerRows(_ v: TimelineView) -> [String] {
        var rows: [String] = []
        for o in v.owners.sorted(by: { ($0.from, $0.seq) < ($1.from, $1.seq) }) where !rows.contains(o.appUserId) {
            rows.append(o.appUserId)
        }
        for r in v.refusedClaims where !rows.contains(r.appUserId) { rows.append(r.appUserId) }
        return rows
    }

    /// The instants the axis can show: years 1 through 9999, the ones ISO-8601 writes with four digits. Ledgers
    /// written by older builds may hold instants near the ends of Int64, and a view may be drawn at any instant;
    /// such instants are drawn at the axis's ends (their titles and tables still say them), so every difference,
    /// tick and calendar date the scale computes stays far within Int64.
    static let drawable: ClosedRange<UnixMillis> = -62_135_596_800_000...253_402_300_799_999

    /// `t` moved into `drawable`.
    static func drawn(_ t: UnixMillis) -> UnixMillis { min(max(t, drawable.lowerBound), drawable.upperBound) }

    /// The instants drawn: every period, owner interval and change, with a margin, within `drawable`; `at` only
    /// marks.
    static func range(_ v: TimelineView) -> (UnixMillis, UnixMillis) {
        var instants: [UnixMillis] = []
        for p in v.periods {
            instants.append(p.start)
            if let e = p.end { instants.append(e) }
            if let r = p.revocation {
                instants.append(r.date)
                if let b = r.reversedAt { instants.append(b) }
            }
        }
        for o in v.owners {
            instants.append(o.from)
            if let t = o.to { instants.append(t) }
        }
        for c in v.changes {
            instants.append(c.at)
            if let u = c.until { instants.append(u) }
        }
        guard let first = instants.min(), let last = instants.max() else {
            let at = drawn(v.at)
            return (drawn(at - 43_200_000), drawn(at + 43_200_000))
        }
        var lo = drawn(first), hi = drawn(last)
        if hi - lo < 60_000 {
            lo -= 30_000
            hi += 30_000
        }
        let margin = (hi - lo) / 40
        return (drawn(lo - margin), drawn(hi + margin))
    }

    /// Spans of grace period and billing retry from the stated changes: a grace period until its stated end (or
    /// the next recovery, expiry or period), billing retry until the billing recovered, the subscription expired,
    /// a period began, or the picture ends.
    static func renewalTrouble(_ v: TimelineView, until end: UnixMillis) -> [(kind: String, from: UnixMillis, to: UnixMillis)] {
        var spans: [(kind: String, from: UnixMillis, to: UnixMillis)] = []
        let starts = v.periods.map(\.start)
        for (i, c) in v.changes.enumerated() where c.kind == "grace_period" || c.kind == "billing_retry" {
            var to = end
            for later in v.changes[(i + 1)...]
            where ["recovered", "expired", "grace_period_expired"].contains(later.kind) {
                to = later.at
                break
            }
            if let next = starts.first(where: { $0 > c.at }) { to = min(to, next) }
            if c.kind == "grace_period", let u = c.until { to = min(to, u) }
            if to > c.at { spans.append((c.kind == "grace_period" ? "grace-period" : "billing-retry", c.at, to)) }
        }
        return spans
    }

    static func periodTitle(_ p: PeriodView) -> String {
        var t = "\(p.transactionId) · \(p.productId) · \(utcText(p.start)) → \(p.end.map(utcText) ?? "no end")"
        let list = Self.notes(p)
        if !list.isEmpty { t += " · " + list.joined(separator: "; ") }
        return t
    }

    static func notes(_ p: PeriodView) -> [String] {
        var notes: [String] = []
        if let offer = p.offer { notes.append(offer.isTrial ? "free trial" : "offer") }
        if let r = p.revocation {
            notes.append("\(r.type == "FAMILY_REVOKE" ? "revoked" : "refunded") \(utcText(r.date))")
            if let back = r.reversedAt { notes.append("reinstated \(utcText(back))") }
        }
        if p.upgraded { notes.append("upgraded") }
        if !p.observedAs.isEmpty { notes.append("restored as \(p.observedAs.joined(separator: ", "))") }
        return notes
    }

    static func shortened(_ s: String) -> String { s.count <= 26 ? s : String(s.prefix(11)) + "…" + String(s.suffix(12)) }

    /// The spans where something is drawn (periods, owner moves, changes, grace periods), merged: what the
    /// scale keeps at full width.
    static func activity(_ v: TimelineView) -> [(UnixMillis, UnixMillis)] {
        var spans: [(UnixMillis, UnixMillis)] = []
        for p in v.periods { spans.append((p.start, max(p.start, p.end ?? p.start))) }
        for o in v.owners {
            spans.append((o.from, o.from))
            if let t = o.to { spans.append((t, t)) }
        }
        for r in v.refusedClaims { spans.append((r.at, r.at)) }
        for c in v.changes { spans.append((c.at, max(c.at, c.until ?? c.at))) }
        spans.sort { $0 < $1 }
        var merged: [(UnixMillis, UnixMillis)] = []
        for span in spans {
            if let last = merged.last, span.0 <= last.1 {
                merged[merged.count - 1].1 = max(last.1, span.1)
            } else {
                merged.append(span)
            }
        }
        return merged
    }

    /// Ticks for `span` milliseconds over `pixels`: a step from a fixed ladder giving a tick every 90 pixels or
    /// more, aligned to UTC, labelled as precisely as the step needs.
    static func ticks(_ t0: UnixMillis, _ t1: UnixMillis, pixels: Double) -> [(UnixMillis, String)] {
        let minute: Int64 = 60_000, hour = 60 * minute, day = 24 * hour
        let most = max(Int64(pixels / 90), 1)
        let fixed: [Int64] = [
            minute, 2 * minute, 5 * minute, 10 * minute, 15 * minute, 30 * minute, hour, 3 * hour, 6 * hour, 12 * hour,
            day, 2 * day, 7 * day, 14 * day,
        ]
        let span = t1 - t0
        if let step = fixed.first(where: { span / $0 <= most }) {
            var t = (t0 / step + 1) * step
            var out: [(UnixMillis, String)] = []
            while t < t1 {
                let c = CivilTime(t)
                out.append((t, step < day ? c.dayAndTime : c.date))
                t += step
            }
            return out
        }
        // Months: a step of 1, 3, 6 or 12 months (or whole years, up to a thousand), ticks on the first of the month.
        let months = span / (30 * day)
        let step = [1, 3, 6, 12, 24, 60, 120, 240, 600, 1200, 2400, 6000, 12_000].first { Int64($0) * most >= months }
            ?? 12_000
        let start = CivilTime(t0)
        var y = start.year, m = start.month
        var out: [(UnixMillis, String)] = []
        while true {
            m += 1
            if m > 12 { m = 1; y += 1 }
            guard (m - 1) % Int64(min(step, 12)) == 0, step <= 12 || y % Int64(step / 12) == 0 else { continue }
            let t = CivilTime.instant(year: y, month: m, day: 1)
            if t >= t1 { break }
            out.append((t, step >= 12 ? "\(y)" : "\(y)-\(CivilTime.two(m))"))
        }
        return out
    }

    /// Maps instants to x, piece by piece: a stretch with nothing to draw that takes more than a fifth of the
    /// picture's time is shortened to a fixed width (marked on the axis with its length), so a story told in two
    /// bursts days apart (the seeds' restore storm) shows both bursts readably.
    struct Scale {
        struct Segment {
            var t0: UnixMillis, t1: UnixMillis, x0: Double, x1: Double
            var compressed: Bool
        }
        static let gapWidth = 36.0
        let segments: [Segment]

        /// `t0`...`t1` within `TimelinePicture.drawable`; `activity` sorted and merged.
        init(activity: [(UnixMillis, UnixMillis)], t0: UnixMillis, t1: UnixMillis, x0: Double, x1: Double) {
            let total = max(t1 - t0, 1)
            // Activity outside the picture is drawn at its ends, and measured there.
            let activity = activity.map { (min(max($0.0, t0), t1), min(max($0.1, t0), t1)) }
            // The gaps between activity worth shortening.
            var gaps: [(UnixMillis, UnixMillis)] = []
            for (a, b) in zip(activity, activity.dropFirst()) {
                let pad = total / 100
                let from = a.1 + pad, to = b.0 - pad
                if to > from, to - from > total / 5 { gaps.append((from, to)) }
            }
            let kept = Double(max(total - gaps.reduce(0) { $0 + ($1.1 - $1.0) }, 1))
            let width = x1 - x0 - Double(gaps.count) * Self.gapWidth
            var segments: [Segment] = []
            var t = t0, x = x0
            for (from, to) in gaps {
                let w = Double(from - t) / kept * width
                segments.append(Segment(t0: t, t1: from, x0: x, x1: x + w, compressed: false))
                segments.append(Segment(t0: from, t1: to, x0: x + w, x1: x + w + Self.gapWidth, compressed: true))
                t = to
                x += w + Self.gapWidth
            }
            segments.append(Segment(t0: t, t1: t1, x0: x, x1: x1, compressed: false))
            self.segments = segments
        }

        func x(_ t: UnixMillis) -> Double {
            guard let first = segments.first, let last = segments.last else { return 0 }
            if t <= first.t0 { return first.x0 }
            if t >= last.t1 { return last.x1 }
            let s = segments.first { t <= $0.t1 } ?? last
            return s.x0 + Double(t - s.t0) / Double(max(s.t1 - s.t0, 1)) * (s.x1 - s.x0)
        }

        /// Ticks of the full-width segments.
        func ticks() -> [(UnixMillis, String)] {
            segments.filter { !$0.compressed }.flatMap { TimelinePicture.ticks($0.t0, $0.t1, pixels: $0.x1 - $0.x0) }
        }
    }
}

/// A length of time in the largest two units (`2 d 20 h`, `45 min`).
func durationText(_ ms: UnixMillis) -> String {
    let minutes = ms / 60_000, hours = minutes / 60, days = hours / 24
    if days >= 365 { return "\(days / 365) y \(days % 365) d" }
    if days > 0 { return "\(days) d \(hours % 24) h" }
    if hours > 0 { return "\(hours) h \(minutes % 60) min" }
    return "\(minutes) min"
}

/// A UTC calendar date and time, computed without Foundation (so the picture is the same bytes on every machine).
struct CivilTime {
    var year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64

    /// Any instant, Int64's ends included (divisions round down without an offset that could overflow).
    init(_ ms: UnixMillis) {
        let seconds = ms / 1000 - (ms % 1000 < 0 ? 1 : 0)
        let days = seconds / 86_400 - (seconds % 86_400 < 0 ? 1 : 0)
        let rest = seconds - days * 86_400
        hour = rest / 3600
        minute = rest % 3600 / 60
        second = rest % 60
        (year, month, day) = CivilCalendar.date(fromDays: days)
    }

    static func instant(year y: Int64, month m: Int64, day d: Int64) -> UnixMillis {
        CivilCalendar.days(fromYear: y, month: m, day: d) * 86_400_000
    }

    static func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }

    var date: String { "\(year)-\(Self.two(month))-\(Self.two(day))" }
    var dayAndTime: String { "\(Self.two(month))-\(Self.two(day)) \(Self.two(hour)):\(Self.two(minute))" }
    var iso: String { date + "T\(Self.two(hour)):\(Self.two(minute)):\(Self.two(second))Z" }
}

/// An instant as ISO-8601 UTC (seconds).
func utcText(_ ms: UnixMillis) -> String { CivilTime(ms).iso }

/// Text safe in XML content and in attribute values (either quote).
func xmlEscaped(_ s: String) -> String {
    var out = ""
    out.reserveCapacity(s.utf8.count)
    for ch in s.unicodeScalars {
        switch ch {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&#39;"
        // Control characters are not allowed in XML 1.0 at all: shown as a replacement.
        case _ where ch.value < 0x20 && ch != "\n" && ch != "\t": out += "\u{FFFD}"
        default: out.unicodeScalars.append(ch)
        }
    }
    return out
}

extension Double {
    /// One decimal, no exponent, `-0` as `0`: the same text on every machine.
    var svg: String {
        let tenths = Int64((self * 10).rounded())
        let sign = tenths < 0 ? "-" : ""
        let a = abs(tenths)
        return a % 10 == 0 ? "\(sign)\(a / 10)" : "\(sign)\(a / 10).\(a % 10)"
    }
}

extension String {
    fileprivate var replacingUnderscores: String { String(map { $0 == "_" ? " " : $0 }) }
    fileprivate var replacingDashes: String { String(map { $0 == "-" ? " " : $0 }) }
}
