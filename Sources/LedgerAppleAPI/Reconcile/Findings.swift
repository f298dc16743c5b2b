import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerErrors

/// Apple's items of one customer's answer (or of a `missed` pass), sorted by the subscription they belong to, and
/// the inputs to append for what the ledger lacked.
struct Findings {
    let reconciler: Reconciler
    let mode: String
    let windowStart: UnixMillis
    let checkedAt: UnixMillis
    let options: IngestPipeline.Options
    var askedWith: String?
    var revision: String?
    var historyPages = 0

    /// The subscriptions in the order Apple's answer first named them (the anchor first).
    private(set) var order: [OriginalTransactionID] = []
    private var checks: [OriginalTransactionID: SubscriptionCheck] = [:]
    private var transactionIds: [OriginalTransactionID: Set<String>] = [:]
    private var refundIds: [OriginalTransactionID: Set<String>] = [:]
    /// What to append, each input with the subscription it belongs to (nil: a notification of none).
    private var pending: [(input: LedgerInput, owner: OriginalTransactionID?)] = []
    private var pendingFacts: [Fact] = []
    private var pendingNotifications = Set<String>()
    /// Notifications of no subscription the ledger lacked.
    private(set) var otherNotifications: [SubscriptionCheck.Notification] = []
    /// Refused items no subscription can be named for, when there is no anchor to report them on.
    private(set) var unattributed: [SubscriptionCheck.Refused] = []
    private let anchor: OriginalTransactionID?

    init(reconciler: Reconciler, mode: String, windowStart: UnixMillis, checkedAt: UnixMillis, anchor: OriginalTransactionID?) {
        self.reconciler = reconciler
        self.mode = mode
        self.windowStart = windowStart
        self.checkedAt = checkedAt
        self.options = IngestPipeline.Options(receivedAt: checkedAt)
        self.anchor = anchor
        if let anchor { touch(anchor) }
    }

    private var ledger: Ledger { reconciler.pipeline.ledger }

    private mutating func touch(_ otid: OriginalTransactionID) {
        guard checks[otid] == nil else { return }
        order.append(otid)
        checks[otid] = SubscriptionCheck(originalTransactionId: otid)
    }

    /// A refused item of the answer: on the anchor's check, or the report's when there is none.
    private mutating func refuse(_ refused: SubscriptionCheck.Refused) {
        if let anchor { checks[anchor]!.refused.append(refused) } else { unattributed.append(refused) }
    }

    /// Items Apple listed without a `signedPayload`: reported, skipped.
    mutating func withoutPayload(_ count: Int) {
        guard count > 0 else { return }
        refuse(
            .init(
                what: count == 1 ? "a notification history item" : "\(count) notification history items",
                code: ErrorCode.appleBadResponse.rawValue,
                message: "Apple listed it without a signedPayload; nothing of it can be read"))
    }

    /// A notification of Get Notification History, under the subscription it names; appended when the ledger never
    /// stored its UUID, and the transactions and renewal info it carries reported when the ledger lacked them.
    mutating func notification(_ item: NotificationHistoryItem) throws {
        let raw = Array(("{\"signedPayload\":" + APITokenSigner.quoted(item.signedPayload) + "}").utf8)
        let input = reconciler.pipeline.prepare(raw, options: options, now: checkedAt)
        guard case .facts(let facts, _, _, _) = input else {
            refuse(Reconciler.refusal(input, what: "a notification"))
            return
        }
        guard case .notification(let n)? = facts.first(where: { $0.kind == .notification }) else { return }
        let owner = n.originalTransactionId
        if let owner {
            touch(owner)
            checks[owner]!.notificationsSeen += 1
            if item.undelivered { checks[owner]!.notificationsUndelivered.append(n.notificationUUID) }
        }
        for case .transaction(let t) in facts { see(t) }
        let key = Fact.notification(n).eventKey
        guard try ledger.log.events(key: key).isEmpty, !pendingNotifications.contains(key) else { return }
        // What the notification brings that the ledger lacked.
        var lacking: [TransactionFact] = []
        var renewalLacking = false
        for fact in facts {
            if case .transaction(let t) = fact, try !reconciler.known(t, pending: []) { lacking.append(t) }
            if case .renewal(let r) = fact, try !reconciler.known(r, pending: []) { renewalLacking = true }
        }
        pendingNotifications.insert(key)
        pending.append((input, owner))
        pendingFacts += facts
        let note = SubscriptionCheck.Notification(
            uuid: n.notificationUUID, type: n.notificationType, subtype: n.subtype, signedDate: n.signedDate,
            lastSendAttempt: item.lastResult)
        guard let owner else {
            otherNotifications.append(note)
            return
        }
        checks[owner]!.notificationsAdded.append(note)
        for t in lacking { report(t) }
        if renewalLacking { checks[owner]!.renewalInfoAdded = true }
    }

    /// A signed transaction of Apple's answer (history, refunds, a status, an order), under its subscription:
    /// reported when the ledger lacked it (no stored revision states its fields), appended unless a notification of
    /// this check already brings it as Apple first signed it.
    mutating func transaction(_ jws: String, from what: String, refund: Bool = false) throws {
        let input = reconciler.pipeline.prepare(Array(jws.utf8), options: options, now: checkedAt)
        guard case .facts(let facts, _, _, _) = input else {
            refuse(Reconciler.refusal(input, what: what))
            return
        }
        guard case .transaction(let t)? = facts.first else { return }
        see(t)
        if refund { refundIds[t.originalTransactionId, default: []].insert(t.transactionId.rawValue) }
        guard try !reconciler.known(t, pending: []) else { return }
        report(t)
        if try reconciler.known(t, pending: pendingFacts) { return }
        pending.append((input, t.originalTransactionId))
        pendingFacts += facts
    }

    /// A signed renewal info of Get All Subscription Statuses: lacking when the ledger's latest renewal info of its
    /// subscription differs; appended unless a notification of this check brings the same.
    mutating func renewal(_ jws: String) throws {
        let input = reconciler.pipeline.prepare(Array(jws.utf8), options: options, now: checkedAt)
        guard case .facts(let facts, _, _, _) = input else {
            refuse(Reconciler.refusal(input, what: "a subscription status"))
            return
        }
        guard case .renewal(let r)? = facts.first else { return }
        touch(r.originalTransactionId)
        guard try !reconciler.known(r, pending: []) else { return }
        checks[r.originalTransactionId]!.renewalInfoAdded = true
        if try reconciler.known(r, pending: pendingFacts) { return }
        pending.append((input, r.originalTransactionId))
        pendingFacts += facts
    }

    private mutating func see(_ t: TransactionFact) {
        touch(t.originalTransactionId)
        transactionIds[t.originalTransactionId, default: []].insert(t.transactionId.rawValue)
    }

    private mutating func report(_ t: TransactionFact) {
        let otid = t.originalTransactionId
        touch(otid)
        guard !checks[otid]!.transactionsAdded.contains(where: { $0.transactionId == t.transactionId.rawValue }) else {
            return
        }
        let revision = (try? !ledger.log.events(key: t.transactionId.rawValue).isEmpty) ?? false
        checks[otid]!.transactionsAdded.append(
            .init(
                transactionId: t.transactionId.rawValue, productId: t.productId, purchaseDate: t.purchaseDate,
                revision: revision))
    }

    /// The checks, each recorded after what was missing of its subscription (unless `dryRun`). When
    /// `recordingEvery`, every subscription's is reported and recorded; otherwise only those something was found
    /// about are reported (a notification the ledger lacked, or one Apple never delivered), and recorded unless all
    /// they found is undelivered notifications the subscription's latest check already names, so a pass run every
    /// hour does not record the same finding every hour. A subscription's inputs and its check share a commit, so
    /// the log never holds a check without what it found.
    mutating func settle(recordingEvery: Bool, dryRun: Bool) async throws -> [SubscriptionCheck] {
        var result: [SubscriptionCheck] = []
        var unrecorded = Set<OriginalTransactionID>()
        for otid in order {
            var check = checks[otid]!
            check.mode = mode
            check.askedWith = askedWith
            check.windowStart = windowStart
            check.revision = revision
            check.historyPages = historyPages
            check.transactionsSeen = transactionIds[otid]?.count ?? 0
            check.refundsSeen = refundIds[otid]?.count ?? 0
            guard recordingEvery || !check.complete || !check.notificationsUndelivered.isEmpty else { continue }
            if !recordingEvery && check.complete {
                let known = try lastRecordedUndelivered(otid)
                if Set(check.notificationsUndelivered).isSubset(of: known) { unrecorded.insert(otid) }
            }
            result.append(check)
        }
        guard !dryRun else { return result }

        // Commits of about `inputsPerCommit` inputs: the notifications of no subscription, then each subscription's
        // inputs followed by its check.
        var batch: [(input: LedgerInput, owner: OriginalTransactionID?, isRecord: Bool)] =
            pending.filter { $0.owner == nil }.map { ($0.input, nil, false) }
        var index: [OriginalTransactionID: Int] = [:]
        for (i, check) in result.enumerated() { index[check.originalTransactionId] = i }
        func commit(_ batch: [(input: LedgerInput, owner: OriginalTransactionID?, isRecord: Bool)]) async throws {
            guard !batch.isEmpty else { return }
            let results = try await reconciler.pipeline.append(batch.map(\.input))
            for (entry, outcome) in zip(batch, results) {
                guard let owner = entry.owner, let i = index[owner] else {
                    if outcome.status == .rejected {
                        unattributed.append(
                            .init(
                                what: Reconciler.describe(entry.input), code: outcome.error?.code.rawValue ?? "rejected",
                                message: outcome.error?.message ?? ""))
                    }
                    continue
                }
                if entry.isRecord {
                    result[i].recordedAt = outcome.seq
                } else if outcome.status == .rejected {
                    result[i].refused.append(
                        .init(
                            what: Reconciler.describe(entry.input), code: outcome.error?.code.rawValue ?? "rejected",
                            message: outcome.error?.message ?? ""))
                } else {
                    result[i].appendedEvents += outcome.events.count
                }
            }
        }
        for check in result where !unrecorded.contains(check.originalTransactionId) {
            let otid = check.originalTransactionId
            for entry in pending where entry.owner == otid { batch.append((entry.input, otid, false)) }
            batch.append((Reconciler.record(fact(of: check)), otid, true))
            if batch.count >= Reconciler.inputsPerCommit {
                try await commit(batch)
                batch = []
            }
        }
        try await commit(batch)
        return result
    }

    /// The undelivered notifications the subscription's latest recorded check names.
    private func lastRecordedUndelivered(_ otid: OriginalTransactionID) throws -> Set<String> {
        var last: ReconciliationFact?
        for stored in try ledger.log.events(key: ReconciliationFact.eventKey(otid)) {
            if case .reconciliation(let check) = stored.event.fact, check.environment == reconciler.environment {
                last = check
            }
        }
        return Set(last?.notificationsUndelivered ?? [])
    }

    private func fact(of check: SubscriptionCheck) -> ReconciliationFact {
        ReconciliationFact(
            originalTransactionId: check.originalTransactionId, environment: reconciler.environment,
            checkedAt: checkedAt, revision: check.revision, transactionsSeen: Int64(check.transactionsSeen),
            transactionsAdded: check.transactionsAdded.map(\.transactionId),
            notificationsSeen: Int64(check.notificationsSeen), notificationsAdded: check.notificationsAdded.map(\.uuid),
            notificationsUndelivered: check.notificationsUndelivered, renewalInfoAdded: check.renewalInfoAdded,
            mode: mode, windowStart: windowStart,
            refundsSeen: mode == ReconciliationFact.customerMode ? Int64(check.refundsSeen) : nil)
    }
}
