// MARK: - InputError

/// Why an input is refused.
///
/// `code` is stable and machine-readable (snake_case, e.g. `invalid_json`, `signature_invalid`); `message` says
/// what exactly was wrong for a human. Two errors are equal when their codes are equal (as swift-certificates'
/// `CertificateError`), so tests and callers match on the code alone.
public struct InputError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Stable snake_case reason, e.g. `missing_field`, `receipt_status_21002`, `untrusted_chain`.
    public let code: String
    /// Human explanation naming the field, status or certificate at fault.
    public let message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public static func == (lhs: InputError, rhs: InputError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String { "\(code): \(message)" }
}

// MARK: - Factories

extension InputError {
    /// The bytes are not JSON (or not the JWS text expected).
    public static func invalidJSON(_ message: String) -> InputError { InputError(code: "invalid_json", message: message) }
    /// A field every input of its kind must carry is absent.
    public static func missingField(_ field: String) -> InputError {
        InputError(code: "missing_field", message: "required field '\(field)' is missing")
    }
    /// A required string field is present but empty (`"productId": ""`): refused like a missing one.
    public static func emptyField(_ field: String) -> InputError {
        InputError(code: "missing_field", message: "required field '\(field)' is empty")
    }
    /// A value outside what the ledger accepts (an instant outside `FactBounds`' window, an absurd quantity).
    public static func outOfRange(_ message: String) -> InputError { InputError(code: "out_of_range", message: message) }
    /// A field is present with a value of the wrong kind.
    public static func wrongType(_ field: String, expected: String) -> InputError {
        InputError(code: "wrong_type", message: "field '\(field)' must be \(expected)")
    }
    /// Nesting deeper than the configured limit.
    public static func tooDeep(limit: Int) -> InputError {
        InputError(code: "too_deep", message: "JSON nested deeper than \(limit) levels")
    }
    /// Input larger than the configured limit.
    public static func tooLarge(size: Int, limit: Int) -> InputError {
        InputError(code: "too_large", message: "input of \(size) bytes exceeds the limit of \(limit) bytes")
    }
    /// Nothing in the document says what it is.
    public static func unknownInputType(_ message: String) -> InputError {
        InputError(code: "unknown_input_type", message: message)
    }
    public static let signatureInvalid = InputError(
        code: "signature_invalid", message: "the JWS signature does not verify with the leaf certificate's key")
    public static func untrustedChain(_ message: String) -> InputError {
        InputError(code: "untrusted_chain", message: message)
    }
    public static let missingX5C = InputError(
        code: "missing_x5c", message: "the JWS header carries no x5c certificate chain")
    public static func unsupportedAlg(_ alg: String) -> InputError {
        InputError(code: "unsupported_alg", message: "JWS alg '\(alg)' is not accepted; only ES256 is")
    }
    public static func certificateExpired(_ message: String) -> InputError {
        InputError(code: "certificate_expired", message: message)
    }
    public static func certificateNotYetValid(_ message: String) -> InputError {
        InputError(code: "certificate_not_yet_valid", message: message)
    }
    public static func wrongBundle(_ bundleId: String, expected: String) -> InputError {
        InputError(code: "wrong_bundle", message: "bundleId '\(bundleId)' is not the configured '\(expected)'")
    }
    public static func environmentNotAccepted(_ environment: String) -> InputError {
        InputError(
            code: "environment_not_accepted", message: "environment '\(environment)' is not accepted by the configuration")
    }
    public static func unknownEnvironment(_ value: String, field: String) -> InputError {
        InputError(
            code: "unknown_environment",
            message: "field '\(field)' is '\(value)': an environment is Production, Sandbox, Xcode, LocalTesting or a name of 1 to 64 letters, digits, '_', '-' or '.'")
    }
    public static let signatureRequired = InputError(
        code: "signature_required",
        message: "requireSignatures is set but no trusted roots are configured, so no signature can be verified")
    public static func invalidJWS(_ message: String) -> InputError { InputError(code: "invalid_jws", message: message) }
}
