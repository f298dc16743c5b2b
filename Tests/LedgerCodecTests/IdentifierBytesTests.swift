import LedgerCodec
@testable import LedgerCore
import LedgerTestSupport
import Testing

/// An id's bytes, read and written without making its text (`CompactID`): every observable behaviour must be that of
/// the text itself.
@Suite struct IdentifierBytesTests {
    static let samples = [
        "0", "7", "10", "99", "100", "0123", "00", "2000000123456789", "9999999999999999999",  // 19 digits: a number
        "10000000000000000000", "18446744073709551615", "18446744073709551616",  // 20 digits: kept as text
        "", "abc", "tx-1", "12a", "-5", "１２３", "é",
    ]

    @Test func theTextRoundTripsAndOnlyCanonicalDecimalsBecomeNumbers() {
        for s in Self.samples {
            #expect(TransactionID(s).rawValue == s)
            #expect(OriginalTransactionID(s).rawValue == s)
            let id = CompactID(s)
            let canonical = s.count <= 19 && !s.isEmpty && s.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }
                && (s.first != "0" || s == "0")
            if case .decimal = id.storage { #expect(canonical, "\(s) became a number") } else { #expect(!canonical, "\(s) stayed text") }
            #expect(id.utf8Count == s.utf8.count)
            #expect(id.withUTF8 { Array($0) } == Array(s.utf8))
            #expect(s.utf8.withContiguousStorageIfAvailable { CompactID(utf8: $0) } == id)
        }
    }

    /// The parser reads eight digits at a time: a non-digit anywhere in a word (the bytes just below '0' and just
    /// above '9' included) makes the text an id of text, and every digit string up to 19 digits gets its value.
    @Test func theDecimalParserAgreesWithTheStandardLibrary() {
        var rng = SplitMix64(seed: 19)
        for length in 1...20 {
            for _ in 0..<50 {
                var digits = (0..<length).map { _ in UInt8(48 + rng.next() % 10) }
                if digits.count > 1 && digits[0] == 48 { digits[0] = 49 }
                let value = digits.withUnsafeBufferPointer { CompactID.decimalValue($0) }
                let text = String(decoding: digits, as: UTF8.self)
                #expect(value == (length <= 19 ? UInt64(text) : nil), "\(text)")
                for position in 0..<length {
                    for bad: UInt8 in [47, 58, 32, 97, 0, 0x80 | 48] {
                        var broken = digits
                        broken[position] = bad
                        #expect(broken.withUnsafeBufferPointer { CompactID.decimalValue($0) } == nil, "\(broken)")
                    }
                }
            }
        }
    }

    @Test func anIdIsStoredAsItsText() throws {
        // The encoding does not depend on how the id is kept: the field holds the text's bytes.
        for s in ["2000000123456789", "0123", "tx-1"] {
            let t = TransactionFact(transactionId: TransactionID(s), originalTransactionId: "5", productId: "p", purchaseDate: 1)
            let bytes = Fact.transaction(t).encoded()
            // version, kind, then field 1 (key 0x0A), its length, its bytes.
            #expect(Array(bytes[2..<(4 + s.utf8.count)]) == [0x0A, UInt8(s.utf8.count)] + Array(s.utf8))
            #expect(try Fact(decoding: bytes) == .transaction(t))
        }
    }
}
