/// A change of the rules the ledger folds with (its catalog and binding policy), recorded in the log
/// (`storeledger rules apply`): every answer as of a log position at or after this event's seq uses these rules,
/// every answer as of an earlier position the rules in force then (the previous change's, or the configuration
/// file's when the log records none). So the catalog a ledger used is versioned with the log it folded, and an
/// auditor replaying the log to any position gets the projections of that time.
public struct RulesChange: Hashable, Sendable {
    /// The event key every rules change is stored under: one key, a revision per change.
    public static let eventKey = "rules:ledger"

    public var rules: FoldRules
    /// When the change was applied (a change applied again later is another event, not a duplicate).
    public var appliedAt: UnixMillis

    public init(rules: FoldRules, appliedAt: UnixMillis) {
        self.rules = rules
        self.appliedAt = appliedAt
    }
}
