import Hummingbird
import LedgerAPI
import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerErrors

// MARK: - POST /v1/events

extension LedgerRoutes {
    /// 207: some inputs of the batch were rejected (HTTPTypes has no name for it).
    static let multiStatus = HTTPResponse.Status(code: 207, reasonPhrase: "Multi-Status")
    /// An envelope or a bare Apple document (sent as JSON: one value, nothing after it), or NDJSON of them. 200 when
    /// every input was appended or a duplicate, 207 when some were rejected, 400 when no input of the body is JSON at
    /// all.
    func appendEvents(_ request: Request, _ context: LedgerRequestContext) async throws -> Response {
        try await authorizeWriter(context)
        // Refused as a whole: kept in `rejected` too (the peer may write, so its refusals are the auditor's business).
        var received = ReceivedBody()
        let options: IngestPipeline.Options
        let pieces: [ArraySlice<UInt8>]
        do {
            let body = try await collectBody(request, into: &received)
            let isJSON = try checkContentType(request)
            options = try ingestOptions(request, .appendEvents)
            pieces =
                try isJSON
                ? IngestPipeline.document(body) : IngestPipeline.batch(body, limit: configuration.limits.maxBatchInputs)
        } catch let error as CodedError {
            await recordRefusal(error, request, received)
            throw error
        }

        let now = currentMillis()
        let inputs = pieces.map { pipeline.prepare($0, options: options, now: now) }
        // Refused inputs are appended too: their bytes land in `rejected` for the auditor.
        let results = try await append(inputs, raws: pieces, options: options)
        return try Self.eventsAnswer(results).response
    }

    /// The answer to `POST /v1/events` once its inputs are appended: 200 when every input was appended or a
    /// duplicate, 207 when some were rejected, 400 `invalid_json` (thrown) when none of the body is JSON.
    static func eventsAnswer(_ results: [AppendResult]) throws(CodedError) -> BufferedResponse {
        if results.allSatisfy({ $0.status == .rejected && $0.error?.code == .invalidJSON }) {
            throw CodedError(.invalidJSON, results.first?.error?.message ?? "the body is not JSON")
        }
        let someRejected = results.contains { $0.status == .rejected }
        return JSONBody.buffered(status: someRejected ? multiStatus : .ok, ResultsDocument(results: results))
    }
}

// MARK: - POST /v1/apple/* and /v1/bindings

extension LedgerRoutes {
    /// One input of a known type (`type`, the one `endpoint` takes), exactly as received: 200 with its result once durable (appended or duplicate);
    /// 400 (not JSON) or 422 (refused) with the result, whose `error` says why.
    /// `user`, when given, is the app user the route names (`POST /v1/customers/{appUserId}/grants`).
    func appendOne(
        _ request: Request, _ context: LedgerRequestContext, _ endpoint: Endpoint, type: InputType,
        user: String? = nil
    ) async throws -> Response {
        try await authorizeWriter(context)
        var received = ReceivedBody()
        var options: IngestPipeline.Options
        let body: [UInt8]
        do {
            body = try await collectBody(request, into: &received)
            try checkContentType(request)
            options = try ingestOptions(request, endpoint, forcedType: type)
            if let user { options.appUserId = AppUserID(user) }
            try IngestPipeline.checkNotBlank(body)
        } catch let error as CodedError {
            await recordRefusal(error, request, received)
            throw error
        }
        let input = pipeline.prepare(body, options: options, now: currentMillis())
        guard let result = try await append([input], raws: [body[...]], options: options).first else {
            throw CodedError(.internal, "the ledger returned no result")
        }
        let status: HTTPResponse.Status
        switch result.status {
        case .appended, .duplicate: status = .ok
        case .rejected: status = HTTPErrors.status(ofRefusedInput: result.error?.code ?? ErrorCode(""))
        }
        return JSONBody.response(status: status, result)
    }
}
