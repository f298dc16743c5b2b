import LedgerCore

// MARK: - InputDecoder+BindingClaims

extension InputDecoder {
    /// The caller's `appUserId` claims each distinct OTID of the input at the latest instant Apple stated about it
    /// in this input (its facts' `signedDate`), else at `observedAt` (a receipt's request date), else when it was
    /// received. Apple's instants make the claim a stable fact: posting the same document again states the same
    /// claim, which is then a duplicate instead of a new event.
    ///
    /// Each transaction's `appAccountToken` claims its OTID. Stated by Apple alone, for the token, at the purchase.
    /// Named for the caller's user, at the instant this revision was stated (`signedDate`; a receipt's creation or
    /// request date): the same transaction posted again by another account's backend after a restore is that
    /// user's claim at the restore, never at the original purchase (docs/domain.md, "Owners").
    func bindingClaims(for decoded: Decoded, context: Context) -> [Fact] {
        var claims = [Fact]()
        var seen = Set<BindingClaim>()
        func add(_ claim: BindingClaim) {
            if seen.insert(claim).inserted { claims.append(.binding(claim)) }
        }
        if let user = context.appUserId, decoded.type != .binding {
            var otids = Set<String>()
            for fact in decoded.facts {
                guard let otid = fact.originalTransactionId,
                    otids.insert(otid.rawValue + "|" + fact.environment.rawValue).inserted
                else { continue }
                let stated = decoded.facts.lazy
                    .filter { $0.originalTransactionId == otid && $0.environment == fact.environment }
                    .compactMap(\.signedDate).max()
                add(
                    BindingClaim(
                        appUserId: user, originalTransactionId: otid,
                        claimedAt: stated ?? decoded.observedAt ?? context.receivedAt, cause: .claim,
                        environment: fact.environment))
            }
        }
        // A token is a UUID the app chose for its user, not the user's id: when the caller names the user, the claim
        // says whose token it is, and the fold maps the token to that user (docs/domain.md, "Owners").
        for fact in decoded.facts {
            guard case .transaction(let t) = fact, let stated = t.appAccountToken, !stated.isEmpty else { continue }
            let token = stated.lowercased()
            let named = decoded.type == .binding ? nil : context.appUserId
            add(
                BindingClaim(
                    appUserId: named ?? AppUserID(token), originalTransactionId: t.originalTransactionId,
                    claimedAt: named == nil
                        ? t.purchaseDate : (t.statedDate ?? decoded.observedAt ?? context.receivedAt),
                    cause: .appAccountToken, environment: t.environment, appAccountToken: token))
        }
        return claims
    }
}
