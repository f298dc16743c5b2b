import LedgerCore
import LedgerErrors

/// The gap report of one run of `storeledger reconcile`: per subscription, what Apple holds that the ledger lacked
/// (by id), and the notifications Apple says it never delivered; for a pass over the whole app's notification
/// history, its window; for an order, what Look Up Order ID answered.
public struct ReconciliationReport: Sendable {
    public var startedAt: UnixMillis
    public var dryRun: Bool
    public var environment: AppStoreEnvironment
    /// `customer` (customers' histories, fetched once per customer) or `missed` (the whole app's notification
    /// history over a window): `ReconciliationFact.customerMode`, `.missedMode`.
    public var mode: String
    public var subscriptions: [SubscriptionCheck] = []
    /// Requests sent to Apple: the pages asked, not counting the tries again of a request Apple asked to repeat.
    public var requests = 0
    /// The window of Get Notification History asked by a `missed` pass.
    public var window: NotificationWindow?
    /// What Look Up Order ID answered (`reconcile --order`).
    public var order: OrderCheck?
    /// Notifications the ledger lacked that name no subscription (Apple's TEST, summaries, external purchase
    /// tokens): appended like the others, recorded in no subscription's check.
    public var otherNotificationsAdded: [SubscriptionCheck.Notification] = []
    /// Items of Apple's answers that could not be read and belong to no check: an unverifiable notification of a
    /// `missed` pass, items Apple listed without a `signedPayload`.
    public var refused: [SubscriptionCheck.Refused] = []
    /// Why the run could not ask Apple at all (a `missed` pass or an order lookup refused as a whole).
    public var failure: CodedError?

    public init(
        startedAt: UnixMillis, dryRun: Bool, environment: AppStoreEnvironment,
        mode: String = ReconciliationFact.customerMode
    ) {
        self.startedAt = startedAt
        self.dryRun = dryRun
        self.environment = environment
        self.mode = mode
    }

    /// True when every subscription was checked, nothing was missing, and Apple was asked.
    public var complete: Bool {
        failure == nil && order?.found != false && otherNotificationsAdded.isEmpty
            && subscriptions.allSatisfy { $0.failure == nil && $0.complete }
    }
    /// The subscriptions Apple could not be asked about.
    public var failures: [SubscriptionCheck] { subscriptions.filter { $0.failure != nil } }
    /// Every refused item, the report's own and its checks'.
    public var allRefused: [SubscriptionCheck.Refused] { refused + subscriptions.flatMap(\.refused) }
}

/// The window of a pass over the whole app's notification history.
public struct NotificationWindow: Sendable, Hashable {
    public var start: UnixMillis
    public var end: UnixMillis
    /// Only the notifications Apple did not deliver (`onlyFailures`) were asked for.
    public var onlyFailures: Bool
    /// Notifications Apple listed.
    public var notificationsSeen = 0
    /// Get Notification History pages asked.
    public var pages = 0
    /// Apple refused an expired pagination token and the pass started again from its first page.
    public var restarted = false

    public init(start: UnixMillis, end: UnixMillis, onlyFailures: Bool) {
        self.start = start
        self.end = end
        self.onlyFailures = onlyFailures
    }
}

/// Look Up Order ID's answer for the order id of a customer's emailed receipt.
public struct OrderCheck: Sendable, Hashable {
    public var orderId: String
    /// Apple's `status`: 0 valid, 1 invalid (an order Apple does not know for this app); nil when Apple could not be
    /// asked.
    public var status: Int64?
    /// The transactions of the order, as Apple listed them.
    public var transactionIds: [String] = []

    public init(orderId: String, status: Int64? = nil) {
        self.orderId = orderId
        self.status = status
    }

    /// True when Apple knows the order.
    public var found: Bool { status == 0 }
}

/// One subscription's check.
public struct SubscriptionCheck: Sendable {
    /// A transaction Apple holds that the ledger lacked (`revision`: the ledger held the transaction in another
    /// revision, a refund it never heard of say).
    public struct Transaction: Sendable, Hashable {
        public var transactionId: String
        public var productId: String
        public var purchaseDate: UnixMillis?
        public var revision: Bool
    }

    /// A notification Apple holds that the ledger lacked, and the outcome of Apple's last attempt to send it.
    public struct Notification: Sendable, Hashable {
        public var uuid: String
        public var type: String
        public var subtype: String?
        public var signedDate: UnixMillis?
        public var lastSendAttempt: String?
    }

    /// An item of Apple's answer the decoder refused (a signature that does not verify, another bundle), one Apple
    /// listed without its signed payload, or an append the ledger refused.
    public struct Refused: Sendable, Hashable {
        public var what: String
        public var code: String
        public var message: String
    }

    public var originalTransactionId: OriginalTransactionID
    /// `customer` or `missed`, as `ReconciliationReport.mode`.
    public var mode = ReconciliationFact.customerMode
    /// The transaction id Apple was asked with: this subscription's, another purchase of the same customer's (whose
    /// check fetched the customer's history once for all of them), an order's; nil for a `missed` pass.
    public var askedWith: String?
    /// The start of the notification history window asked.
    public var windowStart: UnixMillis?
    /// Get Transaction History's revision after its last page.
    public var revision: String?
    public var historyPages = 0
    /// Distinct transactions of the subscription in Apple's answers (history, refunds, statuses, notifications, the
    /// order).
    public var transactionsSeen = 0
    public var transactionsAdded: [Transaction] = []
    /// Refunded transactions of the subscription in Apple's refund history.
    public var refundsSeen = 0
    public var renewalInfoAdded = false
    public var notificationsSeen = 0
    public var notificationsAdded: [Notification] = []
    /// UUIDs of notifications no attempt of which succeeded, per Apple.
    public var notificationsUndelivered: [String] = []
    public var refused: [Refused] = []
    /// Events appended for what was missing (0 in a dry run).
    public var appendedEvents = 0
    /// The seq of the recorded check (nil in a dry run).
    public var recordedAt: UInt64?
    /// Why Apple could not be asked (nothing else is set then).
    public var failure: CodedError?
    /// Apple was not asked about it at all: an earlier request of the run failed in a way every later one would
    /// (`failure` says which), and the run stopped.
    public var notAsked = false

    public init(originalTransactionId: OriginalTransactionID, failure: CodedError? = nil) {
        self.originalTransactionId = originalTransactionId
        self.failure = failure
    }

    /// Nothing was missing.
    public var complete: Bool { transactionsAdded.isEmpty && notificationsAdded.isEmpty && !renewalInfoAdded }
}
