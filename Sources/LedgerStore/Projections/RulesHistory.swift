import Foundation
import LMDB
import LedgerCodec
import LedgerCore

/// The rules the ledger folds with at each log position: the configuration file's until the log records a change
/// (`RulesChange`, `Ledger.applyRules`), then, from each change's seq on, that change's. Changes are few: they are
/// read from `events` under their one key (`RulesChange.eventKey`), in the reading transaction (so a read sees the
/// rules of the log it reads), and each is decoded once and kept.
final class RulesHistory: @unchecked Sendable {
    /// The configuration file's rules.
    let configured: FoldRules
    private let lock = NSLock()
    /// Decoded revisions under the rules key: the rules, or nil for a revision that is not a rules change (a
    /// transaction whose id happens to be the key).
    private var decoded: [UInt64: FoldRules?] = [:]

    init(configured: FoldRules) { self.configured = configured }

    /// The rules in force as of log position `seq` (every position: `.max`).
    /// - Complexity: O(changes) lookups, one seek in `events`.
    func rules(asOf seq: UInt64, _ layout: StoreLayout, _ txn: Transaction) throws -> FoldRules {
        var found: FoldRules?
        try layout.forEachRevision(of: RulesChange.eventKey, txn) { revision, stored in
            guard revision <= seq else { return false }
            if let rules = try self.rules(of: revision, stored) { found = rules }
            return true
        }
        return found ?? configured
    }

    /// Every change recorded, in log order.
    func changes(_ layout: StoreLayout, _ txn: Transaction) throws -> [(seq: UInt64, receivedAt: UnixMillis, change: RulesChange)] {
        var out: [(seq: UInt64, receivedAt: UnixMillis, change: RulesChange)] = []
        try layout.forEachRevision(of: RulesChange.eventKey, txn) { revision, stored in
            let event = try StoreLayout.decodeEvent(seq: revision, stored)
            if case .rules(let change) = event.fact { out.append((revision, event.metadata.receivedAt, change)) }
            return true
        }
        return out
    }

    private func rules(of revision: UInt64, _ stored: MappedBytes) throws -> FoldRules? {
        if let known = lock.withLock({ decoded[revision] }) { return known }
        let event = try StoreLayout.decodeEvent(seq: revision, stored)
        var rules: FoldRules?
        if case .rules(let change) = event.fact { rules = change.rules }
        lock.withLock { decoded[revision] = .some(rules) }
        return rules
    }
}
