// MARK: - JSONParser

/// A strict recursive-descent JSON parser over UTF-8 bytes with a nesting limit (RFC 8259 and nothing more: no
/// trailing commas, leading zeros, lone surrogates, raw control characters, unknown escapes, NaN or Infinity,
/// numbers beyond Int64 or Double, duplicate member names, or bytes after the value).
///
/// Every failure names what was wrong and the offset of the byte where it was seen; messages are only built on the
/// failure path.
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
        guard i < bytes.count else { throw .syntax("no value", offset: i) }
        let value = try parseValue()
        skipWhitespace()
        guard i == bytes.count else { throw unexpected("after the value") }
        return value
    }

    // MARK: Failures

    /// The byte at `i` is not allowed here (or the text ended).
    private func unexpected(_ context: StaticString) -> Failure {
        guard i < bytes.count else { return .syntax("unexpected end of text \(context)", offset: i) }
        return .syntax("unexpected \(Self.describe(bytes[i])) \(context)", offset: i)
    }

    static func describe(_ b: UInt8) -> String {
        if b >= 0x21 && b < 0x7F { return "'\(Character(Unicode.Scalar(b)))'" }
        let hex = String(b, radix: 16, uppercase: true)
        return "byte 0x" + (hex.count == 1 ? "0" + hex : hex)
    }

    // MARK: Values

    @inline(__always)
    private mutating func skipWhitespace() {
        while i < bytes.count {
            let b = bytes[i]
            guard b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { return }
            i += 1
        }
    }

    private mutating func parseValue() throws(Failure) -> JSON {
        guard i < bytes.count else { throw unexpected("where a value should be") }
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
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber()
        default:
            throw unexpected("where a value should be")
        }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let n = word.utf8CodeUnitCount
        let p = word.utf8Start
        let start = i
        for k in 0..<n {
            guard start + k < bytes.count, bytes[start + k] == p[k] else {
                i = start + k
                throw .syntax("invalid literal (expected '\(word)')", offset: start)
            }
        }
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
        // Members are gathered first so the dictionary is sized once (no rehash while growing).
        var members = [(key: String, value: JSON, offset: Int)]()
        members.reserveCapacity(16)
        while true {
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else {
                if i < bytes.count, bytes[i] == UInt8(ascii: "}"), !members.isEmpty {
                    throw .syntax("trailing comma before '}'", offset: i)
                }
                throw unexpected("where a member name (a string) should be")
            }
            let keyOffset = i
            let key = try parseString()
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw unexpected("after a member name (expected ':')") }
            i += 1
            skipWhitespace()
            members.append((key, try parseValue(), keyOffset))
            skipWhitespace()
            guard i < bytes.count else { throw unexpected("in an object (expected ',' or '}')") }
            if bytes[i] == UInt8(ascii: ",") {
                i += 1
                continue
            }
            guard bytes[i] == UInt8(ascii: "}") else { throw unexpected("in an object (expected ',' or '}')") }
            i += 1
            depth -= 1
            var object = [String: JSON](minimumCapacity: members.count)
            for member in members where object.updateValue(member.value, forKey: member.key) != nil {
                // Readers disagree on which of two equal names wins (first, last, error); a ledger that keeps the
                // raw bytes for auditors must not pick one silently.
                throw .syntax("duplicate member name \"\(member.key)\"", offset: member.offset)
            }
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
            if i < bytes.count, bytes[i] == UInt8(ascii: "]"), !array.isEmpty {
                throw .syntax("trailing comma before ']'", offset: i)
            }
            array.append(try parseValue())
            skipWhitespace()
            guard i < bytes.count else { throw unexpected("in an array (expected ',' or ']')") }
            if bytes[i] == UInt8(ascii: ",") {
                i += 1
                continue
            }
            guard bytes[i] == UInt8(ascii: "]") else { throw unexpected("in an array (expected ',' or ']')") }
            i += 1
            depth -= 1
            return .array(array)
        }
    }

    // MARK: Strings

    /// At an opening quote; returns the decoded string and leaves `i` after the closing quote.
    private mutating func parseString() throws(Failure) -> String {
        let opening = i
        i += 1
        let start = i
        // The high bits of every byte seen: an ASCII string needs no UTF-8 validation, so it skips
        // `String(validating:as:)`, which is generic and, unspecialised, looks up type metadata for every string.
        var highBits: UInt64 = 0
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
                highBits |= x & high
                i += 8
            }
        }
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                let text = UnsafeBufferPointer(rebasing: bytes[start..<i])
                let s: String
                if highBits == 0 {
                    s = String(decoding: text, as: UTF8.self)  // ASCII: nothing to validate or repair
                } else if let valid = String(validating: text, as: UTF8.self) {
                    s = valid
                } else {
                    throw invalidUTF8(from: start, to: i)
                }
                i += 1
                return s
            }
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw .syntax("control character \(Self.describe(b)) in a string (escape it)", offset: i) }
            highBits |= UInt64(b & 0x80)
            i += 1
        }
        guard i < bytes.count else { throw .syntax("unterminated string", offset: opening) }
        // Slow path: unescape into a buffer.
        var out = [UInt8]()
        out.reserveCapacity(i - start + 16)
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i]))
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                guard let s = String(validating: out, as: UTF8.self) else { throw invalidUTF8(from: start, to: i) }
                i += 1
                return s
            }
            if b < 0x20 { throw .syntax("control character \(Self.describe(b)) in a string (escape it)", offset: i) }
            if b != UInt8(ascii: "\\") {
                out.append(b)
                i += 1
                continue
            }
            let escape = i
            i += 1
            guard i < bytes.count else { break }
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
                var scalar = try hex4(escape: escape)
                if scalar >= 0xD800 && scalar < 0xDC00 {
                    guard bytes.count - i >= 6, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw .syntax("lone high surrogate \\u\(Self.hex(scalar)) (no low surrogate follows)", offset: escape)
                    }
                    let lowEscape = i
                    i += 2
                    let low = try hex4(escape: lowEscape)
                    guard low >= 0xDC00 && low < 0xE000 else {
                        throw .syntax(
                            "high surrogate \\u\(Self.hex(scalar)) followed by \\u\(Self.hex(low)), not a low surrogate",
                            offset: escape)
                    }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if scalar >= 0xDC00 && scalar < 0xE000 {
                    throw .syntax("lone low surrogate \\u\(Self.hex(scalar))", offset: escape)
                }
                // Every value left is a scalar: surrogates were handled above and four hex digits stay below 0x110000.
                out.append(contentsOf: UTF8.encode(Unicode.Scalar(scalar)!)!)
            default:
                let shown = e >= 0x21 && e < 0x7F ? "\\" + String(Unicode.Scalar(e)) : "\\ then \(Self.describe(e))"
                throw .syntax("invalid escape \(shown)", offset: escape)
            }
        }
        throw .syntax("unterminated string", offset: opening)
    }

    /// Four hex digits after `\u` (at `escape`).
    private mutating func hex4(escape: Int) throws(Failure) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard i < bytes.count else { throw .syntax("unterminated \\u escape", offset: escape) }
            let b = bytes[i]
            let d: UInt32
            switch b {
            case 0x30...0x39: d = UInt32(b - 0x30)
            case 0x41...0x46: d = UInt32(b - 0x41 + 10)
            case 0x61...0x66: d = UInt32(b - 0x61 + 10)
            default: throw .syntax("\\u escape needs four hex digits, found \(Self.describe(b))", offset: i)
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    private static func hex(_ v: UInt32) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - s.count)) + s
    }

    /// The failure for string content between `start` and `end` that is not UTF-8, at the first offending byte.
    /// Escapes always produce whole scalars, so the culprit lies in a run of raw bytes between them.
    private func invalidUTF8(from start: Int, to end: Int) -> Failure {
        var k = start
        while k < end {
            var runEnd = k
            while runEnd < end, bytes[runEnd] != UInt8(ascii: "\\") { runEnd += 1 }
            var iterator = UnsafeBufferPointer(rebasing: bytes[k..<runEnd]).makeIterator()
            var decoder = UTF8()
            var consumed = 0
            loop: while true {
                switch decoder.decode(&iterator) {
                case .scalarValue(let scalar): consumed += UTF8.width(scalar)
                case .emptyInput: break loop
                case .error: return .syntax("invalid UTF-8 in a string", offset: k + consumed)
                }
            }
            // Skip the escape (its own errors were reported while unescaping).
            k = runEnd + (runEnd + 1 < end && bytes[runEnd + 1] == UInt8(ascii: "u") ? 6 : 2)
        }
        return .syntax("invalid UTF-8 in a string", offset: start)
    }

    // MARK: Numbers

    private mutating func parseNumber() throws(Failure) -> JSON {
        let start = i
        var negative = false
        if bytes[i] == UInt8(ascii: "-") {
            negative = true
            i += 1
        }
        guard i < bytes.count, isDigit(bytes[i]) else { throw unexpected("in a number (expected a digit)") }
        let intStart = i
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
            if i < bytes.count, isDigit(bytes[i]) { throw .syntax("number with a leading zero", offset: intStart) }
        } else {
            while i < bytes.count, isDigit(bytes[i]) { i += 1 }
        }
        let intEnd = i
        var integral = true
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            integral = false
            i += 1
            guard i < bytes.count, isDigit(bytes[i]) else { throw unexpected("after a decimal point (expected a digit)") }
            while i < bytes.count, isDigit(bytes[i]) { i += 1 }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            integral = false
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count, isDigit(bytes[i]) else { throw unexpected("in an exponent (expected a digit)") }
            while i < bytes.count, isDigit(bytes[i]) { i += 1 }
        }
        if integral && intEnd - intStart <= 18 {
            var v: Int64 = 0
            for k in intStart..<intEnd { v = v * 10 + Int64(bytes[k] &- 0x30) }
            return .int(negative ? -v : v)
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        if integral {
            guard let v = Int64(text) else { throw .syntax("integer \(text) does not fit in 64 bits", offset: start) }
            return .int(v)
        }
        guard let d = Double(text), d.isFinite else {
            throw .syntax("number \(text) is beyond the range of a double", offset: start)
        }
        return .double(d)
    }

    @inline(__always)
    private func isDigit(_ b: UInt8) -> Bool { b &- 0x30 < 10 }
}
