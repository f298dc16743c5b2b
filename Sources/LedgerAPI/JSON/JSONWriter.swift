// MARK: - JSONWriter

/// The one JSON encoder of the ledger's answers and outputs: writes JSON text straight into bytes, with no tree in
/// between.
///
/// Two ways in, one writer:
/// - A `JSONDocument` writes itself member by member (`object`, `key`, `string`, …): the documents the API defines
///   (timeline, customer, append results, errors), whose field list is their `write(to:)`, and which the read routes
///   answer most often, so no `Encoder` machinery stands between them and the bytes.
/// - An `Encodable` value is written through the writer's `Encoder` (`encodable(_:)`): the values whose JSON is their
///   `Codable` form (facts, event documents, the store's reports).
///
/// Keys come out in the order written, or, with `sortedKeys` (the CLI's `--json` documents), every object's members
/// in key order. Strings escape `"`, `\` and control characters (`\n`, `\r`, `\t`, the others as `\u00XX`); `/` and
/// everything else is written as it is.
public struct JSONWriter {
    /// The JSON text written so far.
    public private(set) var bytes: [UInt8] = []
    /// Every object's members in key order instead of the order written.
    public let sortedKeys: Bool

    /// One entry per open container.
    private var open: [Container] = []
    /// A key was just written: the next value is its value, not a new member.
    private var afterKey = false
    /// With `sortedKeys`, for each open object: where its members begin, and each member's key and first byte.
    private var members: [(start: Int, keys: [(key: String, at: Int)])] = []

    private struct Container {
        var isObject: Bool
        /// No member or element written yet (no comma before the next).
        var isEmpty = true
    }

    public init(capacity: Int = 1024, sortedKeys: Bool = false) {
        self.sortedKeys = sortedKeys
        bytes.reserveCapacity(capacity)
    }

    /// How many containers are open.
    public var depth: Int { open.count }

    /// The JSON text of `document`.
    public static func bytes(of document: some JSONDocument, sortedKeys: Bool = false) -> [UInt8] {
        var json = JSONWriter(sortedKeys: sortedKeys)
        document.write(to: &json)
        return json.bytes
    }

    /// The JSON text of `value`'s `Codable` form. Throws only for a non-finite floating-point number, which JSON
    /// cannot write.
    public static func bytes(encoding value: some Encodable, sortedKeys: Bool = false) throws -> [UInt8] {
        var json = JSONWriter(sortedKeys: sortedKeys)
        try json.encodable(value)
        return json.bytes
    }

    // MARK: - Containers

    /// Separates a value from the one before it in its container; after a key, the value needs no separator.
    @inline(__always)
    private mutating func beginValue() {
        if afterKey {
            afterKey = false
            return
        }
        guard let last = open.indices.last else { return }
        if !open[last].isEmpty { bytes.append(UInt8(ascii: ",")) }
        open[last].isEmpty = false
    }

    /// Opens an object; write its members with `key` and one value each, then `endObject`.
    public mutating func beginObject() {
        beginValue()
        bytes.append(UInt8(ascii: "{"))
        open.append(Container(isObject: true))
        if sortedKeys { members.append((bytes.count, [])) }
    }

    public mutating func endObject() {
        precondition(open.last?.isObject == true, "endObject without an open object")
        open.removeLast()
        if sortedKeys { sortMembers(members.removeLast()) }
        bytes.append(UInt8(ascii: "}"))
    }

    /// Opens an array; write its elements, then `endArray`.
    public mutating func beginArray() {
        beginValue()
        bytes.append(UInt8(ascii: "["))
        open.append(Container(isObject: false))
    }

    public mutating func endArray() {
        precondition(open.last?.isObject == false, "endArray without an open array")
        open.removeLast()
        bytes.append(UInt8(ascii: "]"))
    }

    /// Closes the innermost container, object or array.
    public mutating func endContainer() {
        if open.last?.isObject == true { endObject() } else { endArray() }
    }

    /// Writes an object; `body` writes its members with `key` followed by one value each.
    @inline(__always)
    public mutating func object(_ body: (inout JSONWriter) -> Void) {
        beginObject()
        body(&self)
        endObject()
    }

    /// Writes an array of `items`, each with `write`.
    @inline(__always)
    public mutating func array<S: Sequence>(_ items: S, _ write: (inout JSONWriter, S.Element) -> Void) {
        beginArray()
        for item in items { write(&self, item) }
        endArray()
    }

    /// Starts a member of the enclosing object.
    public mutating func key(_ name: String) {
        beginValue()
        if sortedKeys { members[members.count - 1].keys.append((name, bytes.count)) }
        appendString(name)
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    // MARK: - Values

    public mutating func string(_ s: String) {
        beginValue()
        appendString(s)
    }

    public mutating func string(_ s: String?) {
        guard let s else { return null() }
        string(s)
    }

    public mutating func number(_ n: Int64) {
        beginValue()
        appendDecimal(n.magnitude, negative: n < 0)
    }

    public mutating func number(_ n: UInt64) {
        beginValue()
        appendDecimal(n, negative: false)
    }

    public mutating func number(_ n: Int) { number(Int64(n)) }

    public mutating func number(_ n: Int64?) {
        guard let n else { return null() }
        number(n)
    }

    public mutating func number(_ n: UInt64?) {
        guard let n else { return null() }
        number(n)
    }

    /// A floating-point number: integral values below 10^15 without a fraction, others as Swift prints them.
    /// Throws for NaN and the infinities, which JSON cannot write.
    public mutating func number(_ d: Double) throws(NonFiniteNumber) {
        guard d.isFinite else { throw NonFiniteNumber(value: d) }
        beginValue()
        let text = d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : "\(d)"
        bytes.append(contentsOf: text.utf8)
    }

    public mutating func bool(_ b: Bool) {
        beginValue()
        bytes.append(contentsOf: (b ? "true" : "false").utf8)
    }

    public mutating func bool(_ b: Bool?) {
        guard let b else { return null() }
        bool(b)
    }

    public mutating func null() {
        beginValue()
        bytes.append(contentsOf: "null".utf8)
    }

    /// Writes `document` as the next value.
    @inline(__always)
    public mutating func document(_ document: some JSONDocument) { document.write(to: &self) }

    /// A floating-point value JSON cannot write.
    public struct NonFiniteNumber: Error, Hashable, Sendable {
        public var value: Double
    }

    // MARK: - Text

    /// `s` as a JSON string literal. The runs between characters to escape are copied whole (most strings have
    /// none): a byte at a time, the copy was a fifth of a customer read's instructions.
    private mutating func appendString(_ s: String) {
        var s = s
        s.withUTF8 { Self.appendQuoted($0, to: &bytes) }
    }

    private static func appendQuoted(_ utf8: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        var run = 0
        for i in 0..<utf8.count {
            let b = utf8[i]
            guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run..<i]))
            run = i + 1
            switch b {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [92, 34])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [92, 92])
            case 0x0A: bytes.append(contentsOf: [92, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [92, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [92, UInt8(ascii: "t")])
            default:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(b >> 4)], hex[Int(b & 15)]])
            }
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run...]))
        bytes.append(UInt8(ascii: "\""))
    }

    /// `magnitude` in decimal, after a minus sign if `negative` (what `String(n)` writes, without making the string).
    private mutating func appendDecimal(_ magnitude: UInt64, negative: Bool) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 21) { digits in
            var start = digits.count
            var rest = magnitude
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            } while rest != 0
            if negative {
                start -= 1
                digits[start] = UInt8(ascii: "-")
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    /// Rewrites the members of the object just closed in key order (they sit between `object.start` and the end).
    private mutating func sortMembers(_ object: (start: Int, keys: [(key: String, at: Int)])) {
        guard object.keys.count > 1 else { return }
        let end = bytes.count
        var spans: [(key: String, range: Range<Int>)] = []
        spans.reserveCapacity(object.keys.count)
        for (i, member) in object.keys.enumerated() {
            // A member runs to the comma before the next one, or to the end of the object.
            let upper = i + 1 < object.keys.count ? object.keys[i + 1].at - 1 : end
            spans.append((member.key, member.at..<upper))
        }
        spans.sort { $0.key < $1.key }
        var sorted: [UInt8] = []
        sorted.reserveCapacity(end - object.start)
        for (i, span) in spans.enumerated() {
            if i > 0 { sorted.append(UInt8(ascii: ",")) }
            sorted.append(contentsOf: bytes[span.range])
        }
        bytes.replaceSubrange(object.start..<end, with: sorted)
    }
}

// MARK: - JSONDocument

/// A value that writes itself as JSON with a `JSONWriter`: its `write(to:)` is its one field list.
public protocol JSONDocument {
    /// Writes the value as one JSON value.
    func write(to json: inout JSONWriter)
}
