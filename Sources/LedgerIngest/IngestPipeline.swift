#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LedgerAppStore
import LedgerCore
import LedgerStore
import LedgerErrors

/// The one path every input takes, from the socket (`POST /v1/events`, `/v1/apple/*`, `/v1/bindings`) or the CLI
/// (`storeledger ingest`, `demo`): frame, decode and verify (on the caller's thread), then append through the
/// ledger's writer (group commit). Refusals become `rejected` entries, so the auditor keeps their bytes, and never
/// disturb stored data.
public struct IngestPipeline: Sendable {
    public let ledger: Ledger
    public let decoder: InputDecoder

    public init(ledger: Ledger, configuration: AppStoreConfiguration) {
        self.ledger = ledger
        self.decoder = InputDecoder(configuration: configuration)
    }

    /// Options a caller can set for every input of one request (query string, CLI flags).
    public struct Options: Sendable {
        public var forcedType: InputType?
        public var appUserId: AppUserID?
        public var receivedAt: UnixMillis?
        /// The seed of the pseudonyms of the people the input is the first to name (`LedgerInput.facts`); nil: a
        /// random one, given by the ledger.
        public var identitySeed: [UInt8]?
        public init(
            forcedType: InputType? = nil, appUserId: AppUserID? = nil, receivedAt: UnixMillis? = nil,
            identitySeed: [UInt8]? = nil
        ) {
            self.forcedType = forcedType
            self.appUserId = appUserId
            self.receivedAt = receivedAt
            self.identitySeed = identitySeed
        }
    }

    // MARK: - Framing

    /// The inputs of a body that may hold several (an envelope, a bare Apple document, or NDJSON of them), refused as
    /// a whole when it holds none (`invalid_json`) or more than `limit` (`batch_too_large`).
    public static func batch(_ body: [UInt8], limit: Int) throws(CodedError) -> [ArraySlice<UInt8>] {
        let pieces = InputFraming.split(body)
        guard !pieces.isEmpty else { throw CodedError(.invalidJSON, "the body holds no input") }
        guard pieces.count <= limit else {
            throw CodedError(.batchTooLarge, "the batch holds \(pieces.count) inputs; at most \(limit) are accepted")
        }
        return pieces
    }

    /// The one input of a body sent as JSON (`application/json`, or no Content-Type): the body without surrounding
    /// whitespace, for the decoder to parse as one JSON text. A JSON body is one value (RFC 8259), so bytes after it
    /// (`{…}x`, `{…}}`, a second document) make the input `invalid_json`, as on the routes that take one input;
    /// several inputs come as NDJSON. Refused as a whole when blank (`invalid_json`).
    public static func document(_ body: [UInt8]) throws(CodedError) -> [ArraySlice<UInt8>] {
        var start = body.startIndex
        var end = body.endIndex
        while start < end, InputFraming.isSpace(body[start]) { start += 1 }
        while end > start, InputFraming.isSpace(body[end - 1]) { end -= 1 }
        guard start < end else { throw CodedError(.invalidJSON, "the body holds no input") }
        return [body[start..<end]]
    }

    /// Refuses a body that is one input exactly as received (an Apple route) when it holds nothing but whitespace.
    public static func checkNotBlank(_ body: [UInt8]) throws(CodedError) {
        guard body.contains(where: { !InputFraming.isSpace($0) }) else { throw CodedError(.invalidJSON, "the body is empty") }
    }

    // MARK: - Decoding

    /// Decodes one input into what the ledger stores: its facts, or its refusal.
    public func prepare(_ raw: some Collection<UInt8>, options: Options, now: UnixMillis) -> LedgerInput {
        let bytes = Array(raw)
        let receivedAt = options.receivedAt ?? now
        if let what = ExportLines.recognise(bytes) {
            let refusal = ExportLines.refusal(what)
            return .rejected(
                RejectedInput(raw: bytes, code: refusal.code, message: refusal.message, receivedAt: receivedAt))
        }
        do {
            let decoded = try decoder.decode(
                bytes, forcedType: options.forcedType, appUserId: options.appUserId, receivedAt: receivedAt)
            return .facts(decoded.facts, metadata: decoded.metadata, raw: decoded.raw, identitySeed: options.identitySeed)
        } catch {
            return .rejected(
                RejectedInput(raw: bytes, code: error.code, message: error.message, receivedAt: receivedAt))
        }
    }

    /// Frames `body` (one document, NDJSON, or documents back to back) and decodes each input.
    public func prepare(body: [UInt8], options: Options, now: UnixMillis) -> [LedgerInput] {
        InputFraming.split(body).map { prepare($0, options: options, now: now) }
    }

    // MARK: - Appending

    /// Appends the inputs of `body`, `chunk` at a time so that a large file needs bounded memory and each chunk is
    /// durable before the next is decoded; one result per input once durable. Inputs without a `receivedAt` are
    /// stamped `now`, or the clock's time when they are decoded. `durable` is told, after each chunk's commit, how
    /// many of the body's inputs are durable so far (a progress display).
    public func ingest(
        body: [UInt8], options: Options, now: UnixMillis? = nil, chunk: Int = 2_000, durable: ((Int) -> Void)? = nil
    ) async throws(LedgerError) -> [AppendResult] {
        let pieces = InputFraming.split(body)
        var results: [AppendResult] = []
        var start = 0
        while start < pieces.count {
            let end = min(start + chunk, pieces.count)
            let inputs = pieces[start..<end].map { prepare($0, options: options, now: now ?? currentMillis()) }
            do {
                results += try await ledger.append(inputs)
            } catch {
                throw LedgerError.from(error)
            }
            start = end
            durable?(end)
        }
        return results
    }

    /// Appends inputs already decoded by `prepare` (a caller that reads the facts before deciding what to append:
    /// the reconciler); one result per input once durable.
    public func append(_ prepared: [LedgerInput]) async throws(LedgerError) -> [AppendResult] {
        guard !prepared.isEmpty else { return [] }
        do {
            return try await ledger.append(prepared)
        } catch {
            throw LedgerError.from(error)
        }
    }
}

