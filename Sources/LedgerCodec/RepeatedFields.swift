import LedgerCore

// What repeats from one record to the next (a subscription's product on each of its events and periods), read or
// written once and reused.

/// Strings that repeat from one decoded fact to the next: a subscription's product and bundle are the same on each
/// of its events. A decoder handed the same `RepeatedStrings` for a run of facts returns the string it made before
/// when the bytes are the same, instead of allocating another (product names outgrow a String's inline storage).
public struct RepeatedStrings: Sendable {
    var product = ""
    var autoRenewProduct = ""
    var bundle = ""
    var group = ""

    public init() {}
}

/// A string field that repeats from one record to the next (a timeline's periods name the same product): when the
/// string is the one written last (the same string, which the fold shares between periods), its bytes are copied from
/// where they were written, without reading the string again (a read retains and releases it).
struct RepeatedStringField {
    private var last: String?
    private var at = 0
    private var count = 0

    @inline(__always)
    mutating func write(_ tag: UInt32, _ value: String, into w: inout BinaryWriter) {
        // `==` on the same string compares its representation and returns, without a call.
        if let last, last == value {
            w.write(tag, bytesAt: at, count: count)
            return
        }
        w.write(tag, value)
        count = value.utf8.count
        at = w.count - count
        last = value
    }
}

/// The terms of the period decoded last and the bytes they were read from: the encoder writes a period's terms as its
/// last fields (tags 16–22), so a period whose record ends in the same bytes has the same terms, and its decoder takes
/// the instance made before without reading them (two-byte keys, strings made and compared, for each period).
struct RepeatedPeriodTerms {
    /// The terms of the period decoded last.
    var terms: PeriodTerms?
    /// The end of that period's record, from its first term field, when nothing but term fields followed it; the
    /// bytes live as long as the buffer being decoded.
    var bytes: UnsafeRawBufferPointer?

    /// True when `tail` (the rest of a record, from its first term field) is the same bytes as the last period's.
    @inline(__always)
    func repeats(_ tail: UnsafeRawBufferPointer) -> Bool {
        // `case .some`, not `!= nil`, which compares two optional terms (`PeriodTerms` is Equatable).
        guard case .some = terms, let bytes, bytes.count == tail.count else { return false }
        for i in 0..<tail.count where bytes[i] != tail[i] { return false }
        return true
    }
}

/// The fields of a period that usually repeat those of the period before it (the product, the terms), and where
/// they were last written, so a repeat is a copy of those bytes.
struct RepeatedPeriodFields {
    var product = RepeatedStringField()
    private var terms: PeriodTerms?
    private var termsAt = 0
    private var termsCount = 0
    /// Terms decoded from bytes still at hand (the tail path's latest period): those bytes are what writing them
    /// would give, so they are copied.
    private let stored: RepeatedPeriodTerms

    init(stored: RepeatedPeriodTerms = RepeatedPeriodTerms()) { self.stored = stored }

    /// Writes `value`'s fields (tags 16–22), or copies them when they are the instance written last or stored.
    @inline(__always)
    mutating func write(_ value: PeriodTerms?, into w: inout BinaryWriter) {
        guard let value else { return }
        if let terms, terms === value {
            w.write(bytesAt: termsAt, count: termsCount)
            return
        }
        let at = w.count
        if let s = stored.terms, s === value, let bytes = stored.bytes {
            w.append(raw: bytes)
        } else {
            w.write(16, value.price)
            w.write(17, value.currency)
            w.write(18, value.transactionReason)
            w.write(19, value.billingPlanType)
            w.write(20, value.commitmentExpiresDate)
            w.write(21, value.originalApplicationVersion)
            w.write(22, value.ownershipType)
        }
        terms = value
        termsAt = at
        termsCount = w.count - at
    }
}
