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
