import Crypto
import Foundation
import LedgerErrors

/// The bearer token of every App Store Server API request: a JWT signed ES256 with the operator's in-app purchase
/// key (Apple's "Generating JSON Web Tokens for API requests"). Header `alg` ES256, `kid` the key id, `typ` JWT;
/// claims `iss` the issuer id, `iat`, `exp` (Apple refuses more than 60 minutes after `iat`), `aud`
/// `appstoreconnect-v1`, `bid` the bundle id.
///
/// The key stays in memory only: it is read from its `.p8` file when the client is made and is never logged,
/// printed or written to the ledger; neither is a token (`description` names the key id, nothing else).
public struct APITokenSigner: Sendable, CustomStringConvertible {
    public let keyId: String
    public let issuerId: String
    public let bundleId: String
    /// How long a token is valid; Apple allows at most an hour, the client asks for much less.
    public let lifetime: TimeInterval
    private let key: P256.Signing.PrivateKey

    /// Apple's limit on `exp - iat`.
    public static let maximumLifetime: TimeInterval = 3600
    public static let audience = "appstoreconnect-v1"

    /// - Parameter pem: the `.p8` file's text (PKCS#8 PEM, `-----BEGIN PRIVATE KEY-----`), as App Store Connect
    ///   hands it out. Throws `invalid_configuration` without quoting any of it.
    public init(pem: String, keyId: String, issuerId: String, bundleId: String, lifetime: TimeInterval = 300)
        throws(CodedError)
    {
        guard !keyId.isEmpty, !issuerId.isEmpty, !bundleId.isEmpty else {
            throw CodedError(.invalidConfiguration, "appStoreServerAPI needs keyId, issuerId and bundleId")
        }
        guard lifetime > 0, lifetime <= Self.maximumLifetime else {
            throw CodedError(.invalidConfiguration, "a token may live at most \(Int(Self.maximumLifetime)) seconds")
        }
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: pem.trimmingCharacters(in: .whitespacesAndNewlines))
        } catch {
            throw CodedError(.invalidConfiguration, "the in-app purchase key is not a P-256 private key in PEM (.p8)")
        }
        self.keyId = keyId
        self.issuerId = issuerId
        self.bundleId = bundleId
        self.lifetime = lifetime
    }

    /// Reads the key from `path`; the error names the path, never the contents.
    public init(keyFile path: String, keyId: String, issuerId: String, bundleId: String) throws(CodedError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CodedError(.invalidConfiguration, "cannot read the in-app purchase key file '\(path)'")
        }
        try self.init(pem: String(decoding: data, as: UTF8.self), keyId: keyId, issuerId: issuerId, bundleId: bundleId)
    }

    /// A token issued at `now`.
    public func token(now: Date = Date()) throws(CodedError) -> String {
        let iat = Int64(now.timeIntervalSince1970.rounded(.down))
        let header = #"{"alg":"ES256","kid":"# + Self.quoted(keyId) + #","typ":"JWT"}"#
        let claims = #"{"aud":"appstoreconnect-v1","bid":"# + Self.quoted(bundleId) + #","exp":"# + String(iat + Int64(lifetime))
            + #","iat":"# + String(iat) + #","iss":"# + Self.quoted(issuerId) + "}"
        let input = Self.base64URL(Array(header.utf8)) + "." + Self.base64URL(Array(claims.utf8))
        // `rawRepresentation` is r ‖ s, 32 bytes each: the JWS form of an ES256 signature (RFC 7518 §3.4), not DER.
        guard let signature = try? key.signature(for: Array(input.utf8)) else {
            throw CodedError(.failed, "the in-app purchase key could not sign a token")
        }
        return input + "." + Self.base64URL(Array(signature.rawRepresentation))
    }

    public var description: String { "APITokenSigner(keyId: \(keyId), issuerId: \(issuerId), bundleId: \(bundleId))" }

    /// A JSON string literal of `s` (quotes and backslashes escaped, control characters as \u00XX).
    static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Unpadded base64url (RFC 7515 §2).
    static func base64URL(_ bytes: [UInt8]) -> String {
        var s = Data(bytes).base64EncodedString()
        s = s.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while s.hasSuffix("=") { s.removeLast() }
        return s
    }
}
