/// The values of the ledger that name a person: app user ids and `appAccountToken`s (docs/privacy.md). The store
/// keeps a pseudonym in their place and the value itself in a table it can forget, so these are the only fields it
/// renames: everything else in a fact is about a purchase, not a person.
///
/// One namespace serves both: a token claim that names no user stands for the token itself as the user
/// (`BindingClaim`), and the fold compares the two, so a value has one pseudonym whichever field holds it.
extension Fact {
    /// Calls `body` with each non-empty personal value the fact states, possibly more than once.
    public func forEachPersonalValue(_ body: (String) -> Void) {
        switch self {
        case .transaction(let t): if let v = t.appAccountToken, !v.isEmpty { body(v) }
        case .renewal(let r): if let v = r.appAccountToken, !v.isEmpty { body(v) }
        case .binding(let b):
            if !b.appUserId.rawValue.isEmpty { body(b.appUserId.rawValue) }
            if let v = b.appAccountToken, !v.isEmpty { body(v) }
        case .grant(let g): if !g.appUserId.rawValue.isEmpty { body(g.appUserId.rawValue) }
        // An erasure names pseudonyms, never values.
        case .notification, .reconciliation, .rules, .erasure: break
        }
    }

    /// The fact with each non-empty personal value replaced by `rename(value)`.
    public func renamingPersonalValues<Failure: Error>(_ rename: (String) throws(Failure) -> String) throws(Failure)
        -> Fact
    {
        switch self {
        case .transaction(var t):
            guard let v = t.appAccountToken, !v.isEmpty else { return self }
            t.appAccountToken = try rename(v)
            return .transaction(t)
        case .renewal(var r):
            guard let v = r.appAccountToken, !v.isEmpty else { return self }
            r.appAccountToken = try rename(v)
            return .renewal(r)
        case .binding(var b):
            b.appUserId = try b.appUserId.renamed(rename)
            if let v = b.appAccountToken, !v.isEmpty { b.appAccountToken = try rename(v) }
            return .binding(b)
        case .grant(var g):
            g.appUserId = try g.appUserId.renamed(rename)
            return .grant(g)
        case .notification, .reconciliation, .rules, .erasure:
            return self
        }
    }
}

extension FactMetadata {
    /// The metadata with the envelope's app user renamed.
    public func renamingPersonalValues<Failure: Error>(_ rename: (String) throws(Failure) -> String) throws(Failure)
        -> FactMetadata
    {
        guard let user = appUserId else { return self }
        var m = self
        m.appUserId = try user.renamed(rename)
        return m
    }
}

extension LedgerEvent {
    /// The event with every personal value of its fact and metadata renamed.
    public func renamingPersonalValues<Failure: Error>(_ rename: (String) throws(Failure) -> String) throws(Failure)
        -> LedgerEvent
    {
        LedgerEvent(
            seq: seq, fact: try fact.renamingPersonalValues(rename), metadata: try metadata.renamingPersonalValues(rename))
    }
}

extension AppUserID {
    /// The id renamed, unless empty (an empty id names nobody).
    public func renamed<Failure: Error>(_ rename: (String) throws(Failure) -> String) throws(Failure) -> AppUserID {
        rawValue.isEmpty ? self : AppUserID(rawValue: try rename(rawValue))
    }
}

extension Timeline {
    /// Every personal value the timeline holds: its owners, refused claims, and the tokens it maps to users.
    public func forEachPersonalValue(_ body: (String) -> Void) {
        for o in owners where !o.appUserId.rawValue.isEmpty { body(o.appUserId.rawValue) }
        for r in refusedClaims where !r.appUserId.rawValue.isEmpty { body(r.appUserId.rawValue) }
        if let t = accountToken {
            if !t.token.isEmpty { body(t.token) }
            if !t.appUserId.rawValue.isEmpty { body(t.appUserId.rawValue) }
        }
        for (token, user) in tokenUsers {
            if !token.isEmpty { body(token) }
            if !user.rawValue.isEmpty { body(user.rawValue) }
        }
    }

    /// The timeline with every personal value renamed. Only for answers: its periods, changes and fold position are
    /// the same, but a timeline renamed this way is no longer the stored projection.
    public func renamingPersonalValues<Failure: Error>(_ rename: (String) throws(Failure) -> String) throws(Failure)
        -> Timeline
    {
        var t = self
        for i in t.owners.indices { t.owners[i].appUserId = try t.owners[i].appUserId.renamed(rename) }
        for i in t.refusedClaims.indices {
            t.refusedClaims[i].appUserId = try t.refusedClaims[i].appUserId.renamed(rename)
        }
        if let claim = t.accountToken {
            t.accountToken = AccountTokenClaim(
                token: claim.token.isEmpty ? claim.token : try rename(claim.token),
                appUserId: try claim.appUserId.renamed(rename))
        }
        if !t.tokenUsers.isEmpty {
            var renamed: [String: AppUserID] = [:]
            for (token, user) in t.tokenUsers {
                renamed[token.isEmpty ? token : try rename(token)] = try user.renamed(rename)
            }
            t.tokenUsers = renamed
        }
        return t
    }
}

extension LifecycleEvent {
    /// The event with its owner renamed.
    public func renamingPersonalValues<Failure: Error>(_ rename: (String) throws(Failure) -> String) throws(Failure)
        -> LifecycleEvent
    {
        guard let user = appUserId, !user.isEmpty else { return self }
        var e = self
        e.appUserId = try rename(user)
        return e
    }
}
