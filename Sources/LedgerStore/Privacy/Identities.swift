import Crypto
import Foundation
import LedgerErrors
import LMDB
import LedgerCore
import Synchronization

/// The personal values of a ledger (app user ids, `appAccountToken`s) and the pseudonyms the log holds in their
/// place (docs/privacy.md).
///
/// - `identities`: pseudonym → generation (BE, 8) ‖ (data key (32) ‖ the value), sealed (`Sealing`) with the
///   key of that generation in `identity.key`.
/// - `identity_index`: SHA-256(index key of the generation ‖ value) → pseudonym, so that the writer finds a known
///   value's pseudonym without the value being a key of the data file.
/// - `meta` `identity_generation`: the generation every row is sealed with. Absent: a ledger written before
///   pseudonyms, whose log holds the values themselves (it is read as it is, and cannot forget).
///
/// A pseudonym is `anon-` and 24 base-32 digits of SHA-256(the input's identity seed ‖ 0 ‖ value): the seed is random,
/// chosen once per input where it enters (`Ledger.append`) and carried in the journal, never in the data file, so a
/// recovery names a value alike and nobody can test a guess against a pseudonym; a replica of the intake stream
/// derives it from the input's message instead (`IntakeMessage.options`), so replicas name it alike. The data key
/// seals the raw inputs that name the value (`SealedRaw`); forgetting the value deletes its row and re-seals the
/// others under a new generation.
final class Identities: Sendable {
    static let pseudonymPrefix = "anon-"

    let directory: String
    private let keys: Mutex<[UInt64: Generation]>
    /// The writer's memory of the values it has named (value → identity, and pseudonym → value), committed ones
    /// only, so that naming a known person again, or showing one, costs a dictionary lookup instead of the index,
    /// the row and its opening. Emptied by an erasure inside its transaction, before it commits, so that no
    /// snapshot without a row finds its value here; bounded, emptied when full.
    private let remembered = Mutex<Memory>(Memory())
    private struct Memory {
        var byValue: [String: Identity] = [:]
        var valueOf: [String: String] = [:]
    }
    static let rememberedLimit = 1 << 20
    /// Rows sealed again per chunk by an erasure.
    static let resealChunk = 4_096

    /// One generation's keys: the file's key seals rows; the index key is derived from it.
    struct Generation: Sendable {
        let number: UInt64
        let sealing: SymmetricKey
        let index: SymmetricKey

        init(number: UInt64, key: SymmetricKey) {
            self.number = number
            sealing = key
            index = SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Array("identity index".utf8), using: key))
        }

        /// The `identity_index` key of `value`.
        func indexKey(_ value: String) -> [UInt8] {
            var h = SHA256()
            index.withUnsafeBytes { h.update(bufferPointer: $0) }
            var value = value
            value.withUTF8 { h.update(bufferPointer: UnsafeRawBufferPointer($0)) }
            return h.finalize().withUnsafeBytes { Array($0) }
        }
    }

    /// A value's pseudonym and data key.
    struct Identity: Sendable {
        var pseudonym: String
        var dataKey: SymmetricKey
    }

    /// The identity of `value` as committed, if the writer remembers it.
    func remembered(_ value: String) -> Identity? { remembered.withLock { $0.byValue[value] } }

    /// The value of `pseudonym` as committed, if the writer remembers it.
    func rememberedValue(of pseudonym: String) -> String? { remembered.withLock { $0.valueOf[pseudonym] } }

    /// Remembers identities once their transaction committed (`CommitChanges.identities`), or read from a committed
    /// row.
    func remember(_ identities: [String: Identity]) {
        guard !identities.isEmpty else { return }
        remembered.withLock { memory in
            if memory.byValue.count + identities.count > Self.rememberedLimit { memory = Memory() }
            for (value, identity) in identities {
                memory.byValue[value] = identity
                memory.valueOf[identity.pseudonym] = value
            }
        }
    }

    /// Forgets everything remembered (an erasure).
    func forgetRemembered() { remembered.withLock { $0 = Memory() } }

    init(directory: String) throws(LedgerError) {
        self.directory = directory
        var loaded: [UInt64: Generation] = [:]
        for (number, key) in try IdentityKeyFile.read(directory) { loaded[number] = Generation(number: number, key: key) }
        keys = Mutex(loaded)
    }

    // MARK: - Generations

    /// The generation the ledger seals with, as `txn` sees it; nil for a ledger that keeps the values themselves.
    func generation(_ layout: StoreLayout, _ txn: Transaction) throws -> Generation? {
        guard let stored = try txn.get(layout.meta, key: StoreLayout.metaIdentityGeneration) else { return nil }
        let number = try BigEndian.uint64(value: stored, of: "meta", name: "key `identity_generation`")
        return try generation(number)
    }

    /// Generation `number`'s keys, read again from the file when not loaded (another process may have written it).
    func generation(_ number: UInt64) throws(LedgerError) -> Generation {
        if let known = keys.withLock({ $0[number] }) { return known }
        let file = try IdentityKeyFile.read(directory)
        guard let key = file[number] else {
            throw LedgerError(
                code: .identityKeyMissing,
                message: "the ledger's identities are sealed with key generation \(number), which "
                    + "\(IdentityKeyFile.path(directory)) does not hold: restore that file from the ledger's backup")
        }
        let generation = Generation(number: number, key: key)
        keys.withLock { $0[number] = generation }
        return generation
    }

    /// Makes a new generation, written to the key file beside those kept (`keeping`), and loads it.
    func newGeneration(after last: UInt64?, keeping: [UInt64]) throws(LedgerError) -> Generation {
        let number = (last ?? 0) + 1
        let key = SymmetricKey(size: .bits256)
        var file = try IdentityKeyFile.read(directory).filter { keeping.contains($0.key) }
        file[number] = key
        try IdentityKeyFile.write(directory, file.map { ($0.key, $0.value) })
        let generation = Generation(number: number, key: key)
        keys.withLock { $0[number] = generation }
        return generation
    }

    /// Writes the key file with `number` alone: the other generations can no longer open anything.
    func keepOnly(_ number: UInt64) throws(LedgerError) {
        let file = try IdentityKeyFile.read(directory).filter { $0.key == number }
        try IdentityKeyFile.write(directory, file.map { ($0.key, $0.value) })
        keys.withLock { $0 = $0.filter { $0.key == number } }
    }

    // MARK: - Rows

    /// Base-32 digits of a pseudonym: 50 bits, so that with its prefix it is 15 bytes, a string Swift keeps inline
    /// (no allocation wherever the fold, the indexes and the answers handle it). Two values that would get the same
    /// one are told apart when the second is named (`attempt`); ledgers made before kept 24 digits, read alike.
    static let pseudonymDigits = 10

    /// A new random identity seed: 16 bytes.
    static func newSeed() -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        return withUnsafeBytes(of: (g.next() as UInt64, g.next() as UInt64)) { Array($0) }
    }

    /// The pseudonym of a value with `seed`; `attempt` counts the names already taken by someone else.
    static func pseudonym(of value: String, seed: [UInt8], attempt: UInt8 = 0) -> String {
        // A secret prefix of fixed length keys the hash: what length extension could add is of no use here (the
        // digest is a name, checked against nothing), and it costs a tenth of an HMAC on the write path.
        var h = SHA256()
        seed.withUnsafeBytes { h.update(bufferPointer: $0) }
        withUnsafeBytes(of: attempt) { h.update(bufferPointer: $0) }
        var value = value
        value.withUTF8 { h.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        return h.finalize().withUnsafeBytes { pseudonymPrefix + base32($0, digits: pseudonymDigits) }
    }

    /// Whether `text` has the form of a pseudonym.
    static func looksLikePseudonym(_ text: String) -> Bool {
        let digits = text.utf8.count - pseudonymPrefix.utf8.count
        return (digits == pseudonymDigits || digits == 24) && text.hasPrefix(pseudonymPrefix)
    }

    /// Whether `pseudonym` names someone, now or before an erasure (a forgotten person's row stays, empty, so that
    /// nobody else is ever given their name).
    func isTaken(_ pseudonym: String, _ layout: StoreLayout, _ txn: Transaction) throws -> Bool {
        try txn.get(layout.identities, key: Array(pseudonym.utf8)) != nil
    }

    /// The row of `pseudonym`: its value and data key; nil when there is none (forgotten, or never one).
    func row(_ pseudonym: String, _ generation: Generation, _ layout: StoreLayout, _ txn: Transaction) throws
        -> (value: String, dataKey: SymmetricKey)?
    {
        guard let stored = try txn.get(layout.identities, key: Array(pseudonym.utf8)) else { return nil }
        return try opened(stored, of: pseudonym, generation)
    }

    /// A row as the table holds it, opened; nil when it is empty (someone forgotten).
    func opened(_ stored: MappedBytes, of pseudonym: String, _ generation: Generation) throws
        -> (value: String, dataKey: SymmetricKey)?
    {
        try stored.withUnsafeBytes { stored in
            guard !stored.isEmpty else { return nil }
            guard stored.count > 8 + Sealing.overhead + 32 else {
                throw LedgerError.corrupted("the identity row of \(pseudonym) is \(stored.count) bytes, too short")
            }
            let number = BigEndian.uint64(stored, at: 0)
            let key = number == generation.number ? generation : try self.generation(number)
            let plain: [UInt8]
            do {
                plain = try Sealing.open(UnsafeRawBufferPointer(rebasing: stored[8...]), using: key.sealing)
            } catch {
                throw LedgerError.corrupted("the identity row of \(pseudonym) does not open with key generation \(number)")
            }
            return (String(decoding: plain[32...], as: UTF8.self), SymmetricKey(data: plain[..<32]))
        }
    }

    /// The pseudonym of `value` when the table knows it.
    func pseudonym(of value: String, _ generation: Generation, _ layout: StoreLayout, _ txn: Transaction) throws
        -> String?
    {
        try pseudonym(atIndex: generation.indexKey(value), layout, txn)
    }

    /// The pseudonym `identity_index` holds under `indexKey` (`Generation.indexKey`).
    func pseudonym(atIndex indexKey: [UInt8], _ layout: StoreLayout, _ txn: Transaction) throws -> String? {
        try txn.get(layout.identityIndex, key: indexKey).map { String(decoding: Array($0), as: UTF8.self) }
    }

    /// Stores the row and index entry of a value (`indexKey`: its `Generation.indexKey`, when already made).
    func put(
        _ value: String, _ identity: Identity, _ generation: Generation, _ layout: StoreLayout, _ txn: Transaction,
        indexKey: [UInt8]? = nil
    ) throws {
        var plain: [UInt8] = []
        plain.reserveCapacity(32 + value.utf8.count)
        identity.dataKey.withUnsafeBytes { plain.append(contentsOf: $0) }
        plain.append(contentsOf: value.utf8)
        var row = BigEndian.bytes(generation.number)
        row.reserveCapacity(8 + plain.count + Sealing.overhead)
        try Sealing.seal(plain, using: generation.sealing, into: &row)
        try txn.put(layout.identities, key: Array(identity.pseudonym.utf8), value: row)
        try txn.put(
            layout.identityIndex, key: indexKey ?? generation.indexKey(value), value: Array(identity.pseudonym.utf8))
    }

    /// The first `digits` digits of base 32 (RFC 4648's alphabet, lowercase, no padding) of `bytes`.
    static func base32(_ bytes: some Collection<UInt8>, digits: Int) -> String {
        String(unsafeUninitializedCapacity: digits) { out in
            var buffer: UInt32 = 0
            var bits = 0
            var count = 0
            for b in bytes where count < digits {
                buffer = buffer << 8 | UInt32(b)
                bits += 8
                while bits >= 5 && count < digits {
                    let digit = UInt8((buffer >> UInt32(bits - 5)) & 31)
                    out[count] = digit < 26 ? UInt8(ascii: "a") + digit : UInt8(ascii: "2") + digit - 26
                    count += 1
                    bits -= 5
                }
            }
            return count
        }
    }
}

extension Identities {
    /// The value `name` stands for, as answers show it: the value of a known pseudonym; otherwise `name` itself (a
    /// forgotten person's pseudonym, or a value a ledger without pseudonyms keeps as it came).
    /// `known`: the generation in force, when the caller has read it already.
    func shown(_ name: String, _ layout: StoreLayout, _ txn: Transaction, generation known: Generation? = nil) throws
        -> String
    {
        guard Self.looksLikePseudonym(name) else { return name }
        if let value = rememberedValue(of: name) { return value }
        guard let generation = try known ?? generation(layout, txn),
            let row = try row(name, generation, layout, txn)
        else { return name }
        return row.value
    }
}

// MARK: - Forgetting

extension Identities {
    /// What an erasure event does in its write transaction: deletes the rows of its pseudonyms, and seals every
    /// other row (and makes the index again) with its key generation, which `meta` then names. Until the
    /// generation before is destroyed (`keepOnly`, once the transaction is durable), the deleted rows' bytes could
    /// still be opened where LMDB left them; after, nothing opens them.
    /// - Complexity: O(identities): every row is sealed again, `resealChunk` at a time (a rare, operator-driven write).
    func erase(_ erasure: Erasure, _ layout: StoreLayout, _ txn: Transaction) throws {
        guard let current = try generation(layout, txn) else {
            throw LedgerError(code: .cannotForget, message: "this ledger keeps personal values in its log: it cannot forget")
        }
        let next = try generation(erasure.keyGeneration)
        var forgottenValues: [String] = []
        for pseudonym in erasure.pseudonyms {
            if let row = try row(pseudonym, current, layout, txn) { forgottenValues.append(row.value) }
            try txn.put(layout.identities, key: Array(pseudonym.utf8), value: [])  // the name stays taken
        }
        forgetRemembered()
        // Every other row sealed again, a chunk at a time (read, then written in place: its key is unchanged), so
        // that memory stays bounded whatever the number of people.
        try txn.clear(layout.identityIndex)
        var after: [UInt8]?
        var done = false
        while !done {
            var chunk: [(pseudonym: String, value: String, dataKey: SymmetricKey)] = []
            let cursor = try txn.cursor(layout.identities)
            var entry = try after.map { try cursor.seek($0) } ?? cursor.first()
            if let a = after, let e = entry, e.key.hasSameBytes(as: a) { entry = try cursor.next() }
            while let e = entry, chunk.count < Self.resealChunk {
                after = Array(e.key)
                let pseudonym = String(decoding: after!, as: UTF8.self)
                // An empty row is someone forgotten before: it stays as it is.
                if let row = try opened(e.value, of: pseudonym, current) { chunk.append((pseudonym, row.value, row.dataKey)) }
                entry = try cursor.next()
            }
            done = entry == nil
            for k in chunk { try put(k.value, Identity(pseudonym: k.pseudonym, dataKey: k.dataKey), next, layout, txn) }
        }
        // Refused inputs: each one that holds a forgotten value loses its key; the others' keys are sealed anew.
        var refusals: [(key: [UInt8], value: [UInt8]?)] = []
        let sealed = try txn.cursor(layout.rejectedSealed)
        var refusal = try sealed.first()
        while let r = refusal {
            let number = try BigEndian.uint64(key: r.key, of: "rejected_sealed")
            let stored = Array(r.value)
            guard let record = try txn.get(layout.rejected, key: StoreLayout.rejectedKey(number)) else {
                throw LedgerError.corrupted("rejected_sealed holds refused input \(number), which `rejected` lacks")
            }
            let key = try refusalKey(stored, number: number)
            let opened = try RejectedInput(number: number, stored: record)
                .withContent(try openRefusal(stored, number: number, key: key))
            refusals.append(
                (Array(r.key), Self.mentions(opened, forgottenValues) ? nil : try resealRefusal(stored, key: key, with: next)))
            refusal = try sealed.next()
        }
        for r in refusals {
            if let value = r.value { try txn.put(layout.rejectedSealed, key: r.key, value: value) } else {
                _ = try txn.delete(layout.rejectedSealed, key: r.key)
            }
        }
        try txn.put(layout.meta, key: StoreLayout.metaIdentityGeneration, value: BigEndian.bytes(next.number))
    }
}

// MARK: - Refused inputs

extension Identities {
    /// What `rejected_sealed` holds for a refusal's content in a ledger with pseudonyms: the generation (BE, 8), the
    /// refusal's own key sealed with it, and the content sealed with that key. A refused input is not decoded, so
    /// whom it names is unknown: `forget` opens each and destroys the key of those that hold a forgotten value.
    func sealRefusal(_ content: [UInt8], _ generation: Generation) throws -> [UInt8] {
        let key = SymmetricKey(size: .bits256)
        var out = BigEndian.bytes(generation.number)
        try key.withUnsafeBytes { try Sealing.seal($0, using: generation.sealing, into: &out) }
        try Sealing.seal(content, using: key, into: &out)
        return out
    }

    /// The content `sealRefusal` sealed.
    func openRefusal(_ stored: [UInt8], number: UInt64) throws -> [UInt8] {
        try openRefusal(stored, number: number, key: try refusalKey(stored, number: number))
    }

    /// The content `sealRefusal` sealed, with its key (`refusalKey`).
    func openRefusal(_ stored: [UInt8], number: UInt64, key: SymmetricKey) throws -> [UInt8] {
        do {
            return try Sealing.open(stored[(8 + Self.wrappedKeyBytes)...], using: key)
        } catch {
            throw LedgerError.corrupted("the sealed content of refused input \(number) does not open")
        }
    }

    /// The key a `sealRefusal` form holds, opened with its generation.
    func refusalKey(_ stored: [UInt8], number: UInt64) throws -> SymmetricKey {
        guard stored.count >= 8 + Self.wrappedKeyBytes + 28 else {
            throw LedgerError.corrupted("the sealed content of refused input \(number) is too short")
        }
        let generation = try self.generation(stored.withUnsafeBytes { BigEndian.uint64($0, at: 0) })
        do {
            return SymmetricKey(data: try Sealing.open(stored[8..<(8 + Self.wrappedKeyBytes)], using: generation.sealing))
        } catch {
            throw LedgerError.corrupted("the key of refused input \(number) does not open")
        }
    }

    /// The `sealRefusal` form with its key (`refusalKey`) sealed again with `next`; the content is left as it is.
    func resealRefusal(_ stored: [UInt8], key: SymmetricKey, with next: Generation) throws -> [UInt8] {
        var out = BigEndian.bytes(next.number)
        try key.withUnsafeBytes { try Sealing.seal($0, using: next.sealing, into: &out) }
        out += stored[(8 + Self.wrappedKeyBytes)...]
        return out
    }

    /// A refusal's key as `sealRefusal` keeps it: nonce, the 32 bytes, tag.
    static let wrappedKeyBytes = 32 + Sealing.overhead

    /// Whether a refusal's content holds any of `values`: as sent, percent-encoded, and for a token in either case;
    /// in its message and request also percent-decoded or JSON-escaped, and in its bytes inside a JWS's payload too
    /// (`RefusalText`).
    static func mentions(_ refusal: RejectedInput, _ values: [String]) -> Bool {
        let haystacks =
            RefusalText.textForms(Array(refusal.message.utf8)) + RefusalText.textForms(Array((refusal.request ?? "").utf8))
            + RefusalText.readableForms(refusal.raw)
        for value in values where !value.isEmpty {
            var needles = Set([value, value.lowercased(), value.uppercased()])
            if let encoded = value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) { needles.insert(encoded) }
            for needle in needles {
                let n = Array(needle.utf8)
                for h in haystacks where h.count >= n.count {
                    if (0...(h.count - n.count)).contains(where: { i in h[i] == n[0] && h[i..<(i + n.count)].elementsEqual(n) }) {
                        return true
                    }
                }
            }
        }
        return false
    }
}
