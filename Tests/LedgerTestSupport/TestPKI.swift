import Crypto
import Foundation
import SwiftASN1
import X509

// MARK: - TestPKI

/// A throwaway App Store-like PKI minted at test time: a root CA, an intermediate carrying Apple's intermediate OID
/// (1.2.840.113635.100.6.2.1) and a leaf carrying Apple's receipt-signing OID (1.2.840.113635.100.6.11.1), all
/// P-256. It signs any JSON payload as a compact ES256 JWS with `x5c` = [leaf, intermediate, root], and forges the
/// broken variants the verifier must refuse.
public struct TestPKI: Sendable {
    public static let appleLeafOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 11, 1]
    public static let appleIntermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 2, 1]

    /// Valid 2000-01-01 … 2100-01-01: shared by tests that do not care about validity (minting keys is not free).
    public static let shared: TestPKI = try! TestPKI(name: "StoreLedger Test")

    public let rootKey: P256.Signing.PrivateKey
    public let intermediateKey: P256.Signing.PrivateKey
    public let leafKey: P256.Signing.PrivateKey
    public let root: Certificate
    public let intermediate: Certificate
    public let leaf: Certificate

    /// DER bytes of the root: what `AppStoreConfiguration.trustedRootsDER` should hold.
    public var rootDER: [UInt8] { Self.der(root) }
    /// Standard base64 DER of leaf, intermediate, root: the JWS header's `x5c`.
    public var x5c: [String] { [leaf, intermediate, root].map { Data(Self.der($0)).base64EncodedString() } }

    /// - Parameters:
    ///   - validity: the root's and intermediate's validity.
    ///   - leafValidity: the leaf's (defaults to `validity`), to mint expired or not-yet-valid leaves.
    ///   - leafOID / intermediateOID: leave Apple's marker out to test that it is required.
    public init(
        name: String,
        validity: ClosedRange<Date> = Date(timeIntervalSince1970: 946_684_800)...Date(timeIntervalSince1970: 4_102_444_800),
        leafValidity: ClosedRange<Date>? = nil, leafOID: Bool = true, intermediateOID: Bool = true
    ) throws {
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        let leafKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName {
            CommonName("\(name) Root CA")
            OrganizationName("StoreLedger Tests")
        }
        let intermediateName = try DistinguishedName {
            CommonName("\(name) Worldwide Developer Relations")
            OrganizationName("StoreLedger Tests")
        }
        let leafName = try DistinguishedName {
            CommonName("\(name) App Store Signing")
            OrganizationName("StoreLedger Tests")
        }
        let marker: ArraySlice<UInt8> = [0x05, 0x00]  // ASN.1 NULL, as Apple's certificates carry
        root = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(rootKey.publicKey),
            notValidBefore: validity.lowerBound, notValidAfter: validity.upperBound, issuer: rootName, subject: rootName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(rootKey))
        var intermediateExtensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
        }
        if intermediateOID {
            try intermediateExtensions.append(
                Certificate.Extension(oid: Self.appleIntermediateOID, critical: false, value: marker))
        }
        intermediate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(intermediateKey.publicKey),
            notValidBefore: validity.lowerBound, notValidAfter: validity.upperBound, issuer: rootName,
            subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA256, extensions: intermediateExtensions,
            issuerPrivateKey: .init(rootKey))
        var leafExtensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
        }
        if leafOID {
            try leafExtensions.append(Certificate.Extension(oid: Self.appleLeafOID, critical: false, value: marker))
        }
        let leafWindow = leafValidity ?? validity
        leaf = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(leafKey.publicKey),
            notValidBefore: leafWindow.lowerBound, notValidAfter: leafWindow.upperBound, issuer: intermediateName,
            subject: leafName, signatureAlgorithm: .ecdsaWithSHA256, extensions: leafExtensions,
            issuerPrivateKey: .init(intermediateKey))
        self.rootKey = rootKey
        self.intermediateKey = intermediateKey
        self.leafKey = leafKey
    }

    static func der(_ certificate: Certificate) -> [UInt8] {
        var serializer = DER.Serializer()
        try! serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    // MARK: - Signing

    /// Ways to break a JWS.
    public enum Forgery: String, Sendable, CaseIterable {
        /// The signature bytes are altered.
        case badSignature
        /// The payload is replaced after signing (one field changed).
        case tamperedPayload
        /// `alg: none` and an empty signature.
        case algNone
        /// `alg: HS256`, MACed with a guessable key.
        case algHS256
        /// No `x5c` in the header.
        case missingX5C
    }

    /// A compact ES256 JWS of `payload` (JSON bytes) with `x5c` = [leaf, intermediate, root].
    public func sign(_ payload: [UInt8]) -> String {
        sign(payload, header: ["alg": "ES256", "x5c": x5c])
    }

    /// Signs a JSON object (keys sorted).
    public func sign(json object: [String: Any]) -> String { sign(AppleFixtures.json(object)) }

    /// A broken JWS of `payload`, refused by a verifier that trusts this PKI's root.
    public func forge(_ payload: [UInt8], _ forgery: Forgery) -> String {
        switch forgery {
        case .badSignature:
            let jws = sign(payload)
            let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
            var signature = [UInt8](Data(base64URL: String(parts[2]))!)
            signature[7] ^= 0x01
            return parts[0] + "." + parts[1] + "." + Self.base64URL(signature)
        case .tamperedPayload:
            let jws = sign(payload)
            let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
            var object = try! JSONSerialization.jsonObject(with: Data(payload)) as! [String: Any]
            object["tampered"] = true
            if let price = object["price"] as? Int { object["price"] = price / 10 }
            return parts[0] + "." + Self.base64URL(AppleFixtures.json(object)) + "." + parts[2]
        case .algNone:
            return Self.base64URL(AppleFixtures.json(["alg": "none", "x5c": x5c])) + "." + Self.base64URL(payload) + "."
        case .algHS256:
            let header = Self.base64URL(AppleFixtures.json(["alg": "HS256", "x5c": x5c]))
            let input = header + "." + Self.base64URL(payload)
            let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: Data("secret".utf8)))
            return input + "." + Self.base64URL(Array(mac))
        case .missingX5C:
            return sign(payload, header: ["alg": "ES256"])
        }
    }

    /// Signs with an arbitrary header (for odd cases: a short chain, extra header fields).
    public func sign(_ payload: [UInt8], header: [String: Any]) -> String {
        let input = Self.base64URL(AppleFixtures.json(header)) + "." + Self.base64URL(payload)
        let signature = try! leafKey.signature(for: Data(input.utf8))
        return input + "." + Self.base64URL(Array(signature.rawRepresentation))
    }

    public static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

extension Data {
    /// Decodes unpadded base64url.
    init?(base64URL text: String) {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        self.init(base64Encoded: s)
    }
}
