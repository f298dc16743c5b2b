import LedgerCore
import LedgerWire

/// The gap report of one run of `storeledger reconcile`: per subscription, what Apple holds that the ledger lacked
/// (by id), and the notifications Apple says it never delivered.
public struct ReconciliationReport: Sendable {
    public var startedAt: UnixMillis
    public var dryRun: Bool
    public var environment: AppStoreEnvironment
    public var subscriptions: [SubscriptionCheck] = []

    public init(startedAt: UnixMillis, dryRun: Bool, environment: AppStoreEnvironment) {
        self.startedAt = startedAt
        self.dryRun = dryRun
        self.environment = environment
    }

    /// True when every subscription was checked and nothing was missing.
    public var complete: Bool { subscriptions.allSatisfy { $0.failure == nil && $0.complete } }
    /// The subscriptions Apple could not be asked about.
    public var failures: [SubscriptionCheck] { subscriptions.filter { $0.failure != nil } }
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

    /// An item of Apple's answer the decoder refused (a signature that does not verify, another bundle), or an
    /// append the ledger refused.
    public struct Refused: Sendable, Hashable {
        public var what: String
        public var code: String
        public var message: String
    }

    public var originalTransactionId: OriginalTransactionID
    /// Get Transaction History's revision after its last page.
    public var revision: String?
    public var historyPages = 0
    public var transactionsSeen = 0
    public var transactionsAdded: [Transaction] = []
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

    public init(originalTransactionId: OriginalTransactionID, failure: CodedError? = nil) {
        self.originalTransactionId = originalTransactionId
        self.failure = failure
    }

    /// Nothing was missing.
    public var complete: Bool { transactionsAdded.isEmpty && notificationsAdded.isEmpty && !renewalInfoAdded }
}
