import Foundation
import LedgerAppStore
import LedgerCore

/// Everything `storeledger` reads from its configuration file (docs/configuration.md); every key is optional.
///
/// ```json
/// {"bundleId": "com.example.app", "bindingPolicy": "transfer", "trustedRoots": ["certs/AppleRootCA-G3.cer"],
///  "requireSignatures": false, "environments": ["Production"],
///  "socket": {"path": "…", "mode": "0660", "writers": {"uids": [1000], "gids": []}},
///  "limits": {"maxBodyBytes": 16777216, "maxBatchInputs": 10000, "maxQueuedInputs": 100000,
///             "headerTimeoutSeconds": 10, "idleTimeoutSeconds": 60, "requestTimeoutSeconds": 30,
///             "maxConnections": 512, "maxConnectionsPerPeer": 64, "reservedForWriters": 128},
///  "products": {"com.example.premium.monthly": {"type": "autoRenewable", "entitlements": ["premium"]}},
///  "revenue": {"currency": "EUR", "rates": {"USD": 0.92}}}
/// ```
///
/// Read by every command (the fold rules, the Apple inputs accepted, the writer queue's bound) and by the server
/// (its socket, writers and limits), so it lives with the API's other contracts rather than in the server.
public struct LedgerConfiguration: Sendable {
    /// Who may write over the socket (peer credentials); empty lists allow everyone who can open the socket.
    public struct Writers: Sendable, Hashable {
        public var uids: Set<UInt32> = []
        public var gids: Set<UInt32> = []
        public init() {}
        public var restricted: Bool { !uids.isEmpty || !gids.isEmpty }
    }

    /// Bounds on what one request may ask.
    public struct Limits: Sendable, Hashable {
        /// Larger request bodies get 413.
        public var maxBodyBytes = 16 << 20
        /// Larger NDJSON batches get 413.
        public var maxBatchInputs = 10_000
        /// Inputs waiting for the writer beyond which requests get 503 with Retry-After.
        public var maxQueuedInputs = 100_000
        /// Seconds a client has to send a request's whole header section: from the connection's start, or from the
        /// first byte of a later request. Then the server answers 408 `request_timeout` and closes the connection.
        public var headerTimeoutSeconds: Double = 10
        /// Seconds a keep-alive connection may sit between requests, or a request body may stall, before the server
        /// closes it.
        public var idleTimeoutSeconds: Double = 60
        /// Open connections at most; one more is answered 503 `overloaded` (Retry-After) and closed. Kept well below
        /// the usual 1024-descriptor limit, so clients that open connections and stall (slowloris) cannot exhaust
        /// the server's file descriptors: each holds a place for at most the header timeout.
        public var maxConnections = 512
        /// Open connections from one peer user (uid, by SO_PEERCRED) at most, so that one client cannot take every
        /// place. Over it, or over `maxConnections`, the new connection takes the place of the peer's (or anyone's)
        /// connection that has waited longest with no request in progress; with none, it is answered 503.
        public var maxConnectionsPerPeer = 64
        /// When writers are restricted (`socket.writers`), places only writers may take (at most half of
        /// `maxConnections`): peers that may not write hold the rest, so readers cannot starve writers.
        public var reservedForWriters = 128
        /// Seconds a client has to send a whole request (head and body) from its first byte; then 408
        /// `request_timeout` and the connection closes, however slowly the bytes keep coming.
        public var requestTimeoutSeconds: Double = 30
        public init() {}
    }

    public var appStore = AppStoreConfiguration()
    /// The rules the file states, the built-in defaults for the part it does not state (see `rules(over:)`).
    public var rules = FoldRules()
    /// Whether the file states `products`, and `bindingPolicy`.
    public var statesProducts = false
    public var statesBindingPolicy = false
    /// True when the file states rules (`products` or `bindingPolicy`): the ledger records them as its first event,
    /// and a writer refuses to start when they differ from the rules its log records. A file that states none
    /// leaves the ledger's rules as they are.
    public var statesRules: Bool { statesProducts || statesBindingPolicy }

    /// The file's rules as a change of `inForce`: the part the file states replaces the one in force, the part it
    /// does not state stays (a file of `{"bindingPolicy": "keep"}` keeps the catalog; `"products": {}` empties it).
    public func rules(over inForce: FoldRules) -> FoldRules {
        var merged = inForce
        if statesProducts { merged.catalog = rules.catalog }
        if statesBindingPolicy { merged.bindingPolicy = rules.bindingPolicy }
        return merged
    }
    public var socketPath: String?
    /// File mode of the socket (default 0660).
    public var socketMode: UInt32 = 0o660
    public var writers = Writers()
    public var limits = Limits()
    /// The outbound webhook of the lifecycle stream (`"webhook"`), if configured.
    public struct Webhook: Sendable, Hashable {
        /// Where to POST: `http://host[:port]/path` or `https://host[:port]/path`.
        public struct Endpoint: Sendable, Hashable {
            /// `http` or `https`.
            public var scheme: String
            public var host: String
            public var port: Int
            /// The path and query, percent-encoded as given.
            public var path: String
            /// The URL the request goes to (an IPv6 host in brackets).
            public var url: String {
                let authority = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
                return "\(scheme)://\(authority):\(port)\(path)"
            }
        }

        public var url: Endpoint
        /// The shared secret of the signature header (HMAC-SHA256).
        public var secret: [UInt8]
        /// Attempts per event before it becomes a dead letter.
        public var maxAttempts = 8
        /// The wait after the first failed attempt, doubled after each (up to `maxBackoffSeconds`).
        public var initialBackoffSeconds = 1.0
        public var maxBackoffSeconds = 300.0
        /// How long an attempt may take, connection included.
        public var timeoutSeconds = 10.0
        /// For an `https://` receiver: certificate files (PEM or DER, relative paths against the configuration's
        /// directory) that are then the only roots trusted, for a receiver whose certificate a private CA signed.
        /// Empty: the system's roots.
        public var trustedCertificates: [String] = []

        /// Parses `http://host[:port][/path]` or `https://host[:port][/path]`; nil for anything else.
        public static func endpoint(_ text: String) -> Endpoint? {
            guard let c = URLComponents(string: text), let scheme = c.scheme?.lowercased(),
                scheme == "http" || scheme == "https", let host = c.host, !host.isEmpty, c.user == nil,
                c.fragment == nil
            else { return nil }
            let port = c.port ?? (scheme == "https" ? 443 : 80)
            guard (1...65_535).contains(port) else { return nil }
            var path = c.percentEncodedPath.isEmpty ? "/" : c.percentEncodedPath
            if let q = c.percentEncodedQuery { path += "?" + q }
            return Endpoint(scheme: scheme, host: host, port: port, path: path)
        }
    }

    public var webhook: Webhook?
    /// The operator's exchange rates for the revenue answers (`"revenue": {"currency": "EUR", "rates": {"USD":
    /// 0.92}}`): each rate is how many units of `currency` one unit of the named currency is worth, at most six
    /// decimals. Nil: amounts stay in their own currencies (the ledger never guesses a rate).
    public var revenueRates: ExchangeRates?
    /// The file this came from, if any.
    public var source: String?

    public init() {}

    /// Why a configuration file cannot be used.
    public struct Invalid: Error, CustomStringConvertible, Sendable {
        public let message: String
        public var description: String { message }
    }

    /// Reads a configuration file; relative paths inside it (trusted roots) are resolved against its directory.
    public init(contentsOf path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Invalid(message: "cannot read configuration file \(path)")
        }
        try self.init(json: [UInt8](data), baseDirectory: Self.directory(of: path))
        source = path
    }

    /// The directory the relative paths of the configuration file at `path` are resolved against: the file's own,
    /// `.` for a file named without one (`--config config.json`), never the root.
    public static func directory(of path: String) -> String {
        let directory = (path as NSString).deletingLastPathComponent
        return directory.isEmpty ? "." : directory
    }

    /// Parses a configuration document.
    public init(json: [UInt8], baseDirectory: String) throws {
        guard case .object(let object)? = try? JSONValue.parse(json, depthLimit: AppStoreConfiguration.defaultMaxDepth)
        else {
            throw Invalid(message: "the configuration is not a JSON object")
        }
        self.init()
        try ConfigurationKeys.check(object)
        do {
            appStore = try AppStoreConfiguration(configuration: object, baseDirectory: baseDirectory)
        } catch {
            throw Invalid(message: error.message)
        }
        do {
            rules = try JSONDecoder().decode(FoldRules.self, from: Data(json))
        } catch {
            throw Invalid(message: "products/bindingPolicy: \(error)")
        }
        statesProducts = object["products"] != nil
        statesBindingPolicy = object["bindingPolicy"] != nil
        if let product = rules.catalog.nonRenewingProductsWithoutDuration.first {
            throw Invalid(
                message: "products.\(product): a non-renewing product needs a \"duration\" (ISO-8601, such as P1M or P1Y): Apple states no expiry for it, so without one it would never expire")
        }
        if let socket = object["socket"] {
            guard case .object(let socket) = socket else { throw Invalid(message: "socket must be an object") }
            if let p = socket["path"] {
                guard case .string(let p) = p, !p.isEmpty else { throw Invalid(message: "socket.path must be a path") }
                socketPath = p.hasPrefix("/") ? p : baseDirectory + "/" + p
            }
            if let m = socket["mode"] {
                guard case .string(let m) = m, let mode = UInt32(m, radix: 8), mode <= 0o777 else {
                    throw Invalid(message: "socket.mode must be an octal string such as \"0660\"")
                }
                socketMode = mode
            }
            if let w = socket["writers"] {
                guard case .object(let w) = w else { throw Invalid(message: "socket.writers must be an object") }
                for (key, target) in [("uids", \Writers.uids), ("gids", \Writers.gids)] {
                    guard let list = w[key] else { continue }
                    guard case .array(let values) = list,
                        case let ids = values.compactMap(JSONValue.int64), ids.count == values.count,
                        ids.allSatisfy({ $0 >= 0 && $0 <= Int64(UInt32.max) })
                    else {
                        throw Invalid(message: "socket.writers.\(key) must be an array of ids")
                    }
                    writers[keyPath: target] = Set(ids.map { UInt32($0) })
                }
            }
        }
        if let l = object["limits"] {
            guard case .object(let l) = l else { throw Invalid(message: "limits must be an object") }
            for (key, target) in [
                ("maxBodyBytes", \Limits.maxBodyBytes), ("maxBatchInputs", \Limits.maxBatchInputs),
                ("maxQueuedInputs", \Limits.maxQueuedInputs), ("maxConnections", \Limits.maxConnections),
                ("maxConnectionsPerPeer", \Limits.maxConnectionsPerPeer),
                ("reservedForWriters", \Limits.reservedForWriters),
            ] {
                guard let v = l[key] else { continue }
                guard let n = JSONValue.int64(v), n > 0, let int = Int(exactly: n) else {
                    throw Invalid(message: "limits.\(key) must be a positive integer")
                }
                limits[keyPath: target] = int
            }
            for (key, target) in [
                ("headerTimeoutSeconds", \Limits.headerTimeoutSeconds), ("idleTimeoutSeconds", \Limits.idleTimeoutSeconds),
                ("requestTimeoutSeconds", \Limits.requestTimeoutSeconds),
            ] {
                guard let v = l[key] else { continue }
                guard let n = Self.number(v), n > 0, n <= 86_400 else {
                    throw Invalid(message: "limits.\(key) must be a number of seconds, more than 0 and at most 86400")
                }
                limits[keyPath: target] = n
            }
            appStore.maxInputBytes = limits.maxBodyBytes
        }
        if let w = object["webhook"] {
            guard case .object(let w) = w else { throw Invalid(message: "webhook must be an object") }
            guard case .string(let u)? = w["url"], let url = Webhook.endpoint(u) else {
                throw Invalid(message: "webhook.url must be an http:// or https:// URL with a host")
            }
            guard case .string(let secret)? = w["secret"], !secret.isEmpty else {
                throw Invalid(message: "webhook.secret must be a non-empty string (the HMAC key of the signature)")
            }
            var webhook = Webhook(url: url, secret: Array(secret.utf8))
            if let v = w["maxAttempts"] {
                guard let n = JSONValue.int64(v), n >= 1, n <= 1_000 else {
                    throw Invalid(message: "webhook.maxAttempts must be an integer from 1 to 1000")
                }
                webhook.maxAttempts = Int(n)
            }
            for (key, target) in [
                ("initialBackoffSeconds", \Webhook.initialBackoffSeconds), ("maxBackoffSeconds", \Webhook.maxBackoffSeconds),
                ("timeoutSeconds", \Webhook.timeoutSeconds),
            ] {
                guard let v = w[key] else { continue }
                guard let n = Self.number(v), n > 0, n <= 86_400 else {
                    throw Invalid(message: "webhook.\(key) must be a number of seconds, more than 0 and at most 86400")
                }
                webhook[keyPath: target] = n
            }
            if let v = w["trustedCertificates"] {
                guard case .array(let items) = v, !items.isEmpty else {
                    throw Invalid(message: "webhook.trustedCertificates must be a non-empty array of file paths")
                }
                for item in items {
                    guard case .string(let p) = item, !p.isEmpty else {
                        throw Invalid(message: "webhook.trustedCertificates must be a non-empty array of file paths")
                    }
                    webhook.trustedCertificates.append(p.hasPrefix("/") ? p : baseDirectory + "/" + p)
                }
                // Trust roots check a TLS handshake, which an http:// receiver never makes.
                guard url.scheme == "https" else {
                    throw Invalid(message: "webhook.trustedCertificates is for an https:// url")
                }
            }
            self.webhook = webhook
        }
        if let r = object["revenue"] { revenueRates = try Self.exchangeRates(r) }
    }

    /// Parses `"revenue": {"currency": "EUR", "rates": {"USD": 0.92, …}}`.
    private static func exchangeRates(_ value: JSON) throws -> ExchangeRates {
        guard case .object(let r) = value else { throw Invalid(message: "revenue must be an object") }
        guard case .string(let currency)? = r["currency"], Self.isCurrencyCode(currency) else {
            throw Invalid(message: "revenue.currency must be a three-letter currency code such as \"EUR\"")
        }
        guard case .object(let rates)? = r["rates"] else {
            throw Invalid(message: "revenue.rates must be an object of currency code → rate")
        }
        var micros: [String: Int64] = [:]
        for (code, v) in rates {
            guard Self.isCurrencyCode(code) else {
                throw Invalid(message: "revenue.rates: '\(code)' is not a three-letter currency code")
            }
            guard let rate = Self.number(v), rate > 0, rate < 1_000_000, case let scaled = (rate * 1_000_000).rounded(),
                abs(scaled - rate * 1_000_000) < 1e-3 * max(1, rate)
            else {
                throw Invalid(
                    message: "revenue.rates.\(code) must be a positive number below 1000000 with at most six decimals")
            }
            micros[code] = Int64(scaled)
        }
        return ExchangeRates(currency: currency, micros: micros)
    }

    /// Three uppercase ASCII letters (ISO 4217, as Apple states `currency`).
    private static func isCurrencyCode(_ s: String) -> Bool {
        s.utf8.count == 3 && s.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
    }

    /// A JSON number as a `Double`; nil for anything else (booleans are not numbers).
    private static func number(_ value: JSON) -> Double? {
        switch value {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }
}
