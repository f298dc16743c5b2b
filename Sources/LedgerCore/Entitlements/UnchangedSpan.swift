// MARK: - How long an evaluation holds

extension Timeline {
    /// The instants around `at` at which this timeline evaluates as it does at `at`: `view(at:asOf:rules:)` (but its
    /// echoed `at`), `status(at:)`, `grants(at:)`, `owner(at:)`, and its share of `Entitlements.customer`. A reader
    /// that keeps an answer for `at` (the server's answer cache) may give it for any instant of the span, and must
    /// make it again outside: at the next expiry, grace period end, revocation, reversal, owner change… after `at`.
    ///
    /// Why this holds: those evaluations depend on the instant only through comparisons with the timeline's own
    /// instants (`start <= at`, `at < end`, `change.at <= at`, `at < until`, …, and `at - 1` against a revocation
    /// when a period has no end), so nothing changes between two consecutive instants of the set {x, x + 1} over
    /// every instant x the timeline holds. The span is the gap of that set around `at`. An evaluation that one day
    /// computes a new instant from `at` or from a duration must add it here (the answer cache's property test
    /// compares cached and uncached answers around every instant of random stories).
    /// - Complexity: O(size of the timeline).
    public func unchangedSpan(around at: UnixMillis) -> Range<UnixMillis> {
        var span = UnchangedSpan(at: at)
        for p in periods {
            span.bound(by: p.start)
            if let end = p.end { span.bound(by: end) }
            if let original = p.originalPurchaseDate { span.bound(by: original) }
            for r in p.revocations {
                span.bound(by: r.date)
                if let back = r.reversedAt { span.bound(by: back) }
            }
        }
        for c in statedChanges {
            span.bound(by: c.at)
            if let until = c.until { span.bound(by: until) }
        }
        if let renewal { span.bound(by: renewal.at) }
        for o in owners {
            span.bound(by: o.from)
            if let to = o.to { span.bound(by: to) }
        }
        for r in refusedClaims { span.bound(by: r.at) }
        return span.range
    }
}

extension Entitlements {
    /// The instants around `at` at which `customer(user:environment:timelines:at:asOf:rules:)` gives what it gives
    /// at `at` (but its echoed `at`): where every timeline's span meets (`Timeline.unchangedSpan(around:)`). All
    /// instants when there is no timeline. The operator's `grants` bound it at their starts and ends.
    public static func unchangedSpan(
        of timelines: [Timeline], grants: [GrantRecord] = [], around at: UnixMillis
    ) -> Range<UnixMillis> {
        var lower = UnixMillis.min
        var upper = UnixMillis.max
        for timeline in timelines {
            let span = timeline.unchangedSpan(around: at)
            lower = max(lower, span.lowerBound)
            upper = min(upper, span.upperBound)
        }
        if !grants.isEmpty {
            var span = UnchangedSpan(at: at)
            for g in grants {
                span.bound(by: g.from)
                if let end = g.end { span.bound(by: end) }
            }
            lower = max(lower, span.range.lowerBound)
            upper = min(upper, span.range.upperBound)
        }
        return lower..<max(lower, upper)
    }
}

/// The gap around one instant of the set {x, x + 1} over the instants seen.
private struct UnchangedSpan {
    let at: UnixMillis
    var lower = UnixMillis.min
    var upper = UnixMillis.max

    init(at: UnixMillis) { self.at = at }

    /// An evaluation may change between `x - 1` and `x` (`x <= at`, `at < x`) or between `x` and `x + 1`
    /// (`at <= x`, `x < at`).
    mutating func bound(by x: UnixMillis) {
        place(x)
        place(x.saturatingAdd(1))
    }

    private mutating func place(_ edge: UnixMillis) {
        if edge <= at {
            lower = max(lower, edge)
        } else {
            upper = min(upper, edge)
        }
    }

    /// `lower ..< upper`; holds `at` unless `at` is the largest instant (then the span is `at ..< at`, empty: no
    /// answer is kept).
    var range: Range<UnixMillis> { lower..<max(lower, upper) }
}
