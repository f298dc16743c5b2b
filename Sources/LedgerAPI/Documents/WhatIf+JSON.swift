import LedgerCore
import LedgerStore

// MARK: - What-if replay (`replay --what-if FILE --json`)

/// A what-if replay's report: what the other rules change, and every customer entitlement that would differ.
public struct WhatIfDocument: JSONDocument {
    public var report: LedgerAudit.WhatIfReport
    public var changes: [String]

    public init(report: LedgerAudit.WhatIfReport, before: FoldRules, after: FoldRules) {
        self.init(report: report, changes: Self.ruleChanges(before, after))
    }

    public init(report: LedgerAudit.WhatIfReport, changes: [String]) {
        self.report = report
        self.changes = changes
    }

    /// The rules' differences in words, in a stable order: the binding policy, then each product added, removed or
    /// configured otherwise (by product id).
    public static func ruleChanges(_ before: FoldRules, _ after: FoldRules) -> [String] {
        var lines: [String] = []
        if before.bindingPolicy != after.bindingPolicy {
            lines.append("bindingPolicy \(before.bindingPolicy.rawValue) → \(after.bindingPolicy.rawValue)")
        }
        let ids = Set(before.catalog.products.keys).union(after.catalog.products.keys).sorted()
        for id in ids {
            let a = before.catalog.products[id], b = after.catalog.products[id]
            guard a != b else { continue }
            switch (a, b) {
            case (nil, let b?): lines.append("product \(id) added: grants \(Self.grants(id, b))")
            case (let a?, nil): lines.append("product \(id) removed (granted \(Self.grants(id, a)))")
            case (let a?, let b?):
                if a.entitlements != b.entitlements {
                    lines.append("product \(id): grants \(Self.grants(id, a)) → \(Self.grants(id, b))")
                } else {
                    lines.append("product \(id): configured otherwise (type, duration, level, group or credits)")
                }
            default: break
            }
        }
        if lines.isEmpty { lines.append("the same catalog and binding policy") }
        return lines
    }

    static func grants(_ id: String, _ p: ProductConfiguration) -> String {
        let list = p.entitlements ?? (p.type == .consumable ? [] : [id])
        return list.isEmpty ? "nothing" : list.joined(separator: ", ")
    }

    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("at"); o.number(report.at)
            o.key("asOf"); o.number(report.asOf)
            o.key("changes"); o.array(changes) { $0.string($1) }
            o.key("subscriptions"); o.number(report.subscriptions)
            o.key("customers"); o.number(report.customers)
            o.key("differences")
            o.array(report.differences) { j, d in
                j.object { o in
                    o.key("appUserId"); o.string(d.appUserId)
                    o.key("environment"); o.string(d.environment)
                    o.key("entitlement"); o.string(d.entitlement)
                    o.key("before"); Self.write(d.before, to: &o)
                    o.key("after"); Self.write(d.after, to: &o)
                }
            }
        }
    }

    static func write(_ state: EntitlementState?, to json: inout JSONWriter) {
        guard let state else { return json.null() }
        json.object { o in
            o.key("active"); o.bool(state.active)
            o.key("expiresAt"); o.number(state.expiresAt)
            o.key("productId"); o.string(state.productId)
            o.key("originalTransactionId"); o.string(state.originalTransactionId)
        }
    }
}

// MARK: - Rules (`rules --json`, `rules apply --json`)

/// The changes of rules a ledger's log records, each with what it changed.
public struct RulesHistoryDocument: JSONDocument {
    public var changes: [(seq: UInt64, receivedAt: UnixMillis, change: RulesChange)]

    /// Each change is told against the rules before it; the first against the built-in defaults, which a ledger
    /// folds with until its log records rules.
    public init(changes: [(seq: UInt64, receivedAt: UnixMillis, change: RulesChange)]) {
        self.changes = changes
    }

    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("configurationInForce"); o.bool(changes.isEmpty)
            o.key("changes")
            var before = FoldRules()
            o.array(changes) { j, c in
                j.object { o in
                    o.key("seq"); o.number(c.seq)
                    o.key("appliedAt"); o.number(c.change.appliedAt)
                    o.key("bindingPolicy"); o.string(c.change.rules.bindingPolicy.rawValue)
                    o.key("products"); o.number(c.change.rules.catalog.products.count)
                    o.key("changed"); o.array(WhatIfDocument.ruleChanges(before, c.change.rules)) { $0.string($1) }
                }
                before = c.change.rules
            }
        }
    }
}

/// What `rules apply` did: the seq of the change (null: the rules were in force already) and what it changed.
public struct RulesAppliedDocument: JSONDocument {
    public var seq: UInt64?
    public var changes: [String]
    /// What the change does to the customers' answers, computed before it was recorded.
    public var effect: LedgerAudit.WhatIfReport?

    public init(seq: UInt64?, changes: [String], effect: LedgerAudit.WhatIfReport? = nil) {
        self.seq = seq
        self.changes = changes
        self.effect = effect
    }

    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("seq"); o.number(seq)
            o.key("changes"); o.array(changes) { $0.string($1) }
            if let effect {
                o.key("effect"); WhatIfDocument(report: effect, changes: changes).write(to: &o)
            }
        }
    }
}
