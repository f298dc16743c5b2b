import LedgerCore

/// One input handed to the ledger: either the facts decoded from it, or the reason it was refused.
///
/// The store knows no Apple format: callers decode first (LedgerAppStore) and pass the facts, or pass the refusal so
/// that the raw bytes land in `rejected` for the auditor.
public enum LedgerInput: Sendable {
    /// Facts decoded from `raw`, sharing `metadata` (its `rawDigest` is set by the store). `identitySeed` names the
    /// personal values the input is the first to state (`Identities`): random, given where the input enters
    /// (`Ledger.append` gives one when nil), and the same wherever the input is appended again (a journal's
    /// recovery, a replica of the intake stream).
    case facts([Fact], metadata: FactMetadata, raw: [UInt8], identitySeed: [UInt8]? = nil)
    /// An input refused before it reached the store.
    case rejected(RejectedInput)
}

extension LedgerInput {
    /// The input with an identity seed: its own, or a new random one when it names anyone.
    func seeded() -> LedgerInput {
        guard case .facts(let facts, let metadata, let raw, nil) = self else { return self }
        var names = metadata.appUserId.map { !$0.rawValue.isEmpty } ?? false
        for fact in facts where !names { fact.forEachPersonalValue { _ in names = true } }
        guard names else { return self }
        return .facts(facts, metadata: metadata, raw: raw, identitySeed: Self.newIdentitySeed())
    }

    /// 16 random bytes.
    static func newIdentitySeed() -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        return (0..<2).flatMap { _ in withUnsafeBytes(of: g.next() as UInt64) { Array($0) } }
    }
}
