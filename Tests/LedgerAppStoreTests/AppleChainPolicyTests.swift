import Crypto
import Foundation
import LedgerCore
import LedgerTestSupport
import LedgerErrors
import Testing
import X509

@testable import LedgerAppStore

// MARK: - Apple's chain policy and the chain cache

@Suite("Apple chain policy")
struct AppleChainPolicyTests {
    typealias F = AppleFixtures

    static let transaction = F.json(F.v2Transaction())

    /// What `ChainValidator` says of `pki`'s chain as its JWS header carries it, trusting `root`.
    static func validate(_ pki: TestPKI, trusting root: Certificate) -> CertificateValidationResult {
        ChainValidator(roots: [root]).validate(leaf: pki.leaf, intermediates: [pki.intermediate, pki.root])
    }

    @Test("A chain with Apple's markers to a configured root passes, leaf to root")
    func validChain() throws {
        let pki = TestPKI.shared
        guard case .validCertificate(let chain) = Self.validate(pki, trusting: pki.root) else {
            Issue.record("the test PKI's chain was refused")
            return
        }
        #expect(Array(chain) == [pki.leaf, pki.intermediate, pki.root])
        let verified = VerifiedChain(chain)
        #expect(verified.leafKey.rawRepresentation == pki.leafKey.publicKey.rawRepresentation)
        #expect(verified.windows.count == 3)
    }

    @Test("An intermediate without Apple's OID fails the policy, and the JWS it signs is untrusted_chain")
    func intermediateWithoutOID() throws {
        let pki = try TestPKI(name: "No intermediate OID", intermediateOID: false)
        guard case .couldNotValidate(let failures) = Self.validate(pki, trusting: pki.root) else {
            Issue.record("a chain whose intermediate lacks Apple's OID was accepted")
            return
        }
        let reason = try #require(failures.first).policyFailureReason.description
        #expect(reason == "intermediate certificate lacks Apple's OID 1.2.840.113635.100.6.2.1")

        let refused = refusal(Array(pki.sign(Self.transaction).utf8), with: trustingDecoder(roots: [pki.rootDER]))
        let error = try #require(refused)
        #expect(error.code == "untrusted_chain")
        #expect(error.message == "JWS intermediate certificate lacks Apple's OID 1.2.840.113635.100.6.2.1")
    }

    @Test("A leaf without Apple's OID fails the policy")
    func leafWithoutOID() throws {
        let pki = try TestPKI(name: "No leaf OID", leafOID: false)
        guard case .couldNotValidate(let failures) = Self.validate(pki, trusting: pki.root) else {
            Issue.record("a chain whose leaf lacks Apple's OID was accepted")
            return
        }
        let reason = try #require(failures.first).policyFailureReason.description
        #expect(reason == "leaf certificate lacks Apple's OID 1.2.840.113635.100.6.11.1")
    }

    @Test("A chain to another root reaches no configured root: no policy failure to report")
    func otherRoot() throws {
        let impostor = try TestPKI(name: "Impostor")
        guard case .couldNotValidate(let failures) = Self.validate(impostor, trusting: TestPKI.shared.root) else {
            Issue.record("a chain to an unconfigured root was accepted")
            return
        }
        #expect(failures.isEmpty)
        let refused = refusal(Array(impostor.sign(Self.transaction).utf8))
        #expect(refused?.message == "JWS certificate chain does not lead to a configured trusted root")
    }

    @Test("A chain is validated once: a new header with the same x5c, and the same JWS again, hit the cache")
    func validatedOnce() throws {
        let decoder = trustingDecoder()
        let pki = TestPKI.shared
        let first = Array(pki.sign(Self.transaction).utf8)
        // Another header (one more field) carrying the same x5c: the header cache misses, the x5c cache answers.
        let otherHeader = Array(pki.sign(Self.transaction, header: ["alg": "ES256", "x5c": pki.x5c, "kid": "k"]).utf8)
        for body in [first, otherHeader, first] {
            #expect(try decode(body, with: decoder).metadata.signature == .verified)
        }
        #expect(decoder.verifier.chainValidationCount == 1)
        #expect(decoder.cachedChainCount == 1)
    }

    @Test("A refused chain is not remembered: each input signed by it is checked again")
    func refusalsNotCached() throws {
        let pki = try TestPKI(name: "No intermediate OID", intermediateOID: false)
        let decoder = trustingDecoder(roots: [pki.rootDER])
        for _ in 0..<2 {
            #expect(refusal(Array(pki.sign(Self.transaction).utf8), with: decoder)?.code == "untrusted_chain")
        }
        #expect(decoder.verifier.chainValidationCount == 2)
        #expect(decoder.cachedChainCount == 0)
    }

    // The limit catches a deadlock, which never ends; the whole suite running beside it on a loaded 2-core machine
    // has made this test take over a minute without one.
    @Test(
        "Synchronous validation from many tasks at once does not starve the cooperative pool",
        .timeLimit(.minutes(4)))
    func fromTasks() async throws {
        // Each decoder starts with an empty cache, so every task blocks its pool thread on a validation.
        let decoders = (0..<16).map { _ in trustingDecoder() }
        let body = Array(TestPKI.shared.sign(Self.transaction).utf8)
        let verified = await withTaskGroup(of: Bool.self) { group in
            for decoder in decoders {
                group.addTask { (try? decoder.decode(body, receivedAt: receivedAt))?.metadata.signature == .verified }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(verified == 16)
        #expect(decoders.allSatisfy { $0.verifier.chainValidationCount == 1 })
    }
}
