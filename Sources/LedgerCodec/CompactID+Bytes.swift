import LedgerCore

// An id's UTF-8 bytes, read and written without making its text: a decimal id (Apple's, 15 to 19 digits) is parsed
// from its bytes and written back digit by digit, where its text would be a heap string.

extension CompactID {
    /// The id whose text these bytes are.
    package init(utf8 bytes: UnsafeBufferPointer<UInt8>) {
        if let value = Self.decimalValue(bytes) {
            self.init(.decimal(value))
        } else {
            self.init(.text(String(decoding: bytes, as: UTF8.self)))
        }
    }

    /// The value of a canonical decimal text (digits only, no leading zero, at most 19 of them), or nil: the same as
    /// `CompactID(text)` decides, read eight digits at a time.
    @inline(__always)
    package static func decimalValue(_ b: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard b.count > 0, b.count <= 19, b[0] != 48 || b.count == 1, let base = b.baseAddress else { return nil }
        var value: UInt64 = 0
        var i = 0
        // Eight digits at a time (Apple's ids are 15 to 19 digits), then one at a time.
        while i + 8 <= b.count {
            guard let eight = eightDigits(UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)) else { return nil }
            value = value &* 100_000_000 &+ eight
            i += 8
        }
        while i < b.count {
            let digit = b[i] &- 48
            guard digit < 10 else { return nil }
            value = value &* 10 &+ UInt64(digit)
            i += 1
        }
        return value
    }

    /// The value of eight ASCII digits loaded little-endian (the first digit in the lowest byte), or nil when one of
    /// the bytes is not a digit: a byte is a digit when its high nibble is 3 and adding 6 keeps it there.
    @inline(__always)
    static func eightDigits(_ littleEndian: UInt64) -> UInt64? {
        let v = UInt64(littleEndian: littleEndian)
        let high: UInt64 = 0xF0F0_F0F0_F0F0_F0F0
        guard (v & high) | (((v &+ 0x0606_0606_0606_0606) & high) >> 4) == 0x3333_3333_3333_3333 else { return nil }
        // Pairs, then quads, then the eight: each step multiplies the upper half by 10^k and adds the lower.
        var x = ((v & 0x0F0F_0F0F_0F0F_0F0F) &* 2561) >> 8
        x = ((x & 0x00FF_00FF_00FF_00FF) &* 6_553_601) >> 16
        return ((x & 0x0000_FFFF_0000_FFFF) &* 42_949_672_960_001) >> 32
    }

    /// The text's UTF-8 bytes; a decimal is written into a buffer on the stack.
    package func withUTF8<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        switch storage {
        case .decimal(let v):
            return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
                let n = Self.digitCount(v)
                Self.writeDigits(v, count: n, to: buffer.baseAddress!)
                return try body(UnsafeBufferPointer(rebasing: buffer[0..<n]))
            }
        case .text(var s):
            return try s.withUTF8(body)
        }
    }

    /// Writes the `count` decimal digits of `value` (`digitCount(value)`) at `out`: eight at a time from the end
    /// (one 64-bit division each), then one at a time.
    @inline(__always)
    static func writeDigits(_ value: UInt64, count: Int, to out: UnsafeMutablePointer<UInt8>) {
        var v = value
        var i = count
        while i >= 8 {
            let q = v / 100_000_000
            writeEightDigits(UInt32(truncatingIfNeeded: v &- q &* 100_000_000), to: out + (i - 8))
            v = q
            i -= 8
        }
        while i > 0 {
            i -= 1
            let q = v / 10
            out[i] = UInt8(truncatingIfNeeded: 48 &+ v &- q &* 10)
            v = q
        }
    }

    /// The eight digits of `x` (< 10^8, leading zeros written): split into halves, then pairs, so that the
    /// divisions (by constants: multiplications) do not wait on one another.
    @inline(__always)
    static func writeEightDigits(_ x: UInt32, to out: UnsafeMutablePointer<UInt8>) {
        let high = x / 10_000, low = x &- high &* 10_000
        let a = high / 100, b = high &- a &* 100, c = low / 100, d = low &- c &* 100
        writePair(a, to: out)
        writePair(b, to: out + 2)
        writePair(c, to: out + 4)
        writePair(d, to: out + 6)
    }

    @inline(__always)
    private static func writePair(_ p: UInt32, to out: UnsafeMutablePointer<UInt8>) {
        let tens = p / 10
        out[0] = UInt8(truncatingIfNeeded: 48 &+ tens)
        out[1] = UInt8(truncatingIfNeeded: 48 &+ p &- tens &* 10)
    }
}

extension OriginalTransactionID {
    /// The id's UTF-8 bytes, without making a string of a decimal id (how the store keys a subscription).
    public func withUTF8<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R { try id.withUTF8(body) }

    /// The id whose UTF-8 bytes these are.
    public init(utf8 bytes: UnsafeBufferPointer<UInt8>) { self.init(CompactID(utf8: bytes)) }
}
