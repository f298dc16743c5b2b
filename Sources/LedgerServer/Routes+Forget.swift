#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerErrors

// MARK: - POST /v1/customers/{appUserId}/forget

extension LedgerRoutes {
    /// What the operator's tooling sends: who asked and why, as the log keeps them (never the user's id).
    private struct ForgetRequest: Decodable {
        var requestedBy: String
        var reason: String?
    }

    /// Erases a person (docs/privacy.md). Authenticated by the kernel: only a peer running as the server's own user,
    /// or root, may ask (SO_PEERCRED), whatever `socket.writers` allows: a writer appends what happened, an erasure
    /// removes what the ledger knows.
    func forget(_ request: Request, _ context: LedgerRequestContext) async throws -> Response {
        guard let peer = await context.peerCredentials() else {
            throw CodedError(.forbidden, "forgetting a person needs the peer's credentials, which this transport lacks")
        }
        guard peer.uid == getuid() || peer.uid == 0 else {
            throw CodedError(
                .forbidden,
                "uid \(peer.uid) may not forget anyone: only the ledger's owner (uid \(getuid())) or root may")
        }
        try Self.checkQuery(RequestTarget.query(request).map(\.key), .forget)
        let user = try RequestTarget.parameter("appUserId", of: context)
        guard !user.isEmpty else { throw CodedError(.invalidQuery, "the app user id must not be empty") }
        var received = ReceivedBody()
        let body = try await collectBody(request, into: &received)
        let asked: ForgetRequest
        do {
            asked = try JSONDecoder().decode(ForgetRequest.self, from: Data(body))
        } catch {
            throw CodedError(
                .invalidBody, #"the body must be {"requestedBy": "…", "reason": "…"} (reason optional)"#)
        }
        let at = currentMillis()
        // Replicated: through the stream, so that every replica forgets at the same place of its log.
        let report =
            if let intake {
                try await intake.forget(AppUserID(user), requestedBy: asked.requestedBy, reason: asked.reason, at: at)
            } else {
                try await ledger.privacy.forget(AppUserID(user), requestedBy: asked.requestedBy, reason: asked.reason, at: at)
            }
        return JSONBody.response(status: .ok, ForgetDocument(report))
    }
}
