import LedgerCore

/// One input handed to the ledger: either the facts decoded from it, or the reason it was refused.
///
/// The store knows no Apple format: callers decode first (LedgerAppStore) and pass the facts, or pass the refusal so
/// that the raw bytes land in `rejected` for the auditor.
public enum LedgerInput: Sendable {
    /// Facts decoded from `raw`, sharing `metadata` (its `rawDigest` is set by the store).
    case facts([Fact], metadata: FactMetadata, raw: [UInt8])
    /// An input refused before it reached the store.
    case rejected(RejectedInput)
}
