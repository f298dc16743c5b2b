import Hummingbird
import LedgerErrors

// MARK: - RequestTarget

/// The one way an id or a query value enters from a request's target: percent-decoded once, as RFC 3986 §2.1 says,
/// for the path segments the router matched and for the query's names and values alike. Every HTTP client encodes
/// a path segment (`encodeURIComponent`, `urllib.parse.quote`): `user%2B1%40example.org` is the app user
/// `user+1@example.org`, and `o%2Fx` is the one subscription `o/x` (the router splits the target on its raw `/`, so
/// an encoded one stays inside its segment).
///
/// A text that does not decode is refused with `invalid_query` naming it, never taken as an id: a `%` not followed by
/// two hexadecimal digits, an encoded NUL, or bytes that are not UTF-8. `+` is a plus sign (RFC 3986 gives it no other
/// meaning); only an HTML form's query (`application/x-www-form-urlencoded`, the console's forms) reads it as a space.
enum RequestTarget {
    /// The path parameter `name` of the matched route, decoded.
    static func parameter(_ name: String, of context: LedgerRequestContext) throws(CodedError) -> String {
        guard let raw = context.parameters[Substring(name)] else {
            throw CodedError(.invalidQuery, "the path has no \(name)")
        }
        return try decode(raw, naming: "path segment \(name)")
    }

    /// The query's parameters, names and values decoded, in the order given (a name may repeat: `checkQuery`
    /// refuses that). A pair without `=` is a name with an empty value; empty pairs (`a=1&&b=2`) are skipped.
    static func query(_ request: Request, form: Bool = false) throws(CodedError) -> Parameters {
        guard let text = request.uri.query, !text.isEmpty else { return Parameters() }
        var pairs: [(key: Substring, value: Substring)] = []
        for pair in text.split(separator: "&") {
            let equals = pair.firstIndex(of: "=")
            let name = try decode(pair[..<(equals ?? pair.endIndex)], naming: "query parameter name", plusIsSpace: form)
            var value = ""
            if let equals {
                value = try decode(pair[pair.index(after: equals)...], naming: "query parameter \(name)", plusIsSpace: form)
            }
            pairs.append((Substring(name), Substring(value)))
        }
        return Parameters(pairs)
    }

    /// `text` percent-decoded; `naming` says what it is in the refusal.
    static func decode(_ text: Substring, naming what: @autoclosure () -> String, plusIsSpace: Bool = false)
        throws(CodedError) -> String
    {
        let utf8 = text.utf8
        let percent = UInt8(ascii: "%")
        let plus = UInt8(ascii: "+")
        guard utf8.contains(where: { $0 == percent || (plusIsSpace && $0 == plus) }) else { return String(text) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var i = utf8.startIndex
        while i != utf8.endIndex {
            let byte = utf8[i]
            i = utf8.index(after: i)
            guard byte == percent else {
                bytes.append(plusIsSpace && byte == plus ? UInt8(ascii: " ") : byte)
                continue
            }
            guard i != utf8.endIndex, let high = hexValue(utf8[i]) else { throw malformed(text, what()) }
            let j = utf8.index(after: i)
            guard j != utf8.endIndex, let low = hexValue(utf8[j]) else { throw malformed(text, what()) }
            i = utf8.index(after: j)
            let decoded = high << 4 | low
            guard decoded != 0 else {
                throw CodedError(.invalidQuery, "the \(what()) '\(shown(text))' holds an encoded NUL (%00)")
            }
            bytes.append(decoded)
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw CodedError(
                .invalidQuery, "the \(what()) '\(shown(text))' does not decode to UTF-8 text: encode each byte of its UTF-8")
        }
        return decoded
    }

    private static func malformed(_ text: Substring, _ what: String) -> CodedError {
        CodedError(
            .invalidQuery,
            "the \(what) '\(shown(text))' has a '%' not followed by two hexadecimal digits: a '%' of the id itself is sent as %25")
    }

    /// At most 200 characters of a refused text (a refusal is no echo of a huge target).
    private static func shown(_ text: Substring) -> String {
        text.count <= 200 ? String(text) : String(text.prefix(200)) + "…"
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
