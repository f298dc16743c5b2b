import Hummingbird
import LedgerAPI
import LedgerAppStore
import LedgerCore
import LedgerStore
import LedgerErrors

// MARK: - POST and GET /v1/customers/{appUserId}/grants

extension LedgerRoutes {
    /// A grant or revoke for the user the path names: one input of type `grant`, appended like any other (kept as
    /// sent, refused inputs kept in `rejected`), so a replay and every replica see the same fact.
    func appendGrant(_ request: Request, _ context: LedgerRequestContext) async throws -> Response {
        let user = try RequestTarget.parameter("appUserId", of: context)
        guard !user.isEmpty else { throw CodedError(.invalidQuery, "the app user id must not be empty") }
        return try await appendOne(request, context, .appendGrant, type: .grant, user: user)
    }

    /// The operator's grants to the user the path names, as known at `asOf`, each said active or not at `at`.
    func grants(_ request: Request, _ context: LedgerRequestContext) throws -> Response {
        let user = try RequestTarget.parameter("appUserId", of: context)
        let clocks = try ReadClocks(request, .grants)
        let (grants, asOf) = try read {
            let last = try ledger.lastSeq()
            let asOf = min(clocks.asOf ?? last, last)
            return (try ledger.grants(AppUserID(user), environment: clocks.environment, asOf: asOf), asOf)
        }
        return JSONBody.response(
            status: .ok,
            GrantsDocument(
                appUserId: user, environment: clocks.environment.rawValue, at: clocks.at, asOf: asOf,
                grants: grants.map { GrantState(record: $0, active: $0.grants(at: clocks.at)) }))
    }
}
