/// What one commit changed that a kept answer may depend on (`AnswerCache`): the subscriptions whose stored timeline
/// it wrote, the customers it gave a `by_user` entry (a claim, or an older claim that named no environment adopted
/// where the subscription appeared), as the store's keys, and the log's last seq after it. A customer's answer reads
/// `by_user` and the timelines listed there, a subscription's its timeline: nothing else an append writes.
struct CommitChanges: Sendable {
    /// `StoreLayout.subscriptionKey` of each timeline written.
    var subscriptions: Set<[UInt8]> = []
    /// `StoreLayout.userKey` of each customer whose `by_user` entries may have grown.
    var customers: Set<[UInt8]> = []
    /// The log's last seq once committed.
    var lastSeq: UInt64 = 0
    /// Whether the commit may have changed every answer: a change of rules, which refolds every subscription.
    var everything = false
    /// The people the commit named for the first time (value → identity), for the writer's memory of them
    /// (`Identities.remember`), which only holds what is committed.
    var identities: [String: Identities.Identity] = [:]
    /// The value of each pseudonym the commit's inputs named (since its last erasure, if it holds one): what the
    /// projections show them as without opening their rows again.
    var valueOf: [String: String] = [:]
}
