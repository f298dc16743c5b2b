import Crypto
import LMDB
import LedgerCore
import LedgerErrors

// MARK: - Exports and imports

extension Ledger {
    /// The people a sealed raw input names, pseudonym → value (nil: forgotten), for an export.
    func people(ofSealed rawKey: UInt64, _ txn: Transaction) throws -> [String: String?] {
        guard let sealed = try txn.value(layout.rawSealed, key: StoreLayout.rawKey(rawKey)),
            let generation = try identities.generation(layout, txn)
        else { return [:] }
        var out: [String: String?] = [:]
        for p in try SealedRaw.people(sealed).pseudonyms {
            // `updateValue`: a nil assigned through the subscript would remove the key, not record a forgotten one.
            out.updateValue(try identities.row(p, generation, layout, txn)?.value, forKey: p)
        }
        return out
    }

    /// What an import stores for an input that names `people`: the raw bytes sealed for them (each given a row
    /// under its pseudonym, with a new data key, the first time), or, when one of them was forgotten in the source,
    /// their names alone: the bytes are gone there too.
    func sealForImport(_ raw: [UInt8], people: [String: String?], _ txn: Transaction) throws -> [UInt8] {
        guard let generation = try identities.generation(layout, txn) else {
            throw LedgerError(
                code: .invalidExport,
                message: "the export names people by pseudonyms, and this ledger was made without them")
        }
        let names = people.keys.sorted()
        var identities: [Identities.Identity] = []
        for name in names {
            if let row = try self.identities.row(name, generation, layout, txn) {
                identities.append(Identities.Identity(pseudonym: name, dataKey: row.dataKey))
            } else if case .some(.some(let value)) = people[name] {
                let identity = Identities.Identity(pseudonym: name, dataKey: SymmetricKey(size: .bits256))
                try self.identities.put(value, identity, generation, layout, txn)
                identities.append(identity)
            } else if try !self.identities.isTaken(name, layout, txn) {
                try txn.put(layout.identities, key: Array(name.utf8), value: [])  // forgotten in the source: taken
            }
        }
        guard identities.count == names.count else { return SealedRaw.naming(names) }
        return try SealedRaw.seal(raw, for: identities)
    }
}

// MARK: - Refused inputs, as readers see them

extension Ledger {
    /// A stored refusal as readers see it: with its sealed content opened, or marked erased when its key was
    /// destroyed (it named a person the ledger forgot).
    func opened(_ refusal: RejectedInput, _ txn: Transaction) throws -> RejectedInput {
        guard refusal.contentDigest != nil else { return refusal }
        guard let sealed = try txn.value(layout.rejectedSealed, key: StoreLayout.rejectedKey(refusal.number)) else {
            var erased = refusal
            erased.erased = true
            return erased
        }
        return try refusal.withContent(try identities.openRefusal(sealed, number: refusal.number))
    }
}
