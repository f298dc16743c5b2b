import LedgerCore

/// An enum stored as one byte: its position among `allCases` (so a new case goes at the end and none is removed).
protocol ByteCoded: CaseIterable, Equatable where AllCases == [Self] {
    /// `allCases`, copied once into memory that is never freed (`makeCodeTable()`): the synthesized `allCases`
    /// builds an array on every call, and even a stored array is retained and released on every read, by every
    /// thread of a replay at once.
    static var byCode: UnsafeBufferPointer<Self> { get }
}

extension ByteCoded {
    /// The table `byCode` is made of.
    static func makeCodeTable() -> UnsafeBufferPointer<Self> {
        let cases = allCases
        let table = UnsafeMutableBufferPointer<Self>.allocate(capacity: cases.count)
        _ = table.initialize(from: cases)
        return UnsafeBufferPointer(table)
    }

    var code: UInt8 {
        let table = Self.byCode
        var i = 0
        while table[i] != self { i += 1 }
        return UInt8(i)
    }

    init?(code: UInt8) {
        let table = Self.byCode
        guard Int(code) < table.count else { return nil }
        self = table[Int(code)]
    }
}

// The enums stored as one byte. `ChangeKind`'s code is also its place in the order changes are listed in
// (`ChangeKind.position`), so a new kind goes last there too.
extension FactSource: ByteCoded { nonisolated(unsafe) static let byCode = makeCodeTable() }
extension SignatureStatus: ByteCoded { nonisolated(unsafe) static let byCode = makeCodeTable() }
extension ProductType: ByteCoded { nonisolated(unsafe) static let byCode = makeCodeTable() }
extension ChangeKind: ByteCoded { nonisolated(unsafe) static let byCode = makeCodeTable() }
extension OwnerCause: ByteCoded { nonisolated(unsafe) static let byCode = makeCodeTable() }
