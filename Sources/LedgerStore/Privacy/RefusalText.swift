import Foundation

/// The forms in which a refused input's bytes may spell a value, for an erasure to find it: the bytes as received,
/// the same with JSON's string escapes undone (`\u002d`, `\/`), with URL percent-encoding undone (a request's query
/// as every HTTP client writes it, `person%2B42%40example.org`, or a form body), and the payloads of the compact JWS
/// they hold (base64url), those payloads' own JWS in turn (a notification's signed transaction). A refusal is kept
/// because it could not be decoded, so its bytes are searched, not parsed.
enum RefusalText {
    static func readableForms(_ bytes: [UInt8]) -> [[UInt8]] {
        var forms: [[UInt8]] = []
        add(bytes, to: &forms, depth: 0)
        return forms
    }

    /// A text's forms without the JWS payloads: as it is, JSON-unescaped, percent-decoded (a request's target, a
    /// message quoting one).
    static func textForms(_ bytes: [UInt8]) -> [[UInt8]] {
        var forms = [bytes]
        if bytes.contains(UInt8(ascii: "\\")) { forms.append(jsonUnescaped(bytes)) }
        forms += percentDecodedForms(bytes)
        return forms
    }

    private static func add(_ bytes: [UInt8], to forms: inout [[UInt8]], depth: Int) {
        forms += textForms(bytes)
        guard depth < 3 else { return }
        for payload in jwsPayloads(bytes) { add(payload, to: &forms, depth: depth + 1) }
    }

    /// The bytes with every `%XX` replaced by the byte it stands for, and the same with `+` read as a space too (a
    /// query or form written as `application/x-www-form-urlencoded`); none when the bytes hold neither.
    static func percentDecodedForms(_ bytes: [UInt8]) -> [[UInt8]] {
        let percent = bytes.contains(UInt8(ascii: "%"))
        let plus = bytes.contains(UInt8(ascii: "+"))
        guard percent || plus else { return [] }
        func decoded(plusIsSpace: Bool) -> [UInt8] {
            func hex(_ b: UInt8) -> UInt8? {
                switch b {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
                default: nil
                }
            }
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count)
            var i = 0
            while i < bytes.count {
                if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count, let high = hex(bytes[i + 1]), let low = hex(bytes[i + 2]) {
                    out.append(high << 4 | low)
                    i += 3
                } else {
                    out.append(plusIsSpace && bytes[i] == UInt8(ascii: "+") ? UInt8(ascii: " ") : bytes[i])
                    i += 1
                }
            }
            return out
        }
        var forms: [[UInt8]] = []
        if percent { forms.append(decoded(plusIsSpace: false)) }
        if plus { forms.append(decoded(plusIsSpace: true)) }
        return forms
    }

    /// The bytes with every JSON escape sequence replaced by what it stands for (UTF-8); anything else unchanged.
    static func jsonUnescaped(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        func hex(at j: Int) -> UInt32? {
            guard j + 4 <= bytes.count else { return nil }
            return UInt32(String(decoding: bytes[j..<(j + 4)], as: UTF8.self), radix: 16)
        }
        while i < bytes.count {
            guard bytes[i] == UInt8(ascii: "\\"), i + 1 < bytes.count else {
                out.append(bytes[i])
                i += 1
                continue
            }
            let next = bytes[i + 1]
            switch next {
            case UInt8(ascii: "u"):
                guard var scalar = hex(at: i + 2) else {
                    out.append(bytes[i])
                    i += 1
                    continue
                }
                var length = 6
                if (0xD800..<0xDC00).contains(scalar), i + 7 < bytes.count, bytes[i + 6] == UInt8(ascii: "\\"),
                    bytes[i + 7] == UInt8(ascii: "u"), let low = hex(at: i + 8), (0xDC00..<0xE000).contains(low)
                {
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    length = 12
                }
                out.append(contentsOf: Array(String(Character(Unicode.Scalar(scalar) ?? "\u{FFFD}")).utf8))
                i += length
            case UInt8(ascii: "n"): out.append(0x0A); i += 2
            case UInt8(ascii: "t"): out.append(0x09); i += 2
            case UInt8(ascii: "r"): out.append(0x0D); i += 2
            case UInt8(ascii: "b"): out.append(0x08); i += 2
            case UInt8(ascii: "f"): out.append(0x0C); i += 2
            default: out.append(next); i += 2  // \" \\ \/ and anything else: the character itself
            }
        }
        return out
    }

    /// The decoded payloads of the runs of base64url text that have the shape of a compact JWS
    /// (header.payload.signature).
    static func jwsPayloads(_ bytes: [UInt8]) -> [[UInt8]] {
        func isBase64URL(_ b: UInt8) -> Bool {
            (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x2D || b == 0x5F
        }
        var payloads: [[UInt8]] = []
        var start = 0
        while start < bytes.count {
            guard isBase64URL(bytes[start]) else {
                start += 1
                continue
            }
            var end = start
            while end < bytes.count, isBase64URL(bytes[end]) || bytes[end] == UInt8(ascii: ".") { end += 1 }
            let parts = bytes[start..<end].split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
            if parts.count == 3, parts[1].count >= 8, let payload = base64URLDecoded(parts[1]) {
                payloads.append(payload)
            }
            start = end
        }
        return payloads
    }

    private static func base64URLDecoded(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        var standard = String(decoding: text, as: UTF8.self)
            .replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map { Array($0) }
    }
}
