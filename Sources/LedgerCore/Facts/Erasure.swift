/// The operator forgot people (`storeledger forget`, `POST /v1/customers/{id}/forget`): the values behind these
/// pseudonyms are deleted from the ledger, and the people the log names by them can no longer be told
/// (docs/privacy.md). A fact of the log like any other, so an auditor sees that an erasure happened, when, at whose
/// request and what it covered; it never holds the values themselves. About no subscription, on no timeline.
public struct Erasure: Hashable, Codable, Sendable {
    /// The pseudonyms forgotten: the person asked about, and the tokens the ledger mapped to them.
    public var pseudonyms: [String]
    /// Who asked, in the operator's words (a ticket, a name).
    public var requestedBy: String
    public var requestedAt: UnixMillis
    public var reason: String?
    /// The generation of `identity.key` the values still known are sealed with from this event on: the one before it
    /// is destroyed once the erasure is durable, which makes the forgotten rows unreadable wherever their bytes remain.
    public var keyGeneration: UInt64
    public var unknownFields: UnknownFields

    public init(
        pseudonyms: [String], requestedBy: String, requestedAt: UnixMillis, reason: String? = nil, keyGeneration: UInt64
    ) {
        self.pseudonyms = pseudonyms
        self.requestedBy = requestedBy
        self.requestedAt = requestedAt
        self.reason = reason
        self.keyGeneration = keyGeneration
        self.unknownFields = UnknownFields()
    }

    /// Under the first pseudonym it forgets: a person is forgotten once.
    public static func eventKey(_ pseudonym: String) -> String { "erasure:" + pseudonym }
}
