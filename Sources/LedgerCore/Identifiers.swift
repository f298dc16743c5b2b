/// Milliseconds since 1970-01-01T00:00:00Z: how Apple states every instant, and how the ledger stores them.
public typealias UnixMillis = Int64

/// An id that is a string on the wire and in JSON (Apple's ids, the app's user ids), with a type of its own so that
/// one kind of id is never passed where another is meant.
public protocol StringIdentifier: RawRepresentable, Hashable, Codable, Sendable, ExpressibleByStringLiteral,
    CustomStringConvertible where RawValue == String
{
    init(rawValue: String)
}

extension StringIdentifier {
    public init(_ rawValue: String) { self.init(rawValue: rawValue) }
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    public init(from decoder: any Decoder) throws { self.init(rawValue: try decoder.singleValueContainer().decode(String.self)) }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }
    public var description: String { rawValue }
}

/// The id of one transaction: a purchase, a renewal, or a restore (V1 restores mint new ids).
public struct TransactionID: StringIdentifier, Comparable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Numeric ids order numerically (Apple's are decimal), anything else by bytes.
    public static func < (a: TransactionID, b: TransactionID) -> Bool { numericLess(a.rawValue, b.rawValue) }
}

/// The id of a subscription (or one-time purchase) for life: the first transaction's id. Every timeline is keyed by it.
public struct OriginalTransactionID: StringIdentifier, Comparable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static func < (a: OriginalTransactionID, b: OriginalTransactionID) -> Bool {
        numericLess(a.rawValue, b.rawValue)
    }
}

/// The app's own user id (from the app's backend, or an `appAccountToken`).
public struct AppUserID: StringIdentifier, Comparable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static func < (a: AppUserID, b: AppUserID) -> Bool { a.rawValue < b.rawValue }
}

/// Decimal strings compare as numbers (shorter first), others by their UTF-8 bytes: a total, stable order.
@inlinable
func numericLess(_ a: String, _ b: String) -> Bool {
    let au = a.utf8, bu = b.utf8
    if au.count != bu.count, au.allSatisfy({ $0 >= 48 && $0 <= 57 }), bu.allSatisfy({ $0 >= 48 && $0 <= 57 }) {
        return au.count < bu.count
    }
    return au.lexicographicallyPrecedes(bu)
}

/// Apple's environments. Each is its own namespace: facts never mix across them.
public enum AppStoreEnvironment: String, Hashable, Codable, Sendable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
    case xcode = "Xcode"
    case localTesting = "LocalTesting"

    /// Accepts Apple's spellings, V1's `PROD` and `Sandbox` included, case-insensitively.
    public init?(appleName: String) {
        switch appleName.lowercased() {
        case "production", "prod": self = .production
        case "sandbox": self = .sandbox
        case "xcode": self = .xcode
        case "localtesting", "local_testing": self = .localTesting
        default: return nil
        }
    }

    /// A stable small number for the binary encoding and index keys.
    public var code: UInt8 {
        switch self {
        case .production: 0
        case .sandbox: 1
        case .xcode: 2
        case .localTesting: 3
        }
    }

    public init?(code: UInt8) {
        guard let e = Self.allCases.first(where: { $0.code == code }) else { return nil }
        self = e
    }
}
