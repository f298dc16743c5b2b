import LedgerErrors

// MARK: - InputError

/// Why an input is refused.
///
/// `code` is stable and machine-readable (`ErrorCode`: `invalid_json`, `signature_invalid`, …); `message` says
/// what exactly was wrong for a human. Two errors are equal when their codes are equal (`CodedErrorProtocol`).
public struct InputError: CodedErrorProtocol {
    /// Stable reason, e.g. `missing_field`, `receipt_status_21002`, `untrusted_chain`.
    public let code: ErrorCode
    /// Human explanation naming the field, status or certificate at fault.
    public let message: String

    public init(code: ErrorCode, message: String) {
        self.code = code
        self.message = message
    }

}

// MARK: - Factories

extension InputError {
    /// The bytes are not JSON (or not the JWS text expected).
    public static func invalidJSON(_ message: String) -> InputError { InputError(code: .invalidJSON, message: message) }
    /// A field every input of its kind must carry is absent.
    public static func missingField(_ field: String) -> InputError {
        InputError(code: .missingField, message: "required field '\(field)' is missing")
    }
    /// A required string field is present but empty (`"productId": ""`): refused like a missing one.
    public static func emptyField(_ field: String) -> InputError {
        InputError(code: .missingField, message: "required field '\(field)' is empty")
    }
    /// A value outside what the ledger accepts (an instant outside `FactBounds`' window, an absurd quantity).
    public static func outOfRange(_ message: String) -> InputError { InputError(code: .outOfRange, message: message) }
    /// A field is present with a value of the wrong kind.
    public static func wrongType(_ field: String, expected: String) -> InputError {
        InputError(code: .wrongType, message: "field '\(field)' must be \(expected)")
    }
    /// Nesting deeper than the configured limit.
    public static func tooDeep(limit: Int) -> InputError {
        InputError(code: .tooDeep, message: "JSON nested deeper than \(limit) levels")
    }
    /// Input larger than the configured limit.
    public static func tooLarge(size: Int, limit: Int) -> InputError {
        InputError(code: .tooLarge, message: "input of \(size) bytes exceeds the limit of \(limit) bytes")
    }
    /// Nothing in the document says what it is.
    public static func unknownInputType(_ message: String) -> InputError {
        InputError(code: .unknownInputType, message: message)
    }
    public static let signatureInvalid = InputError(
        code: .signatureInvalid, message: "the JWS signature does not verify with the leaf certificate's key")
    public static func untrustedChain(_ message: String) -> InputError {
        InputError(code: .untrustedChain, message: message)
    }
    public static let missingX5C = InputError(
        code: .missingX5C, message: "the JWS header carries no x5c certificate chain")
    public static func unsupportedAlg(_ alg: String) -> InputError {
        InputError(code: .unsupportedAlg, message: "JWS alg '\(alg)' is not accepted; only ES256 is")
    }
    public static func certificateExpired(_ message: String) -> InputError {
        InputError(code: .certificateExpired, message: message)
    }
    public static func certificateNotYetValid(_ message: String) -> InputError {
        InputError(code: .certificateNotYetValid, message: message)
    }
    public static func wrongBundle(_ bundleId: String, expected: String) -> InputError {
        InputError(code: .wrongBundle, message: "bundleId '\(bundleId)' is not the configured '\(expected)'")
    }
    public static func environmentNotAccepted(_ environment: String) -> InputError {
        InputError(
            code: .environmentNotAccepted, message: "environment '\(environment)' is not accepted by the configuration")
    }
    public static func unknownEnvironment(_ value: String, field: String) -> InputError {
        InputError(
            code: .unknownEnvironment,
            message: "field '\(field)' is '\(value)': an environment is Production, Sandbox, Xcode, LocalTesting or a name of 1 to 64 letters, digits, '_', '-' or '.'")
    }
    public static let signatureRequired = InputError(
        code: .signatureRequired,
        message: "requireSignatures is set but no trusted roots are configured, so no signature can be verified")
    public static func invalidJWS(_ message: String) -> InputError { InputError(code: .invalidJWS, message: message) }
}
