/// The outcome of `LedgerAudit.verify`.
public struct VerificationReport: Sendable, Hashable, Codable {
    /// Events checked in the log.
    public var events: UInt64
    /// Subscriptions whose projection was compared with a replay.
    public var projections: Int
    /// Refused inputs checked in the `rejected` store.
    public var rejected: UInt64 = 0
    /// The chain head recomputed from the log (hex).
    public var chainHead: String
    /// The first fault found, or nil when the ledger is sound.
    public var fault: String?
    public var ok: Bool { fault == nil }
}
