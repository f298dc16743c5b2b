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
    var id: CompactID
    public var rawValue: String { id.text }
    public init(rawValue: String) { id = CompactID(rawValue) }
    init(_ id: CompactID) { self.id = id }
    public static func == (a: TransactionID, b: TransactionID) -> Bool { a.id == b.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
    /// Numeric ids order numerically (Apple's are decimal), anything else by bytes.
    public static func < (a: TransactionID, b: TransactionID) -> Bool { CompactID.numericLess(a.id, b.id) }

    /// The number of UTF-8 bytes of the id's text, without making the text.
    public var utf8Count: Int { id.utf8Count }
}

/// The id of a subscription (or one-time purchase) for life: the first transaction's id. Every timeline is keyed by it.
public struct OriginalTransactionID: StringIdentifier, Comparable {
    var id: CompactID
    public var rawValue: String { id.text }
    public init(rawValue: String) { id = CompactID(rawValue) }
    init(_ id: CompactID) { self.id = id }
    public static func == (a: OriginalTransactionID, b: OriginalTransactionID) -> Bool { a.id == b.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
    public static func < (a: OriginalTransactionID, b: OriginalTransactionID) -> Bool {
        CompactID.numericLess(a.id, b.id)
    }

    /// The number of UTF-8 bytes of the id's text, without making the text.
    public var utf8Count: Int { id.utf8Count }

    /// The id's UTF-8 bytes, without making a string of a decimal id.
    public func withUTF8<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R { try id.withUTF8(body) }

    /// The id whose UTF-8 bytes these are.
    public init(utf8 bytes: UnsafeBufferPointer<UInt8>) { id = CompactID(utf8: bytes) }
}

/// The text of an Apple id, kept as its value when it is a decimal number in canonical form (no leading zero, at
/// most 19 digits). Apple's ids are 15 to 19 digits, past the 15 bytes a String keeps inline: as numbers they are
/// copied, hashed, compared and decoded without allocating, and turned back into the same text on demand.
struct CompactID: Hashable, Codable, Sendable {
    enum Storage: Hashable, Sendable {
        /// The text is the canonical decimal form of the value.
        case decimal(UInt64)
        /// Any other text.
        case text(String)
    }

    var storage: Storage

    init(_ text: String) {
        var copy = text
        if let value = copy.withUTF8({ Self.decimalValue($0) }) { storage = .decimal(value) } else { storage = .text(text) }
    }

    /// Coded as its text.
    init(from decoder: any Decoder) throws { self.init(try decoder.singleValueContainer().decode(String.self)) }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(text)
    }

    init(utf8 bytes: UnsafeBufferPointer<UInt8>) {
        if let value = Self.decimalValue(bytes) {
            storage = .decimal(value)
        } else {
            storage = .text(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// The value of a canonical decimal text, or nil.
    @inline(__always)
    static func decimalValue(_ b: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard b.count > 0, b.count <= 19, b[0] != 48 || b.count == 1, let base = b.baseAddress else { return nil }
        var value: UInt64 = 0
        var i = 0
        // Eight digits at a time (Apple's ids are 15 to 19 digits), then one at a time.
        while i + 8 <= b.count {
            guard let eight = eightDigits(UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)) else { return nil }
            value = value &* 100_000_000 &+ eight
            i += 8
        }
        while i < b.count {
            let digit = b[i] &- 48
            guard digit < 10 else { return nil }
            value = value &* 10 &+ UInt64(digit)
            i += 1
        }
        return value
    }

    /// The value of eight ASCII digits loaded little-endian (the first digit in the lowest byte), or nil when one of
    /// the bytes is not a digit: a byte is a digit when its high nibble is 3 and adding 6 keeps it there.
    @inline(__always)
    static func eightDigits(_ littleEndian: UInt64) -> UInt64? {
        let v = UInt64(littleEndian: littleEndian)
        let high: UInt64 = 0xF0F0_F0F0_F0F0_F0F0
        guard (v & high) | (((v &+ 0x0606_0606_0606_0606) & high) >> 4) == 0x3333_3333_3333_3333 else { return nil }
        // Pairs, then quads, then the eight: each step multiplies the upper half by 10^k and adds the lower.
        var x = ((v & 0x0F0F_0F0F_0F0F_0F0F) &* 2561) >> 8
        x = ((x & 0x00FF_00FF_00FF_00FF) &* 6_553_601) >> 16
        return ((x & 0x0000_FFFF_0000_FFFF) &* 42_949_672_960_001) >> 32
    }

    var text: String {
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

    /// The text's UTF-8 bytes; a decimal is written into a buffer on the stack.
    func withUTF8<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        switch storage {
        case .decimal(let v):
            return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
                let n = Self.digitCount(v)
                Self.writeDigits(v, count: n, to: buffer.baseAddress!)
                return try body(UnsafeBufferPointer(rebasing: buffer[0..<n]))
            }
        case .text(var s):
            return try s.withUTF8(body)
        }
    }

    /// The number of UTF-8 bytes of the text.
    var utf8Count: Int {
        switch storage {
        case .decimal(let v): Self.digitCount(v)
        case .text(let s): s.utf8.count
        }
    }

    /// The number of decimal digits of `v` (1 for 0): a few comparisons, no division.
    @inline(__always)
    static func digitCount(_ v: UInt64) -> Int {
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

    /// Writes the `count` decimal digits of `value` (`digitCount(value)`) at `out`: eight at a time from the end
    /// (one 64-bit division each), then one at a time.
    @inline(__always)
    static func writeDigits(_ value: UInt64, count: Int, to out: UnsafeMutablePointer<UInt8>) {
        var v = value
        var i = count
        while i >= 8 {
            let q = v / 100_000_000
            writeEightDigits(UInt32(truncatingIfNeeded: v &- q &* 100_000_000), to: out + (i - 8))
            v = q
            i -= 8
        }
        while i > 0 {
            i -= 1
            let q = v / 10
            out[i] = UInt8(truncatingIfNeeded: 48 &+ v &- q &* 10)
            v = q
        }
    }

    /// The eight digits of `x` (< 10^8, leading zeros written): split into halves, then pairs, so that the
    /// divisions (by constants: multiplications) do not wait on one another.
    @inline(__always)
    static func writeEightDigits(_ x: UInt32, to out: UnsafeMutablePointer<UInt8>) {
        let high = x / 10_000, low = x &- high &* 10_000
        let a = high / 100, b = high &- a &* 100, c = low / 100, d = low &- c &* 100
        writePair(a, to: out)
        writePair(b, to: out + 2)
        writePair(c, to: out + 4)
        writePair(d, to: out + 6)
    }

    @inline(__always)
    private static func writePair(_ p: UInt32, to out: UnsafeMutablePointer<UInt8>) {
        let tens = p / 10
        out[0] = UInt8(truncatingIfNeeded: 48 &+ tens)
        out[1] = UInt8(truncatingIfNeeded: 48 &+ p &- tens &* 10)
    }

    /// `numericLess` of the texts: decimal texts as numbers (shorter first), others by their UTF-8 bytes.
    static func numericLess(_ a: CompactID, _ b: CompactID) -> Bool {
        if case .decimal(let x) = a.storage, case .decimal(let y) = b.storage { return x < y }
        return LedgerCore.numericLess(a.text, b.text)
    }

    /// The order of the texts' UTF-8 bytes.
    static func utf8Less(_ a: CompactID, _ b: CompactID) -> Bool {
        if case .decimal(let x) = a.storage, case .decimal(let y) = b.storage, a.utf8Count == b.utf8Count {
            return x < y  // Same number of digits: byte order is numeric order.
        }
        return a.withUTF8 { x in b.withUTF8 { y in x.lexicographicallyPrecedes(y) } }
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
    /// `otherCode` for any other (whose name is then stored beside it).
    public var code: UInt8 { Self.known.firstIndex(of: self).map(UInt8.init) ?? Self.otherCode }

    /// The code of every environment this build does not know.
    public static let otherCode: UInt8 = 255

    /// The known environment of `code`; nil for `otherCode` (the name says which) and unused codes.
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
