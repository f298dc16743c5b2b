import Crypto
import LMDB
import LedgerCore
import LedgerErrors

/// The writer's side of `Identities` in one write transaction: each personal value of an input replaced by its
/// pseudonym, a new value given one (from the input's seed) and a row.
struct Pseudonymizer {
    let identities: Identities
    let generation: Identities.Generation
    let layout: StoreLayout
    /// The values named so far in this transaction, and the value of each pseudonym among them.
    private var byValue: [String: Identities.Identity] = [:]
    private(set) var valueOf: [String: String] = [:]
    /// The values this transaction named for the first time: remembered once it commits.
    private(set) var named: [String: Identities.Identity] = [:]

    init(identities: Identities, generation: Identities.Generation, layout: StoreLayout) {
        self.identities = identities
        self.generation = generation
        self.layout = layout
    }

    /// The facts and metadata with their personal values renamed, and the people the input names (each once, in
    /// the order first named).
    mutating func rename(
        _ facts: [Fact], _ metadata: FactMetadata, seed: [UInt8]?, _ txn: Transaction
    ) throws -> (facts: [Fact], metadata: FactMetadata, people: [Identities.Identity]) {
        var values: [String] = []
        if let user = metadata.appUserId, !user.rawValue.isEmpty { values.append(user.rawValue) }
        for fact in facts { fact.forEachPersonalValue { values.append($0) } }
        guard !values.isEmpty else { return (facts, metadata, []) }
        var people: [Identities.Identity] = []
        var names: [String: String] = [:]
        for value in values where names[value] == nil {
            let identity = try identity(of: value, seed: seed, txn)
            names[value] = identity.pseudonym
            people.append(identity)
        }
        let rename = { (value: String) -> String in names[value] ?? value }
        let renamedMetadata = metadata.renamingPersonalValues(rename)
        let renamedFacts = facts.map { $0.renamingPersonalValues(rename) }
        return (renamedFacts, renamedMetadata, people)
    }

    private mutating func identity(of value: String, seed: [UInt8]?, _ txn: Transaction) throws -> Identities.Identity {
        if let known = byValue[value] { return known }
        let identity: Identities.Identity
        if let known = identities.remembered(value) {
            identity = known
        } else {
            let indexKey = generation.indexKey(value)
            if let pseudonym = try identities.pseudonym(atIndex: indexKey, layout, txn) {
                guard let row = try identities.row(pseudonym, generation, layout, txn) else {
                    throw LedgerError.corrupted("identity_index names \(pseudonym), which has no row in `identities`")
                }
                identity = Identities.Identity(pseudonym: pseudonym, dataKey: row.dataKey)
                // Committed before this transaction (values it named first are in `byValue`).
                identities.remember([value: identity])
            } else {
                guard let seed, !seed.isEmpty else {
                    throw LedgerError(code: .internal, message: "an input that names a person came without an identity seed")
                }
                identity = Identities.Identity(
                    pseudonym: Identities.pseudonym(of: value, seed: seed), dataKey: SymmetricKey(size: .bits256))
                try identities.put(value, identity, generation, layout, txn, indexKey: indexKey)
                named[value] = identity
            }
        }
        byValue[value] = identity
        valueOf[identity.pseudonym] = value
        return identity
    }
}
