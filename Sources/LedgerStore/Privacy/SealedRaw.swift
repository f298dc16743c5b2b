import Crypto
import Foundation
import LMDB

/// The `raw_sealed` form of an input that names people: how many (1), each one's pseudonym (length (1) ‖ UTF-8),
/// then the bytes received, sealed (`Sealing`: nonce ‖ ciphertext ‖ tag) with the data key of the one person it names,
/// or for several, SHA-256 of their data keys in the order listed. It opens only while every one of them is known:
/// forgetting any of them leaves the bytes unreadable, wherever copies of the page remain. The hash chain holds the
/// input's digest, not its bytes, so it verifies either way.
enum SealedRaw {
    /// What `raw_sealed` holds for `raw`, naming `people` (at least one, at most 255).
    static func seal(_ raw: [UInt8], for people: [Identities.Identity]) throws -> [UInt8] {
        var out = naming(people.map(\.pseudonym), reserving: raw.count + Sealing.overhead)
        try Sealing.seal(raw, using: people.count == 1 ? people[0].dataKey : key(people.map(\.dataKey)), into: &out)
        return out
    }

    /// The head of a sealed input: how many people it names, and their pseudonyms. Alone, it is an input whose bytes
    /// are gone (an import of one that named a person forgotten in its source).
    static func naming(_ pseudonyms: [String], reserving extra: Int = 0) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(1 + pseudonyms.reduce(0) { $0 + 1 + $1.utf8.count } + extra)
        out.append(UInt8(pseudonyms.count))
        for p in pseudonyms {
            out.append(UInt8(p.utf8.count))
            out.append(contentsOf: p.utf8)
        }
        return out
    }

    /// The pseudonyms a sealed input names, and where its sealed bytes start.
    static func people(_ stored: [UInt8]) throws(LedgerError) -> (pseudonyms: [String], sealedFrom: Int) {
        guard let count = stored.first, count > 0 else { throw LedgerError.corrupted("a sealed raw input names nobody") }
        var at = 1
        var names: [String] = []
        for _ in 0..<count {
            guard at < stored.count, at + 1 + Int(stored[at]) <= stored.count else {
                throw LedgerError.corrupted("a sealed raw input is cut short")
            }
            let length = Int(stored[at])
            names.append(String(decoding: stored[(at + 1)..<(at + 1 + length)], as: UTF8.self))
            at += 1 + length
        }
        return (names, at)
    }

    /// The bytes received, given the data keys of the people it names in their order.
    static func open(_ stored: [UInt8], sealedFrom: Int, keys: [SymmetricKey]) throws(LedgerError) -> [UInt8] {
        do {
            return try Sealing.open(stored[sealedFrom...], using: key(keys))
        } catch {
            throw LedgerError.corrupted("a sealed raw input does not open with the keys of the people it names")
        }
    }

    private static func key(_ keys: [SymmetricKey]) -> SymmetricKey {
        if keys.count == 1 { return keys[0] }
        var h = SHA256()
        for k in keys { k.withUnsafeBytes { h.update(bufferPointer: $0) } }
        return SymmetricKey(data: h.finalize())
    }
}
