@testable import LedgerCore
import Testing

/// Apple's ids are kept as numbers when they are canonical decimals (`CompactID`): every observable behaviour must be
/// that of the text itself.
@Suite struct IdentifierTests {
    static let samples = [
        "0", "7", "10", "99", "100", "0123", "00", "2000000123456789", "9999999999999999999",  // 19 digits: a number
        "10000000000000000000", "18446744073709551615", "18446744073709551616",  // 20 digits: kept as text
        "", "abc", "tx-1", "12a", "-5", "１２３", "é",
    ]

    /// The documented order on texts: decimal texts as numbers (shorter first), anything else by UTF-8 bytes.
    static func referenceLess(_ a: String, _ b: String) -> Bool {
        let digits = { (s: String) in !s.isEmpty && s.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }
        if a.utf8.count != b.utf8.count, digits(a), digits(b) { return a.utf8.count < b.utf8.count }
        return a.utf8.lexicographicallyPrecedes(b.utf8)
    }

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

    @Test func equalityHashingAndOrderFollowTheText() {
        for a in Self.samples {
            for b in Self.samples {
                let x = TransactionID(a), y = TransactionID(b)
                #expect((x == y) == (a == b), "\(a) == \(b)")
                if a == b { #expect(x.hashValue == y.hashValue) }
                #expect((x < y) == Self.referenceLess(a, b), "\(a) < \(b)")
                #expect((OriginalTransactionID(a) < OriginalTransactionID(b)) == Self.referenceLess(a, b))
                #expect(CompactID.utf8Less(CompactID(a), CompactID(b)) == a.utf8.lexicographicallyPrecedes(b.utf8), "bytes \(a) < \(b)")
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
