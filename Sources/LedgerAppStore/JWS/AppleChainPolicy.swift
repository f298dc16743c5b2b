import Crypto
import SwiftASN1
import X509

// MARK: - AppleChainPolicy

/// Apple's rules for the certificate chain of an App Store JWS, as a swift-certificates `VerifierPolicy`: the leaf
/// carries Apple's receipt-signing marker (OID 1.2.840.113635.100.6.11.1) and a P-256 key (ES256 is the one algorithm
/// Apple signs with), and the certificate that issued it carries Apple's Worldwide Developer Relations intermediate
/// marker (OID 1.2.840.113635.100.6.2.1).
///
/// `ChainValidator` runs it in `X509.Verifier` beside `RFC5280Policy`, which owns the rest: each certificate signed by
/// the next, issuers marked as CAs, the chain ending at a configured root. Validity in time is judged per payload, at
/// its `signedDate` (`VerifiedChain.checkValidity(at:field:)`), not here.
///
/// A failure's reason is the refusal message after the JWS's field name (`untrusted_chain`).
struct AppleChainPolicy: VerifierPolicy {
    /// Apple's "Mac App Store and iTunes Store Receipt Signing" leaf marker.
    static let leafOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 11, 1]
    /// Apple's "Apple Worldwide Developer Relations" intermediate marker.
    static let intermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 2, 1]

    /// None: Apple's markers are not critical extensions, and this policy enforces no other.
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    /// Synchronous: the checks read the certificates and nothing else.
    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        guard chain.leaf.extensions[oid: Self.leafOID] != nil else {
            return .failsToMeetPolicy(reason: "leaf certificate lacks Apple's OID \(Self.leafOID)")
        }
        guard chain.count >= 2, chain[1].extensions[oid: Self.intermediateOID] != nil else {
            return .failsToMeetPolicy(reason: "intermediate certificate lacks Apple's OID \(Self.intermediateOID)")
        }
        guard P256.Signing.PublicKey(chain.leaf.publicKey) != nil else {
            return .failsToMeetPolicy(reason: "leaf certificate key is not P-256")
        }
        return .meetsPolicy
    }
}
