import AsyncHTTPClient
import Foundation
import LedgerHTTP
import LedgerErrors
import Logging
import NIOCore
import NIOHTTP1

/// A client of Apple's App Store Server API (https://developer.apple.com/documentation/appstoreserverapi): Get
/// Transaction History (v2), Get All Subscription Statuses, Get Notification History, Look Up Order ID and Get Refund
/// History, each request carrying a fresh ES256 token (`APITokenSigner`).
///
/// It never hammers Apple: requests are sent one at a time by its callers, a 429 is tried again after the
/// `Retry-After` Apple gives (a UNIX time in milliseconds, or seconds as HTTP has it) and otherwise after a doubling
/// backoff, at most `maxRetries` times and never waiting longer than `maxRetryWaitSeconds`. What Apple documents as
/// worth trying again is tried again the same way: 5xx answers (5000001, GeneralInternalRetryableError, among
/// them), the 404s Apple marks retryable (4040002 AccountNotFoundRetryableError, 4040004 AppNotFoundRetryableError,
/// 4040006 OriginalTransactionIdNotFoundRetryableError) and connection failures. Exhausted, they fail with a code
/// that tells an outage (`apple_unavailable`, `apple_unreachable`: wait) from a request Apple refused
/// (`apple_api_error`, `apple_not_found`: fix the request or the id) and from the key or the rate
/// (`apple_unauthorized`, `apple_rate_limited`). Redirects are not followed, so the token goes nowhere but the
/// configured host. Logs (debug) name the method, path and status, never a header.
public final class AppStoreServerAPIClient: Sendable {
    public let settings: AppStoreServerAPISettings
    private let signer: APITokenSigner
    private let http: HTTPClient
    private let logger: Logger
    /// The largest answer read (a page holds at most a few hundred KB of JWS).
    static let maxResponseBytes = 16 << 20

    /// Reads the key file and the trusted certificates; throws `invalid_configuration` naming the file at fault.
    public convenience init(settings: AppStoreServerAPISettings, logger: Logger) throws(CodedError) {
        let signer = try APITokenSigner(
            keyFile: settings.keyFile, keyId: settings.keyId, issuerId: settings.issuerId, bundleId: settings.bundleId)
        try self.init(settings: settings, signer: signer, logger: logger)
    }

    public init(settings: AppStoreServerAPISettings, signer: APITokenSigner, logger: Logger) throws(CodedError) {
        guard settings.resolvedBaseURL.lowercased().hasPrefix("https://") else {
            throw CodedError(.invalidConfiguration, "appStoreServerAPI: the base URL must be https://")
        }
        let http = try OutboundHTTP.client(
            trustedCertificates: settings.trustedCertificates, setting: "appStoreServerAPI", connectTimeout: .seconds(10),
            readTimeout: .milliseconds(Int64(settings.timeoutSeconds * 1000)))
        self.settings = settings
        self.signer = signer
        self.logger = logger
        self.http = http
    }

    /// Closes the connections; call once when done.
    public func shutdown() async {
        try? await http.shutdown()
    }

    // MARK: - Endpoints

    /// Get Transaction History (v2), one page, oldest first: `GET /inApps/v2/history/{transactionId}`. Any
    /// transaction id of the customer's purchases serves; `revision` is the previous page's.
    public func transactionHistory(_ transactionId: String, revision: String? = nil) async throws(CodedError)
        -> TransactionPage
    {
        var query = [("sort", "ASCENDING")]
        if let revision { query.append(("revision", revision)) }
        let body = try await send(.GET, "/inApps/v2/history/" + Self.pathSegment(transactionId), query: query)
        return try AppleDocument.transactionPage(body, "Get Transaction History")
    }

    /// Get All Subscription Statuses: `GET /inApps/v1/subscriptions/{transactionId}`.
    public func allSubscriptionStatuses(_ transactionId: String) async throws(CodedError) -> StatusesResponse {
        let body = try await send(.GET, "/inApps/v1/subscriptions/" + Self.pathSegment(transactionId))
        return try AppleDocument.statuses(body, "Get All Subscription Statuses")
    }

    /// Get Notification History, one page: `POST /inApps/v1/notifications/history`.
    public func notificationHistory(_ request: NotificationHistoryRequest, paginationToken: String? = nil)
        async throws(CodedError) -> NotificationHistoryPage
    {
        try await notificationHistoryReply(request, paginationToken: paginationToken).get()
    }

    /// One page of Get Notification History, or what Apple refused it with (so a caller can tell an expired
    /// pagination token from other refusals).
    func notificationHistoryReply(_ request: NotificationHistoryRequest, paginationToken: String?)
        async throws(CodedError) -> Reply<NotificationHistoryPage>
    {
        let reply = try await exchange(
            .POST, "/inApps/v1/notifications/history", query: paginationToken.map { [("paginationToken", $0)] } ?? [],
            body: request.body)
        switch reply {
        case .ok(let body): return .ok(try AppleDocument.notificationPage(body, "Get Notification History"))
        case .refused(let refusal): return .refused(refusal)
        }
    }

    /// Look Up Order ID: `GET /inApps/v1/lookup/{orderId}`. Apple answers an order it does not know with 200 and
    /// `status` 1 (OrderLookupStatus), not with a 404.
    public func lookUpOrder(_ orderId: String) async throws(CodedError) -> OrderLookup {
        let body = try await send(.GET, "/inApps/v1/lookup/" + Self.pathSegment(orderId))
        return try AppleDocument.orderLookup(body, "Look Up Order ID")
    }

    /// Get Refund History (v2), one page: `GET /inApps/v2/refund/lookup/{transactionId}`. Any transaction id of the
    /// customer serves; the page lists the customer's refunded purchases of every product type, oldest refund first.
    public func refundHistory(_ transactionId: String, revision: String? = nil) async throws(CodedError)
        -> TransactionPage
    {
        let body = try await send(
            .GET, "/inApps/v2/refund/lookup/" + Self.pathSegment(transactionId),
            query: revision.map { [("revision", $0)] } ?? [])
        return try AppleDocument.transactionPage(body, "Get Refund History")
    }

    /// Every page of a customer's transaction history, following `revision` while `hasMore`; `page` is told of
    /// each as it arrives. Bounded: Apple's pages hold 20 transactions, and 10,000 pages is more than any
    /// customer has, so a server that always says `hasMore` cannot loop the client forever.
    public func wholeTransactionHistory(_ transactionId: String, page: (TransactionPage) -> Void = { _ in })
        async throws(CodedError) -> (signedTransactions: [String], revision: String?, pages: Int)
    {
        try await wholePages("Get Transaction History", page: page) { (revision) async throws(CodedError) in
            try await self.transactionHistory(transactionId, revision: revision)
        }
    }

    /// Every page of a customer's refund history (bounded as above).
    public func wholeRefundHistory(_ transactionId: String) async throws(CodedError)
        -> (signedTransactions: [String], revision: String?, pages: Int)
    {
        try await wholePages("Get Refund History", page: { _ in }) { (revision) async throws(CodedError) in
            try await self.refundHistory(transactionId, revision: revision)
        }
    }

    private func wholePages(
        _ what: String, page: (TransactionPage) -> Void,
        _ next: (String?) async throws(CodedError) -> TransactionPage
    ) async throws(CodedError) -> (signedTransactions: [String], revision: String?, pages: Int) {
        var all: [String] = []
        var revision: String?
        var pages = 0
        repeat {
            let answer = try await next(revision)
            pages += 1
            all += answer.signedTransactions
            page(answer)
            guard answer.hasMore else { return (all, answer.revision ?? revision, pages) }
            guard let r = answer.revision, r != revision else {
                throw CodedError(.appleBadResponse, "\(what): hasMore without a new revision")
            }
            revision = r
        } while pages < 10_000
        throw CodedError(.appleBadResponse, "\(what): more than 10,000 pages")
    }

    /// Every notification of `request`'s window, following `paginationToken` while `hasMore` (bounded as above).
    public func wholeNotificationHistory(_ request: NotificationHistoryRequest) async throws(CodedError)
        -> [NotificationHistoryItem]
    {
        try await notificationHistoryPass(request).items
    }

    /// Every notification of `request`'s window, and what the pass met on the way. A page request Apple refuses with
    /// PaginationTokenExpiredError (4000017) starts the pass again from its first page, once: the token cannot be
    /// renewed, and the same request body asks again for the same notifications. Items Apple lists without a
    /// `signedPayload` (optional in Apple's model, NotificationHistoryResponseItem) are counted, not read.
    public func notificationHistoryPass(_ request: NotificationHistoryRequest) async throws(CodedError)
        -> NotificationHistory
    {
        var pass = NotificationHistory()
        var token: String?
        repeat {
            let reply = try await notificationHistoryReply(request, paginationToken: token)
            pass.pages += 1
            let next: NotificationHistoryPage
            switch reply {
            case .ok(let page):
                next = page
            case .refused(let refusal)
            where refusal.appleErrorCode == AppleErrorCode.paginationTokenExpired && token != nil && !pass.restarted:
                logger.debug("Get Notification History: the pagination token expired; starting again")
                pass.restarted = true
                pass.items = []
                pass.itemsWithoutPayload = 0
                token = nil
                continue
            case .refused(let refusal):
                throw refusal.error
            }
            pass.items += next.notificationHistory
            pass.itemsWithoutPayload += next.itemsWithoutPayload
            guard next.hasMore else { return pass }
            guard let t = next.paginationToken, t != token else {
                throw CodedError(.appleBadResponse, "Get Notification History: hasMore without a new paginationToken")
            }
            token = t
        } while pass.pages < 10_000
        throw CodedError(.appleBadResponse, "Get Notification History: more than 10,000 pages")
    }

    // MARK: - Transport

    /// What Apple finally answered a request: the body of a 200, or its refusal.
    enum Reply<Body> {
        case ok(Body)
        case refused(Refusal)

        func get() throws(CodedError) -> Body {
            switch self {
            case .ok(let body): return body
            case .refused(let refusal): throw refusal.error
            }
        }
    }

    /// A final refusal: the HTTP status, Apple's `errorCode` when its error document names one, and the error a
    /// caller throws for it.
    struct Refusal {
        var status: Int
        var appleErrorCode: Int64?
        var error: CodedError
    }

    /// Sends one request, trying again as the type's documentation says; the body of a 200.
    func send(_ method: HTTPMethod, _ path: String, query: [(String, String)] = [], body: [UInt8]? = nil)
        async throws(CodedError) -> [UInt8]
    {
        try await exchange(method, path, query: query, body: body).get()
    }

    /// Sends one request, trying again on what Apple documents as retryable (429, 5xx, the retryable 404s) and on
    /// connection failures; throws when the retries are exhausted, and returns any other answer: a 200's body, or
    /// the refusal.
    func exchange(_ method: HTTPMethod, _ path: String, query: [(String, String)] = [], body: [UInt8]? = nil)
        async throws(CodedError) -> Reply<[UInt8]>
    {
        var url = settings.resolvedBaseURL + path
        if !query.isEmpty {
            url += "?" + query.map { Self.queryComponent($0.0) + "=" + Self.queryComponent($0.1) }.joined(separator: "&")
        }
        var attempt = 0
        while true {
            var fields = HTTPHeaders()
            fields.add(name: "Authorization", value: "Bearer " + (try signer.token()))
            fields.add(name: "User-Agent", value: "storeledger")
            if body != nil { fields.add(name: "Content-Type", value: "application/json") }
            let status: HTTPResponseStatus
            let headers: HTTPHeaders
            let bytes: [UInt8]
            do {
                // The whole answer is read by the connection (`ResponseAccumulator`), not streamed to this task: a
                // streamed body is read only as fast as the task takes it, so a task that waits for a thread (a busy
                // process) left the answer half read, and the read timeout counted that wait as Apple's silence and
                // the page was asked again. The timeouts measure Apple alone.
                let request = try HTTPClient.Request(url: url, method: method, headers: fields, body: body.map { .bytes($0) })
                let response = try await http.execute(
                    request: request, delegate: ResponseAccumulator(request: request, maxBodySize: Self.maxResponseBytes),
                    deadline: .now() + .milliseconds(Int64(settings.timeoutSeconds * 1000))
                ).futureResult.get()
                status = response.status
                headers = response.headers
                bytes = response.body.map { Array(buffer: $0) } ?? []
            } catch {
                guard attempt < settings.maxRetries else {
                    throw CodedError(.appleUnreachable, "\(method) \(path): \(Self.describe(error))")
                }
                attempt += 1
                let wait = Self.backoff(attempt: attempt, limit: settings.maxRetryWaitSeconds)
                logger.debug(
                    "App Store Server API unreachable; trying again",
                    metadata: ["path": "\(path)", "wait": "\(wait)", "error": "\(Self.describe(error))"])
                try await Self.sleep(wait)
                continue
            }
            logger.debug("App Store Server API", metadata: ["method": "\(method)", "path": "\(path)", "status": "\(status.code)"])
            let appleCode = Self.appleErrorCode(bytes)
            let code = Int(status.code)
            if code == 200 { return .ok(bytes) }
            if code == 429 || (500...599).contains(code) || (code == 404 && AppleErrorCode.retryableNotFound.contains(appleCode ?? 0)) {
                let retryAfter = headers.first(name: "Retry-After").flatMap { Self.retryAfterSeconds($0, now: Date()) }
                let wait = retryAfter ?? Self.backoff(attempt: attempt + 1, limit: settings.maxRetryWaitSeconds)
                guard attempt < settings.maxRetries, wait <= settings.maxRetryWaitSeconds else {
                    let after = retryAfter.map { String(format: "; Apple asks to wait %.0f s", $0) } ?? ""
                    let attempts = "after \(attempt + 1) attempts\(after)\(Self.appleError(bytes))"
                    if code == 429 {
                        throw CodedError(.appleRateLimited, "\(method) \(path): rate limited \(attempts)")
                    }
                    throw CodedError(
                        .appleUnavailable,
                        "\(method) \(path): Apple is failing (HTTP \(code)) \(attempts); wait and run again")
                }
                attempt += 1
                logger.debug("App Store Server API asks to wait", metadata: ["path": "\(path)", "wait": "\(wait)"])
                try await Self.sleep(wait)
                continue
            }
            let error: CodedError
            switch code {
            case 401:
                error = CodedError(
                    .appleUnauthorized,
                    "\(method) \(path): Apple refused the token (check keyFile, keyId, issuerId and bundleId)")
            case 404:
                error = CodedError(.appleNotFound, "\(method) \(path): not found\(Self.appleError(bytes))")
            default:
                error = CodedError(
                    .appleAPIError, "\(method) \(path): Apple refused the request (HTTP \(code))\(Self.appleError(bytes))")
            }
            return .refused(Refusal(status: code, appleErrorCode: appleCode, error: error))
        }
    }

    /// Apple's `errorCode` in an error document, or nil.
    static func appleErrorCode(_ bytes: [UInt8]) -> Int64? {
        guard !bytes.isEmpty, let o = try? AppleDocument.object(bytes, "error") else { return nil }
        return (try? AppleDocument.int(o, "errorCode", "error")).flatMap { $0 }
    }

    /// `; Apple error 4000006: Invalid transaction id.` from an error document, or nothing.
    static func appleError(_ bytes: [UInt8]) -> String {
        guard let o = try? AppleDocument.object(bytes, "error") else { return "" }
        let code = (try? AppleDocument.int(o, "errorCode", "error")).flatMap { $0 }
        let message = (try? AppleDocument.string(o, "errorMessage", "error")).flatMap { $0 }
        guard code != nil || message != nil else { return "" }
        return "; Apple error \(code.map(String.init) ?? "-"): \(message ?? "")"
    }

    /// Seconds to wait from a `Retry-After` value: Apple's UNIX time in milliseconds, HTTP's delay in seconds, or
    /// an HTTP date; never negative. Nil when it is none of these.
    static func retryAfterSeconds(_ value: String, now: Date) -> Double? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let n = Int64(text), n >= 0 {
            // A number this large is an instant in milliseconds (Apple's form), not a delay in seconds.
            if n > 100_000_000_000 { return max(0, Double(n) / 1000 - now.timeIntervalSince1970) }
            return Double(n)
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: text) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }

    /// 1, 2, 4, … seconds, at most `limit`.
    static func backoff(attempt: Int, limit: Double) -> Double {
        min(limit, Double(1 << min(max(attempt - 1, 0), 16)))
    }

    static func sleep(_ seconds: Double) async throws(CodedError) {
        do {
            try await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000))
        } catch {
            throw CodedError(.appleUnreachable, "cancelled while waiting to try again")
        }
    }

    /// An error of the transport, in a few words (AsyncHTTPClient's and NIO's descriptions, never a header).
    static func describe(_ error: any Error) -> String {
        String(describing: error)
    }

    /// A path segment with everything but unreserved characters percent-encoded.
    static func pathSegment(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: unreserved) ?? s
    }

    static func queryComponent(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: unreserved) ?? s
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
