// MARK: - JSONText

/// Compact, deterministic JSON text for values kept in a fact's `extra` bag: object keys sorted, no whitespace,
/// `/` not escaped, so the same Apple value always yields the same text (and the same fact).
enum JSONText {
    static func compact(_ value: JSON) -> String {
        var out = ""
        append(value, to: &out)
        return out
    }

    static func compact(_ object: [String: JSON]) -> String { compact(.object(object)) }

    private static func append(_ value: JSON, to out: inout String) {
        switch value {
        case .string(let s):
            appendString(s, to: &out)
        case .bool(let b):
            out += b ? "true" : "false"
        case .int(let i):
            out += String(i)
        case .double(let d):
            out += JSONValue.numberText(d)
        case .array(let a):
            out += "["
            for (i, element) in a.enumerated() {
                if i > 0 { out += "," }
                append(element, to: &out)
            }
            out += "]"
        case .object(let d):
            out += "{"
            for (i, key) in d.keys.sorted().enumerated() {
                if i > 0 { out += "," }
                appendString(key, to: &out)
                out += ":"
                append(d[key]!, to: &out)
            }
            out += "}"
        case .null:
            out += "null"
        }
    }

    private static func appendString(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20:
                let hex = String(c.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
