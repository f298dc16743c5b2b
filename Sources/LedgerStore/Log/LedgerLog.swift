import LMDB
import LedgerCore

/// The log as it is stored: the events in log order, by key, by subscription, and one by one; the raw bytes each
/// input arrived as; the refused inputs. People are named as answers name them (`IdentityNames`). What the log
/// folds to is `Ledger`'s own reading (`customer`, `timeline`); checking it whole is `LedgerAudit`.
public struct LedgerLog: LedgerRole {
    let ledger: Ledger
}

extension Ledger {
    /// The events, raw inputs and refusals as stored.
    public var log: LedgerLog { LedgerLog(ledger: self) }
}

extension LedgerLog {
    /// Events with seq > `after`, in log order, at most `limit`.
    public func events(after: UInt64, limit: Int) throws -> [StoredEvent] {
        try environment.read { txn in
            let cursor = try txn.cursor(layout.log)
            var out: [StoredEvent] = []
            var entry = try cursor.seek(StoreLayout.logKey(after &+ 1))
            let names = try IdentityNames(identities, layout, txn)
            while let e = entry, out.count < limit {
                var stored = try storedEvent(seq: BigEndian.uint64(key: e.key, of: "log"), logValue: e.value, txn)
                stored.event = try names.shown(stored.event)
                out.append(stored)
                entry = try cursor.next()
            }
            return out
        }
    }

    /// The event at `seq`, if written.
    public func event(seq: UInt64) throws -> StoredEvent? {
        try environment.read { txn in
            guard let v = try txn.get(layout.log, key: StoreLayout.logKey(seq)) else { return nil }
            var stored = try storedEvent(seq: seq, logValue: v, txn)
            stored.event = try IdentityNames(identities, layout, txn).shown(stored.event)
            return stored
        }
    }

    /// Every event recorded under one event key (a transaction id, or a synthetic key such as `renewal:<otid>`), oldest
    /// first: the revisions of that transaction as they arrived.
    public func events(key: String) throws -> [StoredEvent] {
        try environment.read { txn in
            var out: [StoredEvent] = []
            let names = try IdentityNames(identities, layout, txn)
            // A grant's key names its user: asked for as the log names them.
            let logKey = key.hasPrefix(OperatorGrant.keyPrefix)
                ? OperatorGrant.keyPrefix + (try names.asked(String(key.dropFirst(OperatorGrant.keyPrefix.count)))) : key
            try layout.forEachRevision(of: logKey, txn) { seq, stored in
                let event = try names.shown(try StoreLayout.decodeEvent(seq: seq, stored))
                guard let logValue = try txn.get(layout.log, key: StoreLayout.logKey(seq)) else {
                    throw LedgerError.corrupted("event \(seq) of \(key) has no `log` entry")
                }
                let log = try LogRecord(logValue, seq: seq)
                out.append(StoredEvent(event: event, chainHash: log.link, rawKey: log.rawKey))
                return true
            }
            return out
        }
    }

    /// Every event of one subscription (transactions, renewal infos, notifications, claims), in log order.
    public func events(original otid: OriginalTransactionID, environment env: AppStoreEnvironment, upTo asOf: UInt64? = nil)
        throws -> [LedgerEvent]
    {
        try environment.read { txn in
            let names = try IdentityNames(identities, layout, txn)
            return try SubscriptionScan.events(layout, env, otid, upTo: asOf, txn).map { try names.shown($0) }
        }
    }

    /// The raw bytes an event was decoded from, exactly as received; nil when they are not stored, or name a person
    /// the ledger forgot (`rawInput(of:)` tells which).
    public func raw(of event: StoredEvent) throws -> [UInt8]? {
        if case .bytes(let raw) = try rawInput(of: event.rawKey) { return raw }
        return nil
    }

    /// What is kept of an input's raw bytes.
    public enum RawInput: Sendable, Equatable {
        case bytes([UInt8])
        /// Sealed for people of whom one or more was forgotten (their pseudonyms): unreadable.
        case erased(pseudonyms: [String])
        case missing
    }

    /// The raw input stored under `rawKey` (the seq of its first event).
    public func rawInput(of rawKey: UInt64) throws -> RawInput {
        try environment.read { txn in try ledger.rawInput(of: rawKey, txn) }
    }

    /// Refused inputs with number > `after`, oldest first.
    public func rejectedInputs(after: UInt64 = 0, limit: Int = 100) throws -> [RejectedInput] {
        try environment.read { txn in
            let cursor = try txn.cursor(layout.rejected)
            var out: [RejectedInput] = []
            var entry = try cursor.seek(StoreLayout.rejectedKey(after &+ 1))
            while let e = entry, out.count < limit {
                let number = try BigEndian.uint64(key: e.key, of: "rejected")
                out.append(try ledger.opened(try RejectedInput(number: number, stored: e.value), txn))
                entry = try cursor.next()
            }
            return out
        }
    }

    /// The event a `log` entry names, with its place in the chain.
    private func storedEvent(seq: UInt64, logValue: MappedBytes, _ txn: Transaction) throws -> StoredEvent {
        let log = try LogRecord(logValue, seq: seq)
        guard let stored = try txn.get(layout.events, key: log.revisionKey(seq: seq)) else {
            throw LedgerError.corrupted("log seq \(seq) names an event that is missing")
        }
        return StoredEvent(event: try StoreLayout.decodeEvent(seq: seq, stored), chainHash: log.link, rawKey: log.rawKey)
    }
}
