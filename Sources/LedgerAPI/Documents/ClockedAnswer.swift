import LedgerCore

/// Where the digits of a document's two clocks lie in its JSON text.
struct ClockSpans {
    var at: Range<Int> = 0..<0
    var asOf: Range<Int> = 0..<0

    /// Writes the members `at` and `asOf` into the object `o` is writing, noting where their digits lie.
    mutating func writeClocks(at: UnixMillis, asOf: UInt64?, to o: inout JSONWriter) {
        o.key("at")
        let atStart = o.byteCount
        o.number(at)
        self.at = atStart..<o.byteCount
        o.key("asOf")
        let asOfStart = o.byteCount
        o.number(asOf)
        self.asOf = asOfStart..<o.byteCount
    }
}

/// The body of a customer's or a subscription's answer (its JSON text and a newline) with the digits of its two
/// clocks, `at` and `asOf`, left out, to be written with each request's own: what the server's `AnswerCache` keeps.
/// Within the span an answer is kept for, and while no commit changed what it read, only these two numbers differ
/// from one request to the next (`at` is the request's instant, `asOf` the log's last seq), so the answer is written
/// as the uncached path writes it, byte for byte, without reading or encoding anything.
public struct ClockedAnswer: Sendable {
    /// The body without the two numbers.
    private let text: [UInt8]
    /// Where in `text` the digits of `at` go, and then those of `asOf`.
    private let atOffset: Int
    private let asOfOffset: Int

    public init(_ view: CustomerView) { self.init { view.writeLocatingClocks(to: &$0) } }

    public init(_ view: TimelineView) { self.init { view.writeLocatingClocks(to: &$0) } }

    private init(writing body: (inout JSONWriter) -> ClockSpans) {
        var json = JSONWriter()
        let spans = body(&json)
        var text: [UInt8] = []
        json.withBytes { bytes in
            text.reserveCapacity(bytes.count + 1 - spans.at.count - spans.asOf.count)
            text.append(contentsOf: bytes[..<spans.at.lowerBound])
            text.append(contentsOf: bytes[spans.at.upperBound..<spans.asOf.lowerBound])
            text.append(contentsOf: bytes[spans.asOf.upperBound...])
        }
        text.append(UInt8(ascii: "\n"))
        self.text = text
        atOffset = spans.at.lowerBound
        asOfOffset = spans.asOf.lowerBound - spans.at.count
    }

    /// The body's length with these clocks.
    public func count(at: UnixMillis, asOf: UInt64) -> Int {
        text.count + Self.digits(at.magnitude) + (at < 0 ? 1 : 0) + Self.digits(asOf)
    }

    /// Writes the body with these clocks to `start`, which has room for `count(at:asOf:)` bytes; returns that
    /// count.
    public func write(at: UnixMillis, asOf: UInt64, to start: UnsafeMutableRawPointer) -> Int {
        text.withUnsafeBytes { text in
            var out = start
            func copy(_ range: Range<Int>) {
                guard !range.isEmpty else { return }
                out.copyMemory(from: text.baseAddress! + range.lowerBound, byteCount: range.count)
                out += range.count
            }
            func decimal(_ magnitude: UInt64) {
                let n = Self.digits(magnitude)
                var rest = magnitude
                for i in stride(from: n - 1, through: 0, by: -1) {
                    out.storeBytes(of: UInt8(ascii: "0") + UInt8(rest % 10), toByteOffset: i, as: UInt8.self)
                    rest /= 10
                }
                out += n
            }
            copy(0..<atOffset)
            if at < 0 {
                out.storeBytes(of: UInt8(ascii: "-"), as: UInt8.self)
                out += 1
            }
            decimal(at.magnitude)
            copy(atOffset..<asOfOffset)
            decimal(asOf)
            copy(asOfOffset..<text.count)
            return out - start
        }
    }

    /// The body with these clocks.
    public func bytes(at: UnixMillis, asOf: UInt64) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count(at: at, asOf: asOf)) { buffer, initialized in
            initialized = write(at: at, asOf: asOf, to: UnsafeMutableRawPointer(buffer.baseAddress!))
        }
    }

    /// Decimal digits of `n` (1 for 0).
    static func digits(_ n: UInt64) -> Int {
        var count = 1
        var rest = n
        while rest >= 10 {
            rest /= 10
            count += 1
        }
        return count
    }
}
