// MARK: - CodedErrorProtocol

/// An error with an `ErrorCode` and a message for a human. Two are equal when their codes are equal (as
/// swift-certificates' `CertificateError`), so tests and callers match on the code alone; printed `code: message`,
/// as the CLI prints it after `error: `.
///
/// `CodedError` is the plain one; the Apple decoders (`InputError`) and the store (`LedgerError`) have types of
/// their own, for their typed throws and their factories.
public protocol CodedErrorProtocol: Error, Hashable, Sendable, CustomStringConvertible {
    var code: ErrorCode { get }
    /// What exactly was wrong, for a human.
    var message: String { get }
}

extension CodedErrorProtocol {
    public static func == (a: Self, b: Self) -> Bool { a.code == b.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String { "\(code): \(message)" }
}

// MARK: - CodedError

/// A failure with its code and a message: what the server answers a request it refuses as a whole, what the client
/// throws when the socket fails, what the server throws when it cannot take its socket path.
public struct CodedError: CodedErrorProtocol {
    public let code: ErrorCode
    public let message: String

    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }
}
