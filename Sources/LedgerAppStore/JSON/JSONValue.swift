// MARK: - JSONValue

/// The module's one way into JSON text (`parse`, over `JSONParser`) and the reading of its numbers without guessing:
/// booleans are never numbers, and a fraction-less double within range counts as an integer (as Apple's JSON writers
/// sometimes emit `1.0`).
package enum JSONValue {
    /// An integer JSON number (a fraction-less double within range counts); nil for booleans, fractions and others.
    @inline(__always)
    package static func int64(_ value: JSON) -> Int64? {
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
        /// Nesting deeper than the limit, seen before any syntax error (reported as `too_deep`).
        case tooDeep
        /// Not JSON: what is wrong, and the offset of the byte where the parser saw it.
        case syntax(String, offset: Int)
    }

    /// Parses one JSON text (RFC 8259, strictly: UTF-8 without a byte order mark, surrounding whitespace allowed,
    /// any value at top level, no duplicate member names). Throws `too_deep` when arrays/objects nest deeper than
    /// `depthLimit` — decided exactly as `JSONStructure.checkDepth` would on the same bytes, even when they are also
    /// malformed — and `invalid_json` saying what is wrong and at which byte offset.
    ///
    /// The parser stops descending at the limit, so hostile input cannot overflow the stack.
    package static func parse(_ bytes: [UInt8], depthLimit: Int) throws(InputError) -> JSON {
        let result: Result<JSON, ParseFailure> = bytes.withUnsafeBufferPointer { buffer in
            var parser = JSONParser(buffer, depthLimit: depthLimit)
            do throws(ParseFailure) {
                return .success(try parser.parseDocument())
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let value):
            return value
        case .failure(.tooDeep):
            throw .tooDeep(limit: depthLimit)
        case .failure(.syntax(let what, let offset)):
            // Brackets nested too deep are reported as such, whatever else is wrong with the text.
            try JSONStructure.checkDepth(bytes, limit: depthLimit)
            if let encoding = JSONStructure.encodingProblem(bytes) { throw .invalidJSON(encoding) }
            throw .invalidJSON("not JSON: \(what) at byte \(offset)")
        }
    }
}
