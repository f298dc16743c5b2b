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
    /// The JSON text written so far (a copy; `withBytes` reads it in place).
    public var bytes: [UInt8] { Array(UnsafeBufferPointer(start: storage.base, count: count)) }
    /// Every object's members in key order instead of the order written.
    public let sortedKeys: Bool

    /// Where the text is written: raw memory the writer owns, written with one capacity check per value rather than
    /// an array append per byte, which pays that check for every byte of every answer a read writes.
    private var storage: Storage
    /// Bytes written.
    private var count = 0
    /// For each open container (innermost last): whether it is an object, and whether the container around it was
    /// still empty when it opened (restored when it closes).
    private var open: [Container] = []
    /// The innermost open container has no member or element yet (no comma before the next).
    private var innerIsEmpty = true
    /// A key was just written: the next value is its value, not a new member.
    private var afterKey = false
    /// With `sortedKeys`, for each open object: where its members begin, and each member's key and first byte.
    private var members: [(start: Int, keys: [(key: String, at: Int)])] = []

    private struct Container {
        var isObject: Bool
        var outerWasEmpty: Bool
    }

    private final class Storage {
        let base: UnsafeMutablePointer<UInt8>
        let capacity: Int

        init(capacity: Int) {
            self.capacity = Swift.max(capacity, 64)
            base = .allocate(capacity: self.capacity)
        }

        deinit { base.deallocate() }
    }

    public init(capacity: Int = 1024, sortedKeys: Bool = false) {
        self.sortedKeys = sortedKeys
        storage = Storage(capacity: capacity)
    }

    /// How many containers are open.
    public var depth: Int { open.count }

    /// Reads the JSON text written so far in place.
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: storage.base, count: count))
    }

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

    // MARK: - Raw output

    /// Room for `n` more bytes, in memory this writer alone holds (a copy of the writer gets its own on its first
    /// write).
    @inline(__always)
    private mutating func reserve(_ n: Int) {
        if _slowPath(count + n > storage.capacity || !isKnownUniquelyReferenced(&storage)) { grow(n) }
    }

    private mutating func grow(_ n: Int) {
        let larger = Storage(capacity: Swift.max(storage.capacity * 2, count + n))
        larger.base.update(from: storage.base, count: count)
        storage = larger
    }

    @inline(__always)
    private mutating func put(_ byte: UInt8) {
        reserve(1)
        storage.base[count] = byte
        count += 1
    }

    /// Copies `bytes`; room must be reserved.
    @inline(__always)
    private mutating func putReserved(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let from = bytes.baseAddress, bytes.count > 0 else { return }
        (storage.base + count).update(from: from, count: bytes.count)
        count += bytes.count
    }

    private mutating func put(_ text: StaticString) {
        reserve(text.utf8CodeUnitCount)
        text.withUTF8Buffer { putReserved($0) }
    }

    // MARK: - Containers

    /// Separates a value from the one before it in its container; after a key, the value needs no separator.
    @inline(__always)
    private mutating func beginValue() {
        if afterKey {
            afterKey = false
            return
        }
        guard !open.isEmpty else { return }
        if !innerIsEmpty { put(UInt8(ascii: ",")) }
        innerIsEmpty = false
    }

    private mutating func push(isObject: Bool) {
        open.append(Container(isObject: isObject, outerWasEmpty: innerIsEmpty))
        innerIsEmpty = true
    }

    /// Opens an object; write its members with `key` and one value each, then `endObject`.
    public mutating func beginObject() {
        beginValue()
        put(UInt8(ascii: "{"))
        push(isObject: true)
        if sortedKeys { members.append((count, [])) }
    }

    public mutating func endObject() {
        precondition(open.last?.isObject == true, "endObject without an open object")
        innerIsEmpty = open.removeLast().outerWasEmpty
        if sortedKeys { sortMembers(members.removeLast()) }
        put(UInt8(ascii: "}"))
    }

    /// Opens an array; write its elements, then `endArray`.
    public mutating func beginArray() {
        beginValue()
        put(UInt8(ascii: "["))
        push(isObject: false)
    }

    public mutating func endArray() {
        precondition(open.last?.isObject == false, "endArray without an open array")
        innerIsEmpty = open.removeLast().outerWasEmpty
        put(UInt8(ascii: "]"))
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
        if sortedKeys { members[members.count - 1].keys.append((name, count)) }
        appendString(name)
        put(UInt8(ascii: ":"))
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
        if d == d.rounded() && abs(d) < 1e15 {
            appendDecimal(Int64(d).magnitude, negative: d < 0)
        } else {
            var text = "\(d)"
            text.withUTF8 { utf8 in
                reserve(utf8.count)
                putReserved(utf8)
            }
        }
    }

    public mutating func bool(_ b: Bool) {
        beginValue()
        put(b ? "true" : "false")
    }

    public mutating func bool(_ b: Bool?) {
        guard let b else { return null() }
        bool(b)
    }

    public mutating func null() {
        beginValue()
        put("null")
    }

    /// Writes `document` as the next value.
    @inline(__always)
    public mutating func document(_ document: some JSONDocument) { document.write(to: &self) }

    /// `bytes` as a string of lowercase hex digits, two per byte (digests and chain links).
    public mutating func string(hexOf bytes: some Collection<UInt8>) {
        beginValue()
        let n = bytes.count * 2 + 2
        reserve(n)
        let digits: StaticString = "0123456789abcdef"
        digits.withUTF8Buffer { digits in
            var at = storage.base + count
            at.pointee = UInt8(ascii: "\"")
            for b in bytes {
                at[1] = digits[Int(b >> 4)]
                at[2] = digits[Int(b & 15)]
                at += 2
            }
            at[1] = UInt8(ascii: "\"")
        }
        count += n
    }

    /// `bytes` in standard base64 (RFC 4648 alphabet, `=` padding, no line breaks: what Foundation's
    /// `base64EncodedString()` writes), as a string, encoded straight into the text: the raw inputs of an export,
    /// which would otherwise be made into a `String` and scanned for escapes they never need.
    public mutating func string(base64Of bytes: UnsafeRawBufferPointer) {
        beginValue()
        let n = Base64Text.length(of: bytes.count) + 2
        reserve(n)
        storage.base[count] = UInt8(ascii: "\"")
        Base64Text.encode(bytes, into: storage.base + count + 1)
        storage.base[count + n - 1] = UInt8(ascii: "\"")
        count += n
    }

    /// `text` as a string: base64 made once (`Base64Text`) and written as often as needed.
    public mutating func string(_ text: Base64Text) {
        beginValue()
        reserve(text.bytes.count + 2)
        put(UInt8(ascii: "\""))
        text.bytes.withUnsafeBufferPointer { putReserved($0) }
        put(UInt8(ascii: "\""))
    }

    // MARK: - Lines (NDJSON)

    /// How many bytes of text are written.
    public var byteCount: Int { count }

    /// Ends a line of NDJSON: a newline after a whole value (no container open).
    public mutating func endLine() {
        precondition(open.isEmpty && !afterKey, "a line ends after a whole value")
        put(UInt8(ascii: "\n"))
    }

    /// Forgets the text written so far, keeping the memory for what comes next (a buffer of lines written out
    /// whenever it holds enough). No container may be open.
    public mutating func removeAll() {
        precondition(open.isEmpty && !afterKey, "text is forgotten between values")
        reserve(0)
        count = 0
    }

    /// A floating-point value JSON cannot write.
    public struct NonFiniteNumber: Error, Hashable, Sendable {
        public var value: Double
    }

    // MARK: - Text

    /// `s` as a JSON string literal: the runs between characters to escape (most strings have none) copied whole.
    private mutating func appendString(_ s: String) {
        var s = s
        s.withUTF8 { appendQuoted($0) }
    }

    private mutating func appendQuoted(_ utf8: UnsafeBufferPointer<UInt8>) {
        reserve(utf8.count + 2)
        storage.base[count] = UInt8(ascii: "\"")
        count += 1
        var run = 0
        // Eight bytes at a time up to the first that may need escaping, then byte by byte.
        var clean = 0
        if let start = utf8.baseAddress {
            let raw = UnsafeRawPointer(start)
            while clean + 8 <= utf8.count, !Self.mayNeedEscape(raw.loadUnaligned(fromByteOffset: clean, as: UInt64.self)) {
                clean += 8
            }
            // Only a partial word left: its string's eight last bytes, overlapping the clean ones.
            if clean < utf8.count, clean + 8 > utf8.count, utf8.count >= 8,
                !Self.mayNeedEscape(raw.loadUnaligned(fromByteOffset: utf8.count - 8, as: UInt64.self))
            {
                clean = utf8.count
            }
        }
        for i in clean..<utf8.count {
            let b = utf8[i]
            guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
            putReserved(UnsafeBufferPointer(rebasing: utf8[run..<i]))
            run = i + 1
            // The escape takes up to 6 bytes for the 1 reserved; the rest of the string and the quote stay reserved.
            reserve(6 + utf8.count - run + 1)
            switch b {
            case UInt8(ascii: "\""): put("\\\"")
            case UInt8(ascii: "\\"): put("\\\\")
            case 0x0A: put("\\n")
            case 0x0D: put("\\r")
            case 0x09: put("\\t")
            default:
                let hex: StaticString = "0123456789abcdef"
                put("\\u00")
                hex.withUTF8Buffer { digits in
                    put(digits[Int(b >> 4)])
                    put(digits[Int(b & 15)])
                }
            }
        }
        putReserved(UnsafeBufferPointer(rebasing: utf8[run...]))
        storage.base[count] = UInt8(ascii: "\"")
        count += 1
    }

    /// Whether any of the eight bytes of `word` is a control character, `"` or `\\` (exact: the usual "has a byte
    /// less than n" and "has a zero byte" tests).
    @inline(__always)
    private static func mayNeedEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let control = (word &- ones &* 0x20) & ~word & highs
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        return control | ((quote &- ones) & ~quote & highs) | ((backslash &- ones) & ~backslash & highs) != 0
    }

    /// `magnitude` in decimal, after a minus sign if `negative` (what `String(n)` writes, without making the string).
    private mutating func appendDecimal(_ magnitude: UInt64, negative: Bool) {
        var digits = 1
        var bound: UInt64 = 10
        while digits < 20 && magnitude >= bound {
            digits += 1
            bound &*= 10
        }
        let size = digits + (negative ? 1 : 0)
        reserve(size)
        var at = count + size
        var rest = magnitude
        repeat {
            at -= 1
            storage.base[at] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        } while rest != 0
        if negative { storage.base[count] = UInt8(ascii: "-") }
        count += size
    }

    /// Rewrites the members of the object just closed in key order (they sit between `object.start` and the end).
    private mutating func sortMembers(_ object: (start: Int, keys: [(key: String, at: Int)])) {
        guard object.keys.count > 1 else { return }
        // Members written in key order already (documents that write themselves that way) stay as they are.
        var inOrder = true
        for i in 1..<object.keys.count where !(object.keys[i - 1].key < object.keys[i].key) {
            inOrder = false
            break
        }
        if inOrder { return }
        let end = count
        var spans: [(key: String, range: Range<Int>)] = []
        spans.reserveCapacity(object.keys.count)
        for (i, member) in object.keys.enumerated() {
            // A member runs to the comma before the next one, or to the end of the object.
            let upper = i + 1 < object.keys.count ? object.keys[i + 1].at - 1 : end
            spans.append((member.key, member.at..<upper))
        }
        spans.sort { $0.key < $1.key }
        reserve(0)  // the memory is this writer's alone before it is rewritten
        let text = UnsafeBufferPointer(start: storage.base, count: end)
        var sorted: [UInt8] = []
        sorted.reserveCapacity(end - object.start)
        for (i, span) in spans.enumerated() {
            if i > 0 { sorted.append(UInt8(ascii: ",")) }
            sorted.append(contentsOf: text[span.range])
        }
        sorted.withUnsafeBufferPointer { (storage.base + object.start).update(from: $0.baseAddress!, count: $0.count) }
    }
}

// MARK: - Base64Text

/// Bytes in standard base64 (RFC 4648 alphabet, `=` padding, no line breaks: what Foundation's
/// `base64EncodedString()` writes), made once to be written many times (`JSONWriter.string(_:)`): an export repeats an
/// input's raw bytes on each of the events it produced.
public struct Base64Text {
    /// The base64 characters.
    public private(set) var bytes: [UInt8] = []

    public init() {}

    /// The base64 text of `source`.
    public init(of source: UnsafeRawBufferPointer) {
        bytes = [UInt8](unsafeUninitializedCapacity: Self.length(of: source.count)) { buffer, initialized in
            Self.encode(source, into: buffer.baseAddress!)
            initialized = buffer.count
        }
    }

    /// How many characters the base64 of `count` bytes takes.
    static func length(of count: Int) -> Int { (count + 2) / 3 * 4 }

    /// Writes the base64 of `source` (`length(of: source.count)` bytes) at `out`.
    static func encode(_ source: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<UInt8>) {
        let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        alphabet.withUTF8Buffer { table in
            var o = 0
            var i = 0
            let whole = source.count - source.count % 3
            while i < whole {
                let word = UInt32(source[i]) << 16 | UInt32(source[i + 1]) << 8 | UInt32(source[i + 2])
                out[o] = table[Int(word >> 18)]
                out[o + 1] = table[Int(word >> 12 & 63)]
                out[o + 2] = table[Int(word >> 6 & 63)]
                out[o + 3] = table[Int(word & 63)]
                i += 3
                o += 4
            }
            switch source.count - whole {
            case 1:
                let word = UInt32(source[i]) << 16
                out[o] = table[Int(word >> 18)]
                out[o + 1] = table[Int(word >> 12 & 63)]
                out[o + 2] = UInt8(ascii: "=")
                out[o + 3] = UInt8(ascii: "=")
            case 2:
                let word = UInt32(source[i]) << 16 | UInt32(source[i + 1]) << 8
                out[o] = table[Int(word >> 18)]
                out[o + 1] = table[Int(word >> 12 & 63)]
                out[o + 2] = table[Int(word >> 6 & 63)]
                out[o + 3] = UInt8(ascii: "=")
            default: break
            }
        }
    }
}

// MARK: - JSONDocument

/// A value that writes itself as JSON with a `JSONWriter`: its `write(to:)` is its one field list.
public protocol JSONDocument {
    /// Writes the value as one JSON value.
    func write(to json: inout JSONWriter)
}
