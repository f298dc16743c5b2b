import Foundation
import LedgerCore
import LedgerErrors

// MARK: - AppStoreConfiguration

/// The part of the storeledger configuration that decides which Apple inputs are accepted.
///
/// With the defaults every bundle and environment is accepted, no roots are trusted and signatures are not required:
/// signed inputs are then decoded and marked `.unverified`.
public struct AppStoreConfiguration: Sendable {
    /// The app's bundle id; inputs naming another bundle are refused (`wrong_bundle`). Nil accepts any.
    public var bundleId: String?
    /// DER bytes of each trusted root certificate (Apple Root CA G3 in production, a test root in tests).
    public var trustedRootsDER: [[UInt8]]
    /// Refuse signed inputs when they cannot be verified because no roots are configured (`signature_required`).
    public var requireSignatures: Bool
    /// Environments whose facts are accepted; nil accepts every environment.
    public var acceptedEnvironments: Set<AppStoreEnvironment>?
    /// Inputs larger than this are refused with `too_large` (default 16 MiB).
    public var maxInputBytes: Int
    /// JSON nested deeper than this is refused with `too_deep` (default 64).
    public var maxDepth: Int
    /// How many verified certificate chains are remembered (by the SHA-256 of their x5c) to skip re-validation.
    public var chainCacheCapacity: Int
    /// How many verified JWS are remembered (by the SHA-256 of their exact bytes) so that a JWS seen again — Apple
    /// retrying a notification, a client re-sending its transactions — skips its ECDSA verification. Validity at
    /// `signedDate` and everything after the signature is still checked every time. 0 turns it off.
    public var verifiedJWSCacheCapacity: Int

    public static let defaultMaxInputBytes = 16 << 20
    public static let defaultMaxDepth = 64

    public init(
        bundleId: String? = nil, trustedRootsDER: [[UInt8]] = [], requireSignatures: Bool = false,
        acceptedEnvironments: Set<AppStoreEnvironment>? = nil, maxInputBytes: Int = Self.defaultMaxInputBytes,
        maxDepth: Int = Self.defaultMaxDepth, chainCacheCapacity: Int = 64,
        verifiedJWSCacheCapacity: Int = 4096
    ) {
        self.bundleId = bundleId
        self.trustedRootsDER = trustedRootsDER
        self.requireSignatures = requireSignatures
        self.acceptedEnvironments = acceptedEnvironments
        self.maxInputBytes = maxInputBytes
        self.maxDepth = maxDepth
        self.chainCacheCapacity = chainCacheCapacity
        self.verifiedJWSCacheCapacity = verifiedJWSCacheCapacity
    }

    /// Reads the keys this module cares about from a storeledger config file (`bundleId`, `trustedRoots` — paths to
    /// DER files, relative ones resolved against `baseDirectory` — `requireSignatures`, optional `environments`),
    /// ignoring every other key. Throws `invalid_configuration` naming what is wrong.
    public init(configFile json: [UInt8], baseDirectory: String) throws(InputError) {
        guard case .object(let object)? = try? JSONValue.parse(json, depthLimit: Self.defaultMaxDepth) else {
            throw InputError(code: .invalidConfiguration, message: "the configuration file is not a JSON object")
        }
        try self.init(configuration: object, baseDirectory: baseDirectory)
    }

    /// The App Store members of a configuration document already parsed (the whole file's top-level object), so a
    /// caller that reads the file's other members parses it once.
    package init(configuration object: [String: JSON], baseDirectory: String) throws(InputError) {
        func invalid(_ message: String) -> InputError { InputError(code: .invalidConfiguration, message: message) }
        self.init()
        if let v = object["bundleId"], !v.isNull {
            guard case .string(let s) = v else { throw invalid("bundleId must be a string") }
            bundleId = s
        }
        if let v = object["requireSignatures"] {
            guard case .bool(let b) = v else { throw invalid("requireSignatures must be a boolean") }
            requireSignatures = b
        }
        if let v = object["trustedRoots"] {
            guard let paths = Self.strings(v) else { throw invalid("trustedRoots must be an array of file paths") }
            for path in paths {
                let full = path.hasPrefix("/") ? path : baseDirectory + "/" + path
                guard let data = FileManager.default.contents(atPath: full) else {
                    throw invalid("cannot read trusted root '\(full)'")
                }
                trustedRootsDER.append([UInt8](data))
            }
        }
        if let v = object["environments"], !v.isNull {
            guard let names = Self.strings(v) else { throw invalid("environments must be an array of names") }
            var set = Set<AppStoreEnvironment>()
            for name in names {
                guard let e = AppStoreEnvironment(appleName: name) else { throw invalid("unknown environment '\(name)'") }
                set.insert(e)
            }
            acceptedEnvironments = set
        }
    }

    /// The strings of a JSON array of strings; nil for anything else.
    private static func strings(_ value: JSON) -> [String]? {
        guard case .array(let elements) = value else { return nil }
        var strings: [String] = []
        for element in elements {
            guard case .string(let s) = element else { return nil }
            strings.append(s)
        }
        return strings
    }
}
