import LedgerCore

/// One input handed to the ledger: either the facts decoded from it, or the reason it was refused.
///
/// The store knows no Apple format: callers decode first (LedgerAppStore) and pass the facts, or pass the refusal so
/// that the raw bytes land in `rejected` for the auditor.
public enum LedgerInput: Sendable {
    /// Facts decoded from `raw`, sharing `metadata` (its `rawDigest` is set by the store). `identitySeed` names the
    /// personal values the input is the first to state (`Identities`): random, given by the writer when nil and the
    /// input names someone new (and kept in the journal's record), and the same wherever the input is appended again
    /// (a journal's recovery, a replica of the intake stream, which derives it from its message).
    case facts([Fact], metadata: FactMetadata, raw: [UInt8], identitySeed: [UInt8]? = nil)
    /// An input refused before it reached the store.
    case rejected(RejectedInput)
}
