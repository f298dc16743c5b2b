import Crypto
import Foundation
import LedgerTestSupport

/// Apple's App Store Server API for one app in Production, answering as Apple documents it: what Apple holds (the
/// app's customers and their purchases, the notifications it sent or tried to send, the orders) and each endpoint's
/// answer computed from that, whatever the client asks. Its `respond` is a `FakeAppStoreServer`'s closure.
///
/// Each rule names its source: a page of Apple's documentation (https://developer.apple.com/documentation/
/// appstoreserverapi/…) or a model of Apple's server libraries (app-store-server-library-python, -swift).
/// `inject` answers chosen requests otherwise (an outage, a rate limit), as Apple does now and then.
final class FakeApple: @unchecked Sendable {
    typealias Request = FakeAppStoreServer.Request
    typealias Response = FakeAppStoreServer.Response

    /// One Apple ID's purchases in the app: every transaction (a purchase, a renewal, a refunded one in its latest
    /// revision), and the latest renewal info of each auto-renewable subscription.
    private struct Customer {
        var transactions: [[String: Any]] = []
        var renewals: [String: [String: Any]] = [:]
    }

    /// A notification Apple sent, or tried to.
    private struct Sent {
        var signedPayload: String?
        var signedDate: Int64
        var customer: Int?
        var attempts: [(Int64, String)]
    }

    private let lock = NSLock()
    private var customers: [Customer] = []
    private var sent: [Sent] = []
    private var orders: [String: [String]] = [:]
    private var injected: [(when: @Sendable (Request) -> Bool, response: Response)] = []
    private var tokensToExpire = 0

    /// Apple's pages hold at most 20 items (HistoryResponse, RefundHistoryResponse, NotificationHistoryResponse);
    /// a story may make them smaller to be paged through with few items.
    let historyPageSize: Int
    let notificationPageSize: Int
    /// Apple's clock (ms). Apple signs what it returns when it answers: `signedDate` is now.
    let now: @Sendable () -> Int64

    init(historyPageSize: Int = 20, notificationPageSize: Int = 20, now: @escaping @Sendable () -> Int64 = FakeApple.clock) {
        self.historyPageSize = historyPageSize
        self.notificationPageSize = notificationPageSize
        self.now = now
    }

    static func clock() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    var respond: @Sendable (Request) -> Response { { self.answer($0) } }

    // MARK: - What Apple holds

    /// A customer with their transactions (payloads as `AppleFixtures.v2Transaction` makes them) and renewal infos;
    /// its index.
    @discardableResult
    func addCustomer(transactions: [[String: Any]], renewals: [[String: Any]] = []) -> Int {
        lock.withLock {
            var c = Customer(transactions: transactions)
            for r in renewals { c.renewals[r["originalTransactionId"] as! String] = r }
            customers.append(c)
            return customers.count - 1
        }
    }

    /// A transaction's latest revision (a renewal, a refund): replaces the one with its `transactionId`.
    func update(customer: Int, transaction t: [String: Any]) {
        lock.withLock {
            let id = t["transactionId"] as! String
            if let i = customers[customer].transactions.firstIndex(where: { $0["transactionId"] as? String == id }) {
                customers[customer].transactions[i] = t
            } else {
                customers[customer].transactions.append(t)
            }
        }
    }

    /// A notification Apple sent (or tried to) about `customer`'s purchases, with its attempts (date, result);
    /// `signedPayload` nil stands for an item Apple lists without one.
    func addNotification(signedPayload: String?, signedDate: Int64, customer: Int?, attempts: [(Int64, String)]) {
        lock.withLock { sent.append(Sent(signedPayload: signedPayload, signedDate: signedDate, customer: customer, attempts: attempts)) }
    }

    /// An order: the transactions of one purchase session, as on the customer's emailed receipt.
    func addOrder(_ orderId: String, transactionIds: [String]) {
        lock.withLock { orders[orderId] = transactionIds }
    }

    /// The next `times` requests `when` matches are answered with `response` instead.
    func inject(_ response: Response, times: Int = 1, when: @escaping @Sendable (Request) -> Bool = { _ in true }) {
        lock.withLock { for _ in 0..<times { injected.append((when, response)) } }
    }

    /// The next Get Notification History request that carries a pagination token finds it expired.
    func expireNextPaginationToken() { lock.withLock { tokensToExpire += 1 } }

    // MARK: - Answers

    private func answer(_ request: Request) -> Response {
        lock.withLock {
            if let i = injected.firstIndex(where: { $0.when(request) }) { return injected.remove(at: i).response }
            let parts = request.path.split(separator: "/").map(String.init)
            switch (request.method, parts.count >= 3 ? Array(parts.prefix(3)) : parts) {
            case ("GET", ["inApps", "v2", "history"]) where parts.count == 4:
                return transactionHistory(parts[3], revision: request.query["revision"])
            case ("GET", ["inApps", "v1", "subscriptions"]) where parts.count == 4:
                return statuses(parts[3])
            case ("POST", ["inApps", "v1", "notifications"]) where parts == ["inApps", "v1", "notifications", "history"]:
                return notificationHistory(request.body, token: request.query["paginationToken"])
            case ("GET", ["inApps", "v1", "lookup"]) where parts.count == 4:
                return lookUpOrder(parts[3])
            case ("GET", ["inApps", "v2", "refund"]) where parts.count == 5 && parts[3] == "lookup":
                return refundHistory(parts[4], revision: request.query["revision"])
            default:
                return .json(AppleAnswers.error(4040001, "Not found."), status: 404)
            }
        }
    }

    /// The customer a transaction id belongs to. Every customer endpoint takes "the identifier of a transaction
    /// that belongs to the customer, and which may be an original transaction identifier" (Get Transaction History,
    /// Get All Subscription Statuses, Get Refund History: `transactionId`); NotificationHistoryRequest's
    /// `transactionId` is likewise "any transaction belonging to the customer" (the Python library's
    /// NotificationHistoryRequest). An id that is not a number is InvalidTransactionIdError (4000006, 400); one of
    /// no customer TransactionIdNotFoundError (4040010, 404).
    private func customer(of transactionId: String) -> Result<Int, Refusal> {
        guard !transactionId.isEmpty, transactionId.allSatisfy(\.isNumber) else {
            return .failure(Refusal(status: 400, code: 4000006, message: "Invalid transaction id."))
        }
        for (i, c) in customers.enumerated()
        where c.transactions.contains(where: {
            $0["transactionId"] as? String == transactionId || $0["originalTransactionId"] as? String == transactionId
        }) {
            return .success(i)
        }
        return .failure(Refusal(status: 404, code: 4040010, message: "Transaction id not found."))
    }

    private struct Refusal: Error {
        var status: Int
        var code: Int64
        var message: String
        var response: Response { .json(AppleAnswers.error(code, message), status: status) }
    }

    /// `payload` signed now: Apple signs its answers when it makes them.
    private func signedNow(_ payload: [String: Any]) -> String {
        var p = payload
        p["signedDate"] = now()
        return TestPKI.shared.sign(json: p)
    }

    /// Get Transaction History (v2): "all in-app purchase product types … in any state, including transactions
    /// that are refunded or revoked" (HistoryResponse), of the customer, "a maximum of 20 transactions per response",
    /// `revision` to ask for the next page and `hasMore` (HistoryResponse). Oldest first, as `sort=ASCENDING` asks.
    /// A revision Apple did not give is InvalidRequestRevisionError (4000005).
    private func transactionHistory(_ transactionId: String, revision: String?) -> Response {
        switch customer(of: transactionId) {
        case .failure(let refusal):
            return refusal.response
        case .success(let c):
            let all = customers[c].transactions.sorted { ($0["purchaseDate"] as! Int64) < ($1["purchaseDate"] as! Int64) }
            guard let (page, next, more) = Self.page(all, size: historyPageSize, revision: revision, prefix: "rev-") else {
                return Refusal(status: 400, code: 4000005, message: "Invalid request revision.").response
            }
            return .json(AppleAnswers.historyPage(page.map(signedNow), revision: next, hasMore: more))
        }
    }

    /// Get Refund History: "all of a customer's refunded in-app purchases for your app … for any product type",
    /// "a maximum of 20 refunded transactions" per response (Get Refund History), "sorted in ascending order by
    /// revocationDate" (RefundHistoryResponse).
    private func refundHistory(_ transactionId: String, revision: String?) -> Response {
        switch customer(of: transactionId) {
        case .failure(let refusal):
            return refusal.response
        case .success(let c):
            let refunded = customers[c].transactions.filter { $0["revocationDate"] != nil && $0["isUpgraded"] as? Bool != true }
                .sorted { ($0["revocationDate"] as! Int64) < ($1["revocationDate"] as! Int64) }
            guard let (page, next, more) = Self.page(refunded, size: historyPageSize, revision: revision, prefix: "refunds-")
            else { return Refusal(status: 400, code: 4000005, message: "Invalid request revision.").response }
            return .json(["signedTransactions": page.map(signedNow), "revision": next, "hasMore": more] as [String: Any])
        }
    }

    /// Get All Subscription Statuses: "the status for all of the customer's subscriptions, organized by their
    /// subscription group identifier" (App Store Server API overview); per subscription its latest transaction and
    /// renewal info (LastTransactionsItem) and `status` 1 active, 2 expired, 5 revoked (Status).
    private func statuses(_ transactionId: String) -> Response {
        switch customer(of: transactionId) {
        case .failure(let refusal):
            return refusal.response
        case .success(let c):
            let subscriptions = customers[c].transactions.filter { $0["type"] as? String == "Auto-Renewable Subscription" }
            var groups: [String: [[String: Any]]] = [:]
            for otid in Set(subscriptions.map { $0["originalTransactionId"] as! String }).sorted() {
                let latest = subscriptions.filter { $0["originalTransactionId"] as? String == otid }
                    .max { ($0["purchaseDate"] as! Int64) < ($1["purchaseDate"] as! Int64) }!
                let status: Int64 =
                    latest["revocationDate"] != nil ? 5 : ((latest["expiresDate"] as? Int64 ?? 0) > now() ? 1 : 2)
                var item: [String: Any] = [
                    "status": status, "originalTransactionId": otid, "signedTransactionInfo": signedNow(latest),
                ]
                if let renewal = customers[c].renewals[otid] { item["signedRenewalInfo"] = signedNow(renewal) }
                groups[latest["subscriptionGroupIdentifier"] as? String ?? "", default: []].append(item)
            }
            return .json([
                "environment": "Production", "bundleId": AppleFixtures.bundleId, "appAppleId": AppleFixtures.appAppleId,
                "data": groups.keys.sorted().map { ["subscriptionGroupIdentifier": $0, "lastTransactions": groups[$0]!] as [String: Any] },
            ] as [String: Any])
        }
    }

    /// Look Up Order ID: `status` 0 with the order's signed transactions, or 1 for an order id that is not valid for
    /// the app (OrderLookupResponse, OrderLookupStatus: VALID 0, INVALID 1): an answer of 200 either way.
    private func lookUpOrder(_ orderId: String) -> Response {
        guard let ids = orders[orderId] else { return .json(["status": 1] as [String: Any]) }
        let all = customers.flatMap(\.transactions)
        let signed = ids.compactMap { id in all.first { $0["transactionId"] as? String == id } }.map(signedNow)
        return .json(["status": 0, "signedTransactions": signed] as [String: Any])
    }

    /// Get Notification History. The body needs `startDate` and `endDate` (NotificationHistoryRequest: "The request
    /// requires the startDate and endDate fields"; else InvalidStartDateError 4000015, InvalidEndDateError
    /// 4000016); `startDate` must precede `endDate` (StartDateAfterEndDateError 4000013) and lie "within the past
    /// 180 days from the current date" (startDate; else StartDateTooFarInPastError 4000012); an `endDate` in the
    /// future stands for now (endDate). `transactionId` and `notificationType` together are refused
    /// (MultipleFiltersSuppliedError 4000019: "Include either the transactionId or the notificationType in your
    /// query, but not both"). With `transactionId`, the notifications of that transaction's customer, every product
    /// and subscription of it; without, the whole app's. `onlyFailures`: "only the notifications that haven't
    /// reached your server successfully", those Apple is still retrying among them. Pages of at most 20
    /// (NotificationHistoryResponse); a page asked with a token must repeat the first request's body
    /// (PaginationTokenExpiredError: "use the same NotificationHistoryRequest body on subsequent page requests";
    /// else InvalidPaginationTokenError 4000014); a token may expire (PaginationTokenExpiredError 4000017).
    /// Notification history is kept 180 days (Get Notification History).
    private func notificationHistory(_ body: [UInt8], token: String?) -> Response {
        guard let o = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return Refusal(status: 400, code: 4000000, message: "Invalid request.").response
        }
        guard let start = (o["startDate"] as? Int).map(Int64.init) else {
            return Refusal(status: 400, code: 4000015, message: "Invalid start date.").response
        }
        guard let end = (o["endDate"] as? Int).map(Int64.init) else {
            return Refusal(status: 400, code: 4000016, message: "Invalid end date.").response
        }
        let now = now()
        guard start < end else { return Refusal(status: 400, code: 4000013, message: "Start date after end date.").response }
        guard start >= now - 180 * AppleFixtures.day else {
            return Refusal(status: 400, code: 4000012, message: "Start date too far in past.").response
        }
        let transactionId = o["transactionId"] as? String
        guard transactionId == nil || o["notificationType"] == nil else {
            return Refusal(status: 400, code: 4000019, message: "Multiple filters supplied.").response
        }
        var customer: Int?
        if let transactionId {
            switch self.customer(of: transactionId) {
            case .failure(let refusal): return refusal.response
            case .success(let c): customer = c
            }
        }
        let digest = SHA256.hash(data: body).prefix(6).map { String(format: "%02x", $0) }.joined()
        var offset = 0
        if let token {
            let fields = token.split(separator: ":")
            guard fields.count == 2, fields[0] == Substring(digest), let n = Int(fields[1]) else {
                return Refusal(status: 400, code: 4000014, message: "Invalid pagination token.").response
            }
            if tokensToExpire > 0 {
                tokensToExpire -= 1
                return Refusal(status: 400, code: 4000017, message: "Pagination token expired.").response
            }
            offset = n
        }
        let onlyFailures = o["onlyFailures"] as? Bool ?? false
        let listed = sent.filter { n in
            n.signedDate >= start && n.signedDate <= min(end, now) && n.signedDate >= now - 180 * AppleFixtures.day
                && (customer == nil || n.customer == customer)
                && (!onlyFailures || !n.attempts.contains { $0.1 == "SUCCESS" })
        }.sorted { $0.signedDate < $1.signedDate }
        let page = Array(listed.dropFirst(offset).prefix(notificationPageSize))
        let more = offset + page.count < listed.count
        // "All responses include a paginationToken" (paginationToken).
        let answer: [String: Any] = [
            "hasMore": more,
            "paginationToken": "\(digest):\(offset + page.count)",
            "notificationHistory": page.map { n -> [String: Any] in
                var item: [String: Any] = [
                    "sendAttempts": n.attempts.map { ["attemptDate": $0.0, "sendAttemptResult": $0.1] as [String: Any] }
                ]
                item["signedPayload"] = n.signedPayload
                return item
            },
        ]
        return .json(answer)
    }

    /// One page of `all` after `revision` (nil: the first). Revisions are this fake's own opaque tokens; nil when
    /// `revision` is none it gave.
    private static func page(_ all: [[String: Any]], size: Int, revision: String?, prefix: String)
        -> ([[String: Any]], String, Bool)?
    {
        var pageIndex = 0
        if let revision {
            guard revision.hasPrefix(prefix), let letter = revision.dropFirst(prefix.count).unicodeScalars.first,
                revision.count == prefix.count + 1, ("a"..."z").contains(letter)
            else { return nil }
            pageIndex = Int(letter.value - 96)
        }
        let page = Array(all.dropFirst(pageIndex * size).prefix(size))
        let more = (pageIndex + 1) * size < all.count
        let next = prefix + String(UnicodeScalar(UInt8(97 + pageIndex)))
        return (page, next, more)
    }
}
