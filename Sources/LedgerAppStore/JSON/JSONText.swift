// MARK: - JSONText

/// Compact, deterministic JSON text for values kept in a fact's `extra` bag: object keys sorted, no whitespace,
/// `/` not escaped, so the same Apple value always yields the same text (and the same fact).
enum JSONText {
    static func compact(_ value: JSON) -> String {
        String(decoding: compactBytes(value), as: UTF8.self)
    }

    static func compact(_ object: [String: JSON]) -> String { compact(.object(object)) }

    /// `compact`'s text as UTF-8, written byte by byte into one buffer (the V1 notification id digests it; a body can
    /// be hundreds of kilobytes).
    static func compactBytes(_ value: JSON) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        append(value, to: &out)
        return out
    }

    static func compactBytes(_ object: [String: JSON]) -> [UInt8] { compactBytes(.object(object)) }

    private static func append(_ value: JSON, to out: inout [UInt8]) {
        switch value {
        case .string(let s):
            appendString(s, to: &out)
        case .bool(let b):
            out.append(contentsOf: b ? Array("true".utf8) : Array("false".utf8))
        case .int(let i):
            out.append(contentsOf: String(i).utf8)
        case .double(let d):
            out.append(contentsOf: JSONValue.numberText(d).utf8)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (i, element) in a.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                append(element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let d):
            out.append(UInt8(ascii: "{"))
            for (i, key) in d.keys.sorted().enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                append(d[key]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .null:
            out.append(contentsOf: "null".utf8)
        }
    }

    /// A JSON string: `"` and `\\` escaped, `\n`, `\r`, `\t` and the other control characters as escapes, every other
    /// byte of the UTF-8 as it is (runs without escapes copied at once).
    private static func appendString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { bytes in
            var runStart = 0
            for (i, byte) in bytes.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i]))
                runStart = i + 1
                switch byte {
                case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
                case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
                case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: [
                        UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)],
                        hex[Int(byte & 0x0F)],
                    ])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
        out.append(UInt8(ascii: "\""))
    }
}
