/// The largest transaction id and web order line item id a timeline's periods have ever had. Apple mints both in
/// increasing order (and they are decimal), so a transaction whose id and line item are above these, and that starts
/// after every period, is new (the common case: a renewal): `stepTransaction` then need not look through the periods
/// for the one it revises or restores.
///
/// It only ever answers "surely new" or "maybe known" (then the periods are looked through), so a stale bound costs a
/// scan, never a wrong result: bounds only grow. Derived from the periods, so excluded from `==` and hashing; a
/// timeline that does not know them (one decoded from a form that did not keep them) derives them on first use.
package struct IDBounds: Hashable, Sendable {
    /// False until derived from the periods; an empty timeline's are known.
    package var built = false
    /// The largest transaction id (decimal order) among the periods' ids and restored copies; nil when there is none
    /// or when some id is not decimal (`idsDecimal` false).
    package var maxId: TransactionID?
    package var idsDecimal = true
    /// The largest web order line item id (decimal order) the periods have had; as `maxId`.
    package var maxLineItem: CompactID?
    package var lineItemsDecimal = true

    package static func == (a: IDBounds, b: IDBounds) -> Bool { true }
    package func hash(into hasher: inout Hasher) {}

    /// Unknown (`built` false).
    package init() {}

    /// The bounds of a timeline without periods: known, and empty.
    package init(ofNoPeriods: Void) { built = true }

    /// The bounds of the given periods. O(periods).
    package init(periods: [Period]) {
        built = true
        for p in periods {
            noteId(p.transactionId)
            for id in p.observedAs { noteId(id) }
            if let w = p.lineItem { noteLineItem(w) }
        }
    }

    mutating func noteId(_ id: TransactionID) {
        guard idsDecimal else { return }
        guard id.id.isDecimal else {
            idsDecimal = false
            maxId = nil
            return
        }
        // On decimal texts `<` is the decimal order (shorter first, then by bytes).
        if maxId.map({ $0 < id }) ?? true { maxId = id }
    }

    mutating func noteLineItem(_ w: CompactID) {
        guard lineItemsDecimal else { return }
        guard w.isDecimal else {
            lineItemsDecimal = false
            maxLineItem = nil
            return
        }
        if maxLineItem.map({ CompactID.numericLess($0, w) }) ?? true { maxLineItem = w }
    }

    /// True when no period has (or had) `id` as its id or a restored copy's.
    func surelyUnknownId(_ id: TransactionID) -> Bool {
        built && idsDecimal && id.id.isDecimal && (maxId.map { $0 < id } ?? true)
    }

    /// True when no period has (or had) `w` as its line item.
    func surelyUnknownLineItem(_ w: CompactID) -> Bool {
        built && lineItemsDecimal && w.isDecimal && (maxLineItem.map { CompactID.numericLess($0, w) } ?? true)
    }
}
