@testable import LedgerCore
import LedgerTestSupport
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
}
