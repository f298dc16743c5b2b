import LedgerCore

// MARK: - FactBounds

/// The values a fact may carry into the ledger: every instant within a window around the App Store's lifetime, and
/// quantities a purchase can have. Checked once, on the decoded facts (`InputDecoder.decode`), whatever format they
/// came in: an instant near the ends of Int64 is no date Apple ever wrote, and arithmetic on it (a period's end minus
/// one, a duration added) would overflow everywhere the fold and the views use it.
///
/// Refusals are `out_of_range` and name Apple's field as the input spelled it (`expires_date_ms` in V1 documents,
/// `expiresDate` in V2 ones).
public enum FactBounds {
    /// 2008-01-01T00:00:00Z: before the App Store opened (July 2008), so no purchase predates it.
    public static let earliestInstant: UnixMillis = 1_199_145_600_000
    /// 2200-01-01T00:00:00Z (exclusive): far beyond any expiry Apple states, far within Int64 milliseconds.
    public static let instantLimit: UnixMillis = 7_258_118_400_000
    /// How the window is named in refusals.
    public static let windowText = "2008-01-01..2200-01-01"
    /// The largest `quantity` accepted (Apple allows at most 10 per purchase; anything near this is not a purchase).
    public static let maxQuantity: Int64 = 1_000_000
    /// The largest price, in milliunits, a transaction may state (10^15: a billion units of any currency).
    public static let maxPrice: Int64 = 1_000_000_000_000_000

    /// Whether `instant` lies in [2008-01-01, 2200-01-01) UTC.
    @inline(__always)
    public static func contains(_ instant: UnixMillis) -> Bool {
        instant >= earliestInstant && instant < instantLimit
    }

    /// The refusal for an instant outside the window; `field` is Apple's name for it.
    public static func refusal(_ field: String, _ value: Int64, of subject: String? = nil) -> InputError {
        .outOfRange("\(field) \(value) is outside \(windowText)" + (subject.map { " (\($0))" } ?? ""))
    }

    // MARK: - Checking decoded facts

    /// Throws `out_of_range` for the first instant outside the window, or quantity outside 0...`maxQuantity`, among
    /// `facts`, then for the metadata's `receivedAt` and `observedAt`. `source` decides the field names (V1 documents
    /// spell them `*_date_ms`).
    /// - Complexity: O(number of facts); allocates only to build a refusal.
    static func check(
        _ facts: [Fact], source: FactSource, receivedAt: UnixMillis, observedAt: UnixMillis?
    ) throws(InputError) {
        let v1 = source == .receipt || source == .notificationV1
        for fact in facts {
            switch fact {
            case .transaction(let t):
                func check(_ value: UnixMillis?, _ v2Name: String, _ v1Name: String) throws(InputError) {
                    try checkInstant(value, v1 ? v1Name : v2Name, of: "transaction \(t.transactionId.rawValue)")
                }
                try check(t.purchaseDate, "purchaseDate", "purchase_date_ms")
                try check(t.originalPurchaseDate, "originalPurchaseDate", "original_purchase_date_ms")
                try check(t.expiresDate, "expiresDate", "expires_date_ms")
                try check(t.revocationDate, "revocationDate", "cancellation_date_ms")
                try check(t.signedDate, "signedDate", "signedDate")
                try check(t.receiptCreationDate, "receiptCreationDate", "receipt_creation_date_ms")
                try check(
                    t.commitment?.expiresDate, "commitmentInfo.commitmentExpiresDate", "commitmentInfo.commitmentExpiresDate")
                // A price is a non-negative amount in milliunits; the largest Apple sells (tens of millions of rupiah)
                // is far below this bound, which keeps every sum of prices the revenue answers make in Int64.
                for (value, field) in [(t.price, "price"), (t.commitment?.price, "commitmentInfo.commitmentPrice")] {
                    if let value, value < 0 || value > maxPrice {
                        throw .outOfRange(
                            "\(field) \(value) is outside 0...\(maxPrice) milliunits (transaction \(t.transactionId.rawValue))")
                    }
                }
                if let quantity = t.quantity, quantity < 0 || quantity > maxQuantity {
                    throw .outOfRange(
                        "quantity \(quantity) is outside 0...\(maxQuantity) (transaction \(t.transactionId.rawValue))")
                }
            case .renewal(let r):
                func check(_ value: UnixMillis?, _ v2Name: String, _ v1Name: String) throws(InputError) {
                    try checkInstant(value, v1 ? v1Name : v2Name, of: "renewal info of \(r.originalTransactionId.rawValue)")
                }
                try check(r.gracePeriodExpiresDate, "gracePeriodExpiresDate", "grace_period_expires_date_ms")
                try check(r.renewalDate, "renewalDate", "renewalDate")
                try check(r.signedDate, "signedDate", "signedDate")
                try check(r.recentSubscriptionStartDate, "recentSubscriptionStartDate", "recentSubscriptionStartDate")
            case .notification(let n):
                try checkInstant(n.signedDate, "signedDate", of: "notification \(n.notificationType)")
            case .binding(let b):
                try checkInstant(b.claimedAt, "claimedAt", of: "binding of \(b.originalTransactionId.rawValue)")
            case .reconciliation(let c):
                try checkInstant(c.checkedAt, "checkedAt", of: "reconciliation of \(c.originalTransactionId.rawValue)")
                try checkInstant(c.windowStart, "windowStart", of: "reconciliation of \(c.originalTransactionId.rawValue)")
            case .rules(let r):
                try checkInstant(r.appliedAt, "appliedAt", of: "rules")
            case .grant(let g):
                try checkInstant(g.from, g.action == .grant ? "from" : "at", of: "grant to \(g.appUserId.rawValue)")
                try checkInstant(g.until, "until", of: "grant to \(g.appUserId.rawValue)")
            case .erasure(let e):
                try checkInstant(e.requestedAt, "requestedAt", of: "erasure")
            }
        }
        try checkInstant(receivedAt, "receivedAt")
        try checkInstant(observedAt, source == .receipt ? "request_date_ms" : "observedAt")
    }

    /// Throws `out_of_range` when `value` is present and outside the window. `subject` is only built for a refusal.
    @inline(__always)
    private static func checkInstant(
        _ value: UnixMillis?, _ field: String, of subject: @autoclosure () -> String? = nil
    ) throws(InputError) {
        guard let value, !contains(value) else { return }
        throw refusal(field, value, of: subject())
    }
}
