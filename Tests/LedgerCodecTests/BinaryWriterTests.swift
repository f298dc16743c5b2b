import LedgerCodec
@testable import LedgerCore
import LedgerTestSupport
import Testing

/// The writer owns raw memory and grows it itself: what it writes must be the format, byte for byte, whatever the
/// sizes (a nested body past 127 bytes moves to make room for its longer length; a buffer past its capacity moves).
@Suite struct BinaryWriterTests {
    /// The format written by hand: key, length, bytes.
    static func field(_ tag: UInt32, _ body: [UInt8]) -> [UInt8] {
        varint(UInt64(tag) << 3 | 2) + varint(UInt64(body.count)) + body
    }

    static func varint(_ value: UInt64) -> [UInt8] {
        var v = value, out: [UInt8] = []
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        return out + [UInt8(v)]
    }

    @Test(arguments: [0, 1, 127, 128, 129, 300, 16_383, 16_384, 70_000])
    func aNestedMessageIsItsBodyLengthPrefixed(size: Int) {
        let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var w = BinaryWriter(capacity: 4)
        w.write(1, UInt64(300))
        w.writeNested(7) { inner in inner.write(2, bytes: body) }
        w.write(3, "after")
        let expected = Self.varint(1 << 3) + Self.varint(300) + Self.field(7, Self.field(2, body)) + Self.field(3, Array("after".utf8))
        #expect(w.finish() == expected)
    }

    @Test func idsAreWrittenAsTheirText() {
        for text in ["0", "9", "10", "99", "100", "2000000123456789", "9999999999999999999", "tx-1", ""] {
            var w = BinaryWriter(capacity: 1)
            w.write(4, CompactID(text))
            #expect(w.finish() == Self.field(4, Array(text.utf8)), "\(text)")
        }
    }

    /// Numbers of every length, and the powers of ten and their neighbours, against the standard library's text.
    @Test func decimalIdsOfEveryLength() {
        var rng = SplitMix64(seed: 7)
        var values: [UInt64] = [0, 1, 9, 10, 11, 99, 100, 101, .max]
        var p: UInt64 = 1
        for _ in 0..<19 {
            p &*= 10
            values += [p - 1, p, p + 1]
        }
        for digits in 1...20 {
            for _ in 0..<40 {
                let text = (0..<digits).map { i in String(i == 0 ? 1 + rng.next() % 9 : rng.next() % 10) }.joined()
                if let v = UInt64(text) { values.append(v) }
            }
        }
        for v in values {
            var w = BinaryWriter(capacity: 1)
            w.write(4, decimal: v)
            #expect(w.finish() == Self.field(4, Array(String(v).utf8)), "\(v)")
            #expect(CompactID.digitCount(v) == String(v).count)
        }
    }

    @Test func varintsAndHeadersAcrossGrowth() {
        var w = BinaryWriter(capacity: 1)
        var expected: [UInt8] = []
        for i in 0..<2_000 {
            let v = UInt64(i) &* 0x9E37_79B9_7F4A_7C15
            w.write(UInt32(i % 30 + 1), v)
            expected += Self.varint(UInt64(i % 30 + 1) << 3) + Self.varint(v)
        }
        w.writeBigEndian(0x0102_0304_0506_0708)
        expected += [1, 2, 3, 4, 5, 6, 7, 8]
        #expect(w.count == expected.count)
        #expect(w.finish() == expected)
    }
}
