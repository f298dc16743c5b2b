/// What one commit changed that a kept answer may depend on (`AnswerCache`), derived from the commit's `WriteReport`:
/// the subscriptions whose timeline it wrote or checked against Apple, the customers it gave a `by_user` entry or an
/// operator grant (by the ids readers ask with), as the store's keys, and the log's last seq after it.
struct CommitChanges: Sendable {
    /// `StoreLayout.subscriptionKey` of each timeline written or subscription checked.
    var subscriptions: Set<[UInt8]> = []
    /// `StoreLayout.userKey` of each customer whose `by_user` entries or grants may have changed.
    var customers: Set<[UInt8]> = []
    /// The log's last seq once committed.
    var lastSeq: UInt64 = 0
    /// Whether the commit may have changed every answer: a change of rules (every subscription refolded) or an
    /// erasure (people no longer shown).
    var everything = false
    /// The people the commit named for the first time (value → identity), for the writer's memory of them
    /// (`Identities.remember`), which only holds what is committed.
    var identities: [String: Identities.Identity] = [:]
}
