import LMDB
import LedgerCore

extension Ledger {
    /// Counts, sizes, last sequence and chain head.
    public func statistics() throws -> LedgerStatistics {
        let info = environment.info
        return try environment.read { txn in
            var databases: [String: Int] = [:]
            for db in layout.all { databases[db.name ?? "main"] = try txn.statistics(db).entries }
            var users = 0
            let cursor = try txn.cursor(layout.byUser)
            var entry = try cursor.first()
            while entry != nil {
                users += 1
                entry = try cursor.nextKey()
            }
            let head = try batch.chainHead(txn)
            return LedgerStatistics(
                lastSeq: try batch.lastSeq(txn), events: databases["log"] ?? 0, rejected: databases["rejected"] ?? 0,
                chainHead: hex(head), bytes: info.usedBytes, mapSize: info.mapSize,
                subscriptions: databases["timelines"] ?? 0, users: users, rawInputs: databases["raw"] ?? 0,
                databases: databases)
        }
    }
}
