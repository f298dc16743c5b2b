// MARK: - ErrorCode

/// Why something was refused or failed, as a stable machine-readable name (snake_case, e.g. `invalid_json`,
/// `storage_full`): the `code` of every error document on the socket, of every `error: <code>: …` line of the CLI,
/// and of every refusal kept in the ledger's `rejected` records.
///
/// Defined once, here, below every layer that refuses: the Apple decoders (`InputError`) and the store
/// (`LedgerError`) raise these codes, the server answers with them (its table gives each an HTTP status), the CLI
/// prints them and the client reports its own with them. The module sits below the store so that the client, which
/// needs the codes but not the ledger, links nothing of it.
///
/// Extensible in the manner of swift-certificates' `CertificateError.ErrorCode`: a code is its name, so a module can
/// add codes of its own and a code read from the wire keeps its name even when this build does not know it. Codes
/// built from data (Apple's receipt statuses) are made with `init(_:)`.
public struct ErrorCode: Hashable, Sendable, RawRepresentable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The name on the wire, exactly as clients and auditors read it.
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    /// A literal names a code as it is written on the wire (tests and clients that match on codes).
    public init(stringLiteral value: String) { self.rawValue = value }

    public var description: String { rawValue }
}

/// A code is its name in JSON too: `"invalid_json"`.
extension ErrorCode: Codable {
    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

// MARK: - Input refusals (LedgerAppStore, the ingest path)

extension ErrorCode {
    /// The bytes are not JSON (or not the JWS text expected), or a body holds no input.
    public static let invalidJSON = ErrorCode("invalid_json")
    /// A field every input of its kind must carry is absent or empty.
    public static let missingField = ErrorCode("missing_field")
    /// A field is present with a value of the wrong kind.
    public static let wrongType = ErrorCode("wrong_type")
    /// A value outside what the ledger accepts (an instant outside its window, an absurd quantity).
    public static let outOfRange = ErrorCode("out_of_range")
    /// JSON nested deeper than the configured limit.
    public static let tooDeep = ErrorCode("too_deep")
    /// An input or a request body larger than the configured limit.
    public static let tooLarge = ErrorCode("too_large")
    /// Nothing in the document says what it is.
    public static let unknownInputType = ErrorCode("unknown_input_type")
    /// An environment name that is none of Apple's and not a valid custom one.
    public static let unknownEnvironment = ErrorCode("unknown_environment")
    /// An environment the configuration does not accept.
    public static let environmentNotAccepted = ErrorCode("environment_not_accepted")
    /// A bundle other than the configured one.
    public static let wrongBundle = ErrorCode("wrong_bundle")
    /// A verifyReceipt answer for the other environment (Apple's statuses 21007 and 21008).
    public static let wrongEnvironment21007 = ErrorCode("wrong_environment_21007")
    public static let wrongEnvironment21008 = ErrorCode("wrong_environment_21008")
    /// A verifyReceipt answer with a status Apple uses for a failure.
    public static func receiptStatus(_ status: Int64) -> ErrorCode { ErrorCode("receipt_status_\(status)") }
    /// A JWS that is not three base64url parts of JSON.
    public static let invalidJWS = ErrorCode("invalid_jws")
    /// A JWS whose signature does not verify with its leaf certificate's key.
    public static let signatureInvalid = ErrorCode("signature_invalid")
    /// Signatures are required but no trusted root is configured.
    public static let signatureRequired = ErrorCode("signature_required")
    /// A JWS header without an x5c chain.
    public static let missingX5C = ErrorCode("missing_x5c")
    /// A JWS algorithm other than ES256.
    public static let unsupportedAlg = ErrorCode("unsupported_alg")
    /// A certificate chain that does not lead to a trusted root.
    public static let untrustedChain = ErrorCode("untrusted_chain")
    public static let certificateExpired = ErrorCode("certificate_expired")
    public static let certificateNotYetValid = ErrorCode("certificate_not_yet_valid")
    /// A configured trusted root that is not a DER certificate.
    public static let invalidTrustedRoot = ErrorCode("invalid_trusted_root")
    /// A configuration file that cannot be used.
    public static let invalidConfiguration = ErrorCode("invalid_configuration")
    /// A configuration whose rules (products, bindingPolicy) differ from the rules the ledger's log records: a writer
    /// does not start with them (`storeledger rules apply` records a change).
    public static let rulesDiffer = ErrorCode("rules_differ")
    /// Decoded facts the store refuses: none at all, or an id it cannot key.
    public static let noFacts = ErrorCode("no_facts")
    public static let invalidID = ErrorCode("invalid_id")
    /// In a ledger with pseudonyms, a person's id (or account token) of the form the ledger names people by
    /// (`anon-` and base32 digits): it would read as the person the log names so, a forgotten one among them.
    public static let pseudonymShapedID = ErrorCode("pseudonym_shaped_id")
    /// The operator's grant or revoke states fields that contradict each other or are out of shape (a duration that
    /// is not ISO-8601, both `duration` and `until`, a revoke with `from`).
    public static let invalidGrant = ErrorCode("invalid_grant")
}

// MARK: - Requests refused as a whole (the server)

extension ErrorCode {
    /// A query parameter that does not parse, or one the route does not take.
    public static let invalidQuery = ErrorCode("invalid_query")
    /// A body whose framing does not parse (chunks, trailers).
    public static let invalidBody = ErrorCode("invalid_body")
    /// A request head that does not parse.
    public static let badRequest = ErrorCode("bad_request")
    /// A batch with more inputs than the configured limit.
    public static let batchTooLarge = ErrorCode("batch_too_large")
    /// A content type the write routes do not read.
    public static let unsupportedMediaType = ErrorCode("unsupported_media_type")
    /// A transfer coding other than `chunked`.
    public static let unsupportedTransferEncoding = ErrorCode("unsupported_transfer_encoding")
    /// A peer outside the writers' allow-list.
    public static let forbidden = ErrorCode("forbidden")
    /// No route, subscription, transaction or ledger by that name.
    public static let notFound = ErrorCode("not_found")
    public static let methodNotAllowed = ErrorCode("method_not_allowed")
    /// A request head that did not arrive in time.
    public static let requestTimeout = ErrorCode("request_timeout")
    /// A failure of the server itself.
    public static let `internal` = ErrorCode("internal")
}

// MARK: - The store (LedgerStore)

extension ErrorCode {
    /// Too much is waiting (the writer queue, the followers, the connections): retry shortly.
    public static let overloaded = ErrorCode("overloaded")
    /// The ledger is closing and accepts no more writes.
    public static let shuttingDown = ErrorCode("shutting_down")
    /// The replicated intake (`serve --intake`) cannot store the input in its stream now (no NATS server
    /// reachable, the stream without a quorum), or stored it but the local replica has not appended it in time.
    public static let intakeUnavailable = ErrorCode("intake_unavailable")
    /// The input belongs to a partition this server's ledger does not hold (`serve --partition-set`).
    public static let wrongPartition = ErrorCode("wrong_partition")
    /// No room for the write; nothing of it was stored.
    public static let storageFull = ErrorCode("storage_full")
    /// An I/O error or another failure of the storage engine.
    public static let storageError = ErrorCode("storage_error")
    /// Stored bytes that do not decode: the ledger is damaged.
    public static let corrupted = ErrorCode("corrupted")
    /// The directory holds a ledger of another schema version.
    public static let schemaMismatch = ErrorCode("schema_mismatch")
    /// A write to a ledger opened read-only.
    public static let readOnly = ErrorCode("read_only")
    /// Another process writes the ledger through its journal (`storeledger serve`): only it may write.
    public static let ledgerInUse = ErrorCode("ledger_in_use")
    /// The ledger's journaled writer stopped with the system: open it for writing once to recover it first.
    public static let recoveryNeeded = ErrorCode("recovery_needed")
    public static let permissionDenied = ErrorCode("permission_denied")
    /// A ledger path that is missing or of the wrong kind.
    public static let invalidPath = ErrorCode("invalid_path")
    /// A directory that holds something other than a ledger.
    public static let notALedger = ErrorCode("not_a_ledger")
    /// The ledger's identities are sealed with a key `identity.key` does not hold (the file is missing or older).
    public static let identityKeyMissing = ErrorCode("identity_key_missing")
    /// A ledger made before pseudonyms keeps personal values in its log and cannot forget them.
    public static let cannotForget = ErrorCode("cannot_forget")
    /// Any other failure.
    public static let failed = ErrorCode("failed")
}

// MARK: - Apple's App Store Server API (LedgerAppleAPI: `storeledger reconcile`, `serve`'s periodic job)

extension ErrorCode {
    /// Apple refused the request as made (a 400 such as 4000006, an invalid transaction id, or another 4xx it
    /// documents as final): something to fix in the request or the id given, not to wait out.
    public static let appleAPIError = ErrorCode("apple_api_error")
    /// Apple failed, and went on failing through every retry the configuration allows: a 5xx (5000000, or 5000001,
    /// which Apple documents as retryable), or a 404 Apple documents as retryable (4040002, 4040004, 4040006). An
    /// outage on Apple's side: wait and run again; nothing in the ledger or the request is wrong.
    public static let appleUnavailable = ErrorCode("apple_unavailable")
    /// Apple refused the token (401): a wrong key, key id, issuer id or bundle id, or a revoked key.
    public static let appleUnauthorized = ErrorCode("apple_unauthorized")
    /// Apple knows no such transaction or order (a 404 it does not call retryable; for Look Up Order ID, its
    /// `status` 1).
    public static let appleNotFound = ErrorCode("apple_not_found")
    /// Still 429 after the retries the configuration allows, or a `Retry-After` beyond the longest wait allowed.
    public static let appleRateLimited = ErrorCode("apple_rate_limited")
    /// No answer: the connection, TLS or the deadline failed.
    public static let appleUnreachable = ErrorCode("apple_unreachable")
    /// An answer that is not the documented shape.
    public static let appleBadResponse = ErrorCode("apple_bad_response")
}

// MARK: - The command line and the socket

extension ErrorCode {
    /// Arguments that do not parse or validate (exit status 2).
    public static let usage = ErrorCode("usage")
    /// `--data` names no ledger.
    public static let noLedger = ErrorCode("no_ledger")
    /// An input file that cannot be read.
    public static let unreadableFile = ErrorCode("unreadable_file")
    /// A directory a command would write into holds something it did not make (`demo --data DIR`).
    public static let directoryNotEmpty = ErrorCode("directory_not_empty")
    /// `verify` found a fault.
    public static let verificationFailed = ErrorCode("verification_failed")
    /// `replay --check` found a projection that differs.
    public static let replayMismatch = ErrorCode("replay_mismatch")
    /// The socket could not be used (`ingest --socket`).
    public static let socketError = ErrorCode("socket_error")
    /// The server answered with an error and no error document.
    public static let serverError = ErrorCode("server_error")
    /// A socket path longer than a Unix socket address holds.
    public static let socketPathTooLong = ErrorCode("socket_path_too_long")
    /// The socket path exists and is not a socket, or a stale socket cannot be removed.
    public static let socketPathTaken = ErrorCode("socket_path_taken")
    /// Another server is listening on the socket path.
    public static let socketInUse = ErrorCode("socket_in_use")
    /// `import` or `restore` into a directory that already holds a ledger (they never append to one).
    public static let ledgerNotEmpty = ErrorCode("ledger_not_empty")
    /// `backup` into a directory that is not empty.
    public static let destinationNotEmpty = ErrorCode("destination_not_empty")
    /// A file given to `import` that is not what `export` writes (not JSON, fields missing, seqs out of order, cut
    /// short); a record whose chain or digest does not hold is `verification_failed`.
    public static let invalidExport = ErrorCode("invalid_export")
    /// A line of `storeledger export` sent as an input (to `ingest` or the socket): `import` rebuilds a ledger from one.
    public static let exportLine = ErrorCode("export_line")
}

// MARK: - The client's transport

extension ErrorCode {
    /// The server closed the connection.
    public static let closed = ErrorCode("closed")
    /// No answer within the client's timeout.
    public static let timeout = ErrorCode("timeout")
    /// The server's answer is not HTTP/1.1 as expected.
    public static let `protocol` = ErrorCode("protocol")
    /// Sending the request failed.
    public static let send = ErrorCode("send")
    /// The connection failed otherwise while the answer was awaited.
    public static let recv = ErrorCode("recv")
    /// A socket could not be made.
    public static let socket = ErrorCode("socket")
    /// Nothing accepts connections on the path.
    public static let connect = ErrorCode("connect")
    /// A socket path longer than a Unix socket address holds (the client's name for it).
    public static let pathTooLong = ErrorCode("path_too_long")
}
