/// One billing period (or one-time purchase) of a subscription: the transaction that bought it, the restored copies
/// that observed it again, and whether and when access was taken back.
///
/// Its optional fields are spelled `Optional<…>`, not `T?` (as are those of `Revocation`, `Offer` and `Timeline`), so
/// that an initializer builds the value in place: a `T?` field is nil before the initializer runs, and one assigned in
/// it makes the compiler copy the whole struct (every reference retained and released) for every period the fold or
/// the codec makes: keep the spelling.
public struct Period: Hashable, Sendable {
    /// The period's own transaction: the smallest id of its group (Apple mints ids in increasing order, so the
    /// original purchase or renewal precedes every restored copy).
    public var transactionId: TransactionID
    public var webOrderLineItemId: String? {
        get { lineItem?.text }
        set { lineItem = newValue.map(CompactID.init) }
    }
    /// `webOrderLineItemId` as the fold and the stored form keep it (a number, for Apple's decimal ids).
    @usableFromInline package var lineItem: Optional<CompactID>
    public var productId: String
    /// `purchaseDate`: access starts here.
    public var start: UnixMillis
    /// Apple's `expiresDate`, as stated by the latest revision.
    public var expiresDate: Optional<UnixMillis>
    /// When access ends without a refund: `expiresDate`, the upgrade instant for the old side of an upgrade, or the
    /// catalog duration of a non-renewing subscription. Nil: never (non-consumables, consumables).
    public var end: Optional<UnixMillis>
    public var originalPurchaseDate: Optional<UnixMillis>
    /// The product type: catalog first, then Apple's `type`, then inferred (an expiry means a subscription).
    public var type: ProductType
    public var quantity: Int64
    public var offer: Optional<Offer>
    /// The old side of an upgrade: ends at `end`, not a refund.
    public var upgraded: Bool
    /// The end of what the period's price bought: `end`, or for the old side of an upgrade (which ends early) its
    /// `expiresDate`. Nil without an end.
    public var billedUntil: UnixMillis? {
        guard let end else { return nil }
        return upgraded ? max(end, expiresDate ?? end) : end
    }
    /// Restored copies of this period (other transaction ids, same period), in id order.
    public var observedAs: [TransactionID]
    /// Refunds and Family Sharing revokes, oldest first, each possibly reversed.
    public var revocations: [Revocation]
    /// Provenance: the sequence number of the event that created the period.
    public var seq: UInt64
    /// What the period was sold at and under (price, currency, why it was bought, billing plan), when Apple states any
    /// of it. Shared with the previous period when the same.
    public var terms: Optional<PeriodTerms>
    /// The transaction ids whose latest revision states the open revocation: a later revision of one of them
    /// without a revocation date reverses it; a restored copy that never mentioned it does not.
    @usableFromInline package var revokingTransactions: [TransactionID]

    public init(
        transactionId: TransactionID, webOrderLineItemId: String? = nil, productId: String, start: UnixMillis,
        expiresDate: UnixMillis? = nil, end: UnixMillis? = nil, originalPurchaseDate: UnixMillis? = nil,
        type: ProductType = .autoRenewable, quantity: Int64 = 1, offer: Offer? = nil, upgraded: Bool = false,
        observedAs: [TransactionID] = [], revocations: [Revocation] = [], seq: UInt64 = 0
    ) {
        self.init(
            transactionId: transactionId, lineItem: webOrderLineItemId.map(CompactID.init), productId: productId,
            start: start,
            expiresDate: expiresDate, end: end, originalPurchaseDate: originalPurchaseDate, type: type,
            quantity: quantity, offer: offer, upgraded: upgraded, observedAs: observedAs, revocations: revocations,
            seq: seq, revokingTransactions: [])
    }

    /// Every field, for the codec's decoder. Inlinable: it makes one per stored period, in place.
    @inlinable
    package init(
        transactionId: TransactionID, lineItem: CompactID?, productId: String, start: UnixMillis,
        expiresDate: UnixMillis?, end: UnixMillis?, originalPurchaseDate: UnixMillis?, type: ProductType,
        quantity: Int64, offer: Offer?, upgraded: Bool, observedAs: [TransactionID], revocations: [Revocation],
        seq: UInt64, revokingTransactions: [TransactionID], terms: PeriodTerms? = nil
    ) {
        self.transactionId = transactionId
        self.lineItem = lineItem
        self.productId = productId
        self.start = start
        self.expiresDate = expiresDate
        self.end = end
        self.originalPurchaseDate = originalPurchaseDate
        self.type = type
        self.quantity = quantity
        self.offer = offer
        self.upgraded = upgraded
        self.observedAs = observedAs
        self.revocations = revocations
        self.seq = seq
        self.revokingTransactions = revokingTransactions
        self.terms = terms
    }

    /// The period the transaction `t` buys, stated by the event `seq`: its fields taken from `t` (as `take` does), a
    /// revocation open if `t` states one (as `applyRevocation(of:at:seq:)` does on a period without one), its terms
    /// shared with `previous` when `t` states the same. Each field is computed and stored once, rather than building
    /// a blank period and then taking `t` and its revocation, which would copy (and retain) its references again.
    @inline(__always)
    init(bought t: borrowing TransactionFact, seq: UInt64, rules: FoldRules, previousTerms previous: PeriodTerms? = nil) {
        let stated = Period.typeAndEnd(of: t, rules: rules)
        self.transactionId = t.transactionId
        self.lineItem = t.webOrderLineItem
        self.productId = t.productId
        self.start = Period.start(of: t, type: stated.type)
        self.expiresDate = t.expiresDate
        self.end = stated.end
        self.originalPurchaseDate = t.originalPurchaseDate
        self.type = stated.type
        self.quantity = t.quantity ?? 1
        self.offer = Offer(t)
        self.upgraded = t.isUpgraded == true
        self.observedAs = []
        self.seq = seq
        self.terms = PeriodTerms.stated(by: t, sharing: previous)
        if t.isRefundLike, let date = t.revocationDate {
            self.revocations = [
                Revocation(
                    date: date, reason: t.revocationReason, type: t.revocationType, percentage: t.revocationPercentage,
                    seq: seq)
            ]
            self.revokingTransactions = [t.transactionId]
        } else {
            self.revocations = []
            self.revokingTransactions = []
        }
    }

    /// Where access starts: the purchase date, except that a one-time purchase known only by a restored copy (whose
    /// purchase date is the restore's) started at its original purchase.
    @inline(__always)
    static func start(of t: borrowing TransactionFact, type: ProductType) -> UnixMillis {
        guard type == .nonConsumable, let original = t.originalPurchaseDate else { return t.purchaseDate }
        return min(t.purchaseDate, original)
    }

    /// True when `transactionId` is this period's transaction or one of its restored copies.
    public func contains(_ id: TransactionID) -> Bool { transactionId == id || observedAs.contains(id) }

    /// The revocation in force at `instant`, if any.
    public func revocation(at instant: UnixMillis) -> Revocation? {
        revocations.last { $0.date <= instant && ($0.reversedAt.map { instant < $0 } ?? true) }
    }

    /// The open (not reversed) revocation, if any.
    public var openRevocation: Revocation? { revocations.last.flatMap { $0.reversedAt == nil ? $0 : nil } }

    /// True when the period grants access at `instant`: started, not ended, not revoked then.
    public func grantsAccess(at instant: UnixMillis) -> Bool {
        start <= instant && (end.map { instant < $0 } ?? true) && revocation(at: instant) == nil
    }

    /// True when `instant` lies in `[start, end)`, revoked or not.
    public func covers(_ instant: UnixMillis) -> Bool { start <= instant && (end.map { instant < $0 } ?? true) }
}

/// What a period was sold at and under: Apple's price and currency, why it was bought, its billing plan. Consecutive
/// periods of a subscription almost always have the same terms, so they share one instance: a period carries one
/// reference for all of them, and copying a period (as the fold does when it places or refolds one) stays cheap.
/// Immutable: a revision that states other terms gets another instance.
public final class PeriodTerms: Hashable, Sendable {
    /// What the customer paid, in milliunits of `currency` (Apple's `price`; V1 receipts do not state it).
    public let price: Int64?
    public let currency: String?
    /// `PURCHASE` or `RENEWAL` (V2 `transactionReason`): a renewal after a lapse in billing is still a renewal.
    public let transactionReason: String?
    /// `MONTHLY` for a period billed as one installment of a longer commitment.
    public let billingPlanType: String?
    /// When the commitment this period is an installment of ends.
    public let commitmentExpiresDate: UnixMillis?
    /// For the app's own purchase (an AppTransaction): the app version the customer first got.
    public let originalApplicationVersion: String?
    /// Apple's `inAppOwnershipType` (V1 `in_app_ownership_type`): `PURCHASED`, or `FAMILY_SHARED` for a family
    /// member's purchase shared with this customer. As Apple states it; nil when it does not.
    public let ownershipType: String?

    /// Nil when no term is stated, so periods from receipts (which state none) carry nothing. Inlinable, as
    /// `sharing`: the codec's decoder makes the terms of every stored period.
    @inlinable
    public init?(
        price: Int64? = nil, currency: String? = nil, transactionReason: String? = nil, billingPlanType: String? = nil,
        commitmentExpiresDate: UnixMillis? = nil, originalApplicationVersion: String? = nil,
        ownershipType: String? = nil
    ) {
        guard
            price != nil || currency != nil || transactionReason != nil || billingPlanType != nil
                || commitmentExpiresDate != nil || originalApplicationVersion != nil || ownershipType != nil
        else { return nil }
        self.price = price
        self.currency = currency
        self.transactionReason = transactionReason
        self.billingPlanType = billingPlanType
        self.commitmentExpiresDate = commitmentExpiresDate
        self.originalApplicationVersion = originalApplicationVersion
        self.ownershipType = ownershipType
    }

    /// The terms given, as `previous` when it states exactly these (no new instance), or a new instance. Out of line:
    /// inlined, it made `Period.init(bought:)` too large to inline into the fold's step, whose copies of the new period
    /// it spares.
    @inline(never)
    package static func sharing(
        _ previous: PeriodTerms?, price: Int64?, currency: String?, transactionReason: String?,
        billingPlanType: String?, commitmentExpiresDate: UnixMillis?, originalApplicationVersion: String?,
        ownershipType: String?
    ) -> PeriodTerms? {
        if let previous, previous.price == price, previous.currency == currency,
            previous.transactionReason == transactionReason, previous.billingPlanType == billingPlanType,
            previous.commitmentExpiresDate == commitmentExpiresDate,
            previous.originalApplicationVersion == originalApplicationVersion, previous.ownershipType == ownershipType
        {
            return previous
        }
        // Checked here, not left to the failable init: a class is allocated before its init runs, so an init that
        // fails allocates and frees an instance (every period of a receipt, which states no term).
        guard
            price != nil || currency != nil || transactionReason != nil || billingPlanType != nil
                || commitmentExpiresDate != nil || originalApplicationVersion != nil || ownershipType != nil
        else { return nil }
        return PeriodTerms(
            price: price, currency: currency, transactionReason: transactionReason, billingPlanType: billingPlanType,
            commitmentExpiresDate: commitmentExpiresDate, originalApplicationVersion: originalApplicationVersion,
            ownershipType: ownershipType)
    }

    /// The terms the transaction `t` states, shared with `previous` when the same.
    @inline(__always)
    static func stated(by t: borrowing TransactionFact, sharing previous: PeriodTerms?) -> PeriodTerms? {
        sharing(
            previous, price: t.price, currency: t.currency, transactionReason: t.transactionReason,
            billingPlanType: t.billingPlanType, commitmentExpiresDate: t.commitment?.expiresDate,
            originalApplicationVersion: t.originalApplicationVersion, ownershipType: t.inAppOwnershipType)
    }

    /// The terms after a revision in the receipt format: it cannot state price, currency, reason, billing plan,
    /// commitment or app version, so those stay as `kept` states them; the ownership type it states when it names one
    /// (receipts older than Family Sharing do not).
    static func receiptStated(by t: borrowing TransactionFact, keeping kept: PeriodTerms?) -> PeriodTerms? {
        sharing(
            kept, price: kept?.price, currency: kept?.currency, transactionReason: kept?.transactionReason,
            billingPlanType: kept?.billingPlanType, commitmentExpiresDate: kept?.commitmentExpiresDate,
            originalApplicationVersion: kept?.originalApplicationVersion,
            ownershipType: t.inAppOwnershipType ?? kept?.ownershipType)
    }

    public static func == (a: PeriodTerms, b: PeriodTerms) -> Bool {
        a === b
            || (a.price == b.price && a.currency == b.currency && a.transactionReason == b.transactionReason
                && a.billingPlanType == b.billingPlanType && a.commitmentExpiresDate == b.commitmentExpiresDate
                && a.originalApplicationVersion == b.originalApplicationVersion && a.ownershipType == b.ownershipType)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(price)
        hasher.combine(currency)
        hasher.combine(transactionReason)
        hasher.combine(billingPlanType)
        hasher.combine(commitmentExpiresDate)
        hasher.combine(originalApplicationVersion)
        hasher.combine(ownershipType)
    }
}

/// A refund or revoke of one period: access ends at `date`, and comes back at `reversedAt` if the refund was reversed.
/// Optional fields spelled `Optional<…>`: see `Period`.
public struct Revocation: Hashable, Sendable {
    public var date: UnixMillis
    /// 0 other, 1 app issue.
    public var reason: Optional<Int64>
    /// `REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`.
    public var type: Optional<String>
    /// Milliunits (50000 = 50%).
    public var percentage: Optional<Int64>
    /// When a REFUND_REVERSED notification (or a later revision without a revocation date) restored access.
    public var reversedAt: Optional<UnixMillis>
    /// Provenance: the event that stated the revocation.
    public var seq: UInt64
    /// Provenance: the event that reversed it.
    public var reversedSeq: Optional<UInt64>

    public init(
        date: UnixMillis, reason: Int64? = nil, type: String? = nil, percentage: Int64? = nil,
        reversedAt: UnixMillis? = nil, seq: UInt64 = 0, reversedSeq: UInt64? = nil
    ) {
        self.date = date
        self.reason = reason
        self.type = type
        self.percentage = percentage
        self.reversedAt = reversedAt
        self.seq = seq
        self.reversedSeq = reversedSeq
    }

    /// Family Sharing revoke rather than a refund.
    public var isFamilyRevoke: Bool { type == "FAMILY_REVOKE" }
}

/// A trial or offer a period was bought with. Optional fields spelled `Optional<…>`: see `Period`.
public struct Offer: Hashable, Sendable, Codable {
    /// 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    public var type: Optional<Int64>
    public var identifier: Optional<String>
    /// `FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`.
    public var discountType: Optional<String>
    /// V1 `is_trial_period`.
    public var isTrial: Bool
    /// How long the offer lasts (V2 `offerPeriod`, ISO-8601: `P3M`).
    public var period: Optional<String>

    public init(
        type: Int64? = nil, identifier: String? = nil, discountType: String? = nil, isTrial: Bool = false,
        period: String? = nil
    ) {
        self.type = type
        self.identifier = identifier
        self.discountType = discountType
        self.isTrial = isTrial
        self.period = period
    }

    /// The offer after a revision in the receipt format that states `stated`. A receipt names an introductory
    /// offer, a free trial, a promotional offer and an offer code, but not a discount's kind beyond a free trial, an
    /// offer's length, or a win-back offer: those stay as `kept` states them when the receipt names the same offer,
    /// and a win-back offer stays when the receipt names none. Otherwise the receipt's word stands.
    init?(receiptStated stated: Offer?, keeping kept: Offer?) {
        guard let kept else {
            guard let stated else { return nil }
            self = stated
            return
        }
        guard let stated else {
            guard kept.type == 4 else { return nil }
            self = kept
            return
        }
        guard stated.type == kept.type, stated.identifier == nil || stated.identifier == kept.identifier,
            !stated.isTrial || kept.isTrial
        else {
            self = stated
            return
        }
        self = kept
    }

    /// The offer a transaction states, if any.
    init?(_ t: borrowing TransactionFact) {
        let trial = t.isTrialPeriod == true || t.offerDiscountType == "FREE_TRIAL"
        guard t.offerType != nil || trial || t.isInIntroOfferPeriod == true else { return nil }
        self.init(
            type: t.offerType ?? 1, identifier: t.offerIdentifier, discountType: t.offerDiscountType, isTrial: trial,
            period: t.offerPeriod)
    }
}
