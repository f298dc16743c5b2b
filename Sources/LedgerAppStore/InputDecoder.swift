import Foundation
import LedgerCore

// MARK: - InputDecoder

/// Turns one input — an envelope (docs/inputs.md) or a bare Apple document — into canonical facts, or refuses it with
/// an `InputError`. Never crashes on hostile bytes: size is checked first, the JSON parser is strict (RFC 8259) and
/// stops at the nesting limit, and every instant and quantity a fact carries is checked against `FactBounds` before
/// it can reach the fold.
///
/// Thread-safe and meant to be shared: the only mutable state is the verified-chain cache, behind a mutex.
public final class InputDecoder: Sendable {
    public let configuration: AppStoreConfiguration
    let verifier: JWSVerifier

    /// Never fails; trusted roots that are not DER certificates are unusable (signed inputs then fail as
    /// `untrusted_chain`). Use `init(validating:)` to be told about them.
    public init(configuration: AppStoreConfiguration) {
        self.configuration = configuration
        self.verifier = JWSVerifier(configuration: configuration)
    }

    /// Like `init(configuration:)`, but throws `invalid_trusted_root` when a configured root is not a DER certificate.
    public convenience init(validating configuration: AppStoreConfiguration) throws(InputError) {
        try JWSVerifier.checkRoots(configuration.trustedRootsDER)
        self.init(configuration: configuration)
    }

    /// How many verified certificate chains are cached (bounded by `configuration.chainCacheCapacity`).
    public var cachedChainCount: Int { verifier.cachedChainCount }

    // MARK: - Decoding

    /// Decodes ONE input.
    ///
    /// - Parameters:
    ///   - raw: an envelope `{"type","appUserId","receivedAt","payload"}`, or a bare document whose type is detected:
    ///     a verifyReceipt response, a V1 notification, `{"signedPayload":…}`, `{"signedTransactionInfo":…}`,
    ///     `{"signedRenewalInfo":…}`, a JWS (text or JSON string), decoded V2 transaction / renewal / notification
    ///     JSON, or a binding `{"appUserId","originalTransactionId"}`.
    ///   - forcedType: used instead of detection (`ingest --type`); an envelope's own `type` takes precedence.
    ///   - appUserId: the caller's user (query string, `--app-user-id`); the envelope's wins when it has one. It
    ///     yields one `BindingClaim(cause: .claim)` per distinct OTID in the input.
    ///   - receivedAt: when the input arrived; the envelope's `receivedAt` wins when it has one.
    /// - Returns: the facts (notification first, then transactions, renewal infos, binding claims) and the metadata
    ///   they share. `metadata.rawDigest` is left empty: the store sets it when it keeps `raw`, so the input is hashed
    ///   once, by what stores the bytes the digest vouches for.
    /// - Throws: `InputError` for every refusal; the caller keeps `raw` in the rejected log.
    public func decode(
        _ raw: [UInt8], forcedType: InputType? = nil, appUserId: AppUserID? = nil, receivedAt: UnixMillis
    ) throws(InputError) -> DecodedInput {
        guard raw.count <= configuration.maxInputBytes else {
            throw .tooLarge(size: raw.count, limit: configuration.maxInputBytes)
        }
        var context = Context(receivedAt: receivedAt, appUserId: appUserId, type: forcedType)
        let document = try parse(raw, context: &context)
        var decoded = try decodeDocument(document, context: context)
        try check(decoded.facts)
        decoded.facts.append(contentsOf: bindingClaims(for: decoded, context: context))
        try FactBounds.check(
            decoded.facts, source: decoded.source, receivedAt: context.receivedAt, observedAt: decoded.observedAt)

        let metadata = FactMetadata(
            source: decoded.source, signature: decoded.signature, receivedAt: context.receivedAt,
            observedAt: decoded.observedAt ?? context.receivedAt, appUserId: context.appUserId)
        return DecodedInput(facts: decoded.facts, metadata: metadata, type: decoded.type, raw: raw)
    }

    /// The receipt creation date each `in_app` copy of a stored verifyReceipt response speaks from, by transaction
    /// id: what this decoder states in those facts today, read again from the bytes an older build stored them from
    /// (LedgerStore's `Ledger.Options.receiptCreationDates`). Empty for bytes that are no such response, or that no
    /// longer decode; the stored facts then stay as they were.
    public func receiptCreationDates(_ raw: [UInt8]) -> [TransactionID: UnixMillis] {
        var context = Context(receivedAt: 0, appUserId: nil, type: .receipt)
        guard case .object(let object)? = try? parse(raw, context: &context), context.type == .receipt,
            let result = try? ReceiptDecoder.decode(AppleObject(object))
        else { return [:] }
        var dates: [TransactionID: UnixMillis] = [:]
        for case .transaction(let t) in result.facts {
            if let created = t.receiptCreationDate { dates[t.transactionId] = created }
        }
        return dates
    }

    // MARK: - Envelope and detection

    /// What the caller and the envelope said about the input.
    struct Context {
        var receivedAt: UnixMillis
        var appUserId: AppUserID?
        var type: InputType?
    }

    /// The Apple document inside the input.
    enum Document {
        /// A JSON object (bare, or an envelope's `payload`).
        case object([String: JSON])
        /// A compact JWS, as UTF-8.
        case jws([UInt8])
    }

    private func parse(_ raw: [UInt8], context: inout Context) throws(InputError) -> Document {
        guard let first = raw.firstIndex(where: { !JSONStructure.isWhitespace($0) }) else {
            throw .invalidJSON("the input is empty")
        }
        let lead = raw[first]
        guard lead == UInt8(ascii: "{") || lead == UInt8(ascii: "[") || lead == UInt8(ascii: "\"") else {
            // Bare JWS text (StoreKit 2 `jwsRepresentation`, a Server API `signedTransactionInfo` value).
            let last = raw.lastIndex(where: { !JSONStructure.isWhitespace($0) }) ?? first
            let text = raw[first...last]
            guard Base64.isPlausibleJWS(text) else {
                // Brackets nested too deep are reported as such, whatever surrounds them.
                try JSONStructure.checkDepth(raw, limit: configuration.maxDepth)
                if let encoding = JSONStructure.encodingProblem(raw) { throw .invalidJSON(encoding) }
                throw .invalidJSON(
                    "the input is neither JSON nor a compact JWS (header.payload.signature in base64url): unexpected \(JSONParser.describe(lead)) at byte \(first)")
            }
            return .jws(Array(text))
        }
        let object: [String: JSON]
        switch try JSONValue.parse(raw, depthLimit: configuration.maxDepth) {
        case .string(let jws): return .jws(Array(jws.utf8))
        case .object(let o): object = o
        default: throw .unknownInputType("a JSON array or scalar is not an input; expected an object or a JWS")
        }
        guard object["payload"] != nil else { return .object(object) }

        // An envelope (docs/inputs.md).
        let envelope = AppleObject(object)
        if let name = try envelope.string("type") {
            guard let type = InputType(rawValue: name) else {
                throw .unknownInputType(
                    "envelope type '\(name)' is not one of \(InputType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            context.type = type
        }
        if let user = try envelope.string("appUserId") {
            guard !user.isEmpty else { throw .emptyField("appUserId") }
            context.appUserId = AppUserID(user)
        }
        if let at = try envelope.int64("receivedAt") { context.receivedAt = at }
        switch object["payload"] {
        case .string(let jws):
            return .jws(Array(jws.utf8))
        case .object(let payload):
            return .object(payload)
        default:
            throw .wrongType("payload", expected: "an Apple JSON object or a JWS string")
        }
    }

    private static func detect(_ o: [String: JSON]) throws(InputError) -> InputType {
        func has(_ key: String) -> Bool { o[key] != nil }
        if has("signedPayload") || has("notification_type") || has("notificationType") { return .notification }
        // The App Store Server API's answers: Get All Subscription Statuses, Get Transaction History.
        if has("signedTransactions") || isStatusResponse(o) { return .transaction }
        // A status item (`lastTransactions[]`) has a `status` too: its signed fields say it is no receipt.
        if has("signedTransactionInfo") || has("transactionId") { return .transaction }
        if has("status") || has("receipt") || has("latest_receipt_info") { return .receipt }
        if has("appUserId") && has("originalTransactionId") { return .binding }
        if has("signedRenewalInfo") || has("originalTransactionId") { return .renewal }
        throw .unknownInputType(
            "the document is none of: verifyReceipt response, V1/V2 notification, signed or decoded transaction or renewal info, binding")
    }

    /// Get All Subscription Statuses: `{"data": [{"subscriptionGroupIdentifier", "lastTransactions": [...]}]}`.
    private static func isStatusResponse(_ o: [String: JSON]) -> Bool {
        guard case .array(let groups)? = o["data"], case .object(let first)? = groups.first else { return false }
        return first["lastTransactions"] != nil
    }

    // MARK: - Per kind

    struct Decoded {
        var facts: [Fact]
        var type: InputType
        var source: FactSource
        var signature: SignatureStatus
        var observedAt: UnixMillis?
    }

    private func decodeDocument(_ document: Document, context: Context) throws(InputError) -> Decoded {
        switch document {
        case .jws(let token):
            return try decodeSignedDocument(token, field: "JWS", type: context.type, context: context)
        case .object(let object):
            let type: InputType
            if let forced = context.type { type = forced } else { type = try Self.detect(object) }
            let root = AppleObject(object)
            switch type {
            case .receipt:
                let result = try ReceiptDecoder.decode(root)
                return Decoded(
                    facts: result.facts, type: .receipt, source: .receipt, signature: .unsigned,
                    observedAt: result.requestDate)
            case .notification:
                if let jws = try root.string("signedPayload") {
                    return try decodeSignedDocument(
                        Array(jws.utf8), field: "signedPayload", type: .notification, context: context)
                }
                if root.has("notification_type") {
                    let facts = try NotificationV1Decoder.decode(root)
                    return Decoded(
                        facts: facts, type: .notification, source: .notificationV1, signature: .unsigned, observedAt: nil)
                }
                if root.has("notificationType") {
                    let result = try NotificationV2Decoder.decode(root, verifier: verifier, receivedAt: context.receivedAt)
                    return Decoded(
                        facts: result.facts, type: .notification, source: .decodedJSON, signature: .unsigned,
                        observedAt: nil)
                }
                throw .missingField("signedPayload")
            case .transaction, .renewal:
                if root.has("signedTransactions") { return try decodeTransactionHistory(root, context: context) }
                if Self.isStatusResponse(object) { return try decodeStatusResponse(root, context: context) }
                if root.has("signedTransactionInfo") || root.has("signedRenewalInfo") {
                    return try decodeSignedPair(root, type: type, context: context)
                }
                let fact: Fact =
                    type == .transaction ? .transaction(try V2Mapping.transaction(root)) : .renewal(try V2Mapping.renewal(root))
                return Decoded(facts: [fact], type: type, source: .decodedJSON, signature: .unsigned, observedAt: nil)
            case .binding:
                let user = try root.requiredString("appUserId")
                let otid = try root.requiredIdentifier("originalTransactionId")
                // Without an environment a binding applies wherever the subscription is known or appears later.
                let environment = try root.environment("environment")
                let claim = BindingClaim(
                    appUserId: AppUserID(user), originalTransactionId: OriginalTransactionID(otid),
                    claimedAt: try root.int64("claimedAt") ?? context.receivedAt, cause: .claim,
                    environment: environment ?? .production,
                    appAccountToken: try root.string("appAccountToken").map { $0.lowercased() },
                    everyEnvironment: environment == nil)
                return Decoded(facts: [.binding(claim)], type: .binding, source: .binding, signature: .unsigned, observedAt: nil)
            case .grant:
                return try decodeGrant(root, context: context)
            }
        }
    }

    // MARK: - Configuration checks

    /// Every fact's environment must be accepted and every stated bundle id must be the configured one.
    private func check(_ facts: [Fact]) throws(InputError) {
        for fact in facts {
            if let accepted = configuration.acceptedEnvironments, !accepted.contains(fact.environment) {
                throw .environmentNotAccepted(fact.environment.rawValue)
            }
            guard let expected = configuration.bundleId else { continue }
            let bundleId: String?
            switch fact {
            case .transaction(let t): bundleId = t.bundleId
            case .notification(let n): bundleId = n.bundleId
            default: bundleId = nil
            }
            if let bundleId, bundleId != expected { throw .wrongBundle(bundleId, expected: expected) }
        }
    }
}
