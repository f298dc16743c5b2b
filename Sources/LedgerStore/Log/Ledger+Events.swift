import LMDB
import LedgerCore

// MARK: - Reading the log

extension Ledger {
    /// The last sequence number written (0 for an empty ledger).
    public func lastSeq() throws -> UInt64 {
        try environment.read { txn in try batch.lastSeq(txn) }
    }

    /// Events with seq > `after`, in log order, at most `limit`.
    public func events(after: UInt64, limit: Int) throws -> [StoredEvent] {
        try environment.read { txn in
            let cursor = try txn.cursor(layout.log)
            var out: [StoredEvent] = []
            var entry = try cursor.seek(StoreLayout.logKey(after &+ 1))
            while let e = entry, out.count < limit {
                out.append(try storedEvent(seq: BigEndian.uint64(key: e.key, of: "log"), logValue: e.value, txn))
                entry = try cursor.next()
            }
            return out
        }
    }

    /// The event at `seq`, if written.
    public func event(seq: UInt64) throws -> StoredEvent? {
        try environment.read { txn in
            guard let v = try txn.get(layout.log, key: StoreLayout.logKey(seq)) else { return nil }
            return try storedEvent(seq: seq, logValue: v, txn)
        }
    }

    /// Every event recorded under one event key (a transaction id, or a synthetic key such as `renewal:<otid>`), oldest
    /// first: the revisions of that transaction as they arrived.
    public func events(key: String) throws -> [StoredEvent] {
        try environment.read { txn in
            var out: [StoredEvent] = []
            try layout.forEachRevision(of: key, txn) { seq, stored in
                let event = try StoreLayout.decodeEvent(seq: seq, stored)
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
        try environment.read { txn in try SubscriptionScan.events(layout, env, otid, upTo: asOf, txn) }
    }

    /// The raw bytes an event was decoded from, exactly as received.
    public func raw(of event: StoredEvent) throws -> [UInt8]? {
        try environment.read { txn in try txn.value(layout.raw, key: StoreLayout.rawKey(event.rawKey)) }
    }

    /// Refused inputs with number > `after`, oldest first.
    public func rejectedInputs(after: UInt64 = 0, limit: Int = 100) throws -> [RejectedInput] {
        try environment.read { txn in
            let cursor = try txn.cursor(layout.rejected)
            var out: [RejectedInput] = []
            var entry = try cursor.seek(StoreLayout.rejectedKey(after &+ 1))
            while let e = entry, out.count < limit {
                let number = try BigEndian.uint64(key: e.key, of: "rejected")
                out.append(try RejectedInput(number: number, stored: e.value))
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
