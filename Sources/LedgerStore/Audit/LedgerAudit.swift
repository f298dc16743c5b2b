import LMDB

/// What an auditor runs against a ledger (docs/operations.md, docs/backup.md): `verify` (the file, the log and its chain, the refusals, the
/// projections against a replay), `replay` (every projection made again from the log, checked or rewritten, up to any
/// position) and `whatIf` (the answers other rules would give). Each reads the log the writer appends to, in short
/// read transactions, so a live server keeps writing meanwhile; only a rewriting replay writes.
public struct LedgerAudit: LedgerRole {
    let ledger: Ledger
}

extension Ledger {
    /// Verification, replay and what-if.
    public var audit: LedgerAudit { LedgerAudit(ledger: self) }
}
