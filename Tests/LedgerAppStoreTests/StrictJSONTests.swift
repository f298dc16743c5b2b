import LedgerAppStore
import LedgerCore
import LedgerTestSupport
import LedgerErrors
import Testing

// MARK: - RFC 8259, strictly

/// One parser, strict: what RFC 8259 does not allow is `invalid_json` with what was wrong and at which byte (the
/// story: a trailing comma was appended as an event, UTF-16 was read, empty ids were accepted).
@Suite("Strict JSON")
struct StrictJSONTests {
    typealias F = AppleFixtures

    /// A renewal info whose `note` member holds `value` (raw JSON text).
    static func renewal(note value: String) -> [UInt8] {
        Array(#"{"originalTransactionId":"2000000000000001","signedDate":1605243570000,"note":\#(value)}"#.utf8)
    }

    @Test(
        "Malformed text is invalid_json, saying what and where",
        arguments: [
            // (text, what the message says, byte offset)
            (#"{"notification_type":"DID_RENEW",}"#, "trailing comma before '}'", 33),
            (#"{"a":1,}"#, "trailing comma before '}'", 7),
            (#"{"originalTransactionId":"1","x":[1,2,]}"#, "trailing comma before ']'", 38),
            (#"{"originalTransactionId":"1","x":01}"#, "number with a leading zero", 33),
            (#"{"originalTransactionId":"1","x":-007}"#, "number with a leading zero", 34),
            (#"{"originalTransactionId":"1","x":"\ud800"}"#, #"lone high surrogate \uD800"#, 34),
            (#"{"originalTransactionId":"1","x":"\ud800\u0041"}"#, #"high surrogate \uD800 followed by \u0041"#, 34),
            (#"{"originalTransactionId":"1","x":"\udc00 low"}"#, #"lone low surrogate \uDC00"#, 34),
            ("{\"originalTransactionId\":\"1\",\"x\":\"tab\there\"}", "control character byte 0x09 in a string", 37),
            ("{\"originalTransactionId\":\"1\",\"x\":\"nul\u{0}\"}", "control character byte 0x00 in a string", 37),
            (#"{"originalTransactionId":"1","x":"\x"}"#, #"invalid escape \x"#, 34),
            (#"{"originalTransactionId":"1","x":"\u12"}"#, "\\u escape needs four hex digits, found '\"'", 38),
            (#"{"originalTransactionId":"1","originalTransactionId":"2"}"#, #"duplicate member name "originalTransactionId""#, 29),
            (#"{"originalTransactionId":"1","x":123456789012345678901234}"#, "integer 123456789012345678901234 does not fit in 64 bits", 33),
            (#"{"originalTransactionId":"1","x":-9223372036854775809}"#, "does not fit in 64 bits", 33),
            (#"{"originalTransactionId":"1","x":1e400}"#, "number 1e400 is beyond the range of a double", 33),
            (#"{"originalTransactionId":"1","x":NaN}"#, "unexpected 'N' where a value should be", 33),
            (#"{"originalTransactionId":"1","x":Infinity}"#, "unexpected 'I' where a value should be", 33),
            (#"{"originalTransactionId":"1","x":-Infinity}"#, "unexpected 'I' in a number", 34),
            (#"{"originalTransactionId":"1"} x"#, "unexpected 'x' after the value", 30),
            (#"{"originalTransactionId":"1"}{}"#, "unexpected '{' after the value", 29),
            (#"{"originalTransactionId":"1","x":tru}"#, "invalid literal (expected 'true')", 33),
            (#"{"originalTransactionId":"1","x":1.}"#, "unexpected '}' after a decimal point", 35),
            (#"{"originalTransactionId":"1","x":"unterminated}"#, "unterminated string", 33),
            (#"{"originalTransactionId":"1" "x":1}"#, "unexpected '\"' in an object", 29),
            (#"{'originalTransactionId':"1"}"#, "unexpected ''' where a member name", 1),
        ])
    func malformed(text: String, what: String, offset: Int) throws {
        let refused = try #require(refusal(Array(text.utf8)), "\(text) was accepted")
        #expect(refused.code == "invalid_json", "\(text): \(refused)")
        #expect(refused.message.contains(what), "\(text): \(refused.message)")
        #expect(refused.message.hasSuffix("at byte \(offset)"), "\(text): \(refused.message)")
    }

    @Test("Bytes that are not UTF-8 are refused where they are, in and out of strings")
    func invalidUTF8() throws {
        let prefix = Array(#"{"originalTransactionId":"1","x":"ab"#.utf8)
        for bad: [UInt8] in [[0xC3, 0x28], [0xFF], [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0xF4, 0x90, 0x80, 0x80]] {
            let refused = try #require(refusal(prefix + bad + Array(#"cd"}"#.utf8)))
            #expect(refused.code == "invalid_json")
            #expect(refused.message.hasSuffix("invalid UTF-8 in a string at byte \(prefix.count)"), "\(refused.message)")
            // After an escape the offset is still the raw byte's.
            let escaped = Array(#"{"originalTransactionId":"1","x":"\n"#.utf8)
            let refusedAfterEscape = try #require(refusal(escaped + bad + Array(#""}"#.utf8)))
            #expect(refusedAfterEscape.message.hasSuffix("at byte \(escaped.count)"), "\(refusedAfterEscape.message)")
        }
        let outside = Array(#"{"originalTransactionId":"1","x":"#.utf8) + [0xE2, 0x80, 0x9C] + Array("1}".utf8)
        let refused = try #require(refusal(outside))
        #expect(refused.message.contains("unexpected byte 0xE2 where a value should be at byte 33"), "\(refused.message)")
    }

    @Test("UTF-16 and UTF-32 (with or without a byte order mark) and a UTF-8 byte order mark are refused")
    func encodings() throws {
        let text = #"{"originalTransactionId":"1"}"#
        func utf16(_ bigEndian: Bool) -> [UInt8] {
            text.utf16.flatMap { u in bigEndian ? [UInt8(u >> 8), UInt8(u & 0xFF)] : [UInt8(u & 0xFF), UInt8(u >> 8)] }
        }
        func utf32(_ bigEndian: Bool) -> [UInt8] {
            text.unicodeScalars.flatMap { s -> [UInt8] in
                let v = s.value
                let be = [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
                return bigEndian ? be : be.reversed()
            }
        }
        let cases: [([UInt8], String)] = [
            (utf16(false), "UTF-16LE"), (utf16(true), "UTF-16BE"), ([0xFF, 0xFE] + utf16(false), "UTF-16LE"),
            ([0xFE, 0xFF] + utf16(true), "UTF-16BE"), (utf32(false), "UTF-32LE"), (utf32(true), "UTF-32BE"),
            ([0x00, 0x00, 0xFE, 0xFF] + utf32(true), "UTF-32BE"), ([0xEF, 0xBB, 0xBF] + Array(text.utf8), "byte order mark"),
        ]
        for (bytes, name) in cases {
            let refused = try #require(refusal(bytes), "\(name) accepted")
            #expect(refused.code == "invalid_json")
            #expect(refused.message.contains(name), "\(name): \(refused.message)")
        }
        // The same text in UTF-8 is fine.
        #expect(refusal(Array(text.utf8)) == nil)
    }

    @Test("What RFC 8259 allows still parses: escapes, pairs, exponents, -0, whitespace, deep but within the limit")
    func valid() throws {
        for value in [
            #""\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t""#, "-0", "0.5e-3", "1E+2", "[]", "{}", #"[{"a":[null,true,false]}]"#,
            "123456789012345678", "-9223372036854775808", "9223372036854775807", "1e-400",
            String(repeating: "[", count: 60) + String(repeating: "]", count: 60), "\"\u{7F}\u{10FFFF}\"",
        ] {
            let input = try decode(Self.renewal(note: " \t\r\n" + value + " \n"))
            #expect(input.renewals.first?.extra["note"] != nil, "\(value)")
        }
    }

    @Test("Nesting beyond the limit is too_deep, also when the text is malformed as well")
    func depth() throws {
        let deep = String(repeating: "[", count: 100_000)
        #expect(refusal(Self.renewal(note: deep))?.code == "too_deep")
        #expect(refusal(Self.renewal(note: deep + "1,]"))?.code == "too_deep")
        #expect(refusal(Self.renewal(note: "[1,]," + deep))?.code == "too_deep")
    }

    @Test(
        "Empty required strings are missing_field",
        arguments: [
            (F.json(F.v2Transaction(productId: "")), "productId"),
            (F.json(F.v2Transaction(transactionId: "")), "transactionId"),
            (F.json(F.v2Transaction(originalTransactionId: "")), "originalTransactionId"),
            (F.json(F.v2Renewal(originalTransactionId: "")), "originalTransactionId"),
            (F.json(F.v2NotificationPayload(type: "", subtype: nil)), "notificationType"),
            (F.json(F.v2NotificationPayload(type: "TEST", subtype: nil, notificationUUID: "")), "notificationUUID"),
            (F.v1Notification(type: "", latest: [F.v1Transaction()]), "notification_type"),
            (F.receiptIOS7(inApp: [F.v1Transaction(productId: "")]), "receipt.in_app[0].product_id"),
            (F.receiptIOS7(inApp: [F.v1Transaction(transactionId: "")]), "receipt.in_app[0].transaction_id"),
            (F.binding(appUserId: "", originalTransactionId: "1"), "appUserId"),
            (F.binding(appUserId: "u1", originalTransactionId: ""), "originalTransactionId"),
            (F.envelope(type: "transaction", appUserId: "", payload: F.json(F.v2Transaction())), "appUserId"),
        ])
    func emptyRequired(body: [UInt8], field: String) throws {
        let refused = try #require(refusal(body, with: InputBoundsTests.lenient))
        #expect(refused.code == "missing_field")
        #expect(refused.message == "required field '\(field)' is empty")
    }
}
