import Crypto
import Foundation

/// The log's running hash: each event's link is SHA-256(previous link ‖ seq ‖ event key ‖ 0x00 ‖ stored event).
/// Altering, removing or reordering any stored event changes every later link, which `verify` recomputes.
enum HashChain {
    /// The link before the first event.
    static let genesis = [UInt8](repeating: 0, count: 32)

    static func link(previous: [UInt8], seq: UInt64, eventKey: some Collection<UInt8>, event: UnsafeRawBufferPointer)
        -> [UInt8]
    {
        var h = SHA256()
        h.update(data: previous)
        withUnsafeBytes(of: seq.bigEndian) { h.update(bufferPointer: $0) }
        h.update(data: Array(eventKey))
        h.update(data: [0])
        h.update(bufferPointer: event)
        return Array(h.finalize())
    }

    static func link(previous: [UInt8], seq: UInt64, eventKey: String, event: [UInt8]) -> [UInt8] {
        event.withUnsafeBytes { link(previous: previous, seq: seq, eventKey: eventKey.utf8, event: $0) }
    }
}

/// SHA-256 as bytes.
func sha256(_ bytes: some DataProtocol) -> [UInt8] { Array(SHA256.hash(data: bytes)) }

/// Lowercase hex, for digests in reports.
func hex(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 15)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// The bytes of a hex string (either case); nil when it is not one.
package func bytes(ofHex text: some StringProtocol) -> [UInt8]? {
    let digits = Array(text.utf8)
    guard digits.count % 2 == 0 else { return nil }
    func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
    var out: [UInt8] = []
    out.reserveCapacity(digits.count / 2)
    var i = 0
    while i < digits.count {
        guard let high = nibble(digits[i]), let low = nibble(digits[i + 1]) else { return nil }
        out.append(high << 4 | low)
        i += 2
    }
    return out
}
