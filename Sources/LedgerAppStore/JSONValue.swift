import Foundation

// MARK: - JSON

/// One parsed JSON value. Numbers keep whether they were written as integers: an integer literal that fits Int64 is
/// `.int`, every other number (fraction, exponent, out of Int64 range) is `.double`.
enum JSON: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    var isNull: Bool { if case .null = self { true } else { false } }
}

// MARK: - JSONValue

/// Reading numbers without guessing: booleans are never numbers, and a fraction-less double within range counts as
/// an integer (as Apple's JSON writers sometimes emit `1.0`).
enum JSONValue {
    /// An integer JSON number (a fraction-less double within range counts); nil for booleans, fractions and others.
    @inline(__always)
    static func int64(_ value: JSON) -> Int64? {
        switch value {
        case .int(let i): return i
        case .double(let d):
            guard d.rounded() == d, abs(d) < 9.2e18 else { return nil }
            return Int64(d)
        default: return nil
        }
    }

    /// A decimal digit string (optionally signed) as Int64.
    static func int64(digits s: String) -> Int64? {
        guard !s.isEmpty, s.utf8.count <= 19 else { return nil }
        return Int64(s)
    }

    static func numberText(_ d: Double) -> String {
        if d.rounded() == d, abs(d) < 9.2e18 { return String(Int64(d)) }
        return d.isFinite ? "\(d)" : "null"
    }

    // MARK: Parsing

    enum ParseFailure: Error {
        /// Nesting deeper than the limit (the caller reports `too_deep` after confirming with `JSONStructure`).
        case tooDeep
        case syntax
    }

    /// Parses one JSON text (RFC 8259: UTF-8, surrounding whitespace allowed, any value at top level); nil when it
    /// is not JSON. Throws `too_deep` when arrays/objects nest deeper than `depthLimit` — decided exactly as
    /// `JSONStructure.checkDepth` would on the same bytes, even when they are also malformed.
    ///
    /// The strict parser stops descending at the limit, so hostile input cannot overflow the stack. When it refuses
    /// the text, `JSONSerialization` gets a second look (it also reads UTF-16/32 text), so nothing it used to accept
    /// is refused now; that fallback only runs for input the strict parser refused.
    static func parse(_ bytes: [UInt8], depthLimit: Int) throws(InputError) -> JSON? {
        let fast: JSON? = bytes.withUnsafeBufferPointer { buffer in
            var parser = JSONParser(buffer, depthLimit: depthLimit)
            return try? parser.parseDocument()
        }
        if let fast { return fast }
        try JSONStructure.checkDepth(bytes, limit: depthLimit)
        guard let any = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) else {
            return nil
        }
        return fromFoundation(any)
    }

    /// Converts a `JSONSerialization` value (booleans and numbers are both `NSNumber` there, told apart by their
    /// Objective-C type code).
    static func fromFoundation(_ any: Any) -> JSON? {
        switch any {
        case is NSNull: return .null
        case let s as String: return .string(s)
        case let n as NSNumber:
            let t = n.objCType.pointee
            if t == 0x63 { return .bool(n.boolValue) }  // "c"
            if t == 0x64 || t == 0x66 { return .double(n.doubleValue) }  // "d", "f"
            return .int(n.int64Value)
        case let a as [Any]:
            var out = [JSON]()
            out.reserveCapacity(a.count)
            for element in a {
                guard let v = fromFoundation(element) else { return nil }
                out.append(v)
            }
            return .array(out)
        case let d as [String: Any]:
            var out = [String: JSON](minimumCapacity: d.count)
            for (k, element) in d {
                guard let v = fromFoundation(element) else { return nil }
                out[k] = v
            }
            return .object(out)
        default: return nil
        }
    }
}

// MARK: - JSONParser

/// A strict recursive-descent JSON parser over UTF-8 bytes with a nesting limit.
struct JSONParser {
    typealias Failure = JSONValue.ParseFailure
    let bytes: UnsafeBufferPointer<UInt8>
    let depthLimit: Int
    var i = 0
    var depth = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>, depthLimit: Int) {
        self.bytes = bytes
        self.depthLimit = depthLimit
    }

    mutating func parseDocument() throws(Failure) -> JSON {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard i == bytes.count else { throw .syntax }
        return value
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        while i < bytes.count {
            let b = bytes[i]
            guard b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { return }
            i += 1
        }
    }

    private mutating func parseValue() throws(Failure) -> JSON {
        guard i < bytes.count else { throw .syntax }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        default: return try parseNumber()
        }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let n = word.utf8CodeUnitCount
        guard bytes.count - i >= n else { throw .syntax }
        let p = word.utf8Start
        for k in 0..<n where bytes[i + k] != p[k] { throw .syntax }
        i += n
    }

    private mutating func enter() throws(Failure) {
        depth += 1
        if depth > depthLimit { throw .tooDeep }
    }

    private mutating func parseObject() throws(Failure) -> JSON {
        try enter()
        i += 1
        skipWhitespace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
            i += 1
            depth -= 1
            return .object([:])
        }
        // Members are gathered first so the dictionary is sized once (no rehash while growing); later duplicates
        // replace earlier ones, as JSONSerialization did.
        var members = [(String, JSON)]()
        members.reserveCapacity(16)
        while true {
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw .syntax }
            let key = try parseString()
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw .syntax }
            i += 1
            skipWhitespace()
            members.append((key, try parseValue()))
            skipWhitespace()
            guard i < bytes.count else { throw .syntax }
            if bytes[i] == UInt8(ascii: ",") {
                i += 1
                continue
            }
            guard bytes[i] == UInt8(ascii: "}") else { throw .syntax }
            i += 1
            depth -= 1
            var object = [String: JSON](minimumCapacity: members.count)
            for (key, value) in members { object[key] = value }
            return .object(object)
        }
    }

    private mutating func parseArray() throws(Failure) -> JSON {
        try enter()
        i += 1
        var array = [JSON]()
        skipWhitespace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
            i += 1
            depth -= 1
            return .array(array)
        }
        while true {
            skipWhitespace()
            array.append(try parseValue())
            skipWhitespace()
            guard i < bytes.count else { throw .syntax }
            if bytes[i] == UInt8(ascii: ",") {
                i += 1
                continue
            }
            guard bytes[i] == UInt8(ascii: "]") else { throw .syntax }
            i += 1
            depth -= 1
            return .array(array)
        }
    }

    /// At an opening quote; returns the decoded string and leaves `i` after the closing quote.
    private mutating func parseString() throws(Failure) -> String {
        i += 1
        let start = i
        // Fast path: no escapes. Eight bytes at a time while none is a quote, a backslash or a control character.
        if let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            while i + 8 <= bytes.count {
                let x = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                let ones: UInt64 = 0x0101_0101_0101_0101
                let high: UInt64 = 0x8080_8080_8080_8080
                let quote = x ^ (ones &* 0x22)
                let backslash = x ^ (ones &* 0x5C)
                let special =
                    ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((x &- ones &* 0x20) & ~x)
                if special & high != 0 { break }
                i += 8
            }
        }
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                guard let s = String(validating: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self) else {
                    throw .syntax
                }
                i += 1
                return s
            }
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw .syntax }
            i += 1
        }
        guard i < bytes.count else { throw .syntax }
        // Slow path: unescape into a buffer.
        var out = [UInt8]()
        out.reserveCapacity(i - start + 16)
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i]))
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                guard let s = String(validating: out, as: UTF8.self) else { throw .syntax }
                i += 1
                return s
            }
            if b < 0x20 { throw .syntax }
            if b != UInt8(ascii: "\\") {
                out.append(b)
                i += 1
                continue
            }
            i += 1
            guard i < bytes.count else { throw .syntax }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if scalar >= 0xD800 && scalar < 0xDC00 {
                    guard bytes.count - i >= 6, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw .syntax
                    }
                    i += 2
                    let low = try hex4()
                    guard low >= 0xDC00 && low < 0xE000 else { throw .syntax }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if scalar >= 0xDC00 && scalar < 0xE000 {
                    throw .syntax
                }
                guard let u = Unicode.Scalar(scalar) else { throw .syntax }
                out.append(contentsOf: UTF8.encode(u)!)
            default: throw .syntax
            }
        }
        throw .syntax
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard bytes.count - i >= 4 else { throw .syntax }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[i]
            let d: UInt32
            switch b {
            case 0x30...0x39: d = UInt32(b - 0x30)
            case 0x41...0x46: d = UInt32(b - 0x41 + 10)
            case 0x61...0x66: d = UInt32(b - 0x61 + 10)
            default: throw .syntax
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    private mutating func parseNumber() throws(Failure) -> JSON {
        let start = i
        var negative = false
        if bytes[i] == UInt8(ascii: "-") {
            negative = true
            i += 1
        }
        guard i < bytes.count, isDigit(bytes[i]) else { throw .syntax }
        let intStart = i
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
        } else {
            while i < bytes.count, isDigit(bytes[i]) { i += 1 }
        }
        let intEnd = i
        var integral = true
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            integral = false
            i += 1
            guard i < bytes.count, isDigit(bytes[i]) else { throw .syntax }
            while i < bytes.count, isDigit(bytes[i]) { i += 1 }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            integral = false
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count, isDigit(bytes[i]) else { throw .syntax }
            while i < bytes.count, isDigit(bytes[i]) { i += 1 }
        }
        if integral && intEnd - intStart <= 18 {
            var v: Int64 = 0
            for k in intStart..<intEnd { v = v * 10 + Int64(bytes[k] &- 0x30) }
            return .int(negative ? -v : v)
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        if integral, let v = Int64(text) { return .int(v) }
        guard let d = Double(text), d.isFinite else { throw .syntax }
        return .double(d)
    }

    @inline(__always)
    private func isDigit(_ b: UInt8) -> Bool { b &- 0x30 < 10 }
}
