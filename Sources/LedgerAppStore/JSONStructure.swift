// MARK: - JSONStructure

/// Byte-level looks at JSON text that need no parse: a nesting-depth check that runs before `JSONSerialization` ever
/// sees refused text and decides `too_deep` for malformed input (so `[[[[…` 100 000 deep cannot overflow a stack; the
/// module's own parser has the same limit built in), and the exact byte span of one top-level
/// value (so an envelope's payload keeps the bytes its sender wrote).
enum JSONStructure {
    /// Throws `too_deep` when arrays/objects nest deeper than `limit`. Brackets inside strings do not count.
    /// - Complexity: O(n), constant memory.
    static func checkDepth(_ bytes: [UInt8], limit: Int) throws(InputError) {
        let exceeded: Bool = bytes.withUnsafeBufferPointer { buffer in
            var depth = 0
            var inString = false
            var escaped = false
            for byte in buffer {
                if inString {
                    if escaped {
                        escaped = false
                    } else if byte == UInt8(ascii: "\\") {
                        escaped = true
                    } else if byte == UInt8(ascii: "\"") {
                        inString = false
                    }
                    continue
                }
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "["), UInt8(ascii: "{"):
                    depth += 1
                    if depth > limit { return true }
                case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
                default: break
                }
            }
            return false
        }
        if exceeded { throw .tooDeep(limit: limit) }
    }

    /// The byte range of the value of top-level `key` when `bytes` is a JSON object, whitespace trimmed; nil when
    /// absent. Assumes `bytes` already parsed as JSON (it is only used after a successful parse).
    static func topLevelValueRange(of key: String, in bytes: [UInt8]) -> Range<Int>? {
        let keyBytes = Array(key.utf8)
        var depth = 0
        var inString = false
        var escaped = false
        var stringStart = -1
        var stringDepth = 0
        var lastKeyMatches = false
        var valueStart = -1
        var i = 0
        let n = bytes.count
        while i < n {
            let byte = bytes[i]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                    if stringDepth == 1 && valueStart < 0 {
                        lastKeyMatches = bytes[(stringStart + 1)..<i].elementsEqual(keyBytes)
                    }
                }
                i += 1
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
                stringStart = i
                stringDepth = depth
            case UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                if depth == 1 && valueStart >= 0 { return trimmed(valueStart..<i, in: bytes) }
                depth -= 1
            case UInt8(ascii: ":") where depth == 1:
                if lastKeyMatches { valueStart = i + 1 }
                lastKeyMatches = false
            case UInt8(ascii: ",") where depth == 1:
                if valueStart >= 0 { return trimmed(valueStart..<i, in: bytes) }
            default: break
            }
            i += 1
        }
        return nil
    }

    private static func trimmed(_ range: Range<Int>, in bytes: [UInt8]) -> Range<Int> {
        var lower = range.lowerBound
        var upper = range.upperBound
        while lower < upper, isWhitespace(bytes[lower]) { lower += 1 }
        while upper > lower, isWhitespace(bytes[upper - 1]) { upper -= 1 }
        return lower..<upper
    }

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }
}
