import LMDB
import LedgerCore

/// Counts and sizes of a ledger (`storeledger stats`).
public struct LedgerStatistics: Sendable, Hashable, Codable {
    public var lastSeq: UInt64
    public var events: Int
    public var rejected: Int
    /// Hex SHA-256 link of the last event (the genesis link, all zeros, for an empty ledger).
    public var chainHead: String
    /// Bytes in use in the map.
    public var bytes: Int
    /// The map's current size (the file is sparse up to it).
    public var mapSize: Int
    public var subscriptions: Int
    public var users: Int
    public var rawInputs: Int
    /// Entries per named database.
    public var databases: [String: Int]
}

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

extension Ledger {
    /// Writes a consistent copy of the ledger into the directory `path` (which must exist and be empty): a hot
    /// backup, safe while the writer runs.
    public func copy(to path: String, compact: Bool = false) throws {
        try environment.copy(to: path, compact: compact)
    }
}
