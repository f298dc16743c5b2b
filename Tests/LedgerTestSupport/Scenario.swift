import LedgerCodec
import LedgerCore

/// A story about one subscription told as canonical facts, so tests read like what happened:
///
///     var s = Scenario()
///     s.purchase("1000", product: monthly, at: t0, expires: t0 + month)
///     s.claim("alice", at: t0)
///     let timeline = s.timeline()
///
/// Every fact becomes a `LedgerEvent` with the next seq, in the order told (the delivery order). Instants are
/// milliseconds since epoch; `Scenario.utc(...)` builds them from calendar dates.
public struct Scenario: Sendable {
    public var originalTransactionId: OriginalTransactionID
    public var environment: AppStoreEnvironment
    public var rules: FoldRules
    /// The events told so far, in delivery order.
    public private(set) var events: [LedgerEvent] = []
    public var nextSeq: UInt64 = 1

    public init(
        otid: OriginalTransactionID = "1000000741475761", environment: AppStoreEnvironment = .production,
        rules: FoldRules = FoldRules()
    ) {
        self.originalTransactionId = otid
        self.environment = environment
        self.rules = rules
    }

    // MARK: Instants

    public static let second: UnixMillis = 1000
    public static let minute: UnixMillis = 60_000
    public static let hour: UnixMillis = 3_600_000
    public static let day: UnixMillis = 86_400_000

    /// The UTC instant of a calendar date and time.
    public static func utc(_ y: Int64, _ m: Int64, _ d: Int64, _ h: Int64 = 0, _ min: Int64 = 0, _ s: Int64 = 0)
        -> UnixMillis
    {
        let yy = m <= 2 ? y - 1 : y
        let era = (yy >= 0 ? yy : yy - 399) / 400
        let yoe = yy - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return ((days * 24 + h) * 60 + min) * 60_000 + s * 1000
    }

    // MARK: Facts

    /// A transaction fact of this subscription (not yet told).
    public func transactionFact(
        _ id: String, product: String, purchased: UnixMillis, expires: UnixMillis?, signed: UnixMillis? = nil,
        webOrderLineItemId: String? = nil
    ) -> TransactionFact {
        var t = TransactionFact(
            transactionId: TransactionID(id), originalTransactionId: originalTransactionId, productId: product,
            purchaseDate: purchased, environment: environment)
        t.expiresDate = expires
        t.signedDate = signed
        t.webOrderLineItemId = webOrderLineItemId
        t.originalPurchaseDate = purchased
        return t
    }

    /// Tells a purchase or renewal (V2: signed when bought unless `signed` says otherwise).
    @discardableResult
    public mutating func purchase(
        _ id: String, product: String, at purchased: UnixMillis, expires: UnixMillis?, signed: UnixMillis? = nil,
        webOrderLineItemId: String? = nil, _ adjust: (inout TransactionFact) -> Void = { _ in }
    ) -> TransactionFact {
        var t = transactionFact(
            id, product: product, purchased: purchased, expires: expires, signed: signed ?? purchased,
            webOrderLineItemId: webOrderLineItemId ?? "woli-\(id)")
        adjust(&t)
        tell(.transaction(t), observedAt: t.signedDate ?? purchased)
        tellTokenClaim(of: t)
        return t
    }

    /// The claim the decoder states beside a transaction that carries an `appAccountToken` (at its purchase date,
    /// for the user `user` names, else for the token itself).
    public mutating func tellTokenClaim(of t: TransactionFact, user: String? = nil) {
        guard let token = t.appAccountToken, !token.isEmpty else { return }
        let b = BindingClaim(
            appUserId: AppUserID(user ?? token), originalTransactionId: t.originalTransactionId,
            claimedAt: t.purchaseDate, cause: .appAccountToken, environment: t.environment, appAccountToken: token)
        tell(.binding(b), observedAt: t.purchaseDate, source: .binding)
    }

    /// Tells a V1 transaction (no signedDate): it speaks from `observed` (the receipt's request date).
    @discardableResult
    public mutating func v1Transaction(
        _ id: String, product: String, purchased: UnixMillis, expires: UnixMillis?, observed: UnixMillis,
        webOrderLineItemId: String? = nil, _ adjust: (inout TransactionFact) -> Void = { _ in }
    ) -> TransactionFact {
        var t = transactionFact(
            id, product: product, purchased: purchased, expires: expires, webOrderLineItemId: webOrderLineItemId)
        adjust(&t)
        tell(.transaction(t), observedAt: observed, source: .receipt)
        return t
    }

    /// Tells a later revision of a transaction already told: the same fact with changes, signed at `signed`.
    @discardableResult
    public mutating func revise(
        _ original: TransactionFact, signed: UnixMillis, _ adjust: (inout TransactionFact) -> Void
    ) -> TransactionFact {
        var t = original
        t.signedDate = signed
        adjust(&t)
        tell(.transaction(t), observedAt: signed)
        return t
    }

    /// Tells a refund of `original` at `date`, signed then (REFUND notification's transaction).
    @discardableResult
    public mutating func refund(
        _ original: TransactionFact, at date: UnixMillis, reason: Int64 = 1, type: String = "REFUND_FULL",
        percentage: Int64? = nil
    ) -> TransactionFact {
        revise(original, signed: date) {
            $0.revocationDate = date
            $0.revocationReason = reason
            $0.revocationType = type
            $0.revocationPercentage = percentage
        }
    }

    /// Tells a renewal info signed at `signed`.
    @discardableResult
    public mutating func renewalInfo(
        signed: UnixMillis, product: String? = nil, autoRenewProduct: String? = nil, autoRenew: Bool? = true,
        _ adjust: (inout RenewalInfoFact) -> Void = { _ in }
    ) -> RenewalInfoFact {
        var r = RenewalInfoFact(originalTransactionId: originalTransactionId, environment: environment)
        r.signedDate = signed
        r.productId = product
        r.autoRenewProductId = autoRenewProduct ?? product
        r.autoRenewStatus = autoRenew
        adjust(&r)
        tell(.renewal(r), observedAt: signed)
        return r
    }

    /// Tells a V2 notification signed at `signed`. The UUID defaults to one derived from type, subtype and instant,
    /// so telling the same notification twice is a duplicate, as Apple's retries are.
    @discardableResult
    public mutating func notification(
        _ type: String, subtype: String? = nil, signed: UnixMillis, transaction: String? = nil, uuid: String? = nil,
        _ adjust: (inout NotificationFact) -> Void = { _ in }
    ) -> NotificationFact {
        var n = NotificationFact(
            notificationUUID: uuid ?? "\(type)-\(subtype ?? "")-\(signed)", notificationType: type,
            environment: environment)
        n.subtype = subtype
        n.signedDate = signed
        n.version = "2.0"
        n.originalTransactionId = originalTransactionId
        n.transactionId = transaction.map { TransactionID($0) }
        adjust(&n)
        tell(.notification(n), observedAt: signed, source: .notificationV2)
        return n
    }

    /// Tells a binding claim: `user` presents this OTID at `instant`.
    @discardableResult
    public mutating func claim(
        _ user: String, at instant: UnixMillis, cause: BindingClaim.Cause = .claim, token: String? = nil,
        everyEnvironment: Bool = false
    ) -> BindingClaim {
        let b = BindingClaim(
            appUserId: AppUserID(user), originalTransactionId: originalTransactionId, claimedAt: instant, cause: cause,
            environment: environment, appAccountToken: token, everyEnvironment: everyEnvironment)
        tell(.binding(b), observedAt: instant, source: .binding)
        return b
    }

    /// Tells any fact, with the next seq.
    public mutating func tell(_ fact: Fact, observedAt: UnixMillis, source: FactSource = .decodedJSON) {
        let metadata = FactMetadata(source: source, receivedAt: observedAt, observedAt: observedAt)
        events.append(LedgerEvent(seq: nextSeq, fact: fact, metadata: metadata))
        nextSeq += 1
    }

    /// Tells an event again exactly as it was (a re-delivery), with the next seq.
    public mutating func redeliver(_ index: Int) {
        var e = events[index]
        e.seq = nextSeq
        events.append(e)
        nextSeq += 1
    }

    // MARK: Outcomes

    /// The timeline folded from every event told.
    public func timeline() -> Timeline {
        Timeline.fold(
            events, originalTransactionId: originalTransactionId, environment: environment, rules: rules,
            ties: .canonical)
    }

    /// The timeline as known at `asOf` (the events with seq ≤ asOf).
    public func timeline(asOf: UInt64) -> Timeline {
        Timeline.fold(
            events.filter { $0.seq <= asOf }, originalTransactionId: originalTransactionId, environment: environment,
            rules: rules, ties: .canonical)
    }

    /// The timeline built one event at a time, refolding whenever `apply` declines, as the store does.
    public func incrementalTimeline() -> (timeline: Timeline, refolds: Int) {
        var t = Timeline(originalTransactionId: originalTransactionId, environment: environment)
        var refolds = 0
        for (i, e) in events.enumerated() where !t.apply(e, rules: rules) {
            refolds += 1
            t = Timeline.fold(
                events[...i], originalTransactionId: originalTransactionId, environment: environment, rules: rules,
                ties: .canonical)
        }
        return (t, refolds)
    }

    /// The lifecycle stream of the events told, each its own input: what the timeline as of each seq says that it
    /// did not as of the seq before (`Lifecycle.events`), as the store derives it.
    public func lifecycleStream() -> [LifecycleEvent] {
        var before: Timeline?
        var out: [LifecycleEvent] = []
        for e in events where before != nil || e.fact.originalTransactionId == originalTransactionId {
            let after = timeline(asOf: e.seq)
            out += Lifecycle.events(before: before, after: after, seq: e.seq, rules: rules)
            before = after
        }
        return out
    }
}
