import Crypto
import LMDB
import LedgerCore

// MARK: - Reading the log

extension Ledger {
    /// The last sequence number written (0 for an empty ledger).
    public func lastSeq() throws -> UInt64 {
        try environment.read { txn in try batch.lastSeq(txn) }
    }

    func rawInput(of rawKey: UInt64, _ txn: Transaction) throws -> LedgerLog.RawInput {
        if let raw = try txn.value(layout.raw, key: StoreLayout.rawKey(rawKey)) { return .bytes(raw) }
        guard let sealed = try txn.value(layout.rawSealed, key: StoreLayout.rawKey(rawKey)) else { return .missing }
        let (pseudonyms, from) = try SealedRaw.people(sealed)
        guard let generation = try identities.generation(layout, txn) else {
            throw LedgerError.corrupted("raw input \(rawKey) is sealed in a ledger without identities")
        }
        var keys: [SymmetricKey] = []
        var forgotten: [String] = []
        for p in pseudonyms {
            if let row = try identities.row(p, generation, layout, txn) { keys.append(row.dataKey) } else { forgotten.append(p) }
        }
        guard forgotten.isEmpty else { return .erased(pseudonyms: forgotten) }
        return .bytes(try SealedRaw.open(sealed, sealedFrom: from, keys: keys))
    }

}
