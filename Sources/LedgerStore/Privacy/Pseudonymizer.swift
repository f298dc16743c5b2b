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
    /// About how many values the transaction names (one per input), so that the tables above are made once.
    private let expected: Int

    init(identities: Identities, generation: Identities.Generation, layout: StoreLayout, inputs: Int) {
        self.identities = identities
        self.generation = generation
        self.layout = layout
        expected = min(max(inputs, 1), 4_096)
    }

    /// The facts and metadata with their personal values renamed, and the people the input names (each once, in
    /// the order first named). A new person's pseudonym comes from the input's `seed`, given a new random one here
    /// when it has none.
    mutating func rename(
        _ facts: [Fact], _ metadata: FactMetadata, seed: inout [UInt8]?, _ txn: Transaction
    ) throws -> (facts: [Fact], metadata: FactMetadata, people: [Identities.Identity]) {
        var values: [String] = []
        if let user = metadata.appUserId, !user.rawValue.isEmpty { values.append(user.rawValue) }
        for fact in facts { fact.forEachPersonalValue { values.append($0) } }
        guard !values.isEmpty else { return (facts, metadata, []) }
        var people: [Identities.Identity] = []
        for value in values {
            let identity = try identity(of: value, seed: &seed, txn)
            if !people.contains(where: { $0.pseudonym == identity.pseudonym }) { people.append(identity) }
        }
        let known = byValue
        let rename = { (value: String) -> String in known[value]?.pseudonym ?? value }
        let renamedMetadata = metadata.renamingPersonalValues(rename)
        let renamedFacts = facts.map { $0.renamingPersonalValues(rename) }
        return (renamedFacts, renamedMetadata, people)
    }

    private mutating func identity(of value: String, seed: inout [UInt8]?, _ txn: Transaction) throws -> Identities.Identity {
        if let known = byValue[value] { return known }
        if byValue.isEmpty {
            byValue.reserveCapacity(expected)
            valueOf.reserveCapacity(expected)
        }
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
                if seed?.isEmpty ?? true { seed = Identities.newSeed() }
                var attempt: UInt8 = 0
                var pseudonym = Identities.pseudonym(of: value, seed: seed!)
                while try identities.isTaken(pseudonym, layout, txn) {
                    guard attempt < .max else {
                        throw LedgerError(code: .internal, message: "no free pseudonym in 256 attempts: the identities table is damaged")
                    }
                    attempt += 1
                    pseudonym = Identities.pseudonym(of: value, seed: seed!, attempt: attempt)
                }
                identity = Identities.Identity(pseudonym: pseudonym, dataKey: SymmetricKey(size: .bits256))
                try identities.put(value, identity, generation, layout, txn, indexKey: indexKey)
                named[value] = identity
            }
        }
        byValue[value] = identity
        valueOf[identity.pseudonym] = value
        return identity
    }
}
