import LMDB
import LedgerCore

/// What one write transaction wrote that a kept answer is made of: the timelines (a subscription's answer, and the
/// customers who own it), the `by_user` entries (a customer's list of subscriptions), and the events an answer reads
/// by key (a subscription's latest check against Apple, a customer's operator grants), or, for a change of rules or
/// an erasure, everything.
///
/// The write path writes `timelines` and `by_user` only through `putTimeline` and `indexUser`, and tells every event
/// it logs to `logged`, so the report is complete by construction: the readers' cache (`CommitChanges`) and the
/// metric marks (`metric_dirty`) learn from it, never from lists kept beside the writes.
/// `WriteReportTests` diffs the tables around every commit against it.
struct WriteReport {
    /// `StoreLayout.subscriptionKey` of each timeline written and of each subscription checked against Apple.
    private(set) var subscriptions: Set<[UInt8]> = []
    /// Each user (as the log names them: a pseudonym in a ledger with them) whose `by_user` entries or operator
    /// grants were written, by environment.
    private(set) var users: Set<UserInEnvironment> = []
    /// A change of rules (every subscription refolded) or an erasure (people no longer shown).
    private(set) var everything = false

    struct UserInEnvironment: Hashable {
        var environment: AppStoreEnvironment
        var user: AppUserID
    }

    /// Writes a subscription's timeline, and marks its metrics for the follower to sum again as far as `metrics`
    /// says they changed (`.none` too when the caller resets them all).
    mutating func putTimeline(
        _ key: [UInt8], _ bytes: [UInt8], metrics: MetricDays.Change, _ layout: StoreLayout, _ txn: Transaction
    ) throws {
        try txn.put(layout.timelines, key: key, value: bytes)
        try MetricDays.markChanged(key, metrics, layout, txn)
        subscriptions.insert(key)
    }

    /// Lists `otid` among `user`'s subscriptions in `environment` (`by_user`); nothing when it is listed already.
    mutating func indexUser(
        _ user: AppUserID, _ environment: AppStoreEnvironment, otid: OriginalTransactionID, _ layout: StoreLayout,
        _ txn: Transaction
    ) throws {
        users.insert(UserInEnvironment(environment: environment, user: user))
        do {
            try txn.put(
                layout.byUser, key: StoreLayout.userKey(environment, user),
                value: StoreLayout.subscriptionKey(environment, otid), flags: .noDuplicateData)
        } catch let error as LMDBError where error == .keyExists {
            // Already indexed (by an earlier claim of the same user, or this claim in the same batch).
        }
    }

    /// An event the log now holds: what answers read it by key.
    mutating func logged(_ fact: Fact) {
        switch fact {
        case .reconciliation(let check):
            subscriptions.insert(StoreLayout.subscriptionKey(check.environment, check.originalTransactionId))
        case .grant(let grant):
            users.insert(UserInEnvironment(environment: grant.environment, user: grant.appUserId))
        case .rules, .erasure:
            everything = true
        case .transaction, .renewal, .notification, .binding:
            break
        }
    }

    /// What the readers' cache drops after the commit: the subscriptions, and the customers by the ids readers ask
    /// with (`shown`: a pseudonym's value).
    func changes(lastSeq: UInt64, shown: (AppUserID) throws -> String) rethrows -> CommitChanges {
        var changes = CommitChanges()
        changes.subscriptions = subscriptions
        for u in users {
            changes.customers.insert(StoreLayout.userKey(u.environment, AppUserID(try shown(u.user))))
        }
        changes.everything = everything
        changes.lastSeq = lastSeq
        return changes
    }
}
