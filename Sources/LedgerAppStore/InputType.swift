// MARK: - InputType

/// The kinds of input the ledger accepts: the envelope's `"type"` values, and what type detection finds in a
/// bare document (`storeledger ingest --type` forces one).
public enum InputType: String, Hashable, Codable, Sendable, CaseIterable {
    /// A verifyReceipt response (JSON).
    case receipt
    /// A V1 (`notification_type`) or V2 (`signedPayload`) server notification.
    case notification
    /// A signed transaction (JWS text, `{"signedTransactionInfo":…}`) or its decoded V2 JSON.
    case transaction
    /// A signed renewal info (JWS text, `{"signedRenewalInfo":…}`) or its decoded V2 JSON.
    case renewal
    /// `{"appUserId":…,"originalTransactionId":…}` from the app's backend.
    case binding
    /// The operator's grant (or revoke) of an entitlement: `{"appUserId","entitlement","duration"}` (never detected;
    /// named by the envelope, the route or `--type`).
    case grant
}
