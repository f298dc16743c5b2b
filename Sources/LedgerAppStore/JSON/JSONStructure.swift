// MARK: - JSONStructure

/// Byte-level looks at JSON text that need no parse: a nesting-depth check that decides `too_deep` for malformed
/// input the same way the parser decides it for well-formed input (whichever of the two problems comes first, a text
/// nested too deep is reported as such), and a guess at the encoding of text that is not UTF-8.
enum JSONStructure {
    /// Throws `too_deep` when arrays/objects nest deeper than `limit`. Brackets inside strings do not count.
    /// - Complexity: O(n), constant memory.
    static func checkDepth(_ bytes: [UInt8], limit: Int) throws(InputError) {
        let exceeded: Bool = bytes.withUnsafeBufferPointer { buffer in
            var depth = 0
            var strings = StringTracker()
            for byte in buffer where strings.step(byte) == .structure {
                switch byte {
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

    /// Why `bytes` cannot be JSON text by their encoding alone, or nil: RFC 8259 §8.1 allows only UTF-8, without a
    /// byte order mark. UTF-16 and UTF-32 are recognised by their byte order mark or by the zero bytes an ASCII first
    /// character leaves around it.
    static func encodingProblem(_ bytes: [UInt8]) -> String? {
        let lead = Array(bytes.prefix(4))
        func starts(_ prefix: [UInt8]) -> Bool { lead.starts(with: prefix) }
        let name: String
        if starts([0x00, 0x00, 0xFE, 0xFF]) || (lead.count == 4 && lead[0] == 0 && lead[1] == 0 && lead[2] == 0) {
            name = "UTF-32BE"
        } else if starts([0xFF, 0xFE, 0x00, 0x00]) || (lead.count == 4 && lead[1] == 0 && lead[2] == 0 && lead[3] == 0) {
            name = "UTF-32LE"
        } else if starts([0xFE, 0xFF]) || (lead.count >= 2 && lead[0] == 0) {
            name = "UTF-16BE"
        } else if starts([0xFF, 0xFE]) || (lead.count >= 2 && lead[1] == 0) {
            name = "UTF-16LE"
        } else if starts([0xEF, 0xBB, 0xBF]) {
            return "not JSON: the text starts with a UTF-8 byte order mark (at byte 0); JSON text is UTF-8 without one (RFC 8259 §8.1)"
        } else {
            return nil
        }
        return "not JSON: the text is \(name) (at byte 0); JSON text must be UTF-8 (RFC 8259 §8.1)"
    }

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    // MARK: - Strings

    /// Follows a byte-by-byte walk in and out of JSON strings, so that brackets, colons and commas inside a string
    /// are not taken for structure. The depth check above needs exactly this, and nothing else of a parse.
    struct StringTracker {
        enum Step { case structure, stringOpened, insideString, stringClosed }

        private var inString = false
        private var escaped = false

        /// What `byte`, the next byte of the text, is.
        @inline(__always)
        mutating func step(_ byte: UInt8) -> Step {
            guard inString else {
                if byte == UInt8(ascii: "\"") {
                    inString = true
                    return .stringOpened
                }
                return .structure
            }
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inString = false
                return .stringClosed
            }
            return .insideString
        }
    }
}
