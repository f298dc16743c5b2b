/// Lowercase hexadecimal text of bytes (digests and chain links in documents), two digits a byte.
/// - Complexity: O(n), one allocation for the text.
public func lowercaseHex(_ bytes: some Collection<UInt8>) -> String {
    let digits: StaticString = "0123456789abcdef"
    return String(unsafeUninitializedCapacity: bytes.count * 2) { out in
        digits.withUTF8Buffer { d in
            var i = 0
            for byte in bytes {
                out[i] = d[Int(byte >> 4)]
                out[i + 1] = d[Int(byte & 0x0F)]
                i += 2
            }
        }
        return bytes.count * 2
    }
}
