import Hummingbird
import LedgerAPI
import LedgerAppStore
import LedgerCore
import LedgerStore
import LedgerErrors

// MARK: - POST and GET /v1/customers/{appUserId}/grants

extension LedgerRoutes {
    static let grantsRoute = "/v1/customers/{appUserId}/grants"

    func addGrantRoutes(to router: Router<LedgerRequestContext>) {
        // A grant or revoke for the user the path names: one input of type `grant`, appended like any other (kept
        // as sent, refused inputs kept in `rejected`), so a replay and every replica see the same fact.
        router.post(RouterPath(stringLiteral: Self.grantsRoute)) { request, context in
            let user = try RequestTarget.parameter("appUserId", of: context)
            guard !user.isEmpty else { throw CodedError(.invalidQuery, "the app user id must not be empty") }
            return try await self.appendOne(request, context, path: Self.grantsRoute, type: .grant, user: user)
        }
        router.get(RouterPath(stringLiteral: Self.grantsRoute)) { request, context in
            let user = try RequestTarget.parameter("appUserId", of: context)
            let clocks = try ReadClocks(request, route: "GET " + Self.grantsRoute)
            let (grants, asOf) = try self.read {
                let last = try self.ledger.lastSeq()
                let asOf = min(clocks.asOf ?? last, last)
                return (try self.ledger.grants(AppUserID(user), environment: clocks.environment, asOf: asOf), asOf)
            }
            return JSONBody.response(
                status: .ok,
                GrantsDocument(
                    appUserId: user, environment: clocks.environment.rawValue, at: clocks.at, asOf: asOf,
                    grants: grants.map { GrantState(record: $0, active: $0.grants(at: clocks.at)) }))
        }
    }
}
