import Foundation
import LMDB
import LedgerCore
import LedgerErrors

// MARK: - Forgetting a person

/// What `LedgerPrivacy.forget` did.
public struct ForgetReport: Sendable, Equatable {
    /// The pseudonym the log names the person by, from now on their only name.
    public var pseudonym: String
    /// Every pseudonym forgotten: the person's and those of the `appAccountToken`s the ledger mapped to them.
    public var pseudonyms: [String]
    /// The subscriptions the person's claims named (their periods and revenue stay, under the pseudonym).
    public var subscriptions: Int
    /// The seq of the erasure event.
    public var seq: UInt64
}

/// Forgetting people (docs/privacy.md): the values behind a person's pseudonyms deleted, the erasure recorded in the
/// log, and the key generation that could still open them destroyed. The pseudonyms themselves, and how reads turn
/// them into values, are `Identities` and `IdentityNames`.
public struct LedgerPrivacy: LedgerRole {
    let ledger: Ledger
}

extension Ledger {
    /// Forgetting people.
    public var privacy: LedgerPrivacy { LedgerPrivacy(ledger: self) }
}

extension LedgerPrivacy {
    /// Forgets `user` (an app user id): deletes the values behind their pseudonym and the pseudonyms of the tokens
    /// the ledger mapped to them, records the erasure as an event of the log (who asked, when, the pseudonyms), and
    /// destroys the key generation that could still open the deleted rows once that event is durable; a journaled
    /// ledger's journal is then emptied of every record before it (docs/privacy.md). Every other answer is
    /// unchanged; the person's subscriptions keep their periods and revenue under the pseudonym.
    ///
    /// Throws `cannot_forget` for a ledger made without pseudonyms, `not_found` when the ledger knows no such user.
    public func forget(_ user: AppUserID, requestedBy: String, reason: String? = nil, at instant: UnixMillis) throws
        -> ForgetReport
    {
        try forget(pseudonym: try pseudonymToForget(user, requestedBy: requestedBy, reason: reason), requestedBy: requestedBy,
            reason: reason, at: instant)
    }

    /// `forget` on a thread of its own, for a caller that must not block (a server's request, a replica's stream):
    /// the erasure's commit, a sync of the data file and the key file's rewrite wait there.
    public func forget(_ user: AppUserID, requestedBy: String, reason: String?, at instant: UnixMillis) async throws
        -> ForgetReport
    {
        try await Self.onOwnThread { try self.forget(user, requestedBy: requestedBy, reason: reason, at: instant) }
    }

    /// `forget(pseudonym:…)` on a thread of its own (see the async `forget`).
    public func forget(pseudonym: String, requestedBy: String, reason: String?, at instant: UnixMillis) async throws
        -> ForgetReport
    {
        try await Self.onOwnThread {
            try self.forget(pseudonym: pseudonym, requestedBy: requestedBy, reason: reason, at: instant)
        }
    }

    private static func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
        }
    }

    /// The pseudonym `forget` would erase for `user`, after checking the request; the errors `forget` throws.
    public func pseudonymToForget(_ user: AppUserID, requestedBy: String, reason: String?) throws -> String {
        // The erasure event is chained for good: a request that names the user would keep what it erases.
        let said = (requestedBy + " " + (reason ?? "")).lowercased()
        guard !requestedBy.isEmpty, !user.rawValue.isEmpty, !said.contains(user.rawValue.lowercased()) else {
            throw LedgerError(
                code: .badRequest,
                message: "requestedBy must say who asked, and neither it nor the reason may name the user: the log keeps them")
        }
        return try environment.read { txn in
            guard let generation = try identities.generation(layout, txn) else { throw Self.cannotForget }
            guard let pseudonym = try identities.pseudonym(of: user.rawValue, generation, layout, txn) else {
                throw LedgerError(code: .notFound, message: "the ledger knows no app user \(user.rawValue)")
            }
            return pseudonym
        }
    }

    static let cannotForget = LedgerError(
        code: .cannotForget,
        message: "this ledger was made without pseudonyms: its log holds personal values as they came and cannot forget "
            + "them (docs/privacy.md)")

    /// Forgets the person the log names `pseudonym` (`forget`, as a replica of the intake stream applies it: the
    /// stream's message names the pseudonym, never the id). `not_found` when no one still known has it.
    public func forget(pseudonym: String, requestedBy: String, reason: String?, at instant: UnixMillis) throws
        -> ForgetReport
    {
        ledger.forgetting.lock()
        defer { ledger.forgetting.unlock() }
        let (current, tokens, subscriptions) = try environment.read { txn in
            guard let generation = try identities.generation(layout, txn) else { throw Self.cannotForget }
            guard try identities.row(pseudonym, generation, layout, txn) != nil else {
                throw LedgerError(code: .notFound, message: "the ledger knows no one as \(pseudonym) (forgotten already?)")
            }
            let (tokens, subscriptions) = try tokensAndSubscriptions(of: pseudonym, txn)
            return (generation.number, tokens, subscriptions)
        }
        // Always the one after the generation in force (a key file left with a later one by an erasure that never
        // committed gets it replaced), so that the erasure event is the same wherever the same log is written.
        let next = try identities.newGeneration(after: current, keeping: [current])
        let erasure = Erasure(
            pseudonyms: [pseudonym] + tokens.filter { $0 != pseudonym }, requestedBy: requestedBy,
            requestedAt: instant, reason: reason, keyGeneration: next.number)
        let input = LedgerInput.facts(
            [.erasure(erasure)], metadata: FactMetadata(source: .erasure, receivedAt: instant),
            raw: Self.erasureRequest(erasure))
        guard let result = try ledger.appendAndWait([input]).first else {
            throw LedgerError(code: .storageError, message: "the erasure was not appended")
        }
        if let error = result.error { throw LedgerError(code: error.code, message: error.message) }
        guard let seq = result.seq else {
            throw LedgerError(code: .storageError, message: "the erasure was not appended")
        }
        // Durable first (a journaled ledger syncs LMDB now), then the generation that opens the deleted rows is
        // destroyed, and the journal forgets the inputs it kept.
        try ledger.checkpointer?.scrub()
        try identities.keepOnly(next.number)
        return ForgetReport(
            pseudonym: pseudonym, pseudonyms: erasure.pseudonyms, subscriptions: subscriptions, seq: seq)
    }

    /// The report of the erasure event at `seq` (a replica's, which applied it from the intake stream).
    public func forgetReport(seq: UInt64) throws -> ForgetReport {
        guard let stored = try ledger.log.event(seq: seq), case .erasure(let erasure) = stored.event.fact,
            let pseudonym = erasure.pseudonyms.first
        else { throw LedgerError(code: .notFound, message: "the event at seq \(seq) is not an erasure") }
        let subscriptions = try environment.read { txn in try subscriptionKeys(of: pseudonym, txn).count }
        return ForgetReport(pseudonym: pseudonym, pseudonyms: erasure.pseudonyms, subscriptions: subscriptions, seq: seq)
    }

    /// The raw input an erasure is recorded with: the request as the log may keep it, pseudonyms only.
    static func erasureRequest(_ erasure: Erasure) -> [UInt8] {
        var text = #"{"pseudonyms":["# + erasure.pseudonyms.map { "\"\($0)\"" }.joined(separator: ",") + "]"
        text += #","requestedAt":\#(erasure.requestedAt),"keyGeneration":\#(erasure.keyGeneration)}"#
        return Array(text.utf8)
    }

    /// The pseudonyms of the tokens the ledger maps to `pseudonym` on the subscriptions its claims name, and how many
    /// subscriptions those are (in every environment).
    private func tokensAndSubscriptions(of pseudonym: String, _ txn: Transaction) throws -> ([String], Int) {
        var tokens: Set<String> = []
        let keys = try subscriptionKeys(of: pseudonym, txn)
        for key in keys {
            guard let stored = try txn.get(layout.timelines, key: key) else { continue }
            let timeline = try StoredTimeline.decode(stored)
            for (token, owner) in timeline.tokenUsers where owner.rawValue == pseudonym { tokens.insert(token) }
            if let claim = timeline.accountToken, claim.appUserId.rawValue == pseudonym { tokens.insert(claim.token) }
        }
        // Sorted: a timeline's tokens are a dictionary, whose order differs from one process to the next, and the
        // erasure event must be the same wherever the same log is written.
        return (tokens.sorted(), keys.count)
    }

    /// The subscriptions `by_user` names for `pseudonym`, in every environment (their `timelines` keys).
    private func subscriptionKeys(of pseudonym: String, _ txn: Transaction) throws -> [[UInt8]] {
        var keys: [[UInt8]] = []
        let cursor = try txn.cursor(layout.byUser)
        for environment in AppStoreEnvironment.known {
            var entry = try cursor.find(StoreLayout.userKey(environment, AppUserID(pseudonym)))
            while let e = entry {
                keys.append(Array(e.value))
                entry = try cursor.nextDuplicate()
            }
        }
        return keys
    }
}
