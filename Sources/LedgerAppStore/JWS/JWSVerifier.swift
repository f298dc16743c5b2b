import Crypto
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LedgerCore
import LedgerErrors
import SwiftASN1
import Synchronization
import X509

// MARK: - JWSVerifier

/// Opens Apple's compact JWS (`header.payload.signature`) and, when trusted roots are configured, verifies it:
/// ES256 only; `x5c` = [leaf, intermediate, root?] chaining to a configured root under Apple's rules
/// (`AppleChainPolicy`, checked by `ChainValidator`); every certificate valid **at the payload's `signedDate`** (so
/// old genuine payloads stay verifiable offline); signature over `header.payload` with the leaf's P-256 key.
///
/// A chain is validated once: its verdict is cached by the SHA-256 of its `x5c` entries, so a payload signed by a
/// known chain costs one ECDSA verification. The caches are bounded and guarded by a `Mutex`: one verifier serves
/// every thread.
final class JWSVerifier: Sendable {
    /// A decoded JWS: its payload object and what is known of its signature.
    struct Opened {
        var payload: [String: JSON]
        var signature: SignatureStatus
    }

    /// Verified chains by the SHA-256 of their x5c entries, and by the SHA-256 of the whole base64url header segment
    /// that carried them (an accepted header: `alg` ES256, x5c validated). Apple signs every JWS of a chain with the
    /// same header, so a header hit skips base64-decoding and parsing the ~2.7 KB header and hashing the x5c.
    struct Caches {
        var byX5C: [SHA256.Digest: VerifiedChain] = [:]
        var byHeader: [SHA256.Digest: VerifiedChain] = [:]
        /// Digests of JWS whose signature verified (see `verifiedJWSCacheCapacity`).
        var verifiedJWS: Set<SHA256.Digest> = []
        /// The header segment seen last and its chain: Apple signs with one chain for months, so comparing the bytes
        /// (a memcmp) usually answers before any hashing.
        var lastHeader: [UInt8] = []
        var lastChain: VerifiedChain?
        /// How many times `ChainValidator` ran (once per chain not found in `byX5C`, accepted or not).
        var validations = 0
    }

    let validator: ChainValidator
    /// True when roots are configured, usable or not: with none usable, signed inputs fail as untrusted.
    let rootsConfigured: Bool
    let requireSignatures: Bool
    let maxDepth: Int
    let cacheCapacity: Int
    let verifiedJWSCapacity: Int
    private let cache: Mutex<Caches>

    /// Roots that are not DER certificates are skipped here (`checkRoots` reports them); with roots configured but
    /// none usable, every signed input is refused as untrusted rather than silently accepted unverified.
    init(configuration: AppStoreConfiguration) {
        self.validator = ChainValidator(roots: configuration.trustedRootsDER.compactMap { try? Certificate(derEncoded: $0) })
        self.rootsConfigured = !configuration.trustedRootsDER.isEmpty
        self.requireSignatures = configuration.requireSignatures
        self.maxDepth = configuration.maxDepth
        self.cacheCapacity = max(1, configuration.chainCacheCapacity)
        self.verifiedJWSCapacity = max(0, configuration.verifiedJWSCacheCapacity)
        self.cache = Mutex(Caches())
    }

    /// Throws `invalid_trusted_root` naming the first root that is not a DER certificate.
    static func checkRoots(_ roots: [[UInt8]]) throws(InputError) {
        for (i, der) in roots.enumerated() {
            do {
                _ = try Certificate(derEncoded: der)
            } catch {
                throw InputError(code: .invalidTrustedRoot, message: "trusted root #\(i) is not a DER certificate: \(error)")
            }
        }
    }

    /// Number of chains currently cached (for tests and metrics).
    var cachedChainCount: Int { cache.withLock { $0.byX5C.count } }

    /// How many chains were run through `ChainValidator` since this verifier was made (for tests).
    var chainValidationCount: Int { cache.withLock { $0.validations } }

    // MARK: - Opening

    /// Decodes `token` (UTF-8 of a compact JWS) and verifies it when roots are configured. `field` names the token in
    /// errors; `fallbackDate` stands in for a missing `signedDate` when checking certificate validity.
    ///
    /// Refusals are checked in this order: header, payload, `alg`, signatures required, x5c and chain, validity at
    /// `signedDate`, signature. A header already accepted (cached by its digest) passes the first, third, fourth and
    /// fifth steps as it did the first time.
    func open(_ token: [UInt8], field: String, fallbackDate: UnixMillis) throws(InputError) -> Opened {
        let dots: (Int, Int)? = token.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            func dot(after start: Int) -> Int? {
                guard start < buffer.count, let p = memchr(base + start, 0x2E, buffer.count - start) else { return nil }
                return UnsafeRawPointer(p) - UnsafeRawPointer(base)
            }
            guard let first = dot(after: 0), let second = dot(after: first + 1), dot(after: second + 1) == nil else {
                return nil
            }
            return (first, second)
        }
        guard let (firstDot, secondDot) = dots else {
            throw .invalidJWS("\(field) is not a compact JWS (header.payload.signature)")
        }
        let headerSegment = token[0..<firstDot]
        var headerKey: SHA256.Digest?
        var cachedChain: VerifiedChain?
        if rootsConfigured {
            cachedChain = cache.withLock { cache in
                guard let chain = cache.lastChain, cache.lastHeader.count == firstDot else { return nil }
                let same = cache.lastHeader.withUnsafeBytes { last in
                    token.withUnsafeBytes { memcmp(last.baseAddress!, $0.baseAddress!, firstDot) == 0 }
                }
                return same ? chain : nil
            }
            if cachedChain == nil {
                let key = SHA256.hash(data: headerSegment)
                headerKey = key
                cachedChain = cache.withLock { cache in
                    guard let chain = cache.byHeader[key] else { return nil }
                    cache.lastHeader = Array(headerSegment)
                    cache.lastChain = chain
                    return chain
                }
            }
        }

        var header = [String: JSON]()
        if cachedChain == nil {
            guard let headerBytes = Base64.decode(headerSegment),
                let parsed = try parseObject(headerBytes)
            else { throw .invalidJWS("\(field) has an undecodable JWS header") }
            header = parsed
        }
        guard let payloadBytes = Base64.decode(token[(firstDot + 1)..<secondDot]) else {
            throw .invalidJWS("\(field) has an undecodable JWS payload")
        }
        guard let payload = try parseObject(payloadBytes) else {
            throw .invalidJSON("the JWS payload of \(field) is not a JSON object")
        }

        let chain: VerifiedChain
        if let cachedChain {
            chain = cachedChain
        } else {
            var alg: String?
            if case .string(let s)? = header["alg"] { alg = s }
            guard alg == "ES256" else { throw .unsupportedAlg(alg ?? "(missing)") }
            // RFC 7515 §4.1.11: a recipient must refuse a JWS whose `crit` names extensions it does not understand,
            // and this verifier understands none (Apple sends no `crit`).
            if header["crit"] != nil {
                throw .invalidJWS("the JWS header of \(field) names critical extensions (crit), which this verifier does not understand")
            }

            guard rootsConfigured, let headerKey else {
                if requireSignatures { throw .signatureRequired }
                return Opened(payload: payload, signature: .unverified)
            }

            guard case .array(let x5c)? = header["x5c"], !x5c.isEmpty else { throw .missingX5C }
            var x5cStrings = [String]()
            x5cStrings.reserveCapacity(x5c.count)
            for entry in x5c {
                guard case .string(let s) = entry else {
                    throw .untrustedChain("\(field) x5c entries must be base64 strings")
                }
                x5cStrings.append(s)
            }
            chain = try verifiedChain(x5cStrings, field: field)
            cache.withLock { cache in
                if cache.byHeader.count >= cacheCapacity { cache.byHeader.removeAll(keepingCapacity: true) }
                cache.byHeader[headerKey] = chain
                cache.lastHeader = Array(headerSegment)
                cache.lastChain = chain
            }
        }

        try chain.checkValidity(at: payload["signedDate"].flatMap(JSONValue.int64) ?? fallbackDate, field: field)

        guard let rawSignature = Base64.decode(token[(secondDot + 1)...]),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: rawSignature)
        else { throw .signatureInvalid }
        let digest = SHA256.hash(data: token[0..<secondDot])
        guard verifiedJWSCapacity > 0 else {
            guard chain.leafKey.isValidSignature(signature, for: digest) else { throw .signatureInvalid }
            return Opened(payload: payload, signature: .verified)
        }
        // The exact bytes: the signing input's digest and the signature (the header fixes the leaf key).
        var hasher = SHA256()
        digest.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        hasher.update(data: rawSignature)
        let seen = hasher.finalize()
        if cache.withLock({ $0.verifiedJWS.contains(seen) }) { return Opened(payload: payload, signature: .verified) }
        guard chain.leafKey.isValidSignature(signature, for: digest) else { throw .signatureInvalid }
        cache.withLock { cache in
            if cache.verifiedJWS.count >= verifiedJWSCapacity { cache.verifiedJWS.removeAll(keepingCapacity: true) }
            cache.verifiedJWS.insert(seen)
        }
        return Opened(payload: payload, signature: .verified)
    }

    /// The JSON object in `bytes`; nil when they are not JSON or not an object. Throws `too_deep`.
    private func parseObject(_ bytes: [UInt8]) throws(InputError) -> [String: JSON]? {
        do throws(InputError) {
            guard case .object(let object) = try JSONValue.parse(bytes, depthLimit: maxDepth) else { return nil }
            return object
        } catch where error.code == .invalidJSON {
            return nil
        }
    }

    // MARK: - Chains

    /// The chain of `x5c` (base64 DER, leaf first), from the cache or validated now.
    private func verifiedChain(_ x5c: [String], field: String) throws(InputError) -> VerifiedChain {
        var hasher = SHA256()
        for entry in x5c {
            hasher.update(data: Array(entry.utf8))
            hasher.update(data: [0x2C])
        }
        let key = hasher.finalize()
        if let cached = cache.withLock({ $0.byX5C[key] }) { return cached }
        let chain = try validate(x5c, field: field)
        cache.withLock { cache in
            if cache.byX5C.count >= cacheCapacity { cache.byX5C.removeAll(keepingCapacity: true) }
            cache.byX5C[key] = chain
        }
        return chain
    }

    /// Everything about the chain but its validity in time, which is judged per payload.
    private func validate(_ x5c: [String], field: String) throws(InputError) -> VerifiedChain {
        var certificates = [Certificate]()
        for (i, entry) in x5c.enumerated() {
            guard let der = Base64.decode(entry.utf8), let certificate = try? Certificate(derEncoded: der) else {
                throw .untrustedChain("\(field) x5c[\(i)] is not a DER certificate")
            }
            certificates.append(certificate)
        }
        guard certificates.count >= 2 else {
            throw .untrustedChain("\(field) x5c must carry at least the leaf and the intermediate certificate")
        }
        let result = validator.validate(leaf: certificates[0], intermediates: Array(certificates.dropFirst()))
        cache.withLock { $0.validations += 1 }
        switch result {
        case .validCertificate(let chain):
            return VerifiedChain(chain)
        case .couldNotValidate(let failures):
            // A chain that reached a root but broke a policy says which rule; otherwise no root was reached.
            guard let failure = failures.first else {
                throw .untrustedChain("\(field) certificate chain does not lead to a configured trusted root")
            }
            throw .untrustedChain("\(field) \(failure.policyFailureReason)")
        }
    }
}
