import LedgerCore

// MARK: - DecodedInput

/// One decoded input: the canonical facts it states, the metadata they share, what kind of input it was and its
/// raw bytes (kept verbatim for the raw store and the rejected log).
public struct DecodedInput: Sendable {
    /// In document order: notification first (if any), then transactions (deduplicated by content), renewal infos,
    /// and binding claims last.
    public var facts: [Fact]
    /// Shared by every fact; `rawDigest` stays empty until the store keeps `raw` and sets it (SHA-256 of `raw`).
    public var metadata: FactMetadata
    public var type: InputType
    /// The input exactly as received (the whole envelope when there was one).
    public var raw: [UInt8]

    public init(facts: [Fact], metadata: FactMetadata, type: InputType, raw: [UInt8]) {
        self.facts = facts
        self.metadata = metadata
        self.type = type
        self.raw = raw
    }
}
