import Crypto
import Foundation
import LedgerErrors

/// How the store seals what names people (rows, raw inputs, refusals and their keys): AES-256-GCM, as nonce (12) ‖
/// ciphertext ‖ tag (16). Boxes that earlier builds sealed with ChaCha20-Poly1305 have the same layout and still
/// open: a box whose tag does not verify under AES-GCM is opened under ChaCha20-Poly1305 (a tag that verifies under
/// the wrong one is a 2⁻¹²⁸ accident). AES-GCM is the one sealed with because Crypto spends fewer instructions per
/// call on it, and the write path seals every new person's row and every input that names someone
/// (benchmarks/README.md, "Pseudonyms on the write path").
enum Sealing {
    /// Nonce and tag.
    static let overhead = 12 + 16

    /// `plain` sealed with `key`, appended to `out`.
    static func seal(_ plain: some DataProtocol, using key: SymmetricKey, into out: inout [UInt8]) throws {
        guard let combined = try AES.GCM.seal(plain, using: key).combined else {
            throw LedgerError(code: .internal, message: "AES-GCM gave a box without its combined form")
        }
        combined.withUnsafeBytes { out.append(contentsOf: $0) }
    }

    /// `plain` sealed with `key`.
    static func seal(_ plain: some DataProtocol, using key: SymmetricKey) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(plain.count + overhead)
        try seal(plain, using: key, into: &out)
        return out
    }

    /// What `seal` sealed (or ChaCha20-Poly1305 did); throws when the box does not open with `key`.
    static func open(_ combined: some DataProtocol, using key: SymmetricKey) throws -> [UInt8] {
        if let box = try? AES.GCM.SealedBox(combined: combined), let plain = try? AES.GCM.open(box, using: key) {
            return plain.withUnsafeBytes { Array($0) }
        }
        return try ChaChaPoly.open(ChaChaPoly.SealedBox(combined: combined), using: key).withUnsafeBytes { Array($0) }
    }
}
