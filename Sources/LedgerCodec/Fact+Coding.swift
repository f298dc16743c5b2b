import LedgerCore

// The stored forms of facts and events (`BinaryWriter`'s format). Tags are forever: never reuse or renumber one. Add
// new fields with new tags; old readers keep them as unknown.

extension TransactionFact {
    func encode(into w: inout BinaryWriter) {
        w.write(1, self.transactionId.id)
        w.write(2, self.originalTransactionId.id)
        w.write(3, webOrderLineItem)
        w.write(4, self.bundleId)
        w.write(5, self.productId)
        w.write(6, self.subscriptionGroupIdentifier)
        w.write(7, self.purchaseDate)
        w.write(8, self.originalPurchaseDate)
        w.write(9, self.expiresDate)
        w.write(10, self.quantity)
        w.write(11, self.type?.rawValue)
        w.write(12, self.appAccountToken)
        w.write(13, self.inAppOwnershipType)
        w.write(14, self.signedDate)
        w.write(15, self.revocationDate)
        w.write(16, self.revocationReason)
        w.write(17, self.revocationType)
        w.write(18, self.revocationPercentage)
        w.write(19, self.isUpgraded)
        w.write(20, self.offerType)
        w.write(21, self.offerIdentifier)
        w.write(22, self.offerDiscountType)
        w.write(23, self.isTrialPeriod)
        w.write(24, self.isInIntroOfferPeriod)
        w.write(25, self.environment, nameTag: 36)
        w.write(26, self.storefront)
        w.write(27, self.transactionReason)
        w.write(28, self.price)
        w.write(29, self.currency)
        w.write(30, self.extra)
        w.write(31, self.appTransactionId)
        w.write(32, self.offerPeriod)
        w.write(33, self.billingPlanType)
        if let commitment = self.commitment {
            w.writeNested(34) { c in
                c.write(1, commitment.billingPeriodNumber)
                c.write(2, commitment.totalBillingPeriods)
                c.write(3, commitment.expiresDate)
                c.write(4, commitment.price)
            }
        }
        w.write(35, self.originalApplicationVersion)
        w.write(37, self.receiptCreationDate)
        w.write(self.unknownFields)
    }

    static func decodeCommitment(_ bytes: UnsafeRawBufferPointer) throws(FactDecodingError) -> Commitment {
        var r = BinaryReader(bytes)
        var c = Commitment()
        while let (tag, wire) = try r.nextField() {
            guard wire == .varint else { throw FactDecodingError("commitment field \(tag) has the wrong wire type") }
            switch tag {
            case 1: c.billingPeriodNumber = try r.readInt64()
            case 2: c.totalBillingPeriods = try r.readInt64()
            case 3: c.expiresDate = try r.readInt64()
            case 4: c.price = try r.readInt64()
            default: throw FactDecodingError("unknown commitment field \(tag)")
            }
        }
        return c
    }

    init(reading r: inout BinaryReader, strings: inout RepeatedStrings) throws(FactDecodingError) {
        // The fields are read into the fact's box; the required ones start as placeholders.
        var sawId = false, sawOriginal = false, sawProduct = false, sawPurchase = false
        let placeholders = Fields(
            transactionId: TransactionID(.empty), originalTransactionId: OriginalTransactionID(.empty), productId: "",
            purchaseDate: 0)
        try self.init(placeholders) { (f: inout Fields) throws(FactDecodingError) in
            while let (tag, wire) = try r.nextField() {
                let s = wire == .bytes, n = wire == .varint
                switch tag {
                case 1 where s:
                    f.transactionId = TransactionID(try r.readID())
                    sawId = true
                case 2 where s:
                    f.originalTransactionId = OriginalTransactionID(try r.readID())
                    sawOriginal = true
                case 3 where s: f.webOrderLineItemId = try r.readID()
                case 4 where s: f.bundleId = try r.readString(reusing: &strings.bundle)
                case 5 where s:
                    f.productId = try r.readString(reusing: &strings.product)
                    sawProduct = true
                case 6 where s: f.subscriptionGroupIdentifier = try r.readString(reusing: &strings.group)
                case 7 where n:
                    f.purchaseDate = try r.readInt64()
                    sawPurchase = true
                case 8 where n: f.originalPurchaseDate = try r.readInt64()
                case 9 where n: f.expiresDate = try r.readInt64()
                case 10 where n: f.quantity = try r.readInt64()
                case 11 where s: f.type = try ProductType(reading: &r)
                case 12 where s: f.appAccountToken = try r.readString()
                case 13 where s: f.inAppOwnershipType = try r.readString()
                case 14 where n: f.signedDate = try r.readInt64()
                case 15 where n: f.revocationDate = try r.readInt64()
                case 16 where n: f.revocationReason = try r.readInt64()
                case 17 where s: f.revocationType = try r.readString()
                case 18 where n: f.revocationPercentage = try r.readInt64()
                case 19 where n: f.isUpgraded = try r.readBool()
                case 20 where n: f.offerType = try r.readInt64()
                case 21 where s: f.offerIdentifier = try r.readString()
                case 22 where s: f.offerDiscountType = try r.readString()
                case 23 where n: f.isTrialPeriod = try r.readBool()
                case 24 where n: f.isInIntroOfferPeriod = try r.readBool()
                case 25 where n: f.environment = try readEnvironment(&r)
                case 36 where s: f.environment = try readEnvironmentName(&r)
                case 26 where s: f.storefront = try r.readString()
                case 27 where s: f.transactionReason = try r.readString()
                case 28 where n: f.price = try r.readInt64()
                case 29 where s: f.currency = try r.readString()
                case 30 where s: try r.readMapEntry(into: &f.extra)
                case 31 where s: f.appTransactionId = try r.readString()
                case 32 where s: f.offerPeriod = try r.readString()
                case 33 where s: f.billingPlanType = try r.readString()
                case 34 where s: f.commitment = try Self.decodeCommitment(try r.readBytes())
                case 35 where s: f.originalApplicationVersion = try r.readString()
                case 37 where n: f.receiptCreationDate = try r.readInt64()
                case 1...37: throw FactDecodingError("transaction field \(tag) has the wrong wire type")
                default: try r.readUnknown(tag: tag, wire: wire, into: &f.unknownFields)
                }
            }
        }
        guard sawId, sawOriginal, sawProduct, sawPurchase else {
            throw FactDecodingError("transaction lacks transactionId, originalTransactionId, productId or purchaseDate")
        }
    }
}

extension RenewalInfoFact {
    func encode(into w: inout BinaryWriter) {
        w.write(1, self.originalTransactionId.id)
        w.write(2, self.productId)
        w.write(3, self.autoRenewProductId)
        w.write(4, self.autoRenewStatus)
        w.write(5, self.expirationIntent)
        w.write(6, self.isInBillingRetryPeriod)
        w.write(7, self.gracePeriodExpiresDate)
        w.write(8, self.priceIncreaseStatus)
        w.write(9, self.renewalDate)
        w.write(10, self.offerType)
        w.write(11, self.offerIdentifier)
        w.write(12, self.signedDate)
        w.write(13, self.recentSubscriptionStartDate)
        w.write(14, self.environment, nameTag: 25)
        w.write(15, self.extra)
        w.write(16, self.renewalPrice)
        w.write(17, self.currency)
        w.write(18, self.offerDiscountType)
        w.write(19, self.offerPeriod)
        w.write(countTag: 20, itemTag: 21, self.eligibleWinBackOfferIds)
        w.write(22, self.appAccountToken)
        w.write(23, self.appTransactionId)
        w.write(24, self.renewalBillingPlanType)
        w.write(self.unknownFields)
    }

    init(reading r: inout BinaryReader, strings: inout RepeatedStrings) throws(FactDecodingError) {
        // The fields are read into the fact's box; the subscription starts as a placeholder.
        var otid: CompactID?
        try self.init(Fields(originalTransactionId: OriginalTransactionID(.empty))) {
            (f: inout Fields) throws(FactDecodingError) in
            while let (tag, wire) = try r.nextField() {
                let s = wire == .bytes, n = wire == .varint
                switch tag {
                case 1 where s: otid = try r.readID()
                case 2 where s: f.productId = try r.readString(reusing: &strings.product)
                case 3 where s: f.autoRenewProductId = try r.readString(reusing: &strings.autoRenewProduct)
                case 4 where n: f.autoRenewStatus = try r.readBool()
                case 5 where n: f.expirationIntent = try r.readInt64()
                case 6 where n: f.isInBillingRetryPeriod = try r.readBool()
                case 7 where n: f.gracePeriodExpiresDate = try r.readInt64()
                case 8 where n: f.priceIncreaseStatus = try r.readInt64()
                case 9 where n: f.renewalDate = try r.readInt64()
                case 10 where n: f.offerType = try r.readInt64()
                case 11 where s: f.offerIdentifier = try r.readString()
                case 12 where n: f.signedDate = try r.readInt64()
                case 13 where n: f.recentSubscriptionStartDate = try r.readInt64()
                case 14 where n: f.environment = try readEnvironment(&r)
                case 25 where s: f.environment = try readEnvironmentName(&r)
                case 15 where s: try r.readMapEntry(into: &f.extra)
                case 16 where n: f.renewalPrice = try r.readInt64()
                case 17 where s: f.currency = try r.readString()
                case 18 where s: f.offerDiscountType = try r.readString()
                case 19 where s: f.offerPeriod = try r.readString()
                case 20 where n:
                    _ = try r.readVarint()
                    if f.eligibleWinBackOfferIds == nil { f.eligibleWinBackOfferIds = [] }
                case 21 where s: f.eligibleWinBackOfferIds = (f.eligibleWinBackOfferIds ?? []) + [try r.readString()]
                case 22 where s: f.appAccountToken = try r.readString()
                case 23 where s: f.appTransactionId = try r.readString()
                case 24 where s: f.renewalBillingPlanType = try r.readString()
                case 1...25: throw FactDecodingError("renewal field \(tag) has the wrong wire type")
                default: try r.readUnknown(tag: tag, wire: wire, into: &f.unknownFields)
                }
            }
        }
        guard let otid else { throw FactDecodingError("renewal info lacks originalTransactionId") }
        self.originalTransactionId = OriginalTransactionID(otid)
    }
}

extension NotificationFact {
    func encode(into w: inout BinaryWriter) {
        w.write(1, notificationUUID)
        w.write(2, notificationType)
        w.write(3, subtype)
        w.write(4, signedDate)
        w.write(5, version)
        w.write(6, environment, nameTag: 15)
        w.write(7, bundleId)
        w.write(8, appAppleId)
        w.write(9, originalTransactionId?.id)
        w.write(10, transactionId?.id)
        w.write(11, status)
        w.write(12, autoRenewStatus)
        w.write(13, autoRenewProductId)
        w.write(14, extra)
        w.write(unknownFields)
    }

    init(reading r: inout BinaryReader) throws(FactDecodingError) {
        var uuid: String?, type: String?
        self = NotificationFact(notificationUUID: "", notificationType: "")
        while let (tag, wire) = try r.nextField() {
            let s = wire == .bytes, n = wire == .varint
            switch tag {
            case 1 where s: uuid = try r.readString()
            case 2 where s: type = try r.readString()
            case 3 where s: self.subtype = try r.readString()
            case 4 where n: self.signedDate = try r.readInt64()
            case 5 where s: self.version = try r.readString()
            case 6 where n: self.environment = try readEnvironment(&r)
            case 15 where s: self.environment = try readEnvironmentName(&r)
            case 7 where s: self.bundleId = try r.readString()
            case 8 where n: self.appAppleId = try r.readInt64()
            case 9 where s: self.originalTransactionId = OriginalTransactionID(try r.readID())
            case 10 where s: self.transactionId = TransactionID(try r.readID())
            case 11 where n: self.status = try r.readInt64()
            case 12 where n: self.autoRenewStatus = try r.readBool()
            case 13 where s: self.autoRenewProductId = try r.readString()
            case 14 where s: try r.readMapEntry(into: &self.extra)
            case 1...15: throw FactDecodingError("notification field \(tag) has the wrong wire type")
            default: try r.readUnknown(tag: tag, wire: wire, into: &self.unknownFields)
            }
        }
        guard let uuid, let type else { throw FactDecodingError("notification lacks notificationUUID or type") }
        self.notificationUUID = uuid
        self.notificationType = type
    }
}

extension BindingClaim {
    func encode(into w: inout BinaryWriter) {
        w.write(1, appUserId.rawValue)
        w.write(2, originalTransactionId.id)
        w.write(3, claimedAt)
        w.write(4, cause.rawValue)
        w.write(5, environment, nameTag: 8)
        w.write(6, appAccountToken)
        if everyEnvironment { w.write(7, UInt64(1)) }
        w.write(unknownFields)
    }

    init(reading r: inout BinaryReader) throws(FactDecodingError) {
        var user: String?, otid: CompactID?, at: Int64?
        self = BindingClaim(
            appUserId: AppUserID(rawValue: ""), originalTransactionId: OriginalTransactionID(.empty), claimedAt: 0)
        while let (tag, wire) = try r.nextField() {
            let s = wire == .bytes, n = wire == .varint
            switch tag {
            case 1 where s: user = try r.readString()
            case 2 where s: otid = try r.readID()
            case 3 where n: at = try r.readInt64()
            case 4 where s:
                let name = try r.readString()
                guard let c = Cause(rawValue: name) else { throw FactDecodingError("unknown binding cause \(name)") }
                self.cause = c
            case 5 where n: self.environment = try readEnvironment(&r)
            case 8 where s: self.environment = try readEnvironmentName(&r)
            case 6 where s: self.appAccountToken = try r.readString()
            case 7 where n: self.everyEnvironment = try r.readVarint() != 0
            case 1...8: throw FactDecodingError("binding field \(tag) has the wrong wire type")
            default: try r.readUnknown(tag: tag, wire: wire, into: &self.unknownFields)
            }
        }
        guard let user, let otid, let at else { throw FactDecodingError("binding lacks appUserId, otid or claimedAt") }
        self.appUserId = AppUserID(user)
        self.originalTransactionId = OriginalTransactionID(otid)
        self.claimedAt = at
    }
}

extension ReconciliationFact {
    func encode(into w: inout BinaryWriter) {
        w.write(1, originalTransactionId.id)
        w.write(2, environment, nameTag: 3)
        w.write(4, checkedAt)
        w.write(5, revision)
        w.write(6, transactionsSeen)
        for id in transactionsAdded { w.write(7, id) }
        w.write(8, notificationsSeen)
        for uuid in notificationsAdded { w.write(9, uuid) }
        for uuid in notificationsUndelivered { w.write(10, uuid) }
        if renewalInfoAdded { w.write(11, UInt64(1)) }
        w.write(12, mode)
        if let windowStart { w.write(13, windowStart) }
        if let refundsSeen { w.write(14, refundsSeen) }
        w.write(unknownFields)
    }

    init(reading r: inout BinaryReader) throws(FactDecodingError) {
        var otid: CompactID?, at: Int64?
        self = ReconciliationFact(originalTransactionId: OriginalTransactionID(.empty), environment: .production, checkedAt: 0)
        while let (tag, wire) = try r.nextField() {
            let s = wire == .bytes, n = wire == .varint
            switch tag {
            case 1 where s: otid = try r.readID()
            case 2 where n: self.environment = try readEnvironment(&r)
            case 3 where s: self.environment = try readEnvironmentName(&r)
            case 4 where n: at = try r.readInt64()
            case 5 where s: self.revision = try r.readString()
            case 6 where n: self.transactionsSeen = try r.readInt64()
            case 7 where s: self.transactionsAdded.append(try r.readString())
            case 8 where n: self.notificationsSeen = try r.readInt64()
            case 9 where s: self.notificationsAdded.append(try r.readString())
            case 10 where s: self.notificationsUndelivered.append(try r.readString())
            case 11 where n: self.renewalInfoAdded = try r.readBool()
            case 12 where s: self.mode = try r.readString()
            case 13 where n: self.windowStart = try r.readInt64()
            case 14 where n: self.refundsSeen = try r.readInt64()
            case 1...14: throw FactDecodingError("reconciliation field \(tag) has the wrong wire type")
            default: try r.readUnknown(tag: tag, wire: wire, into: &self.unknownFields)
            }
        }
        guard let otid, let at else { throw FactDecodingError("reconciliation lacks otid or checkedAt") }
        self.originalTransactionId = OriginalTransactionID(otid)
        self.checkedAt = at
    }
}

extension RulesChange {
    /// The rules field by field, products in id order (so equal rules have equal bytes): the binding policy, the
    /// instant, then one nested record per product.
    func encode(into w: inout BinaryWriter) {
        w.write(1, rules.bindingPolicy.rawValue)
        w.write(2, appliedAt)
        if initial { w.write(4, true) }
        for id in rules.catalog.products.keys.sorted() {
            let p = rules.catalog.products[id]!
            w.writeNested(3) { n in
                n.write(1, id)
                if let type = p.type { n.write(2, UInt64(type.code)) }
                if let list = p.entitlements {
                    n.write(3, UInt64(1))  // Configured, possibly empty: not the same as no list.
                    for e in list { n.write(4, e) }
                }
                n.write(5, p.group)
                n.write(6, p.duration?.description)
                for name in p.credits.keys.sorted() {
                    n.writeNested(7) { c in
                        c.write(1, name)
                        c.write(2, p.credits[name]!)
                    }
                }
                n.write(8, p.level.map(Int64.init))
            }
        }
    }

    init(reading r: inout BinaryReader) throws(FactDecodingError) {
        var policy: BindingPolicy?, at: Int64?, initial = false
        var products: [String: ProductConfiguration] = [:]
        while let (tag, wire) = try r.nextField() {
            let s = wire == .bytes, n = wire == .varint
            switch tag {
            case 1 where s:
                let name = try r.readString()
                guard let p = BindingPolicy(rawValue: name) else { throw FactDecodingError("unknown binding policy \(name)") }
                policy = p
            case 2 where n: at = try r.readInt64()
            case 3 where s:
                var nested = BinaryReader(try r.readBytes())
                let (id, product) = try Self.readProduct(&nested)
                products[id] = product
            case 4 where n: initial = try r.readBool()
            case 1...4: throw FactDecodingError("rules field \(tag) has the wrong wire type")
            default: try r.skip(wire)
            }
        }
        guard let policy, let at else { throw FactDecodingError("rules lack the binding policy or the instant") }
        self.init(
            rules: FoldRules(catalog: Catalog(products: products), bindingPolicy: policy), appliedAt: at,
            initial: initial)
    }

    private static func readProduct(_ r: inout BinaryReader) throws(FactDecodingError) -> (String, ProductConfiguration) {
        var id: String?
        var p = ProductConfiguration()
        var listed = false
        var list: [String] = []
        while let (tag, wire) = try r.nextField() {
            let s = wire == .bytes, n = wire == .varint
            switch tag {
            case 1 where s: id = try r.readString()
            case 2 where n:
                guard let t = ProductType(code: UInt8(truncatingIfNeeded: try r.readVarint())) else {
                    throw FactDecodingError("unknown product type")
                }
                p.type = t
            case 3 where n: listed = try r.readBool()
            case 4 where s: list.append(try r.readString())
            case 5 where s: p.group = try r.readString()
            case 6 where s:
                let text = try r.readString()
                guard let d = CalendarDuration(iso8601: text) else { throw FactDecodingError("bad duration \(text)") }
                p.duration = d
            case 7 where s:
                var c = BinaryReader(try r.readBytes())
                var name: String?, amount: Int64?
                while let (ctag, cwire) = try c.nextField() {
                    switch ctag {
                    case 1 where cwire == .bytes: name = try c.readString()
                    case 2 where cwire == .varint: amount = try c.readInt64()
                    default: try c.skip(cwire)
                    }
                }
                guard let name, let amount else { throw FactDecodingError("a credit lacks its name or amount") }
                p.credits[name] = amount
            case 8 where n: p.level = Int(truncatingIfNeeded: try r.readInt64())
            case 1...8: throw FactDecodingError("product field \(tag) has the wrong wire type")
            default: try r.skip(wire)
            }
        }
        guard let id else { throw FactDecodingError("a product lacks its id") }
        if listed { p.entitlements = list }
        return (id, p)
    }
}

extension FactMetadata {
    func encode(into w: inout BinaryWriter) {
        w.write(1, UInt64(source.code))
        w.write(2, UInt64(signature.code))
        w.write(3, receivedAt)
        w.write(4, observedAt)
        w.write(5, bytes: rawDigest)
        w.write(6, appUserId?.rawValue)
        w.write(unknownFields)
    }

    /// Reads the stored fields into this value, made by the caller (`LedgerEvent`'s decoder): a decoder that builds
    /// and returns a new value copies it on the way out, retaining each of its references.
    mutating func read(_ r: inout BinaryReader, parts: LedgerEvent.MetadataParts) throws(FactDecodingError) {
        var sawSource = false, sawObserved = false
        while let (tag, wire) = try r.nextField() {
            let s = wire == .bytes, n = wire == .varint
            switch tag {
            case 1 where n:
                guard let v = FactSource(code: UInt8(truncatingIfNeeded: try r.readVarint())) else {
                    throw FactDecodingError("unknown source")
                }
                source = v
                sawSource = true
            case 2 where n:
                guard let v = SignatureStatus(code: UInt8(truncatingIfNeeded: try r.readVarint())) else {
                    throw FactDecodingError("unknown signature status")
                }
                signature = v
            case 3 where n: receivedAt = try r.readInt64()
            case 4 where n:
                observedAt = try r.readInt64()
                sawObserved = true
            case 5 where s:
                let digest = try r.readBytes()
                if parts == .whole { rawDigest = Array(digest) }
            case 6 where s:
                let user = try r.readBytes()
                if parts == .whole {
                    appUserId = AppUserID(String(decoding: user.assumingMemoryBound(to: UInt8.self), as: UTF8.self))
                }
            case 1...6: throw FactDecodingError("metadata field \(tag) has the wrong wire type")
            default:
                if parts == .whole {
                    try r.readUnknown(tag: tag, wire: wire, into: &unknownFields)
                } else {
                    try r.skip(wire)
                }
            }
        }
        guard sawSource else { throw FactDecodingError("metadata lacks its source") }
        if !sawObserved { observedAt = 0 }
    }
}

/// An environment's code. An environment this build does not know is written as `otherCode` with its name in a
/// field of its own (`readEnvironmentName`), which comes later in the record: until then it reads as Production.
func readEnvironment(_ r: inout BinaryReader) throws(FactDecodingError) -> AppStoreEnvironment {
    let code = try r.readVarint()
    if code == UInt64(AppStoreEnvironment.otherCode) { return .production }
    guard code <= 255, let e = AppStoreEnvironment(code: UInt8(code)) else {
        throw FactDecodingError("unknown environment \(code)")
    }
    return e
}

/// The name of an environment this build does not know.
func readEnvironmentName(_ r: inout BinaryReader) throws(FactDecodingError) -> AppStoreEnvironment {
    let name = try r.readString()
    guard let e = AppStoreEnvironment(storedName: name) else { throw FactDecodingError("bad environment name \(name)") }
    return e
}

extension BinaryWriter {
    /// An optional list of strings: its count under `countTag` (an empty list is a statement too: Apple's "no offer
    /// now" differs from saying nothing), then each item under `itemTag`.
    mutating func write(countTag: UInt32, itemTag: UInt32, _ list: [String]?) {
        guard let list else { return }
        write(countTag, UInt64(list.count))
        for item in list { write(itemTag, item) }
    }

    /// An environment: its code, and for one this build does not know its name under `nameTag`.
    mutating func write(_ tag: UInt32, _ environment: AppStoreEnvironment, nameTag: UInt32) {
        let code = environment.code
        write(tag, UInt64(code))
        if code == AppStoreEnvironment.otherCode { write(nameTag, environment.rawValue) }
    }
}

// MARK: - Public entry points

extension Fact {
    /// The format version written first in every encoded fact and event.
    public static let formatVersion: UInt8 = 1

    /// The canonical bytes of this fact: version, kind, fields. Equal facts have equal bytes (the idempotency key
    /// hashes them).
    public func encoded() -> [UInt8] {
        var w = BinaryWriter()
        w.writeVarint(UInt64(Fact.formatVersion))
        w.writeVarint(UInt64(kind.code))
        encodeFields(into: &w)
        return w.finish()
    }

    func encodeFields(into w: inout BinaryWriter) {
        switch self {
        case .transaction(let t): t.encode(into: &w)
        case .renewal(let r): r.encode(into: &w)
        case .notification(let n): n.encode(into: &w)
        case .binding(let b): b.encode(into: &w)
        case .reconciliation(let c): c.encode(into: &w)
        case .rules(let r): r.encode(into: &w)
        case .grant(let g): g.encode(into: &w)
        case .erasure(let e): e.encode(into: &w)
        }
    }

    /// Decodes what `encoded()` wrote (by this or an older version).
    public init(decoding bytes: UnsafeRawBufferPointer) throws(FactDecodingError) {
        var strings = RepeatedStrings()
        try self.init(decoding: bytes, strings: &strings)
    }

    /// Decodes what `encoded()` wrote, sharing the strings that repeat across a run of facts (see `RepeatedStrings`).
    public init(decoding bytes: UnsafeRawBufferPointer, strings: inout RepeatedStrings) throws(FactDecodingError) {
        var r = BinaryReader(bytes)
        let version = try r.readVarint()
        guard version == UInt64(Fact.formatVersion) else { throw FactDecodingError("unsupported version \(version)") }
        let code = try r.readVarint()
        guard code <= 255, let kind = Kind(code: UInt8(code)) else { throw FactDecodingError("unknown kind \(code)") }
        self = try Fact(kind: kind, reading: &r, strings: &strings)
    }

    public init(decoding bytes: [UInt8]) throws(FactDecodingError) {
        let result = bytes.withUnsafeBytes { b in Result { () throws(FactDecodingError) in try Fact(decoding: b) } }
        self = try result.get()
    }

    init(kind: Kind, reading r: inout BinaryReader, strings: inout RepeatedStrings) throws(FactDecodingError) {
        switch kind {
        case .transaction: self = .transaction(try TransactionFact(reading: &r, strings: &strings))
        case .renewal: self = .renewal(try RenewalInfoFact(reading: &r, strings: &strings))
        case .notification: self = .notification(try NotificationFact(reading: &r))
        case .binding: self = .binding(try BindingClaim(reading: &r))
        case .reconciliation: self = .reconciliation(try ReconciliationFact(reading: &r))
        case .rules: self = .rules(try RulesChange(reading: &r))
        case .grant: self = .grant(try OperatorGrant(reading: &r))
        case .erasure: self = .erasure(try Erasure(reading: &r))
        }
    }
}

extension LedgerEvent {
    /// The stored form of an event (without its seq, which is its key): version, then the fact's canonical bytes
    /// and the metadata, each length-prefixed.
    public static func encode(fact: Fact, metadata: FactMetadata) -> [UInt8] {
        encode(factBytes: fact.encoded(), metadata: metadata)
    }

    /// `encode(fact:metadata:)` for a fact already encoded (`Fact.encoded()`).
    public static func encode(factBytes: [UInt8], metadata: FactMetadata) -> [UInt8] {
        var m = BinaryWriter(capacity: 64)
        metadata.encode(into: &m)
        var w = BinaryWriter(capacity: 16 + factBytes.count + m.count)
        w.writeVarint(UInt64(Fact.formatVersion))
        w.write(1, bytes: factBytes)
        m.withBytes { w.write(2, bytes: $0) }
        return w.finish()
    }

    /// Decodes an event stored by `encode(fact:metadata:)`.
    public init(seq: UInt64, decoding bytes: UnsafeRawBufferPointer) throws(FactDecodingError) {
        var strings = RepeatedStrings()
        try self.init(seq: seq, decoding: bytes, strings: &strings)
    }

    /// How much of an event's metadata a decoder reads.
    public enum MetadataParts: Sendable {
        /// All of it.
        case whole
        /// What the fold reads (the instants, the source and the signature status): the raw digest, the envelope's
        /// user and any unknown fields are left empty. For events that only go into a fold (a replay, a refold), so
        /// that decoding them allocates nothing the fold never looks at.
        case forFold
    }

    /// Decodes an event stored by `encode(fact:metadata:)`, sharing the strings that repeat across a run of events
    /// (one subscription's: see `RepeatedStrings`).
    public init(
        seq: UInt64, decoding bytes: UnsafeRawBufferPointer, strings: inout RepeatedStrings,
        metadata parts: MetadataParts = .whole
    ) throws(FactDecodingError) {
        var r = BinaryReader(bytes)
        let version = try r.readVarint()
        guard version == UInt64(Fact.formatVersion) else { throw FactDecodingError("unsupported version \(version)") }
        var fact: Fact?
        var metadata = FactMetadata(source: .decodedJSON, receivedAt: 0)
        var sawMetadata = false
        while let (tag, wire) = try r.nextField() {
            switch (tag, wire) {
            case (1, .bytes): fact = try Fact(decoding: try r.readBytes(), strings: &strings)
            case (2, .bytes):
                var inner = BinaryReader(try r.readBytes())
                try metadata.read(&inner, parts: parts)
                sawMetadata = true
            case (1, _), (2, _): throw FactDecodingError("event field \(tag) has the wrong wire type")
            default:
                var ignored = UnknownFields()
                try r.readUnknown(tag: tag, wire: wire, into: &ignored)
            }
        }
        guard fact != nil, sawMetadata else { throw FactDecodingError("event lacks its fact or metadata") }
        // Moved out, not bound by `guard let`: a bound copy retains each reference the fact holds.
        self.init(seq: seq, fact: fact.take()!, metadata: metadata)
    }

    public init(seq: UInt64, decoding bytes: [UInt8]) throws(FactDecodingError) {
        let result = bytes.withUnsafeBytes { b in
            Result { () throws(FactDecodingError) in try LedgerEvent(seq: seq, decoding: b) }
        }
        self = try result.get()
    }
}

extension ProductType {
    /// Reads a type stored by its Apple name, matching the bytes without making a string of them.
    init(reading r: inout BinaryReader) throws(FactDecodingError) {
        let b = try r.readBytes().assumingMemoryBound(to: UInt8.self)
        if ProductType.autoRenewable.appleName.matches(b) {
            self = .autoRenewable
        } else if ProductType.nonRenewing.appleName.matches(b) {
            self = .nonRenewing
        } else if ProductType.nonConsumable.appleName.matches(b) {
            self = .nonConsumable
        } else if ProductType.consumable.appleName.matches(b) {
            self = .consumable
        } else {
            throw FactDecodingError("unknown product type \(String(decoding: b, as: UTF8.self))")
        }
    }

    /// `rawValue`, as a static string (its bytes live in the binary: comparing them allocates and retains nothing).
    var appleName: StaticString {
        switch self {
        case .autoRenewable: "Auto-Renewable Subscription"
        case .nonRenewing: "Non-Renewing Subscription"
        case .nonConsumable: "Non-Consumable"
        case .consumable: "Consumable"
        }
    }
}

extension StaticString {
    func matches(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytesEqual(UnsafeBufferPointer(start: utf8Start, count: utf8CodeUnitCount), bytes)
    }
}

extension FactOrder {
    /// The ledger's order of different facts at one fold position: the order of their canonical bytes
    /// (`Fact.encoded()`), which every fold of a ledger, incremental or replayed, has always used.
    public static let canonical = FactOrder { a, b in a.encoded().lexicographicallyPrecedes(b.encoded()) }
}
