// MARK: - Hex

/// Lowercase hexadecimal text of bytes (digests, V1 notification ids).
enum Hex {
    static func lowercase(_ bytes: some Sequence<UInt8>) -> String {
        let digits: StaticString = "0123456789abcdef"
        var out = [UInt8]()
        out.reserveCapacity(64)
        digits.withUTF8Buffer { d in
            for byte in bytes {
                out.append(d[Int(byte >> 4)])
                out.append(d[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
