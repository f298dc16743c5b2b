import Crypto
import Foundation
import LedgerCore
import X509

// MARK: - VerifiedChain

/// What the decode path keeps of a chain `ChainValidator` accepted: the leaf's key, which checks each payload's
/// signature, and each certificate's validity window, which each payload's `signedDate` must fall in.
///
/// The windows are kept apart from the verdict because one chain signs payloads at many instants: Apple signs with
/// one chain for months, and a payload signed while its leaf was valid stays genuine after the leaf expires
/// (docs/domain.md, "JWS verification"). The verdict is cached; the windows are checked every time, as integers.
struct VerifiedChain: Sendable {
    struct Window: Sendable {
        var subject: String
        var notBefore: UnixMillis
        var notAfter: UnixMillis
    }

    var leafKey: P256.Signing.PublicKey
    /// Leaf first, root last.
    var windows: [Window]

    init(_ chain: ValidatedCertificateChain) {
        guard let leafKey = P256.Signing.PublicKey(chain.leaf.publicKey) else {
            preconditionFailure("AppleChainPolicy accepts P-256 leaf keys only")
        }
        self.leafKey = leafKey
        self.windows = chain.map { certificate in
            Window(
                subject: certificate.subject.description,
                notBefore: UnixMillis((certificate.notValidBefore.timeIntervalSince1970 * 1000).rounded()),
                notAfter: UnixMillis((certificate.notValidAfter.timeIntervalSince1970 * 1000).rounded()))
        }
    }

    /// Throws `certificate_expired` or `certificate_not_yet_valid` for the first certificate, leaf first, that was
    /// not valid at `signedDate`. `field` names the JWS in the refusal.
    func checkValidity(at signedDate: UnixMillis, field: String) throws(InputError) {
        for window in windows {
            if signedDate > window.notAfter {
                throw .certificateExpired(
                    "\(field): certificate '\(window.subject)' expired at \(window.notAfter), before signedDate \(signedDate)")
            }
            if signedDate < window.notBefore {
                throw .certificateNotYetValid(
                    "\(field): certificate '\(window.subject)' is valid only from \(window.notBefore), after signedDate \(signedDate)")
            }
        }
    }
}
