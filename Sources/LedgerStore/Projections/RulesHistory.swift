import Foundation
import LMDB
import LedgerCodec
import LedgerCore

/// The rules the ledger folds with at each log position: from each change's seq on (`RulesChange`,
/// `LedgerRules.apply`), that change's; before the first, the initial rules an upgrade recorded, else `fallback`
/// (the built-in defaults when the ledger is opened by `storeledger`, which records a configuration's rules in the
/// log before it writes). Changes are few: they are read from `events` under their one key
/// (`RulesChange.eventKey`), in the reading transaction (so a read sees the rules of the log it reads), and each is
/// decoded once and kept.
final class RulesHistory: @unchecked Sendable {
    /// The rules where the log records none.
    let configured: FoldRules
    private let lock = NSLock()
    /// Decoded revisions under the rules key: the change, or nil for a revision that is not a rules change (a
    /// transaction whose id happens to be the key).
    private var decoded: [UInt64: RulesChange?] = [:]

    init(configured: FoldRules) { self.configured = configured }

    /// The rules in force as of log position `seq` (every position: `.max`).
    /// - Complexity: O(changes) lookups, one seek in `events`.
    func rules(asOf seq: UInt64, _ layout: StoreLayout, _ txn: Transaction) throws -> FoldRules {
        var found: FoldRules?, initial: FoldRules?
        try layout.forEachRevision(of: RulesChange.eventKey, txn) { revision, stored in
            guard let change = try self.change(of: revision, stored) else { return true }
            if change.initial {
                if initial == nil { initial = change.rules }
            } else if revision <= seq {
                found = change.rules
            }
            return true  // On past `seq`: an upgrade records the initial rules after the changes it found.
        }
        return found ?? initial ?? configured
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

    private func change(of revision: UInt64, _ stored: MappedBytes) throws -> RulesChange? {
        if let known = lock.withLock({ decoded[revision] }) { return known }
        let event = try StoreLayout.decodeEvent(seq: revision, stored)
        var change: RulesChange?
        if case .rules(let c) = event.fact { change = c }
        lock.withLock { decoded[revision] = .some(change) }
        return change
    }
}
