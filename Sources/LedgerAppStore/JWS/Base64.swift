// MARK: - Base64

/// Decodes base64 in either alphabet (standard for x5c, URL-safe for JWS segments), padding optional.
enum Base64 {
    private static let table: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            t[Int(c)] = UInt8(i)
        }
        t[Int(UInt8(ascii: "-"))] = 62
        t[Int(UInt8(ascii: "_"))] = 63
        return t
    }()

    /// True when every byte could belong to a compact JWS as this decoder reads it: either base64 alphabet, `=`
    /// padding, and `.` between segments. Bare text failing this (spaces, braces, quotes) is not taken for a JWS.
    static func isPlausibleJWS(_ text: ArraySlice<UInt8>) -> Bool {
        table.withUnsafeBufferPointer { table in
            text.withUnsafeBufferPointer { bytes in
                for b in bytes where table[Int(b)] == 0xFF && b != UInt8(ascii: "=") && b != UInt8(ascii: ".") {
                    return false
                }
                return true
            }
        }
    }

    /// Nil when a byte is outside both alphabets, or the length cannot be base64.
    static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        if let result = text.withContiguousStorageIfAvailable({ decode(buffer: $0) }) { return result }
        return Array(text).withUnsafeBufferPointer { decode(buffer: $0) }
    }

    private static func decode(buffer: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        table.withUnsafeBufferPointer { table in
            var failed = false
            let out = [UInt8](unsafeUninitializedCapacity: buffer.count * 3 / 4 + 3) { out, written in
                var n = 0
                // Fast path: whole 4-character groups of alphabet characters (3 bytes each). It stops at the first
                // group holding padding or a foreign byte, on a group boundary, where the general loop resumes with
                // exactly the state it would have had (no pending bits).
                var start = 0
                while start + 4 <= buffer.count {
                    let a = table[Int(buffer[start])]
                    let b = table[Int(buffer[start + 1])]
                    let c = table[Int(buffer[start + 2])]
                    let d = table[Int(buffer[start + 3])]
                    if (a | b | c | d) & 0x80 != 0 { break }
                    let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    out[n] = UInt8(truncatingIfNeeded: v >> 16)
                    out[n + 1] = UInt8(truncatingIfNeeded: v >> 8)
                    out[n + 2] = UInt8(truncatingIfNeeded: v)
                    n += 3
                    start += 4
                }
                var accumulator: UInt32 = 0
                var bits = 0
                var padding = 0
                for byte in UnsafeBufferPointer(rebasing: buffer[start...]) {
                    if byte == UInt8(ascii: "=") {
                        padding += 1
                        continue
                    }
                    let v = table[Int(byte)]
                    if padding > 0 || v == 0xFF {
                        failed = true
                        break
                    }
                    accumulator = (accumulator << 6) | UInt32(v)
                    bits += 6
                    if bits >= 8 {
                        bits -= 8
                        out[n] = UInt8(truncatingIfNeeded: accumulator >> UInt32(bits))
                        n += 1
                    }
                }
                if bits >= 6 || padding > 2 { failed = true }
                written = n
            }
            return failed ? nil : out
        }
    }
}
