import LedgerAppStore
import LedgerErrors

// MARK: - Apple's error codes

/// The `errorCode`s of Apple's error documents that change what the client does
/// (https://developer.apple.com/documentation/appstoreserverapi/error-codes; the same numbers as Apple's server
/// libraries' `APIError`).
enum AppleErrorCode {
    /// PaginationTokenExpiredError: a Get Notification History page asked with a token that expired.
    static let paginationTokenExpired: Int64 = 4_000_017
    /// AccountNotFoundRetryableError, AppNotFoundRetryableError, OriginalTransactionIdNotFoundRetryableError: 404s
    /// Apple documents as "not found, but you can try again".
    static let retryableNotFound: Set<Int64> = [4_040_002, 4_040_004, 4_040_006]
}

// MARK: - Documents

/// A page of Get Transaction History (v2) or Get Refund History: up to 20 signed transactions, the `revision` to ask
/// for the next page with, and whether there is one.
public struct TransactionPage: Sendable, Hashable {
    public var signedTransactions: [String]
    public var revision: String?
    public var hasMore: Bool
    public var bundleId: String?
    public var environment: String?
}

/// Get All Subscription Statuses: per subscription group, the latest transaction and renewal info of each
/// subscription of the family (`lastTransactions`).
public struct StatusesResponse: Sendable, Hashable {
    public struct Item: Sendable, Hashable {
        public var status: Int64?
        public var originalTransactionId: String?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?
    }
    public struct Group: Sendable, Hashable {
        public var subscriptionGroupIdentifier: String?
        public var lastTransactions: [Item]
    }
    public var environment: String?
    public var bundleId: String?
    public var data: [Group]
}

/// One notification of Get Notification History: the `signedPayload` exactly as Apple sent (or tried to send) it,
/// and the outcome of each attempt.
public struct NotificationHistoryItem: Sendable, Hashable {
    public struct SendAttempt: Sendable, Hashable {
        public var attemptDate: Int64?
        /// `SUCCESS`, `TIMED_OUT`, `TLS_ISSUE`, `CIRCULAR_REDIRECT`, `NO_RESPONSE`, `SOCKET_ISSUE`,
        /// `UNSUPPORTED_CHARSET`, `INVALID_RESPONSE`, `PREMATURE_CLOSE`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, `OTHER`.
        public var sendAttemptResult: String?
    }
    public var signedPayload: String
    public var sendAttempts: [SendAttempt]

    /// True when no attempt succeeded: Apple itself says the notification never arrived.
    public var undelivered: Bool { !sendAttempts.contains { $0.sendAttemptResult == "SUCCESS" } }
    /// The last attempt's outcome.
    public var lastResult: String? { sendAttempts.max { ($0.attemptDate ?? 0) < ($1.attemptDate ?? 0) }?.sendAttemptResult }
}

/// A page of Get Notification History.
public struct NotificationHistoryPage: Sendable, Hashable {
    public var notificationHistory: [NotificationHistoryItem]
    public var paginationToken: String?
    public var hasMore: Bool
    /// Items of the page that carried no `signedPayload` (optional in Apple's NotificationHistoryResponseItem):
    /// nothing of them can be read or verified, so they are counted, not listed.
    public var itemsWithoutPayload = 0
}

/// A whole pass of Get Notification History over one request's window.
public struct NotificationHistory: Sendable, Hashable {
    public var items: [NotificationHistoryItem] = []
    /// Requests sent (pages, and the pages asked again after a restart).
    public var pages = 0
    /// Items Apple listed without a `signedPayload`.
    public var itemsWithoutPayload = 0
    /// True when Apple refused a page's expired pagination token and the pass started again from its first page.
    public var restarted = false
    public init() {}
}

/// Get Notification History's request body: a window whose `startDate` lies within the last 180 days (30 in the
/// Sandbox), optionally one customer's notifications (`transactionId`: any transaction of the customer, whatever
/// its product or subscription), one type, or only the notifications not delivered (`onlyFailures`). Without
/// `transactionId` it asks for the whole app's.
public struct NotificationHistoryRequest: Sendable, Hashable {
    public var startDate: Int64
    public var endDate: Int64
    public var transactionId: String?
    public var notificationType: String?
    public var onlyFailures: Bool
    public init(startDate: Int64, endDate: Int64, transactionId: String? = nil, notificationType: String? = nil,
                onlyFailures: Bool = false) {
        self.startDate = startDate
        self.endDate = endDate
        self.transactionId = transactionId
        self.notificationType = notificationType
        self.onlyFailures = onlyFailures
    }

    /// The JSON body, keys in a fixed order.
    var body: [UInt8] {
        var s = #"{"startDate":"# + String(startDate) + #","endDate":"# + String(endDate)
        if let transactionId { s += #","transactionId":"# + APITokenSigner.quoted(transactionId) }
        if let notificationType { s += #","notificationType":"# + APITokenSigner.quoted(notificationType) }
        if onlyFailures { s += #","onlyFailures":true"# }
        return Array((s + "}").utf8)
    }
}

/// Look Up Order ID: `status` 0 valid (with the order's signed transactions), 1 invalid.
public struct OrderLookup: Sendable, Hashable {
    public var status: Int64
    public var signedTransactions: [String]
}

// MARK: - Reading Apple's JSON

/// Apple's documents read with the package's one strict JSON parser; a document that is not the documented shape is
/// `apple_bad_response` naming the field.
enum AppleDocument {
    static func object(_ bytes: [UInt8], _ what: String) throws(CodedError) -> [String: JSON] {
        guard case .object(let o)? = try? JSONValue.parse(bytes, depthLimit: AppStoreConfiguration.defaultMaxDepth) else {
            throw CodedError(.appleBadResponse, "\(what): the answer is not a JSON object")
        }
        return o
    }

    static func string(_ o: [String: JSON], _ key: String, _ what: String) throws(CodedError) -> String? {
        guard let v = o[key], !v.isNull else { return nil }
        guard case .string(let s) = v else { throw CodedError(.appleBadResponse, "\(what): \(key) is not a string") }
        return s
    }

    static func int(_ o: [String: JSON], _ key: String, _ what: String) throws(CodedError) -> Int64? {
        guard let v = o[key], !v.isNull else { return nil }
        guard let i = JSONValue.int64(v) else { throw CodedError(.appleBadResponse, "\(what): \(key) is not an integer") }
        return i
    }

    static func bool(_ o: [String: JSON], _ key: String, _ what: String) throws(CodedError) -> Bool {
        guard let v = o[key], !v.isNull else { return false }
        guard case .bool(let b) = v else { throw CodedError(.appleBadResponse, "\(what): \(key) is not a boolean") }
        return b
    }

    static func array(_ o: [String: JSON], _ key: String, _ what: String) throws(CodedError) -> [JSON] {
        guard let v = o[key], !v.isNull else { return [] }
        guard case .array(let a) = v else { throw CodedError(.appleBadResponse, "\(what): \(key) is not an array") }
        return a
    }

    static func strings(_ o: [String: JSON], _ key: String, _ what: String) throws(CodedError) -> [String] {
        var out: [String] = []
        for item in try array(o, key, what) {
            guard case .string(let s) = item else { throw CodedError(.appleBadResponse, "\(what): \(key) holds a non-string") }
            out.append(s)
        }
        return out
    }

    static func objects(_ o: [String: JSON], _ key: String, _ what: String) throws(CodedError) -> [[String: JSON]] {
        var out: [[String: JSON]] = []
        for item in try array(o, key, what) {
            guard case .object(let x) = item else { throw CodedError(.appleBadResponse, "\(what): \(key) holds a non-object") }
            out.append(x)
        }
        return out
    }

    static func transactionPage(_ bytes: [UInt8], _ what: String) throws(CodedError) -> TransactionPage {
        let o = try object(bytes, what)
        return TransactionPage(
            signedTransactions: try strings(o, "signedTransactions", what), revision: try string(o, "revision", what),
            hasMore: try bool(o, "hasMore", what), bundleId: try string(o, "bundleId", what),
            environment: try string(o, "environment", what))
    }

    static func statuses(_ bytes: [UInt8], _ what: String) throws(CodedError) -> StatusesResponse {
        let o = try object(bytes, what)
        var groups: [StatusesResponse.Group] = []
        for g in try objects(o, "data", what) {
            var items: [StatusesResponse.Item] = []
            for i in try objects(g, "lastTransactions", what) {
                items.append(
                    StatusesResponse.Item(
                        status: try int(i, "status", what), originalTransactionId: try string(i, "originalTransactionId", what),
                        signedTransactionInfo: try string(i, "signedTransactionInfo", what),
                        signedRenewalInfo: try string(i, "signedRenewalInfo", what)))
            }
            groups.append(
                StatusesResponse.Group(
                    subscriptionGroupIdentifier: try string(g, "subscriptionGroupIdentifier", what), lastTransactions: items))
        }
        return StatusesResponse(
            environment: try string(o, "environment", what), bundleId: try string(o, "bundleId", what), data: groups)
    }

    static func notificationPage(_ bytes: [UInt8], _ what: String) throws(CodedError) -> NotificationHistoryPage {
        let o = try object(bytes, what)
        var items: [NotificationHistoryItem] = []
        var withoutPayload = 0
        for n in try objects(o, "notificationHistory", what) {
            guard let payload = try string(n, "signedPayload", what) else {
                withoutPayload += 1
                continue
            }
            var attempts: [NotificationHistoryItem.SendAttempt] = []
            for a in try objects(n, "sendAttempts", what) {
                attempts.append(
                    NotificationHistoryItem.SendAttempt(
                        attemptDate: try int(a, "attemptDate", what), sendAttemptResult: try string(a, "sendAttemptResult", what)))
            }
            items.append(NotificationHistoryItem(signedPayload: payload, sendAttempts: attempts))
        }
        return NotificationHistoryPage(
            notificationHistory: items, paginationToken: try string(o, "paginationToken", what),
            hasMore: try bool(o, "hasMore", what), itemsWithoutPayload: withoutPayload)
    }

    static func orderLookup(_ bytes: [UInt8], _ what: String) throws(CodedError) -> OrderLookup {
        let o = try object(bytes, what)
        guard let status = try int(o, "status", what) else { throw CodedError(.appleBadResponse, "\(what): no status") }
        return OrderLookup(status: status, signedTransactions: try strings(o, "signedTransactions", what))
    }
}
