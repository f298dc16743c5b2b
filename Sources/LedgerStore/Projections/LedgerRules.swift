import LMDB
import LedgerCore
import LedgerErrors

/// The rules the ledger folds with, as its log records them (docs/configuration.md, "Rules in the log"): each change
/// is an event, answers as of an earlier position keep the rules of their time, and a writer never folds with rules
/// its log does not hold. `RulesHistory` reads them for the fold.
public struct LedgerRules: LedgerRole {
    let ledger: Ledger
}

extension Ledger {
    /// The rules in the log: in force, changed, adopted from a configuration.
    public var rulesInLog: LedgerRules { LedgerRules(ledger: self) }
}

extension LedgerRules {
    /// The rules in force as of log position `asOf` (default: the latest): the configuration file's until the log
    /// records a change (`apply`), then the latest change at or before `asOf`.
    public func inForce(asOf: UInt64? = nil) throws -> FoldRules {
        try environment.read { txn in try history.rules(asOf: asOf ?? .max, layout, txn) }
    }

    /// Every change of rules the log records: its seq, when it was applied, and the rules.
    public func changes() throws -> [(seq: UInt64, receivedAt: UnixMillis, change: RulesChange)] {
        try environment.read { txn in try history.changes(layout, txn) }
    }

    /// The rules the log records as in force now, and the seq of the change that recorded them; nil when the log
    /// records none (the ledger then folds with the rules it was opened with).
    public func recorded() throws -> (seq: UInt64, rules: FoldRules)? {
        let changes = try changes()
        if let last = changes.last(where: { !$0.change.initial }) { return (last.seq, last.change.rules) }
        return changes.first.map { ($0.seq, $0.change.rules) }
    }

    /// How a configuration's rules stand with the ledger's (`adopt`).
    public enum Adoption: Equatable, Sendable {
        /// The log records these rules (or none, and these are the built-in defaults).
        case inForce
        /// A new ledger: the rules were recorded as its first event, at this seq.
        case recorded(UInt64)
        /// The rules in force differ: the log's, recorded at `seq` (nil: the log records none, and the ledger was
        /// written with the built-in defaults).
        case differs(inForce: FoldRules, seq: UInt64?)
    }

    /// Makes `configured` (a configuration file's rules) the ledger's, where that changes no answer: recorded as the
    /// first event of an empty ledger; otherwise compared with the rules the log records, so that a writer never
    /// folds with rules its log does not hold (a change goes through `apply`, which says from where).
    public func adopt(_ configured: FoldRules, raw: [UInt8], at instant: UnixMillis) throws -> Adoption {
        if let recorded = try recorded() {
            return recorded.rules == configured ? .inForce : .differs(inForce: recorded.rules, seq: recorded.seq)
        }
        if configured == FoldRules() { return .inForce }
        guard try ledger.lastSeq() == 0 else { return .differs(inForce: FoldRules(), seq: nil) }
        return .recorded(try append(RulesChange(rules: configured, appliedAt: instant), raw: raw))
    }

    /// Appends a rules change; its seq.
    @discardableResult
    func append(_ change: RulesChange, raw: [UInt8] = []) throws -> UInt64 {
        let input = LedgerInput.facts(
            [.rules(change)], metadata: FactMetadata(source: .configuration, receivedAt: change.appliedAt), raw: raw)
        guard let result = try ledger.appendAndWait([input]).first else {
            throw LedgerError(code: .storageError, message: "the rules change was not appended")
        }
        if let error = result.error { throw LedgerError(code: error.code, message: error.message) }
        guard let seq = result.seq else { throw LedgerError(code: .storageError, message: "the rules change was not appended") }
        return seq
    }

    /// Records `rules` as the ledger's rules from the next log position on (a `RulesChange` event, whose raw input
    /// is `raw`, the configuration file's bytes) and refolds every subscription under them in the same write
    /// transaction, so the stored projections always follow the rules in force. Answers as of earlier positions
    /// keep the rules of their time. Nil, and nothing written, when `rules` are the rules in force already.
    /// - Complexity: O(events of the ledger) in one write transaction: a change of rules is rare.
    public func apply(_ rules: FoldRules, raw: [UInt8], at instant: UnixMillis) throws -> UInt64? {
        guard try inForce() != rules else { return nil }
        return try append(RulesChange(rules: rules, appliedAt: instant), raw: raw)
    }
}
