import LedgerCore
import LedgerErrors

/// What happened to one input (docs/socket-api.md): the events written for it, or why it was refused. Its status and
/// seq follow from those.
public struct AppendResult: Sendable, Hashable, Codable {
    public enum Status: String, Sendable, Hashable, Codable {
        /// At least one new fact was written.
        case appended
        /// Every fact was already known, byte for byte; nothing was written.
        case duplicate
        /// Refused; see `error`.
        case rejected
    }

    /// One event written for the input.
    public struct WrittenEvent: Sendable, Hashable, Codable {
        public var seq: UInt64
        public var kind: Fact.Kind
        public var transactionId: String?
        public var originalTransactionId: String?
        /// The operator's grant a grant or revoke event is about (`OperatorGrant.grantId`).
        public var grantId: String? = nil
    }

    /// A refusal's code and message.
    public struct ErrorInfo: Sendable, Hashable, Codable {
        public var code: ErrorCode
        public var message: String
        public init(code: ErrorCode, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// The events written for the input, in log order (none for a duplicate or a refusal).
    public let events: [WrittenEvent]
    /// Why the input was refused; nil unless it was.
    public let error: ErrorInfo?

    /// `rejected` with an error, else `appended` when an event was written, else `duplicate`.
    public var status: Status { error != nil ? .rejected : events.isEmpty ? .duplicate : .appended }
    /// The last sequence written for this input (absent when nothing was written).
    public var seq: UInt64? { events.last?.seq }

    /// An input that wrote `events` (a duplicate when there are none).
    public init(events: [WrittenEvent]) {
        self.init(events: events, error: nil)
    }

    /// Every fact of the input was already known.
    public static let duplicate = AppendResult(events: [])

    /// The erasure event written at `seq` (`LedgerPrivacy.forget`, as a replica applies it from the intake stream).
    public static func erasure(seq: UInt64) -> AppendResult {
        AppendResult(events: [WrittenEvent(seq: seq, kind: .erasure, transactionId: nil, originalTransactionId: nil)])
    }

    /// An input refused, with why.
    public static func rejected(code: ErrorCode, message: String) -> AppendResult {
        AppendResult(events: [], error: ErrorInfo(code: code, message: message))
    }

    private init(events: [WrittenEvent], error: ErrorInfo?) {
        self.events = events
        self.error = error
    }

    // MARK: - Codable: the wire form states the status and seq too

    private enum CodingKeys: String, CodingKey { case status, seq, events, error }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        events = try c.decode([WrittenEvent].self, forKey: .events)
        error = try c.decodeIfPresent(ErrorInfo.self, forKey: .error)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(status, forKey: .status)
        try c.encodeIfPresent(seq, forKey: .seq)
        try c.encode(events, forKey: .events)
        try c.encodeIfPresent(error, forKey: .error)
    }
}
