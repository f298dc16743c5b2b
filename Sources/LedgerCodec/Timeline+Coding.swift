import LedgerCore

// The stored form of a timeline: a version, then tagged fields (BinaryWriter's format), nested messages
// length-prefixed. Deterministic: every list is written in the timeline's own order and absent optionals are
// omitted, so equal timelines encode to identical bytes (replay compares bytes). Tags are forever.

extension Timeline {
    /// The format version written first.
    public static let formatVersion: UInt8 = 1

    /// The timeline's compact binary form. Equal timelines give identical bytes.
    /// - Complexity: O(size of the timeline).
    public func encoded() -> [UInt8] {
        var w = BinaryWriter(capacity: estimatedSize())
        encode(into: &w)
        return w.finish()
    }

    /// `encoded()` after a header of `stamp` as eight big-endian bytes (how a store keeps a projection with the seq
    /// it reflects), in one buffer.
    public func encoded(after stamp: UInt64) -> [UInt8] {
        var w = BinaryWriter(capacity: 8 + estimatedSize())
        encode(after: stamp, into: &w)
        return w.finish()
    }

    /// `encoded(after:)`, appended to `w` (a writer reused from one timeline to the next costs no allocation).
    package func encode(after stamp: UInt64, into w: inout BinaryWriter) {
        w.writeBigEndian(stamp)
        encode(into: &w)
    }

    /// Bytes to reserve for the encoding, so the buffer is allocated once: the periods' records left as they were
    /// stored (the tail path's) and a typical size per item.
    func estimatedSize(earlierPeriods: Int = 0) -> Int {
        64 + earlierPeriods + periods.count * 112 + statedChanges.count * 24 + owners.count * 32
    }

    /// Writes the timeline; `earlierPeriods` are the stored records of periods before `periods` (the tail path's,
    /// `Timeline.appending`), written first as they are: the encoding is deterministic, so they are the bytes those
    /// periods would be written as. So are `storedTerms`' bytes, copied where its terms are written.
    func encode(
        into w: inout BinaryWriter, earlierPeriods: UnsafeRawBufferPointer? = nil,
        storedTerms: RepeatedPeriodTerms = RepeatedPeriodTerms()
    ) {
        w.writeVarint(UInt64(Timeline.formatVersion))
        w.write(1, originalTransactionId.id)
        w.write(2, environment, nameTag: 13)
        if let earlierPeriods { w.append(raw: earlierPeriods) }
        // Nested messages go into the same buffer (see `writeNested`): no writer, no allocation, per item.
        // Through a pointer, so each period is borrowed, not copied (Array's subscript returns a copy here, which
        // retains and releases each of the period's references).
        periods.withUnsafeBufferPointer { ps in
            guard let base = ps.baseAddress else { return }
            var repeated = RepeatedPeriodFields(stored: storedTerms)
            for i in 0..<ps.count {
                let at = w.beginNested(3)
                Period.encode(base + i, into: &w, repeated: &repeated)
                // A long record moved right to make room for its length: what was written in it moved too.
                if w.endNested(at) > 0 { repeated = RepeatedPeriodFields(stored: storedTerms) }
            }
        }
        for c in statedChanges { w.writeNested(4) { c.encode(into: &$0) } }
        if let renewal { w.writeNested(5) { renewal.encode(into: &$0) } }
        for o in owners { w.writeNested(6) { o.encode(into: &$0) } }
        for r in refusedClaims { w.writeNested(7) { r.encode(into: &$0) } }
        w.write(8, lastSeq)
        if let frontier {
            w.writeNested(9) { f in
                f.write(1, frontier.instant)
                f.write(2, UInt64(frontier.kind.code))
                f.write(3, frontier.id)
            }
        }
        // The bounds that let a renewal skip the scans of every period, stored so that the tail path need not
        // decode the periods to derive them.
        if idBounds.built {
            w.writeNested(10) { idBounds.encode(into: &$0) }  // Read in place, not copied.
        } else {
            w.writeNested(10) { IDBounds(periods: periods).encode(into: &$0) }
        }
        if let accountToken {
            w.writeNested(11) { a in
                a.write(1, accountToken.token)
                a.write(2, accountToken.appUserId.rawValue)
            }
        }
        // Sorting no keys would still make an array.
        if !tokenUsers.isEmpty { encodeTokenUsers(into: &w) }
    }

    /// Fields 12, in token order: equal timelines encode to identical bytes.
    private func encodeTokenUsers(into w: inout BinaryWriter) {
        for token in tokenUsers.keys.sorted() {
            w.writeNested(12) { a in
                a.write(1, token)
                a.write(2, tokenUsers[token]!.rawValue)
            }
        }
    }

    /// A (token, user) pair of fields 11 and 12.
    private static func decodeTokenUser(_ bytes: UnsafeRawBufferPointer) throws(FactDecodingError) -> (String, AppUserID) {
        var r = BinaryReader(bytes)
        var token: String?, user: String?
        while let (tag, wire) = try r.nextField() {
            switch tag {
            case 1 where wire == .bytes: token = try r.readString()
            case 2 where wire == .bytes: user = try r.readString()
            default: throw FactDecodingError("bad timeline token field \(tag)")
            }
        }
        guard let token, let user else { throw FactDecodingError("timeline token lacks its token or user") }
        return (token, AppUserID(user))
    }

    /// Decodes what `encoded()` wrote.
    public init(decoding bytes: UnsafeRawBufferPointer) throws(FactDecodingError) {
        var stored = StoredTail()
        try self.init(decoding: bytes, leavingOutEarlierPeriods: false, stored: &stored)
    }

    /// What decoding a stored timeline tells the tail path (`appending(_:toEncoded:rules:)`) besides the timeline.
    struct StoredTail {
        /// Where the records of the periods left out are in the bytes; nil when none is.
        var earlierPeriods: Range<Int>?
        /// False for an encoding written before the id bounds were (no field 10).
        var boundsStored = false
        /// The latest period's terms and the bytes they were read from, for the encoder to copy.
        var latestTerms = RepeatedPeriodTerms()
    }

    /// Decodes what `encoded()` wrote; with `leavingOutEarlierPeriods`, only the latest period is decoded and the
    /// others' records are left where they are, for the tail path: `stored.earlierPeriods` is then where they are in
    /// `bytes`.
    init(decoding bytes: UnsafeRawBufferPointer, leavingOutEarlierPeriods tail: Bool, stored: inout StoredTail)
        throws(FactDecodingError)
    {
        var r = BinaryReader(bytes)
        let version = try r.readVarint()
        guard version == UInt64(Timeline.formatVersion) else {
            throw FactDecodingError("unsupported timeline version \(version)")
        }
        var otid: CompactID?
        var env = AppStoreEnvironment.production
        // Skim the keys and lengths first: to allocate the arrays once, and to find where the periods' records start
        // and where the last of them starts. `encoded()` writes the periods one after another; when another field
        // lies among them the timeline is decoded whole (the tail path copies the earlier periods' bytes as one run).
        // A field 3 of the wrong wire type is no period: the loop below refuses it, as it does any field's.
        var periodCount = 0, changeCount = 0
        var firstPeriodAt = 0, lastPeriodAt = 0, periodEnd = 0
        var periodsAdjoin = true
        do {
            var skim = r
            var at = skim.offset
            while let (tag, wire) = try skim.nextField() {
                try skim.skip(wire)
                if tag == 3 && wire == .bytes {
                    if periodCount == 0 { firstPeriodAt = at } else if at != periodEnd { periodsAdjoin = false }
                    lastPeriodAt = at
                    periodEnd = skim.offset
                    periodCount += 1
                } else if tag == 4 {
                    changeCount += 1
                }
                at = skim.offset
            }
        }
        let earlierPeriods = tail && periodCount > 1 && periodsAdjoin ? firstPeriodAt..<lastPeriodAt : nil
        stored.earlierPeriods = earlierPeriods
        var periods: [Period] = []
        // On the tail path, the latest period and room for the one a renewal adds (its common case), so that
        // appending it does not move the array.
        periods.reserveCapacity(earlierPeriods == nil ? periodCount : 2)
        var changes: [TimelineChange] = []
        if changeCount > 0 { changes.reserveCapacity(changeCount) }
        var product = ""
        var terms = RepeatedPeriodTerms()
        var bounds = IDBounds()  // Not `built` until read: see `boundsStored`.
        var renewal: RenewalState?
        var owners: [OwnerInterval] = []
        var refused: [RefusedClaim] = []
        var lastSeq: UInt64 = 0
        var frontier: FoldPosition?
        var accountToken: AccountTokenClaim?
        var tokenUsers: [String: AppUserID] = [:]
        while true {
            let at = r.offset
            if let earlierPeriods, at == earlierPeriods.lowerBound {
                r.offset = earlierPeriods.upperBound  // Left out: the skim above has read over them once.
                continue
            }
            guard let (tag, wire) = try r.nextField() else { break }
            let s = wire == .bytes, n = wire == .varint
            switch tag {
            case 1 where s: otid = try r.readID()
            case 2 where n: env = try readEnvironment(&r)
            case 13 where s: env = try readEnvironmentName(&r)
            case 3 where s:
                periods.append(try Period(decoding: try r.readBytes(), product: &product, terms: &terms))
            case 4 where s: changes.append(try TimelineChange(decoding: try r.readBytes()))
            case 5 where s: renewal = try RenewalState(decoding: try r.readBytes())
            case 6 where s: owners.append(try OwnerInterval(decoding: try r.readBytes()))
            case 7 where s: refused.append(try RefusedClaim(decoding: try r.readBytes()))
            case 8 where n: lastSeq = try r.readVarint()
            case 9 where s: frontier = try FoldPosition(decoding: try r.readBytes())
            case 10 where s: try bounds.decode(try r.readBytes())
            case 11 where s:
                let (token, user) = try Self.decodeTokenUser(try r.readBytes())
                accountToken = AccountTokenClaim(token: token, appUserId: user)
            case 12 where s:
                let (token, user) = try Self.decodeTokenUser(try r.readBytes())
                tokenUsers[token] = user
            case 1...13: throw FactDecodingError("timeline field \(tag) has the wrong wire type")
            default: try r.skip(wire)
            }
        }
        guard let otid else { throw FactDecodingError("timeline lacks its originalTransactionId") }
        let originalTransactionId = OriginalTransactionID(otid)
        // The renewal state keeps the info's subscription and environment: the timeline's.
        renewal?.info.originalTransactionId = originalTransactionId
        renewal?.info.environment = env
        // Without stored bounds (an older encoding) the fold derives them from the periods on first use.
        stored.boundsStored = bounds.built
        stored.latestTerms = terms
        self.init(
            originalTransactionId: originalTransactionId, environment: env, periods: periods, statedChanges: changes,
            renewal: renewal, owners: owners, refusedClaims: refused, accountToken: accountToken,
            tokenUsers: tokenUsers, lastSeq: lastSeq, frontier: frontier, idBounds: bounds)
    }

    /// Decodes what `encoded()` wrote.
    public init(decoding bytes: [UInt8]) throws(FactDecodingError) {
        let result = bytes.withUnsafeBytes { b in Result { () throws(FactDecodingError) in try Timeline(decoding: b) } }
        self = try result.get()
    }
}

extension Period {
    /// Writes the period `p` points to, reading it field by field in place: a period passed as a value (even
    /// borrowed, even inlined) is copied first, for fear `w` aliases it, retaining and releasing each of its
    /// references.
    static func encode(_ p: UnsafePointer<Period>, into w: inout BinaryWriter, repeated: inout RepeatedPeriodFields) {
        w.write(1, p.pointee.transactionId.id)
        w.write(2, p.pointee.lineItem)
        repeated.product.write(3, p.pointee.productId, into: &w)
        w.write(4, p.pointee.start)
        w.write(5, p.pointee.expiresDate)
        w.write(6, p.pointee.end)
        w.write(7, p.pointee.originalPurchaseDate)
        w.write(8, UInt64(p.pointee.type.code))
        if p.pointee.quantity != 1 { w.write(9, p.pointee.quantity) }
        // Not `offer != nil`: that resolves to `==` of two optional offers (Offer is Equatable), which copies the
        // period's offer and compares it through its type's metadata.
        if case .some = p.pointee.offer { encodeOffer(p, into: &w) }
        if p.pointee.upgraded { w.write(11, true) }
        if !p.pointee.observedAs.isEmpty { encodeIds(12, p.pointee.observedAs, into: &w) }
        if !p.pointee.revocations.isEmpty { encodeRevocations(p, into: &w) }
        w.write(14, p.pointee.seq)
        if !p.pointee.revokingTransactions.isEmpty { encodeIds(15, p.pointee.revokingTransactions, into: &w) }
        repeated.write(p.pointee.terms, into: &w)
    }

    private static func encodeIds(_ tag: UInt32, _ ids: [TransactionID], into w: inout BinaryWriter) {
        for id in ids { w.write(tag, id.id) }
    }

    /// The rarer parts of a period (an offer, revocations), out of line; each reads only its own field.
    private static func encodeOffer(_ p: UnsafePointer<Period>, into w: inout BinaryWriter) {
        guard let offer = p.pointee.offer else { return }
        w.writeNested(10) { o in
            o.write(1, offer.type)
            o.write(2, offer.identifier)
            o.write(3, offer.discountType)
            if offer.isTrial { o.write(4, true) }
            o.write(5, offer.period)
        }
    }

    private static func encodeRevocations(_ p: UnsafePointer<Period>, into w: inout BinaryWriter) {
        for r in p.pointee.revocations {
            w.writeNested(13) { v in
                v.write(1, r.date)
                v.write(2, r.reason)
                v.write(3, r.type)
                v.write(4, r.percentage)
                v.write(5, r.reversedAt)
                v.write(6, r.seq)
                if let s = r.reversedSeq { v.write(7, s) }
            }
        }
    }

    /// Decodes a period; `previousProduct` and `previous` are shared across a timeline's periods so a repeated
    /// product id or terms are not allocated again (nor, for terms, read again: see `RepeatedPeriodTerms`).
    init(
        decoding bytes: UnsafeRawBufferPointer, product previousProduct: inout String,
        terms previous: inout RepeatedPeriodTerms
    ) throws(FactDecodingError) {
        var r = BinaryReader(bytes)
        var tid: CompactID?, product: String?, start: Int64?
        // Fields in locals, the period built once at the end: a Period holds several references, and building it
        // in a local `var`, then assigning `self`, copies it (retaining and releasing each of them).
        var lineItem: CompactID?, expiresDate: Int64?, end: Int64?, originalPurchaseDate: Int64?
        var type = ProductType.autoRenewable, quantity: Int64 = 1, offer: Offer?, upgraded = false
        var observedAs: [TransactionID] = [], revocations: [Revocation] = [], seq: UInt64 = 0
        var revokingTransactions: [TransactionID] = []
        var price: Int64?, currency: String?, transactionReason: String?, billingPlanType: String?
        var commitmentExpiresDate: Int64?, originalApplicationVersion: String?, ownershipType: String?
        // Where the first term field starts, whether only term fields follow it, and whether they repeat the last
        // period's bytes.
        var termsAt: Int?, onlyTerms = true, repeated = false
        while true {
            let at = r.offset
            guard let (tag, wire) = try r.nextField() else { break }
            if 16...22 ~= tag {
                if termsAt == nil {
                    termsAt = at
                    if previous.repeats(UnsafeRawBufferPointer(rebasing: bytes[at...])) {
                        repeated = true
                        break
                    }
                }
            } else if termsAt != nil {
                onlyTerms = false
            }
            let s = wire == .bytes, n = wire == .varint
            switch tag {
            case 1 where s: tid = try r.readID()
            case 2 where s: lineItem = try r.readID()
            case 3 where s: product = try r.readString(reusing: &previousProduct)
            case 4 where n: start = try r.readInt64()
            case 5 where n: expiresDate = try r.readInt64()
            case 6 where n: end = try r.readInt64()
            case 7 where n: originalPurchaseDate = try r.readInt64()
            case 8 where n:
                let code = try r.readVarint()
                guard code <= 255, let t = ProductType(code: UInt8(code)) else { throw FactDecodingError("bad product type") }
                type = t
            case 9 where n: quantity = try r.readInt64()
            case 10 where s:
                var o = BinaryReader(try r.readBytes())
                var o2 = Offer()
                while let (t, _) = try o.nextField() {
                    switch t {
                    case 1: o2.type = try o.readInt64()
                    case 2: o2.identifier = try o.readString()
                    case 3: o2.discountType = try o.readString()
                    case 4: o2.isTrial = try o.readBool()
                    case 5: o2.period = try o.readString()
                    default: throw FactDecodingError("bad offer field \(t)")
                    }
                }
                offer = o2
            case 11 where n: upgraded = try r.readBool()
            case 12 where s: observedAs.append(TransactionID(try r.readID()))
            case 13 where s:
                var v = BinaryReader(try r.readBytes())
                var rev = Revocation(date: 0)
                while let (t, _) = try v.nextField() {
                    switch t {
                    case 1: rev.date = try v.readInt64()
                    case 2: rev.reason = try v.readInt64()
                    case 3: rev.type = try v.readString()
                    case 4: rev.percentage = try v.readInt64()
                    case 5: rev.reversedAt = try v.readInt64()
                    case 6: rev.seq = try v.readVarint()
                    case 7: rev.reversedSeq = try v.readVarint()
                    default: throw FactDecodingError("bad revocation field \(t)")
                    }
                }
                revocations.append(rev)
            case 14 where n: seq = try r.readVarint()
            case 15 where s: revokingTransactions.append(TransactionID(try r.readID()))
            case 16 where n: price = try r.readInt64()
            case 17 where s: currency = try r.readString()
            case 18 where s: transactionReason = try r.readString()
            case 19 where s: billingPlanType = try r.readString()
            case 20 where n: commitmentExpiresDate = try r.readInt64()
            case 21 where s: originalApplicationVersion = try r.readString()
            case 22 where s: ownershipType = try r.readString()
            case 1...22: throw FactDecodingError("period field \(tag) has the wrong wire type")
            default: try r.skip(wire)
            }
        }
        guard let tid, let product, let start else { throw FactDecodingError("period lacks id, product or start") }
        self.init(
            transactionId: TransactionID(tid), lineItem: lineItem, productId: product, start: start,
            expiresDate: expiresDate, end: end, originalPurchaseDate: originalPurchaseDate, type: type,
            quantity: quantity, offer: offer, upgraded: upgraded, observedAs: observedAs, revocations: revocations,
            seq: seq, revokingTransactions: revokingTransactions,
            terms: repeated
                ? previous.terms
                : PeriodTerms.sharing(
                    previous.terms, price: price, currency: currency, transactionReason: transactionReason,
                    billingPlanType: billingPlanType, commitmentExpiresDate: commitmentExpiresDate,
                    originalApplicationVersion: originalApplicationVersion, ownershipType: ownershipType))
        if !repeated {
            previous.terms = terms
            previous.bytes = termsAt.flatMap { onlyTerms ? UnsafeRawBufferPointer(rebasing: bytes[$0...]) : nil }
        }
    }
}

extension TimelineChange {
    func encode(into w: inout BinaryWriter) {
        w.write(1, at)
        w.write(2, UInt64(kind.code))
        w.write(3, seq)
        w.write(4, detail)
        w.write(5, until)
    }

    init(decoding bytes: UnsafeRawBufferPointer) throws(FactDecodingError) {
        var r = BinaryReader(bytes)
        var c = TimelineChange(at: 0, kind: .purchase, seq: 0)
        while let (tag, _) = try r.nextField() {
            switch tag {
            case 1: c.at = try r.readInt64()
            case 2:
                guard let k = ChangeKind(code: UInt8(truncatingIfNeeded: try r.readVarint())) else {
                    throw FactDecodingError("unknown change kind")
                }
                c.kind = k
            case 3: c.seq = try r.readVarint()
            case 4: c.detail = try r.readString()
            case 5: c.until = try r.readInt64()
            default: throw FactDecodingError("bad change field \(tag)")
            }
        }
        self = c
    }
}

extension RenewalState {
    func encode(into w: inout BinaryWriter) {
        w.write(1, at)
        w.write(2, info.productId)
        w.write(3, info.autoRenewProductId)
        w.write(4, info.autoRenewStatus)
        w.write(5, info.expirationIntent)
        w.write(6, info.isInBillingRetryPeriod)
        w.write(7, info.gracePeriodExpiresDate)
        w.write(8, info.priceIncreaseStatus)
        w.write(9, info.renewalDate)
        w.write(10, seq)
        w.write(11, info.renewalPrice)
        w.write(12, info.currency)
        w.write(countTag: 13, itemTag: 14, info.eligibleWinBackOfferIds)
        w.write(15, info.renewalBillingPlanType)
    }

    /// The stored state; its info's subscription and environment are the timeline's, set by the caller.
    init(decoding bytes: UnsafeRawBufferPointer) throws(FactDecodingError) {
        var r = BinaryReader(bytes)
        var s = RenewalState(info: RenewalInfoFact(originalTransactionId: OriginalTransactionID(.empty)), at: 0, seq: 0)
        while let (tag, _) = try r.nextField() {
            switch tag {
            case 1: s.at = try r.readInt64()
            case 2: s.info.productId = try r.readString()
            case 3: s.info.autoRenewProductId = try r.readString()
            case 4: s.info.autoRenewStatus = try r.readBool()
            case 5: s.info.expirationIntent = try r.readInt64()
            case 6: s.info.isInBillingRetryPeriod = try r.readBool()
            case 7: s.info.gracePeriodExpiresDate = try r.readInt64()
            case 8: s.info.priceIncreaseStatus = try r.readInt64()
            case 9: s.info.renewalDate = try r.readInt64()
            case 10: s.seq = try r.readVarint()
            case 11: s.info.renewalPrice = try r.readInt64()
            case 12: s.info.currency = try r.readString()
            case 13:
                _ = try r.readVarint()
                if s.info.eligibleWinBackOfferIds == nil { s.info.eligibleWinBackOfferIds = [] }
            case 14: s.info.eligibleWinBackOfferIds = (s.info.eligibleWinBackOfferIds ?? []) + [try r.readString()]
            case 15: s.info.renewalBillingPlanType = try r.readString()
            default: throw FactDecodingError("bad renewal state field \(tag)")
            }
        }
        self = s
    }
}

extension OwnerInterval {
    func encode(into w: inout BinaryWriter) {
        w.write(1, appUserId.rawValue)
        w.write(2, from)
        w.write(3, to)
        w.write(4, seq)
        w.write(5, UInt64(cause.code))
    }

    init(decoding bytes: UnsafeRawBufferPointer) throws(FactDecodingError) {
        var r = BinaryReader(bytes)
        var o = OwnerInterval(appUserId: "", from: 0, seq: 0, cause: .claim)
        while let (tag, _) = try r.nextField() {
            switch tag {
            case 1: o.appUserId = AppUserID(try r.readString())
            case 2: o.from = try r.readInt64()
            case 3: o.to = try r.readInt64()
            case 4: o.seq = try r.readVarint()
            case 5:
                guard let c = OwnerCause(code: UInt8(truncatingIfNeeded: try r.readVarint())) else {
                    throw FactDecodingError("unknown owner cause")
                }
                o.cause = c
            default: throw FactDecodingError("bad owner field \(tag)")
            }
        }
        self = o
    }
}

extension RefusedClaim {
    func encode(into w: inout BinaryWriter) {
        w.write(1, appUserId.rawValue)
        w.write(2, at)
        w.write(3, seq)
        w.write(4, cause.rawValue)
    }

    init(decoding bytes: UnsafeRawBufferPointer) throws(FactDecodingError) {
        var r = BinaryReader(bytes)
        var c = RefusedClaim(appUserId: "", at: 0, seq: 0, cause: .claim)
        while let (tag, _) = try r.nextField() {
            switch tag {
            case 1: c.appUserId = AppUserID(try r.readString())
            case 2: c.at = try r.readInt64()
            case 3: c.seq = try r.readVarint()
            case 4:
                let name = try r.readString()
                guard let cause = BindingClaim.Cause(rawValue: name) else { throw FactDecodingError("unknown cause") }
                c.cause = cause
            default: throw FactDecodingError("bad refused claim field \(tag)")
            }
        }
        self = c
    }
}

extension IDBounds {
    func encode(into w: inout BinaryWriter) {
        // A bound is written when the ids are decimal and there is one; "not decimal" is written as a flag.
        w.write(1, maxId?.id)
        if !idsDecimal { w.write(2, true) }
        w.write(3, maxLineItem)
        if !lineItemsDecimal { w.write(4, true) }
    }

    /// Reads the stored bounds into these (unknown ones), in place: no optional to wrap, copy and destroy.
    mutating func decode(_ bytes: UnsafeRawBufferPointer) throws(FactDecodingError) {
        self = IDBounds()
        built = true
        var r = BinaryReader(bytes)
        while let (tag, _) = try r.nextField() {
            switch tag {
            case 1: maxId = TransactionID(try r.readID())
            case 2: idsDecimal = !(try r.readBool())
            case 3: maxLineItem = try r.readID()
            case 4: lineItemsDecimal = !(try r.readBool())
            default: throw FactDecodingError("bad period bounds field \(tag)")
            }
        }
    }
}

extension FoldPosition {
    init(decoding bytes: UnsafeRawBufferPointer) throws(FactDecodingError) {
        var f = BinaryReader(bytes)
        var kind: Fact.Kind?
        self.init(instant: 0, kind: .transaction, id: .empty)
        while let (t, _) = try f.nextField() {
            switch t {
            case 1: instant = try f.readInt64()
            case 2: kind = Fact.Kind(code: UInt8(truncatingIfNeeded: try f.readVarint()))
            case 3: id = try f.readID()
            default: throw FactDecodingError("bad timeline frontier")
            }
        }
        guard let kind else { throw FactDecodingError("bad timeline frontier kind") }
        self.kind = kind
    }
}
