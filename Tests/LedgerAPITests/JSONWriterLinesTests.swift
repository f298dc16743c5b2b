import Foundation
import LedgerAPI
import Testing

/// What the export writes with the writer besides values: binary as hex and base64 strings (exactly Foundation's
/// base64), lines of NDJSON in one buffer, and objects whose members come in key order already.
@Suite struct JSONWriterLinesTests {
    /// Every length up to three whole groups and beyond, so each padding (none, one `=`, two) and every byte value
    /// is seen.
    @Test func base64IsFoundationsBase64() {
        var random = SystemRandomNumberGenerator()
        for length in Array(0...40) + [255, 256, 257, 4_096, 70_001] {
            let bytes = (0..<length).map { i in length <= 40 ? UInt8(truncatingIfNeeded: i &* 37 &+ length) : UInt8.random(in: 0...255, using: &random) }
            var json = JSONWriter()
            bytes.withUnsafeBytes { json.string(base64Of: $0) }
            #expect(json.bytes == Array("\"\(Data(bytes).base64EncodedString())\"".utf8), "length \(length)")
            let text = bytes.withUnsafeBytes { Base64Text(of: $0) }
            #expect(text.bytes == Array(Data(bytes).base64EncodedString().utf8), "length \(length)")
            var again = JSONWriter()
            again.array([text, text]) { $0.string($1) }
            #expect(again.bytes == Array("[\"\(Data(bytes).base64EncodedString())\",\"\(Data(bytes).base64EncodedString())\"]".utf8))
        }
        var all = JSONWriter()
        let every = (0...255).map { UInt8($0) }
        every.withUnsafeBytes { all.string(base64Of: $0) }
        #expect(all.bytes == Array("\"\(Data(every).base64EncodedString())\"".utf8))
    }

    @Test func hexIsTwoLowercaseDigitsPerByte() {
        var json = JSONWriter()
        json.array([[], [0x00, 0x0F, 0xA0, 0xFF], Array(0...255)] as [[UInt8]]) { j, bytes in j.string(hexOf: bytes) }
        let expected = [[], [0x00, 0x0F, 0xA0, 0xFF], Array(0...255)].map { (bytes: [UInt8]) in
            "\"" + bytes.map { String(format: "%02x", $0) }.joined() + "\""
        }
        #expect(String(decoding: json.bytes, as: UTF8.self) == "[" + expected.joined(separator: ",") + "]")
    }

    @Test func linesAreValuesEachEndedByANewline() {
        var json = JSONWriter(sortedKeys: true)
        json.object { o in o.key("b"); o.number(Int64(1)); o.key("a"); o.string(hexOf: [1]) }
        json.endLine()
        json.string("x")
        json.endLine()
        #expect(String(decoding: json.bytes, as: UTF8.self) == "{\"a\":\"01\",\"b\":1}\n\"x\"\n")
        #expect(json.byteCount == json.bytes.count)
        json.removeAll()
        #expect(json.byteCount == 0)
        json.object { o in o.key("z"); o.null() }
        json.endLine()
        #expect(String(decoding: json.bytes, as: UTF8.self) == "{\"z\":null}\n")
    }

    /// Members written in key order stay as written; others are sorted, nested objects too.
    @Test func sortedKeysInOrderOrNot() {
        for keys in [["a", "b", "c"], ["c", "a", "b"], ["b", "a"], ["raw", "rawDigest"], ["rawDigest", "raw"]] {
            var json = JSONWriter(sortedKeys: true)
            json.object { o in
                for k in keys {
                    o.key(k)
                    o.object { inner in inner.key("y"); inner.number(Int64(2)); inner.key("x"); inner.string(k) }
                }
            }
            let expected = "{" + keys.sorted().map { "\"\($0)\":{\"x\":\"\($0)\",\"y\":2}" }.joined(separator: ",") + "}"
            #expect(String(decoding: json.bytes, as: UTF8.self) == expected)
        }
    }
}
