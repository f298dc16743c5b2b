import LedgerCore

/// A stored event and where it sits in the log.
public struct StoredEvent: Sendable, Hashable {
    public var event: LedgerEvent
    /// The link of the hash chain after this event.
    public var chainHash: [UInt8]
    /// The key of its raw input in the raw store (the seq of the first event that input produced).
    public var rawKey: UInt64
}
