@testable import LedgerCore
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
