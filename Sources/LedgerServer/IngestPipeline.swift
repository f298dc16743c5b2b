#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LedgerAppStore
import LedgerCore
import LedgerStore

/// The one path every input takes, from the CLI or the socket: frame, decode and verify (on the caller's thread),
/// then append through the ledger's writer (group commit). Refusals become `rejected` entries, so the auditor keeps
/// their bytes, and never disturb stored data.
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
        public init(forcedType: InputType? = nil, appUserId: AppUserID? = nil, receivedAt: UnixMillis? = nil) {
            self.forcedType = forcedType
            self.appUserId = appUserId
            self.receivedAt = receivedAt
        }
    }

    /// Decodes one input into what the ledger stores: its facts, or its refusal.
    public func prepare(_ raw: some Collection<UInt8>, options: Options, now: UnixMillis) -> LedgerInput {
        let bytes = Array(raw)
        let receivedAt = options.receivedAt ?? now
        do {
            let decoded = try decoder.decode(
                bytes, forcedType: options.forcedType, appUserId: options.appUserId, receivedAt: receivedAt)
            return .facts(decoded.facts, metadata: decoded.metadata, raw: decoded.raw)
        } catch {
            return .rejected(RejectedInput(raw: bytes, code: error.code, message: error.message, receivedAt: receivedAt))
        }
    }

    /// Frames `body` (one document, NDJSON, or documents back to back) and decodes each input.
    public func prepare(body: [UInt8], options: Options, now: UnixMillis) -> [LedgerInput] {
        InputFraming.split(body).map { prepare($0, options: options, now: now) }
    }

    /// Appends the inputs of `body`; one result per input once durable.
    public func ingest(body: [UInt8], options: Options, now: UnixMillis) async throws -> [AppendResult] {
        let inputs = prepare(body: body, options: options, now: now)
        guard !inputs.isEmpty else { return [] }
        return try await ledger.append(inputs)
    }
}

/// The current time in milliseconds since epoch.
public func currentMillis() -> UnixMillis {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return UnixMillis(ts.tv_sec) * 1000 + UnixMillis(ts.tv_nsec) / 1_000_000
}
