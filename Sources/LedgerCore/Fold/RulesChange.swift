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
    /// The rules the ledger folded with before its log recorded any: recorded when a ledger that took its rules
    /// from a configuration file (an earlier build's) is upgraded, so that they are in its log too. They hold at
    /// every position before the first change that is not initial, including positions before this event's own.
    public var initial: Bool

    public init(rules: FoldRules, appliedAt: UnixMillis, initial: Bool = false) {
        self.rules = rules
        self.appliedAt = appliedAt
        self.initial = initial
    }
}
