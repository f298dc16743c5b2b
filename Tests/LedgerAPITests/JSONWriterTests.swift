import Foundation
import LedgerAPI
import LedgerCore
@testable import LedgerStore
import LedgerErrors
import Testing

/// The writer itself: separators, nesting, escapes, sorted keys, and `Codable` values said exactly as Foundation's
/// `JSONEncoder` says them.
@Suite struct JSONWriterTests {
    static func sameJSON(_ ours: [UInt8], _ theirs: Data) throws -> Bool {
        let a = try JSONSerialization.jsonObject(with: Data(ours), options: [.fragmentsAllowed])
        let b = try JSONSerialization.jsonObject(with: theirs, options: [.fragmentsAllowed])
        return NSDictionary(dictionary: ["v": a]).isEqual(NSDictionary(dictionary: ["v": b]))
    }

    static func sameJSON(_ value: some Encodable) throws -> Bool {
        try sameJSON(try JSONWriter.bytes(encoding: value), try JSONEncoder().encode(value))
    }

    @Test func nestingAndSeparators() throws {
        var json = JSONWriter()
        json.object { o in
            o.key("a"); o.array([1, 2] as [Int64]) { $0.number($1) }
            o.key("b"); o.object { _ in }
            o.key("c"); o.array([[Int64]]([[], [3]])) { j, inner in j.array(inner) { $0.number($1) } }
            o.key("d"); o.null()
            o.key("e\t"); o.bool(false)
        }
        #expect(String(decoding: json.bytes, as: UTF8.self) == #"{"a":[1,2],"b":{},"c":[[],[3]],"d":null,"e\t":false}"#)
    }

    /// Strings and integers written as they were written byte by byte and through `String(n)`: escapes at the
    /// start, middle and end, runs between them, multi-byte characters, every control character, the integer limits.
    @Test func stringsAndIntegersByteForByte() {
        func reference(_ s: String) -> [UInt8] {
            var out: [UInt8] = [34]
            for b in s.utf8 {
                switch b {
                case 34: out += [92, 34]
                case 92: out += [92, 92]
                case 0x0A: out += [92, 110]
                case 0x0D: out += [92, 114]
                case 0x09: out += [92, 116]
                case 0..<0x20: out += Array(String(format: "\\u%04x", b).utf8)
                default: out.append(b)
                }
            }
            return out + [34]
        }
        let controls = String(decoding: (0..<0x20).map { UInt8($0) }, as: UTF8.self)
        for s in ["", "plain", "\"", "\\", "a\"b\\c", "\nstart", "end\t", "é 🍎 \u{07}x", controls, controls + "tail",
            String(repeating: "long run ", count: 40) + "\"" + String(repeating: "é", count: 30)]
        {
            var json = JSONWriter()
            json.string(s)
            #expect(json.bytes == reference(s), "\(s.debugDescription)")
        }
        // Every position of one character to escape in strings of 1 to 40 bytes (the writer scans eight at a time).
        for length in 1...40 {
            for position in 0..<length {
                for special in ["\"", "\\", "\n", "\u{1f}"] {
                    let s = String(repeating: "a", count: position) + special + String(repeating: "é", count: (length - position) / 2)
                    var json = JSONWriter()
                    json.string(s)
                    #expect(json.bytes == reference(s), "\(s.debugDescription)")
                }
            }
        }
        for n: Int64 in [0, 1, -1, 9, 10, -10, 1_700_000_000_000, Int64.max, Int64.min, Int64.min + 1] {
            var json = JSONWriter()
            json.number(n)
            #expect(json.bytes == Array(String(n).utf8))
        }
        for n: UInt64 in [0, 7, 18_446_744_073_709_551_615] {
            var json = JSONWriter()
            json.number(n)
            #expect(json.bytes == Array(String(n).utf8))
        }
    }

    @Test func sortedKeysOrderEveryObjectAsFoundationDoes() throws {
        var json = JSONWriter(sortedKeys: true)
        json.object { o in
            o.key("b"); o.object { i in i.key("z"); i.number(1 as Int64); i.key("Z"); i.number(2 as Int64); i.key("_"); i.null() }
            o.key("a_b"); o.array(["x"]) { $0.string($1) }
            o.key("aB"); o.bool(true)
            o.key("a"); o.string("/")
        }
        #expect(String(decoding: json.bytes, as: UTF8.self) == #"{"a":"/","aB":true,"a_b":["x"],"b":{"Z":2,"_":null,"z":1}}"#)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let dictionary = ["Ab": 3, "Z": 9, "_x": 10, "a1": 4, "a10": 5, "a2": 6, "aB": 1, "a_b": 0, "ab": 2, "é": 7, "z": 8]
        #expect(try JSONWriter.bytes(encoding: dictionary, sortedKeys: true) == [UInt8](try encoder.encode(dictionary)))
    }

    struct Inner: Codable, Equatable {
        var name: String
        var values: [Int64]
        var nested: [String: [Double]]
        var flag: Bool?
    }

    struct Outer: Codable, Equatable {
        var text: String
        var optional: String?
        var inners: [Inner]
        var empty: [Inner]
        var emptyObject: [String: Int]
        var big: UInt64
        var negative: Int
        var fraction: Double
    }

    @Test func codableValuesNestedContainersEscapesAndNumbers() throws {
        let value = Outer(
            text: "quote \" backslash \\ newline \n tab \t bell \u{07} é 🍎", optional: nil,
            inners: [
                Inner(name: "a", values: [1, -2, Int64.max], nested: ["x": [0.5, 2, -1e-7]], flag: true),
                Inner(name: "b", values: [], nested: [:], flag: nil),
            ],
            empty: [], emptyObject: [:], big: UInt64.max, negative: Int.min, fraction: 1234.5678)
        #expect(try Self.sameJSON(value))
        let decoded = try JSONDecoder().decode(Outer.self, from: Data(try JSONWriter.bytes(encoding: value)))
        #expect(decoded == value)
        #expect(try Self.sameJSON(["a", "b"]))
        #expect(try Self.sameJSON(42))
        #expect(throws: (any Error).self) { try JSONWriter.bytes(encoding: Double.nan) }
    }

    @Test func aCodableValueInsideADocument() throws {
        var json = JSONWriter()
        json.beginObject()
        json.key("before"); json.number(1 as Int64)
        json.key("value"); try json.encodable(Inner(name: "n", values: [1], nested: ["k": [2]], flag: nil))
        json.key("after"); json.array([Inner]()) { _, _ in }
        json.endObject()
        #expect(
            String(decoding: json.bytes, as: UTF8.self)
                == #"{"before":1,"value":{"name":"n","values":[1],"nested":{"k":[2]}},"after":[]}"#)
    }
}

/// Append results: the document written member by member says what the store's `Codable` form says.
@Suite struct AppendResultJSONTests {
    @Test func resultsWriteAlike() throws {
        let results = [
            AppendResult(
                events: [
                    .init(seq: 6, kind: .transaction, transactionId: "1", originalTransactionId: "1"),
                    .init(seq: 7, kind: .notification, transactionId: nil, originalTransactionId: nil),
                ]),
            AppendResult.duplicate,
            AppendResult.rejected(code: "invalid_json", message: "unexpected \"end\"\n"),
        ]
        for r in results {
            #expect(try JSONWriterTests.sameJSON(JSONWriter.bytes(of: r), try JSONEncoder().encode(r)))
        }
        struct Results: Encodable { var results: [AppendResult] }
        #expect(
            try JSONWriterTests.sameJSON(
                JSONWriter.bytes(of: ResultsDocument(results: results)), try JSONEncoder().encode(Results(results: results))))
    }
}
