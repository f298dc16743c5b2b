import LMDB
import LedgerCore

/// The indexes of one logged event, for the append and the import alike: `by_otid` (a subscription's events),
/// `bindings_any` (a claim that named no environment, indexed under each environment of the subscription by the
/// projections once it appears there) and `by_user` (a claim's user). `report` learns what answers the event
/// touches (`WriteReport.logged`).
enum EventIndexes {
    static func write(
        _ fact: Fact, seq: UInt64, eventKey key: String, _ layout: StoreLayout, _ txn: Transaction,
        report: inout WriteReport
    ) throws {
        if case .binding(let claim) = fact, claim.everyEnvironment {
            try txn.put(
                layout.bindingsAny, key: StoreLayout.anyEnvironmentKey(claim.originalTransactionId),
                value: EventReference.encode(seq: seq, eventKey: key), flags: .appendDuplicate)
        } else if let otid = fact.originalTransactionId {
            try txn.put(
                layout.byOTID, key: StoreLayout.subscriptionKey(fact.environment, otid),
                value: EventReference.encode(seq: seq, eventKey: key), flags: .appendDuplicate)
            if case .binding(let claim) = fact {
                try report.indexUser(claim.appUserId, claim.environment, otid: claim.originalTransactionId, layout, txn)
            }
        }
        report.logged(fact)
    }
}
