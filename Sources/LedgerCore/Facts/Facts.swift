/// The state of a subscription's next renewal (V2 `JWSRenewalInfoDecodedPayload`, V1 `pending_renewal_info`). Its
/// fields (`Fields`) are read and written as its own properties: `r.productId`, `r.autoRenewStatus = …`.
///
/// The fields sit in one heap box that copies share until one of them is changed (copy on write), as
/// `TransactionFact`'s do: the fold takes each renewal info out of its event, and a copy of the fields themselves
/// retains (and later releases) each of the references they hold.
@dynamicMemberLookup
public struct RenewalInfoFact: Hashable, Codable, Sendable {
    /// The fields of a renewal info.
    public struct Fields: Hashable, Codable, Sendable {
        public var originalTransactionId: OriginalTransactionID
        public var productId: String?
        public var autoRenewProductId: String?
        public var autoRenewStatus: Bool?
        /// 1 cancelled, 2 billing error, 3 declined price increase, 4 product unavailable, 5 other.
        public var expirationIntent: Int64?
        public var isInBillingRetryPeriod: Bool?
        public var gracePeriodExpiresDate: UnixMillis?
        /// 0 not yet consented, 1 consented.
        public var priceIncreaseStatus: Int64?
        public var renewalDate: UnixMillis?
        public var offerType: Int64?
        public var offerIdentifier: String?
        public var signedDate: UnixMillis?
        public var recentSubscriptionStartDate: UnixMillis?
        public var environment: AppStoreEnvironment
        /// The price of the next renewal, in milliunits of `currency`.
        public var renewalPrice: Int64?
        public var currency: String?
        /// The discount of the offer applied at the next renewal (`FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`,
        /// `ONE_TIME`) and its length (ISO-8601).
        public var offerDiscountType: String?
        public var offerPeriod: String?
        /// Win-back offers the customer may redeem now.
        public var eligibleWinBackOfferIds: [String]?
        public var appAccountToken: String?
        public var appTransactionId: String?
        /// `MONTHLY` when the next renewal is billed in installments.
        public var renewalBillingPlanType: String?
        public var extra: [String: String]
        public var unknownFields: UnknownFields


        /// The required fields; every other is absent.
        @inlinable
        public init(originalTransactionId: OriginalTransactionID, environment: AppStoreEnvironment = .production) {
            self.originalTransactionId = originalTransactionId
            self.environment = environment
            self.extra = [:]
            self.unknownFields = UnknownFields()
        }
    }

    @usableFromInline var box: CopyOnWriteBox<Fields>

    /// A fact of these fields.
    @inlinable
    public init(_ fields: Fields) { box = CopyOnWriteBox(fields) }

    /// A fact of the fields `fill` writes over `initial`, in place in the fact's box (see `TransactionFact`).
    /// Inlinable, for LedgerCodec's decoder, which reads every stored renewal info this way.
    @inlinable
    package init<Failure: Error>(_ initial: Fields, filling fill: (inout Fields) throws(Failure) -> Void)
        throws(Failure)
    {
        box = CopyOnWriteBox(initial)
        try fill(&box.value)
    }

    /// The required fields; every other is absent.
    @inlinable
    public init(originalTransactionId: OriginalTransactionID, environment: AppStoreEnvironment = .production) {
        self.init(Fields(originalTransactionId: originalTransactionId, environment: environment))
    }

    /// A field, read where it lies; written after copying the box when another fact shares it (see
    /// `TransactionFact`).
    @inlinable
    public subscript<Value>(dynamicMember field: WritableKeyPath<Fields, Value>) -> Value {
        _read { yield box.value[keyPath: field] }
        _modify {
            if !isKnownUniquelyReferenced(&box) { box = CopyOnWriteBox(box.value) }
            yield &box.value[keyPath: field]
        }
    }

    public static func == (a: RenewalInfoFact, b: RenewalInfoFact) -> Bool { a.box === b.box || a.box.value == b.box.value }
    public func hash(into hasher: inout Hasher) { box.value.hash(into: &hasher) }
    public init(from decoder: any Decoder) throws { box = CopyOnWriteBox(try Fields(from: decoder)) }
    public func encode(to encoder: any Encoder) throws { try box.value.encode(to: encoder) }
}

/// A server notification itself (V1 or V2): its type and what it is about. The transaction and renewal info it
/// carries are separate facts.
public struct NotificationFact: Hashable, Codable, Sendable {
    /// V2 `notificationUUID`; for V1 (which has no id) the hex SHA-256 of the body's canonical JSON, so bodies that
    /// parse to the same value coincide, whatever their whitespace.
    public var notificationUUID: String
    public var notificationType: String
    public var subtype: String?
    public var signedDate: UnixMillis?
    /// `"1"` for V1, `"2.0"` for V2.
    public var version: String?
    public var environment: AppStoreEnvironment
    public var bundleId: String?
    public var appAppleId: Int64?
    /// The subscription it is about, when it names one (absent for TEST and summaries).
    public var originalTransactionId: OriginalTransactionID?
    public var transactionId: TransactionID?
    /// V2 `data.status` (1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked).
    public var status: Int64?
    /// V1 `auto_renew_status` / `auto_renew_product_id`.
    public var autoRenewStatus: Bool?
    public var autoRenewProductId: String?
    public var extra: [String: String]
    public var unknownFields: UnknownFields

    /// The required fields; every other is absent. Inlinable: LedgerCodec's decoder makes one per stored notification
    /// and fills it field by field.
    @inlinable
    public init(notificationUUID: String, notificationType: String, environment: AppStoreEnvironment = .production) {
        self.notificationUUID = notificationUUID
        self.notificationType = notificationType
        self.environment = environment
        self.extra = [:]
        self.unknownFields = UnknownFields()
    }
}

extension NotificationFact {
    /// A string field the notification carried in `extra` (kept there as compact JSON text), or nil when absent or
    /// not a plain string.
    public func statedString(_ key: String) -> String? {
        guard let text = extra[key], text.utf8.count >= 2, text.first == "\"", text.last == "\"",
            !text.contains("\\")
        else { return nil }
        return String(text.dropFirst().dropLast())
    }
}

/// An app user presents an OTID as theirs (after a purchase or a restore), or a transaction names the user by its
/// `appAccountToken`.
public struct BindingClaim: Hashable, Codable, Sendable {
    /// Where a claim comes from.
    public enum Cause: String, Hashable, Codable, Sendable {
        /// The app's backend said so (`POST /v1/bindings`, or `appUserId` on an input).
        case claim
        /// A transaction carried the user's `appAccountToken`.
        case appAccountToken
    }

    public var appUserId: AppUserID
    public var originalTransactionId: OriginalTransactionID
    /// The claim's instant (valid time).
    public var claimedAt: UnixMillis
    public var cause: Cause
    /// The environment the claim is about; ignored when `everyEnvironment`.
    public var environment: AppStoreEnvironment
    /// The `appAccountToken` the claim is about: the token a transaction carried (cause `appAccountToken`), or one
    /// the app's backend names as this user's. Either way, where `appUserId` is not the token itself, the claim maps
    /// the token to that user on this subscription (docs/domain.md, "Owners"). Nil on claims stored before tokens
    /// were kept: a token claim's user id then is the token.
    public var appAccountToken: String?
    /// A claim that named no environment: it applies in every environment where the subscription is known, and in
    /// one where it appears later.
    public var everyEnvironment: Bool
    public var unknownFields: UnknownFields

    /// Inlinable: LedgerCodec's decoder makes one per stored claim and fills it field by field.
    @inlinable
    public init(
        appUserId: AppUserID, originalTransactionId: OriginalTransactionID, claimedAt: UnixMillis,
        cause: Cause = .claim, environment: AppStoreEnvironment = .production, appAccountToken: String? = nil,
        everyEnvironment: Bool = false
    ) {
        self.appUserId = appUserId
        self.originalTransactionId = originalTransactionId
        self.claimedAt = claimedAt
        self.cause = cause
        self.environment = environment
        self.appAccountToken = appAccountToken
        self.everyEnvironment = everyEnvironment
        self.unknownFields = UnknownFields()
    }

    /// The token a claim of cause `appAccountToken` is about (claims stored before tokens were kept name it as
    /// their user).
    public var claimedToken: String? {
        appAccountToken ?? (cause == .appAccountToken ? appUserId.rawValue : nil)
    }

    /// True when the claim applies to a subscription of `environment`.
    @inline(__always)
    public func applies(to environment: AppStoreEnvironment) -> Bool {
        everyEnvironment || self.environment == environment
    }
}

/// A check of one subscription against Apple's App Store Server API (`storeledger reconcile`): when Apple was asked,
/// how (`mode`), up to which history revision, what Apple listed and what of it the ledger lacked. It is the reconciler's own
/// statement, not an input from outside (no route or input type makes one), and not a step of the fold: it changes
/// no period, owner or entitlement. Its revisions are stored under `reconciliation:<otid>`, one per check, so the
/// subscription's answer can show the latest check as known at any `asOf`, and an auditor can list them all.
public struct ReconciliationFact: Hashable, Codable, Sendable {
    public var originalTransactionId: OriginalTransactionID
    public var environment: AppStoreEnvironment
    /// When Apple was asked (the start of the check).
    public var checkedAt: UnixMillis
    /// Get Transaction History's `revision` after its last page: Apple's token for "everything up to here".
    public var revision: String?
    /// Transactions Apple listed for the subscription (its history), and renewal infos and notifications it holds.
    public var transactionsSeen: Int64
    /// Ids of Apple's transactions the ledger lacked, or held only in another revision, appended by this check.
    public var transactionsAdded: [String]
    /// Notifications Apple's history holds for the subscription (within the window asked).
    public var notificationsSeen: Int64
    /// UUIDs of those the ledger lacked, appended by this check.
    public var notificationsAdded: [String]
    /// UUIDs of notifications whose every send attempt Apple reports as failed (`sendAttempts`), whether or not the
    /// ledger holds them now.
    public var notificationsUndelivered: [String]
    /// Whether a newer renewal info was appended.
    public var renewalInfoAdded: Bool
    /// How Apple was asked: `customer` (the customer's notification, transaction and refund history and statuses,
    /// each fetched once for all of the customer's purchases) or `missed` (the whole app's notification history over
    /// a window, recorded for the subscriptions it found something about). Nil on a check that names none.
    public var mode: String?
    /// The start of the notification history window asked (its end is `checkedAt`).
    public var windowStart: UnixMillis?
    /// Refunded transactions of the subscription in Apple's refund history (`customer` checks).
    public var refundsSeen: Int64?
    public var unknownFields: UnknownFields

    /// `mode` of a check that asked for the customer's whole history.
    public static let customerMode = "customer"
    /// `mode` of a check recorded by a pass over the whole app's notification history.
    public static let missedMode = "missed"

    public init(
        originalTransactionId: OriginalTransactionID, environment: AppStoreEnvironment, checkedAt: UnixMillis,
        revision: String? = nil, transactionsSeen: Int64 = 0, transactionsAdded: [String] = [],
        notificationsSeen: Int64 = 0, notificationsAdded: [String] = [], notificationsUndelivered: [String] = [],
        renewalInfoAdded: Bool = false, mode: String? = nil, windowStart: UnixMillis? = nil, refundsSeen: Int64? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.environment = environment
        self.checkedAt = checkedAt
        self.revision = revision
        self.transactionsSeen = transactionsSeen
        self.transactionsAdded = transactionsAdded
        self.notificationsSeen = notificationsSeen
        self.notificationsAdded = notificationsAdded
        self.notificationsUndelivered = notificationsUndelivered
        self.renewalInfoAdded = renewalInfoAdded
        self.mode = mode
        self.windowStart = windowStart
        self.refundsSeen = refundsSeen
        self.unknownFields = UnknownFields()
    }

    /// The event key of a subscription's reconciliations.
    public static func eventKey(_ otid: OriginalTransactionID) -> String { "reconciliation:" + otid.rawValue }

    /// True when the check found nothing missing.
    public var complete: Bool { transactionsAdded.isEmpty && notificationsAdded.isEmpty && !renewalInfoAdded }
}

/// One canonical fact: what the ledger stores as an immutable event. One reference in size: a transaction is its
/// copy-on-write box, the other kinds (large structs, rarer) are boxed by the enum (`indirect`), so copying a fact
/// never copies its fields and a decoded transaction costs one allocation, not two.
public enum Fact: Hashable, Sendable {
    case transaction(TransactionFact)
    indirect case renewal(RenewalInfoFact)
    indirect case notification(NotificationFact)
    indirect case binding(BindingClaim)
    indirect case reconciliation(ReconciliationFact)
    /// The ledger's fold rules (catalog and binding policy) from this event's log position on: about no
    /// subscription, on no timeline.
    indirect case rules(RulesChange)
    /// The operator's grant (or revoke) of an entitlement to an app user: about a customer, on no timeline.
    indirect case grant(OperatorGrant)
    /// The operator forgot people: about no subscription, on no timeline.
    indirect case erasure(Erasure)

    /// The kind, as named on the wire and in `events`.
    public var kind: Kind {
        switch self {
        case .transaction: .transaction
        case .renewal: .renewal
        case .notification: .notification
        case .binding: .binding
        case .reconciliation: .reconciliation
        case .rules: .rules
        case .grant: .grant
        case .erasure: .erasure
        }
    }

    /// The kinds of fact, in fold order: at one instant transactions fold first, then renewal infos, notifications
    /// and claims (`FoldPosition`). Rules changes are on no timeline: they decide which rules every fold uses.
    public enum Kind: String, Hashable, Codable, Sendable, CaseIterable, Comparable {
        case transaction, renewal, notification, binding, reconciliation, rules, grant, erasure

        /// The kind's place in the fold order, from 1; also its code where events and timelines are stored
        /// (LedgerCodec), so a code is never reused or renumbered. Inlinable, as `init(code:)`: the codec reads and
        /// writes one per stored event.
        @inlinable
        public var code: UInt8 {
            switch self {
            case .transaction: 1
            case .renewal: 2
            case .notification: 3
            case .binding: 4
            case .reconciliation: 5
            case .rules: 6
            case .grant: 7
            case .erasure: 8
            }
        }

        /// The kind of `code`; nil for a code no kind has.
        @inlinable
        public init?(code: UInt8) {
            guard let kind = Kind.allCases.first(where: { $0.code == code }) else { return nil }
            self = kind
        }

        public static func < (a: Kind, b: Kind) -> Bool { a.code < b.code }
    }

    /// The key events are stored under: the `transaction_id`, or a synthetic id for facts that have none
    /// (`renewal:<otid>`, `notification:<uuid>`, `binding:<otid>`).
    public var eventKey: String {
        switch self {
        case .transaction(let t): t.transactionId.rawValue
        case .renewal(let r): "renewal:" + r.originalTransactionId.rawValue
        case .notification(let n): "notification:" + n.notificationUUID
        case .binding(let b): "binding:" + b.originalTransactionId.rawValue
        case .reconciliation(let c): ReconciliationFact.eventKey(c.originalTransactionId)
        case .rules: RulesChange.eventKey
        case .grant(let g): OperatorGrant.eventKey(g.appUserId)
        case .erasure(let e): Erasure.eventKey(e.pseudonyms.first ?? "")
        }
    }

    /// The subscription this fact belongs to, if any: the subscription whose fold it is a step of (and whose
    /// `by_otid` index names it). Nil for a reconciliation, which is a check of its subscription, not a step of it;
    /// it is found by its key (`ReconciliationFact.eventKey`).
    public var originalTransactionId: OriginalTransactionID? {
        switch self {
        case .transaction(let t): t.originalTransactionId
        case .renewal(let r): r.originalTransactionId
        case .notification(let n): n.originalTransactionId
        case .binding(let b): b.originalTransactionId
        case .reconciliation, .rules, .grant, .erasure: nil
        }
    }

    /// The transaction id, for transaction facts (and notifications that name one).
    public var transactionId: TransactionID? {
        switch self {
        case .transaction(let t): t.transactionId
        case .notification(let n): n.transactionId
        default: nil
        }
    }

    public var environment: AppStoreEnvironment {
        switch self {
        case .transaction(let t): t.environment
        case .renewal(let r): r.environment
        case .notification(let n): n.environment
        case .binding(let b): b.environment
        case .reconciliation(let c): c.environment
        // About every environment; named Production only because every fact names one.
        case .rules: .production
        case .grant(let g): g.environment
        // About every environment, as a change of rules.
        case .erasure: .production
        }
    }

    /// Apple's signing instant when the fact has one.
    public var signedDate: UnixMillis? {
        switch self {
        case .transaction(let t): t.signedDate
        case .renewal(let r): r.signedDate
        case .notification(let n): n.signedDate
        case .binding, .reconciliation, .rules, .grant, .erasure: nil
        }
    }

    /// The instant the fact states from when it says so itself: `signedDate`, or a receipt's creation for a copy
    /// read from its `in_app` (`TransactionFact.statedDate`).
    public var statedDate: UnixMillis? {
        switch self {
        case .transaction(let t): t.statedDate
        case .renewal(let r): r.signedDate
        case .notification(let n): n.signedDate
        case .binding, .reconciliation, .rules, .grant, .erasure: nil
        }
    }
}

/// Where a fact came from.
public enum FactSource: String, Hashable, Codable, Sendable, CaseIterable {
    /// A verifyReceipt response.
    case receipt
    /// A V1 server notification (JSON).
    case notificationV1
    /// A V2 server notification (`signedPayload`).
    case notificationV2
    /// A StoreKit 2 / App Store Server API signed transaction or renewal info (JWS).
    case signedTransaction
    /// Decoded (unsigned) V2 JSON from a trusted local caller.
    case decodedJSON
    /// A binding claim from the app's backend.
    case binding
    /// A check against the App Store Server API, recorded by `storeledger reconcile`.
    case reconciliation
    /// The ledger's configuration (`storeledger rules apply`). New sources go last: a source's position is its code.
    case configuration
    /// The operator's grant or revoke of an entitlement (`POST /v1/customers/{id}/grants`, `storeledger grant`).
    case grant
    /// The operator's erasure of a person (`storeledger forget`, `POST /v1/customers/{id}/forget`).
    case erasure
}

/// What a source can state of a transaction. A verifyReceipt response and a V1 notification (its
/// `unified_receipt`) carry Apple's older transaction objects, which state no price, currency, transaction reason,
/// storefront, billing plan or offer details beyond a trial; a signed transaction, a V2 notification and decoded V2
/// JSON carry all of them (docs/domain.md, "What each format states"). A field a format cannot carry is unknown in
/// its revisions, not absent: the fold keeps what another revision stated of it.
public enum TransactionFormat: Sendable {
    case receipt
    case signed
}

extension FactSource {
    /// The format of the transactions this source states.
    public var transactionFormat: TransactionFormat {
        switch self {
        case .receipt, .notificationV1: .receipt
        case .notificationV2, .signedTransaction, .decodedJSON, .binding, .reconciliation, .configuration, .grant,
            .erasure:
            .signed
        }
    }
}

/// Whether a fact's signature was checked.
public enum SignatureStatus: String, Hashable, Codable, Sendable, CaseIterable {
    /// The input carried no signature (V1, receipts, decoded JSON, bindings).
    case unsigned
    /// A JWS whose x5c chain and signature verified against a configured trusted root.
    case verified
    /// A JWS accepted without verification (no trusted roots configured).
    case unverified
}

/// How and when the ledger received a fact. Not part of the fact's identity (the same fact via a receipt and via a
/// notification is one fact).
public struct FactMetadata: Hashable, Codable, Sendable {
    public var source: FactSource
    public var signature: SignatureStatus
    /// When the ledger received the input.
    public var receivedAt: UnixMillis
    /// The instant an unsigned fact speaks from: the receipt's `request_date_ms`, else `receivedAt`.
    public var observedAt: UnixMillis
    /// SHA-256 of the raw input this fact was decoded from (key into the raw store).
    public var rawDigest: [UInt8]
    /// The app user named by the input's envelope (`appUserId`), if any. Spelled `Optional<…>`, so that the
    /// initializer builds the metadata where it is returned (see `Period`): the codec makes one per event it reads.
    public var appUserId: Optional<AppUserID>
    public var unknownFields: UnknownFields

    /// Inlinable: LedgerCodec's decoder makes one per stored event and reads the stored fields into it.
    @inlinable
    public init(
        source: FactSource, signature: SignatureStatus = .unsigned, receivedAt: UnixMillis, observedAt: UnixMillis? = nil,
        rawDigest: [UInt8] = [], appUserId: AppUserID? = nil
    ) {
        self.source = source
        self.signature = signature
        self.receivedAt = receivedAt
        self.observedAt = observedAt ?? receivedAt
        self.rawDigest = rawDigest
        self.appUserId = appUserId
        self.unknownFields = UnknownFields()
    }
}

/// An immutable event of the log: a fact, how it arrived, and its sequence number.
public struct LedgerEvent: Hashable, Sendable {
    /// Position in the global log (1-based, gapless).
    public var seq: UInt64
    public var fact: Fact
    public var metadata: FactMetadata

    /// Inlinable: LedgerCodec's decoder makes one per stored event.
    @inlinable
    public init(seq: UInt64, fact: Fact, metadata: FactMetadata) {
        self.seq = seq
        self.fact = fact
        self.metadata = metadata
    }

    /// The instant this revision speaks from: Apple's `signedDate` (a receipt's creation for its `in_app` copies),
    /// or when it was observed (DOMAIN §4.3).
    public var effectiveDate: UnixMillis { fact.statedDate ?? metadata.observedAt }
}
