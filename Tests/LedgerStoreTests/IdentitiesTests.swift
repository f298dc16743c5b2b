import Crypto
import Foundation
import LMDB
import LedgerCore
import LedgerErrors
@testable import LedgerStore
import Testing

/// What the store seals (rows, raw inputs, refusals) opens with its key and no other, whichever cipher sealed it.
@Suite struct SealingTests {
    @Test func aBoxOpensWithItsKeyAloneAndBoxesOfEarlierBuildsStillOpen() throws {
        let key = SymmetricKey(size: .bits256)
        let other = SymmetricKey(size: .bits256)
        let plain = Array("user-1@example.com".utf8)
        let sealed = try Sealing.seal(plain, using: key)
        #expect(sealed.count == plain.count + Sealing.overhead)
        #expect(try Sealing.open(sealed, using: key) == plain)
        #expect(throws: (any Error).self) { try Sealing.open(sealed, using: other) }
        // It seals with AES-256-GCM.
        #expect(Array(try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: key)) == plain)
        // Boxes of earlier builds (ChaCha20-Poly1305, the same layout) open with their key, and no other.
        let earlier = Array(try ChaChaPoly.seal(plain, using: key).combined)
        #expect(try Sealing.open(earlier, using: key) == plain)
        #expect(throws: (any Error).self) { try Sealing.open(earlier, using: other) }
        // A box with one byte changed opens under neither.
        var altered = sealed
        altered[altered.count / 2] ^= 1
        #expect(throws: (any Error).self) { try Sealing.open(altered, using: key) }
    }
}

/// Pseudonyms are short (15 bytes), so two people could be given the same one: the second is told apart, and a
/// forgotten person's name is never given to anyone else.
@Suite struct PseudonymTests {
    static func claim(_ user: String, seed: [UInt8]) -> LedgerInput {
        .facts(
            [.binding(BindingClaim(
                appUserId: AppUserID(user), originalTransactionId: OriginalTransactionID("4000000000000001"),
                claimedAt: 1_740_819_600_000))],
            metadata: FactMetadata(source: .decodedJSON, receivedAt: 1_740_819_600_000),
            raw: Array("a claim by \(user)".utf8), identitySeed: seed)
    }

    func pseudonym(of value: String, in t: TemporaryLedger) throws -> String? {
        let ledger = t.ledger
        return try ledger.environment.read { txn in
            guard let generation = try ledger.identities.generation(ledger.layout, txn) else { return nil }
            return try ledger.identities.pseudonym(of: value, generation, ledger.layout, txn)
        }
    }

    @Test func aNameTakenIsNotGivenAgainAndAForgottenOneStaysTaken() throws {
        var options = Ledger.Options()
        options.pseudonyms = true
        let t = try TemporaryLedger(options: options)
        let seed: [UInt8] = Array(repeating: 7, count: 16)
        let first = Identities.pseudonym(of: "carol@example.com", seed: seed)
        #expect(first.utf8.count == 15 && Identities.looksLikePseudonym(first))
        #expect(Identities.looksLikePseudonym("anon-s6oeqvrpky5py5zbtxcwd3vv"))  // as ledgers made before name people
        // Someone else holds carol's first name (as if two values had met on the same 50 bits).
        try t.ledger.environment.write { txn in try txn.put(t.ledger.layout.identities, key: Array(first.utf8), value: []) }
        _ = try t.ledger.appendAndWait([Self.claim("carol@example.com", seed: seed)])
        let given = try #require(try pseudonym(of: "carol@example.com", in: t))
        #expect(given == Identities.pseudonym(of: "carol@example.com", seed: seed, attempt: 1))
        #expect(given != first)

        // Forgotten, dave's name stays taken: his id named again (the same seed, so the same first candidate) is a
        // new person, under another name.
        _ = try t.ledger.appendAndWait([Self.claim("dave@example.com", seed: [1, 2, 3])])
        let dave = try #require(try pseudonym(of: "dave@example.com", in: t))
        _ = try t.ledger.privacy.forget(AppUserID("dave@example.com"), requestedBy: "ticket 9", at: 1_740_819_700_000)
        #expect(try pseudonym(of: "dave@example.com", in: t) == nil)
        #expect(try t.ledger.environment.read { txn in try t.ledger.identities.isTaken(dave, t.ledger.layout, txn) })
        _ = try t.ledger.appendAndWait([Self.claim("dave@example.com", seed: [1, 2, 3])])
        let again = try #require(try pseudonym(of: "dave@example.com", in: t))
        #expect(again == Identities.pseudonym(of: "dave@example.com", seed: [1, 2, 3], attempt: 1))
        #expect(again != dave)
        #expect(try t.ledger.audit.verify().fault == nil)
    }
}

/// An erasure finds a refusal by the forgotten value in every form a client writes it into a request or a body.
@Suite struct RefusalSearchTests {
    static func refusal(raw: String, request: String? = nil) -> RejectedInput {
        var r = RejectedInput(raw: Array(raw.utf8), code: .invalidJSON, message: "not JSON", receivedAt: 0)
        r.request = request
        return r
    }

    @Test func aValueIsFoundAsSentJSONEscapedAndPercentEncodedInEveryCase() {
        let id = "person+42@example.org"
        let found: [RejectedInput] = [
            Self.refusal(raw: "x", request: "POST /v1/events?appUserId=person%2B42%40example.org&bogus=1"),
            Self.refusal(raw: "x", request: "POST /v1/events?appUserId=person%2b42%40example%2Eorg"),
            Self.refusal(raw: "appUserId=person%2B42%40example.org&x=1"),
            Self.refusal(raw: #"{"appUserId":"person+42\u0040example.org""#),
            Self.refusal(raw: #"{"appUserId":"person+42@example.org""#),
        ]
        for r in found { #expect(Identities.mentions(r, [id]), "\(r.request ?? String(decoding: r.raw, as: UTF8.self))") }
        // A space written as '+' in a form.
        #expect(Identities.mentions(Self.refusal(raw: "x", request: "POST /v1/events?appUserId=ana+maria"), ["ana maria"]))
        // Another person's id, or a prefix of the value, is not this one.
        for other in ["person%2B43%40example.org", "person%2B42%40example", "person42%40example.org"] {
            #expect(!Identities.mentions(Self.refusal(raw: "x", request: "POST /v1/events?appUserId=\(other)"), [id]), "\(other)")
        }
    }
}
