import LedgerCodec
@testable import LedgerCore
import Testing

/// The reader reads a long varint one of two ways: without a check of the end per byte when ten bytes (the longest
/// varint) are left, byte by byte otherwise. Both must give the same values and refuse the same bytes.
@Suite struct BinaryReaderTests {
    static func read(_ bytes: [UInt8]) throws(FactDecodingError) -> (UInt64, Int) {
        let result = bytes.withUnsafeBytes { b in
            Result { () throws(FactDecodingError) in
                var r = BinaryReader(b)
                let value = try r.readVarint()
                return (value, r.offset)
            }
        }
        return try result.get()
    }

    /// Every length, each bit width's largest and smallest value, read with room after them (the unchecked way)
    /// and at the end of the buffer (byte by byte).
    @Test func varintsOfEveryLengthReadTheSameWithOrWithoutRoomAfterThem() throws {
        var values: [UInt64] = [0, 1, 127, 128, 300, 9_990, 1_600_000_000_000, .max]
        for bits in 1..<64 { values += [(1 << bits) - 1, 1 << bits] }
        for v in values {
            let encoded = BinaryWriterTests.varint(v)
            let padded = encoded + Array(repeating: 0xFF, count: 10)
            let (atEnd, endOffset) = try Self.read(encoded)
            let (withRoom, roomOffset) = try Self.read(padded)
            #expect(atEnd == v && withRoom == v, "\(v)")
            #expect(endOffset == encoded.count && roomOffset == encoded.count, "\(v)")
        }
    }

    /// Ten bytes that all say "more follows" are no varint, whatever comes after them; bytes that end while saying
    /// it are a truncated one.
    @Test func anOverlongOrCutVarintIsRefused() {
        let overlong = [UInt8](repeating: 0x80, count: 10) + [0x01]
        for bytes in [overlong, overlong + Array(repeating: 0, count: 10)] {
            #expect(throws: FactDecodingError("varint too long")) { try Self.read(bytes) }
        }
        for bytes: [UInt8] in [[0x80], [0xFF, 0xFF, 0xFF]] {
            #expect(throws: FactDecodingError("truncated")) { try Self.read(bytes) }
        }
    }
}
