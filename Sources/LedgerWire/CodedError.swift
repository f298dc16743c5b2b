// MARK: - CodedError

/// A failure with its code and a message for a human: what the server answers a request it refuses as a whole, what
/// the client throws when the socket fails, what the server throws when it cannot take its socket path.
///
/// The Apple decoders and the store keep error types of their own (`InputError`, `LedgerError`), with their own
/// factories; all three carry an `ErrorCode`. Compared on the code only, as swift-certificates' `CertificateError`,
/// so tests and callers match on the code alone.
public struct CodedError: Error, Hashable, Sendable, CustomStringConvertible {
    public let code: ErrorCode
    /// What exactly was wrong, for a human.
    public let message: String

    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public static func == (a: CodedError, b: CodedError) -> Bool { a.code == b.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    /// `code: message`, as the CLI prints it after `error: `.
    public var description: String { "\(code): \(message)" }
}
