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
    @usableFromInline package var id: CompactID
    public var rawValue: String { id.text }
    public init(rawValue: String) { id = CompactID(rawValue) }
    /// Inlinable: LedgerCodec's decoder makes one per stored id.
    @inlinable package init(_ id: CompactID) { self.id = id }
    public static func == (a: TransactionID, b: TransactionID) -> Bool { a.id == b.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
    /// Numeric ids order numerically (Apple's are decimal), anything else by bytes.
    public static func < (a: TransactionID, b: TransactionID) -> Bool { CompactID.numericLess(a.id, b.id) }

    /// The number of UTF-8 bytes of the id's text, without making the text.
    public var utf8Count: Int { id.utf8Count }
}

/// The id of a subscription (or one-time purchase) for life: the first transaction's id. Every timeline is keyed by it.
public struct OriginalTransactionID: StringIdentifier, Comparable {
    @usableFromInline package var id: CompactID
    public var rawValue: String { id.text }
    public init(rawValue: String) { id = CompactID(rawValue) }
    /// Inlinable: LedgerCodec's decoder makes one per stored id.
    @inlinable package init(_ id: CompactID) { self.id = id }
    public static func == (a: OriginalTransactionID, b: OriginalTransactionID) -> Bool { a.id == b.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
    public static func < (a: OriginalTransactionID, b: OriginalTransactionID) -> Bool {
        CompactID.numericLess(a.id, b.id)
    }

    /// The number of UTF-8 bytes of the id's text, without making the text.
    public var utf8Count: Int { id.utf8Count }
}

/// The text of an Apple id, kept as its value when it is a decimal number in canonical form (no leading zero, at
/// most 19 digits). Apple's ids are 15 to 19 digits, past the 15 bytes a String keeps inline: as numbers they are
/// copied, hashed and compared without allocating, and turned back into the same text on demand. (Their bytes, read
/// and written without making the text, are LedgerCodec's.)
@usableFromInline
package struct CompactID: Hashable, Codable, Sendable {
    @usableFromInline
    package enum Storage: Hashable, Sendable {
        /// The text is the canonical decimal form of the value.
        case decimal(UInt64)
        /// Any other text.
        case text(String)
    }

    @usableFromInline package var storage: Storage

    /// Inlinable: LedgerCodec's decoder makes one per stored id.
    @inlinable
    package init(_ storage: Storage) { self.storage = storage }

    /// The empty text: the id of a fold position that has none, and what a decoder starts from.
    @inlinable
    package static var empty: CompactID { CompactID(.text("")) }

    package init(_ text: String) {
        if let value = Self.decimalValue(of: text) { storage = .decimal(value) } else { storage = .text(text) }
    }

    /// Coded as its text.
    @usableFromInline
    package init(from decoder: any Decoder) throws { self.init(try decoder.singleValueContainer().decode(String.self)) }

    @usableFromInline
    package func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(text)
    }

    /// The value of a canonical decimal text (digits only, no leading zero, at most 19 of them), or nil.
    static func decimalValue(of text: String) -> UInt64? {
        let digits = text.utf8
        guard let first = digits.first, digits.count <= 19, first != 48 || digits.count == 1 else { return nil }
        var value: UInt64 = 0
        for byte in digits {
            let digit = byte &- 48
            guard digit < 10 else { return nil }
            value = value &* 10 &+ UInt64(digit)
        }
        return value
    }

    package var text: String {
        switch storage {
        case .decimal(let v): String(v)
        case .text(let s): s
        }
    }

    /// True when the text is a non-empty run of ASCII digits.
    var isDecimal: Bool {
        switch storage {
        case .decimal: true
        case .text(let s): LedgerCore.isDecimal(s)
        }
    }

    /// The number of UTF-8 bytes of the text.
    package var utf8Count: Int {
        switch storage {
        case .decimal(let v): Self.digitCount(v)
        case .text(let s): s.utf8.count
        }
    }

    /// The number of decimal digits of `v` (1 for 0): a few comparisons, no division. Inlinable: LedgerCodec writes a
    /// decimal id's digits in place, this many.
    @inlinable
    package static func digitCount(_ v: UInt64) -> Int {
        var n = 1
        var bound: UInt64 = 10
        // Apple's ids are 15 to 19 digits: start the search there.
        if v >= 100_000_000_000_000 {
            n = 15
            bound = 1_000_000_000_000_000
        }
        while n < 20 && v >= bound {
            n += 1
            bound = n < 20 ? bound &* 10 : .max
        }
        return n
    }

    /// `numericLess` of the texts: decimal texts as numbers (shorter first), others by their UTF-8 bytes.
    static func numericLess(_ a: CompactID, _ b: CompactID) -> Bool {
        if case .decimal(let x) = a.storage, case .decimal(let y) = b.storage { return x < y }
        return LedgerCore.numericLess(a.text, b.text)
    }

    /// The order of the texts' UTF-8 bytes.
    static func utf8Less(_ a: CompactID, _ b: CompactID) -> Bool {
        if case .decimal(let x) = a.storage, case .decimal(let y) = b.storage {
            let n = digitCount(x), m = digitCount(y)
            if n == m { return x < y }  // Same number of digits: byte order is numeric order.
            // The first digits both have, compared as numbers (no leading zeros: as texts); the shorter text first
            // when they agree.
            let k = min(n, m)
            let (px, py) = (x / power(ofTen: n - k), y / power(ofTen: m - k))
            return px != py ? px < py : n < m
        }
        return a.text.utf8.lexicographicallyPrecedes(b.text.utf8)
    }

    private static func power(ofTen e: Int) -> UInt64 {
        var p: UInt64 = 1
        for _ in 0..<e { p &*= 10 }
        return p
    }
}

/// The app's own user id (from the app's backend, or an `appAccountToken`).
public struct AppUserID: StringIdentifier, Comparable {
    public let rawValue: String
    /// Inlinable: LedgerCodec's decoder makes one per stored claim, owner and event metadata that names a user.
    @inlinable public init(rawValue: String) { self.rawValue = rawValue }
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

/// Apple's environments. Each is its own namespace: facts never mix across them. The four Apple names today are
/// known; a name Apple adds later is kept as its own namespace too (docs/domain.md, "Environments"), not refused.
public struct AppStoreEnvironment: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The canonical name: `Production`, `Sandbox`, `Xcode`, `LocalTesting`, or the name Apple sent.
    public let rawValue: String

    private init(canonical: String) { rawValue = canonical }

    public static let production = AppStoreEnvironment(canonical: "Production")
    public static let sandbox = AppStoreEnvironment(canonical: "Sandbox")
    public static let xcode = AppStoreEnvironment(canonical: "Xcode")
    public static let localTesting = AppStoreEnvironment(canonical: "LocalTesting")

    /// The environments Apple names today, in code order.
    public static let known: [AppStoreEnvironment] = [.production, .sandbox, .xcode, .localTesting]

    /// The longest name kept for an environment this build does not know.
    public static let maxNameLength = 64

    /// Accepts Apple's spellings, V1's `PROD` and `Sandbox` included, case-insensitively; any other name of 1 to 64
    /// letters, digits, `_`, `-` or `.` is an environment of its own, kept as sent. Nil for anything else.
    public init?(appleName: String) {
        switch appleName.lowercased() {
        case "production", "prod": self = .production
        case "sandbox": self = .sandbox
        case "xcode": self = .xcode
        case "localtesting", "local_testing": self = .localTesting
        default:
            let u = appleName.utf8
            guard !u.isEmpty, u.count <= Self.maxNameLength,
                u.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 | 0x20 >= 97 && $0 | 0x20 <= 122) || $0 == 95 || $0 == 45 || $0 == 46 })
            else { return nil }
            self.init(canonical: appleName)
        }
    }

    /// True for the four environments Apple names today.
    public var isKnown: Bool { Self.known.contains(self) }

    /// A stable small number for the binary encoding and index keys: 0 to 3 for the known environments,
    /// `otherCode` for any other (whose name is then stored beside it). Inlinable, as `init(code:)`: LedgerCodec
    /// writes and reads one per stored fact.
    @inlinable
    public var code: UInt8 { Self.known.firstIndex(of: self).map(UInt8.init) ?? Self.otherCode }

    /// The code of every environment this build does not know.
    public static let otherCode: UInt8 = 255

    /// The known environment of `code`; nil for `otherCode` (the name says which) and unused codes.
    @inlinable
    public init?(code: UInt8) {
        guard Int(code) < Self.known.count else { return nil }
        self = Self.known[Int(code)]
    }

    /// An environment this build does not know, by the name stored beside `otherCode`.
    public init?(storedName: String) {
        guard let e = AppStoreEnvironment(appleName: storedName), !e.isKnown else { return nil }
        self = e
    }

    /// Known environments in code order, then the others by name: a total order for keys and folds.
    public static func precedes(_ a: AppStoreEnvironment, _ b: AppStoreEnvironment) -> Bool {
        let (x, y) = (a.code, b.code)
        return x != y ? x < y : a.rawValue < b.rawValue
    }

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let name = try c.decode(String.self)
        guard let e = AppStoreEnvironment(appleName: name) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "not an environment name: \(name)")
        }
        self = e
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }
}

/// True for a non-empty string of ASCII digits.
func isDecimal(_ s: String) -> Bool {
    !s.isEmpty && s.utf8.allSatisfy { $0 &- 48 < 10 }
}
