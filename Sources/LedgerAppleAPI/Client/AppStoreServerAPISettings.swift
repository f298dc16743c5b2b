import Foundation
import LedgerAppStore
import LedgerCore
import LedgerErrors

/// The `appStoreServerAPI` section of the configuration file: how to reach Apple's App Store Server API.
///
/// ```json
/// "appStoreServerAPI": {"keyFile": "/etc/storeledger/SubscriptionKey_2X9R4HXF34.p8", "keyId": "2X9R4HXF34",
///                       "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "environment": "Production",
///                       "reconcileEverySeconds": 3600, "reconcileWindowHours": 48,
///                       "reconcileModes": ["missed", "active"], "reconcileOnlyFailures": true}
/// ```
///
/// Only the key file's path is configured: the key itself is read when a client is made and held in memory, never
/// copied into the configuration, the ledger or a log. `bundleId` defaults to the configuration's own.
public struct AppStoreServerAPISettings: Sendable, Hashable {
    /// The in-app purchase key's `.p8` file (App Store Connect → Users and Access → Integrations → In-App Purchase).
    public var keyFile: String
    /// The key's id (the `kid` of every token).
    public var keyId: String
    /// The team's issuer id (the `iss` of every token).
    public var issuerId: String
    /// The app's bundle id (the `bid` of every token).
    public var bundleId: String
    /// Which of Apple's servers to ask; the subscriptions reconciled are this environment's.
    public var environment: AppStoreEnvironment
    /// Overrides the environment's base URL (a test server, a forward proxy); `https://` only.
    public var baseURL: String?
    /// Certificates (PEM or DER files) trusted for the HTTPS connection instead of the system's roots: a test
    /// server's, or a TLS-inspecting proxy's. Empty: the system's trust store.
    public var trustedCertificates: [String]
    /// How many times a request answered 429 (or 5xx, or a connection failure) is tried again before it fails.
    public var maxRetries: Int
    /// The longest wait before trying again; a `Retry-After` asking more fails the request (`apple_rate_limited`)
    /// rather than stall a reconciliation for hours.
    public var maxRetryWaitSeconds: Double
    /// A request's deadline.
    public var timeoutSeconds: Double
    /// `serve` reconciles over the last `reconcileWindowHours` this often; nil (the default) runs no periodic job.
    public var reconcileEverySeconds: Double?
    public var reconcileWindowHours: Double
    /// What each periodic run does, in order: `missed` (the whole app's notification history over the window) and
    /// `active` (every subscription active in the window, customer by customer). Both by default.
    public var reconcileModes: [Reconciler.PeriodicMode]
    /// The periodic `missed` pass asks only for the notifications Apple did not deliver (`onlyFailures`): a page per
    /// 20 failures rather than per 20 notifications of the app.
    public var reconcileOnlyFailures: Bool

    /// The hosts Apple recommends, the ones its server libraries (Python, Swift) use; another host is `baseURL`.
    public static let productionURL = "https://api.storekit.apple.com"
    public static let sandboxURL = "https://api.storekit-sandbox.apple.com"

    public init(
        keyFile: String, keyId: String, issuerId: String, bundleId: String, environment: AppStoreEnvironment = .production,
        baseURL: String? = nil, trustedCertificates: [String] = [], maxRetries: Int = 5, maxRetryWaitSeconds: Double = 60,
        timeoutSeconds: Double = 30, reconcileEverySeconds: Double? = nil, reconcileWindowHours: Double = 48,
        reconcileModes: [Reconciler.PeriodicMode] = Reconciler.PeriodicMode.allCases, reconcileOnlyFailures: Bool = true
    ) {
        self.keyFile = keyFile
        self.keyId = keyId
        self.issuerId = issuerId
        self.bundleId = bundleId
        self.environment = environment
        self.baseURL = baseURL
        self.trustedCertificates = trustedCertificates
        self.maxRetries = maxRetries
        self.maxRetryWaitSeconds = maxRetryWaitSeconds
        self.timeoutSeconds = timeoutSeconds
        self.reconcileEverySeconds = reconcileEverySeconds
        self.reconcileWindowHours = reconcileWindowHours
        self.reconcileModes = reconcileModes
        self.reconcileOnlyFailures = reconcileOnlyFailures
    }

    /// The base URL requests go to: `baseURL`, else Apple's server for `environment`.
    public var resolvedBaseURL: String {
        if let baseURL { return baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL }
        return environment == .sandbox ? Self.sandboxURL : Self.productionURL
    }

    /// The section of a configuration file, relative paths resolved against `baseDirectory`; nil when the file has
    /// none. Throws `invalid_configuration` naming what is wrong (never a key's contents: the file holds only its
    /// path).
    public static func read(configFile json: [UInt8], baseDirectory: String) throws(CodedError) -> AppStoreServerAPISettings? {
        func invalid(_ message: String) -> CodedError { CodedError(.invalidConfiguration, "appStoreServerAPI: \(message)") }
        guard case .object(let root)? = try? JSONValue.parse(json, depthLimit: AppStoreConfiguration.defaultMaxDepth) else {
            throw CodedError(.invalidConfiguration, "the configuration is not a JSON object")
        }
        guard let section = root["appStoreServerAPI"], !section.isNull else { return nil }
        guard case .object(let o) = section else { throw invalid("must be an object") }
        func string(_ key: String) throws(CodedError) -> String? {
            guard let v = o[key], !v.isNull else { return nil }
            guard case .string(let s) = v, !s.isEmpty else { throw invalid("\(key) must be a non-empty string") }
            return s
        }
        func number(_ key: String, _ range: ClosedRange<Double>) throws(CodedError) -> Double? {
            guard let v = o[key], !v.isNull else { return nil }
            let n: Double
            switch v {
            case .int(let i): n = Double(i)
            case .double(let d): n = d
            default: throw invalid("\(key) must be a number")
            }
            guard range.contains(n) else {
                throw invalid("\(key) must be within \(Int(range.lowerBound))…\(Int(range.upperBound))")
            }
            return n
        }
        func path(_ p: String) -> String { p.hasPrefix("/") ? p : baseDirectory + "/" + p }
        guard let keyFile = try string("keyFile") else { throw invalid("keyFile (the .p8 file's path) is required") }
        guard let keyId = try string("keyId") else { throw invalid("keyId is required") }
        guard let issuerId = try string("issuerId") else { throw invalid("issuerId is required") }
        var bundleId = try string("bundleId")
        if bundleId == nil, case .string(let b)? = root["bundleId"], !b.isEmpty { bundleId = b }
        guard let bundleId else { throw invalid("bundleId is required (here or at the top of the configuration)") }
        var settings = AppStoreServerAPISettings(keyFile: path(keyFile), keyId: keyId, issuerId: issuerId, bundleId: bundleId)
        if let name = try string("environment") {
            guard let e = AppStoreEnvironment(appleName: name), e == .production || e == .sandbox else {
                throw invalid("environment must be Production or Sandbox")
            }
            settings.environment = e
        }
        if let url = try string("baseURL") {
            guard url.lowercased().hasPrefix("https://") else { throw invalid("baseURL must be an https:// URL") }
            settings.baseURL = url
        }
        if let v = o["trustedCertificates"], !v.isNull {
            guard case .array(let items) = v else { throw invalid("trustedCertificates must be an array of file paths") }
            for item in items {
                guard case .string(let p) = item, !p.isEmpty else {
                    throw invalid("trustedCertificates must be an array of file paths")
                }
                settings.trustedCertificates.append(path(p))
            }
        }
        if let n = try number("maxRetries", 0...20) {
            guard n.rounded() == n else { throw invalid("maxRetries must be an integer") }
            settings.maxRetries = Int(n)
        }
        if let n = try number("maxRetryWaitSeconds", 0...3600) { settings.maxRetryWaitSeconds = n }
        if let n = try number("timeoutSeconds", 1...600) { settings.timeoutSeconds = n }
        if let n = try number("reconcileEverySeconds", 60...604_800) { settings.reconcileEverySeconds = n }
        if let n = try number("reconcileWindowHours", 1...4320) { settings.reconcileWindowHours = n }
        if let v = o["reconcileModes"], !v.isNull {
            let choices = Reconciler.PeriodicMode.allCases.map(\.rawValue).joined(separator: ", ")
            guard case .array(let items) = v, !items.isEmpty else {
                throw invalid("reconcileModes must be a non-empty array of \(choices)")
            }
            var modes: [Reconciler.PeriodicMode] = []
            for item in items {
                guard case .string(let name) = item, let mode = Reconciler.PeriodicMode(rawValue: name) else {
                    throw invalid("reconcileModes must be a non-empty array of \(choices)")
                }
                if !modes.contains(mode) { modes.append(mode) }
            }
            settings.reconcileModes = modes
        }
        if let v = o["reconcileOnlyFailures"], !v.isNull {
            guard case .bool(let b) = v else { throw invalid("reconcileOnlyFailures must be true or false") }
            settings.reconcileOnlyFailures = b
        }
        return settings
    }
}
