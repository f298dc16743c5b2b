/// Where an event falls in the fold order: the instant it speaks from (a claim's `claimedAt`; otherwise Apple's
/// `signedDate`, a receipt's creation for its `in_app` copies, or when a V1 fact was observed), then its kind
/// (`Fact.Kind`), then its id (transaction id, notification UUID, a claim's cause). Different facts equal in all three are ordered by a `FactOrder`, and identical facts
/// at the same instant are one revision. The fold is the step function run over the events in this order, so any
/// delivery order of the same events gives the same timeline.
package struct FoldPosition: Hashable, Sendable, Comparable {
    package var instant: UnixMillis
    package var kind: Fact.Kind
    /// A transaction id, notification UUID or claimant, compared by UTF-8 bytes.
    package var id: CompactID

    package init(instant: UnixMillis, kind: Fact.Kind, id: CompactID) {
        self.instant = instant
        self.kind = kind
        self.id = id
    }

    /// The position of `event`. Inlined where it is made, so that an event read out of an array is read in place
    /// (only the fields below), not copied whole.
    @inline(__always)
    init(_ event: LedgerEvent) {
        switch event.fact {
        case .transaction(let t): self.init(instant: event.effectiveDate, kind: .transaction, id: t.transactionId.id)
        case .renewal: self.init(instant: event.effectiveDate, kind: .renewal, id: .empty)
        case .notification(let n):
            self.init(instant: event.effectiveDate, kind: .notification, id: CompactID(n.notificationUUID))
        case .binding(let b): self.init(instant: b.claimedAt, kind: .binding, id: Self.claimId(b.cause))
        case .reconciliation(let c):
            self.init(instant: c.checkedAt, kind: .reconciliation, id: CompactID(c.originalTransactionId.rawValue))
        case .rules(let r): self.init(instant: r.appliedAt, kind: .rules, id: .empty)
        case .grant(let g): self.init(instant: g.from, kind: .grant, id: CompactID(g.grantId ?? ""))
        case .erasure(let e): self.init(instant: e.requestedAt, kind: .erasure, id: .empty)
        }
    }

    /// A claim's id is its cause, never its user: at one instant Apple's word (a token a transaction carried) folds
    /// before the app's claims, and claims of one cause by different users fold in log order (`Timeline.fold`), so
    /// that no owner depends on how two user ids sort.
    @inline(__always)
    static func claimId(_ cause: BindingClaim.Cause) -> CompactID {
        switch cause {
        case .appAccountToken: CompactID(.decimal(1))
        case .claim: CompactID(.decimal(2))
        }
    }

    package static func < (a: FoldPosition, b: FoldPosition) -> Bool {
        if a.instant != b.instant { return a.instant < b.instant }
        if a.kind != b.kind { return a.kind < b.kind }
        return CompactID.utf8Less(a.id, b.id)
    }
}

/// The order of two different facts at the same fold position: two revisions of one transaction stated at one
/// instant, two renewal infos observed together. Any total order on the facts' content keeps the fold independent of
/// delivery order, but it decides which of them folds last, so a ledger folds with one order, always: LedgerCodec's
/// `FactOrder.canonical` (the order of their canonical bytes).
public struct FactOrder: Sendable {
    /// True when `a` folds before `b` (`a` and `b` differ).
    public let precedes: @Sendable (_ a: Fact, _ b: Fact) -> Bool

    public init(_ precedes: @escaping @Sendable (_ a: Fact, _ b: Fact) -> Bool) { self.precedes = precedes }
}
