/// Cuts a body into inputs: one JSON document (pretty-printed or not), NDJSON, or several documents back to back;
/// text that is not JSON (bare JWS) is cut at line ends.
///
/// Only structure is scanned (strings, escapes, brace depth), nothing is parsed: a malformed input stays one piece
/// and is refused later by the decoder with a precise error.
public enum InputFraming {
    /// The inputs in `body`, in order, without surrounding whitespace. Blank lines are skipped.
    /// - Complexity: O(n) in the body's size.
    public static func split(_ body: [UInt8]) -> [ArraySlice<UInt8>] {
        var pieces: [ArraySlice<UInt8>] = []
        var i = 0
        let n = body.count
        while i < n {
            while i < n, isSpace(body[i]) { i += 1 }
            guard i < n else { break }
            let start = i
            let first = body[i]
            if first == UInt8(ascii: "{") || first == UInt8(ascii: "[") {
                // A JSON container: runs until its depth returns to zero (or the end, if unbalanced).
                var depth = 0
                var inString = false
                var escaped = false
                while i < n {
                    let b = body[i]
                    i += 1
                    if inString {
                        if escaped { escaped = false } else if b == UInt8(ascii: "\\") { escaped = true } else if b == UInt8(ascii: "\"") { inString = false }
                        continue
                    }
                    if b == UInt8(ascii: "\"") {
                        inString = true
                    } else if b == UInt8(ascii: "{") || b == UInt8(ascii: "[") {
                        depth += 1
                    } else if b == UInt8(ascii: "}") || b == UInt8(ascii: "]") {
                        depth -= 1
                        if depth == 0 { break }
                    } else if depth == 0 {
                        break
                    }
                }
                if depth != 0 {
                    // Unbalanced: keep the rest of the line as the (malformed) input, resync at the next line.
                    i = start
                    while i < n, body[i] != UInt8(ascii: "\n") { i += 1 }
                }
            } else {
                while i < n, body[i] != UInt8(ascii: "\n") { i += 1 }
            }
            var end = i
            while end > start, isSpace(body[end - 1]) { end -= 1 }
            pieces.append(body[start..<end])
        }
        return pieces
    }

    @inline(__always)
    public static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 }
}
