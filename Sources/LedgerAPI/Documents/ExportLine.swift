import Foundation
import LedgerCore
import LedgerStore
import LedgerErrors

// MARK: - The lines `export --complete` writes around the events (docs/backup.md)

/// `{"begin": {"format": 1}}`: the first line of a complete export, so that `import` knows an end line must follow
/// (a plain export has neither, and a file cut short before its end line would otherwise pass for one).
public struct ExportBeginLine: Codable, Sendable, Hashable {
    public struct Header: Codable, Sendable, Hashable {
        /// The export format's version; `import` refuses one it does not know.
        public var format: Int
    }

    /// The format this build writes and reads.
    public static let format = 1

    public var begin: Header

    public init() { begin = Header(format: Self.format) }
}

/// `{"rejected": {…}}`: one refused input, its stored record included.
public struct ExportRefusalLine: Encodable, Sendable {
    public var rejected: RejectedDocument

    public init(_ exported: ExportedRefusal) {
        rejected = RejectedDocument(exported.input)
        rejected.record = Data(exported.record).base64EncodedString()
    }
}

/// `{"end": {…}}`: the last line of a complete export, so that `import` can tell a file cut short.
public struct ExportEndLine: Codable, Sendable, Hashable {
    public struct Summary: Codable, Sendable, Hashable {
        /// The seq of the last event exported (as many events as that: an export starts at seq 1).
        public var lastSeq: UInt64
        /// The chain link after that event (hex; all zeros for no event).
        public var chainHead: String
        /// How many refused inputs were exported.
        public var rejected: UInt64
        /// The `rejected` store's chain link after them (hex; all zeros for none).
        public var rejectedHead: String

        public init(lastSeq: UInt64, chainHead: String, rejected: UInt64, rejectedHead: String) {
            self.lastSeq = lastSeq
            self.chainHead = chainHead
            self.rejected = rejected
            self.rejectedHead = rejectedHead
        }
    }

    public var end: Summary

    public init(_ end: Summary) { self.end = end }
}

// MARK: - Reading an export back

/// One line of `storeledger export` read back for `storeledger import`: an event (what the store writes back, and
/// the fields the line states beside it), a refused input, or the closing summary.
public enum ExportLine: Sendable {
    /// The first line of a complete export.
    case begin
    case event(ImportedEvent, EventFields)
    case refusal(ImportedRefusal, RefusalFields)
    case end(ExportEndLine.Summary)

    /// What an event line states besides the stored bytes; the stored (chained) bytes must say the same.
    public struct EventFields: Sendable {
        public var key: String
        public var kind: String
        public var receivedAt: Int64
        public var rawDigest: String

        /// How the line disagrees with the event its stored bytes hold (nil when it does not): a line edited by hand.
        public func disagreement(with event: LedgerEvent) -> String? {
            if key != event.fact.eventKey { return "key '\(key)' is not its stored event's '\(event.fact.eventKey)'" }
            if kind != event.fact.kind.rawValue { return "kind '\(kind)' is not its stored event's '\(event.fact.kind.rawValue)'" }
            if receivedAt != event.metadata.receivedAt {
                return "receivedAt \(receivedAt) is not its stored event's \(event.metadata.receivedAt)"
            }
            if ExportLineReader.hexBytes(rawDigest) != event.metadata.rawDigest {
                return "rawDigest \(rawDigest) is not its stored event's \(lowercaseHex(event.metadata.rawDigest))"
            }
            return nil
        }
    }

    /// What a refusal line states besides the stored record.
    public struct RefusalFields: Sendable {
        public var code: String
        public var receivedAt: Int64
        public var raw: [UInt8]

        /// How the line disagrees with the record it carries (nil when it does not). A record sealed in a ledger
        /// with pseudonyms holds its content's digest instead, which the import checks (`ImportCheck`).
        public func disagreement(with input: RejectedInput) -> String? {
            if code != input.code.rawValue { return "code '\(code)' is not its record's '\(input.code)'" }
            if receivedAt != input.receivedAt { return "receivedAt \(receivedAt) is not its record's \(input.receivedAt)" }
            if input.contentDigest == nil, raw != input.raw { return "its raw bytes are not its record's" }
            return nil
        }
    }
}

/// Reads lines of `storeledger export`. Not thread-safe (it keeps a JSON decoder); one per reading thread.
public struct ExportLineReader {
    private let decoder = JSONDecoder()

    public init() {}

    /// The line's record; `invalid_export` when it is not a line `export` writes.
    public func read(_ line: some Collection<UInt8>) throws(LedgerError) -> ExportLine {
        let shape: Shape
        do {
            shape = try decoder.decode(Shape.self, from: Data(line))
        } catch {
            throw Self.invalid("not JSON, or not a line of `storeledger export` (\(Self.describe(error)))")
        }
        if let seq = shape.seq {
            guard let key = shape.key, let kind = shape.kind, let receivedAt = shape.receivedAt,
                let rawDigest = shape.rawDigest, let chainHash = shape.chainHash
            else {
                throw Self.invalid("an event line lacks key, kind, receivedAt, rawDigest or chainHash")
            }
            guard let stored = shape.stored, let rawKey = shape.rawKey else {
                throw Self.invalid(
                    "event \(seq) has no `stored` bytes or `rawKey`: an export written before storeledger kept them "
                        + "cannot rebuild the same ledger; export again with this version")
            }
            guard let bytes = Data(base64Encoded: stored) else { throw Self.invalid("event \(seq): `stored` is not base64") }
            var raw: [UInt8]?
            if let text = shape.raw {
                guard let decoded = Data(base64Encoded: text) else { throw Self.invalid("event \(seq): `raw` is not base64") }
                raw = [UInt8](decoded)
            }
            guard let link = Self.hexBytes(chainHash), link.count == 32 else {
                throw Self.invalid("event \(seq): `chainHash` is not 64 hex digits")
            }
            return .event(
                ImportedEvent(
                    seq: seq, key: key, bytes: [UInt8](bytes), rawKey: rawKey, raw: raw, chainHash: link,
                    people: shape.people ?? [:]),
                ExportLine.EventFields(key: key, kind: kind, receivedAt: receivedAt, rawDigest: rawDigest))
        }
        if let refusal = shape.rejected {
            guard let record = refusal.record else {
                throw Self.invalid("refused input \(refusal.number) has no `record`")
            }
            guard let bytes = Data(base64Encoded: record), let raw = Data(base64Encoded: refusal.raw) else {
                throw Self.invalid("refused input \(refusal.number): `record` or `raw` is not base64")
            }
            var stated: RejectedInput?
            if refusal.erased != true {
                var input = RejectedInput(
                    raw: [UInt8](raw), code: ErrorCode(refusal.code), message: refusal.message ?? "",
                    receivedAt: refusal.receivedAt)
                input.request = refusal.request
                stated = input
            }
            return .refusal(
                ImportedRefusal(number: refusal.number, record: [UInt8](bytes), stated: stated),
                ExportLine.RefusalFields(code: refusal.code, receivedAt: refusal.receivedAt, raw: [UInt8](raw)))
        }
        if let begin = shape.begin {
            guard begin.format == ExportBeginLine.format else {
                throw Self.invalid(
                    "export format \(begin.format); this storeledger reads format \(ExportBeginLine.format)")
            }
            return .begin
        }
        if let end = shape.end {
            guard Self.hexBytes(end.chainHead)?.count == 32, Self.hexBytes(end.rejectedHead)?.count == 32 else {
                throw Self.invalid("the end line's chainHead or rejectedHead is not 64 hex digits")
            }
            return .end(end)
        }
        throw Self.invalid(
            "neither an event (`seq`), a refused input (`rejected`), the first line (`begin`) nor the end line (`end`)")
    }

    /// The members `import` reads; the others (`fact`, `transactionId`, …) are there for people and other systems.
    private struct Shape: Decodable {
        var seq: UInt64?
        var key: String?
        var kind: String?
        var receivedAt: Int64?
        var rawDigest: String?
        var chainHash: String?
        var stored: String?
        var raw: String?
        var rawKey: UInt64?
        var people: [String: String?]?
        var rejected: Refusal?
        var begin: ExportBeginLine.Header?
        var end: ExportEndLine.Summary?
    }

    private struct Refusal: Decodable {
        var number: UInt64
        var code: String
        var receivedAt: Int64
        var raw: String
        var record: String?
        var message: String?
        var request: String?
        var erased: Bool?
    }

    private static func invalid(_ message: String) -> LedgerError { LedgerError(code: .invalidExport, message: message) }

    /// A decoding error in a few words (Foundation's descriptions run over several lines).
    private static func describe(_ error: any Error) -> String {
        switch error as? DecodingError {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context),
            .dataCorrupted(let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
        default:
            return "\(error)"
        }
    }

    /// The bytes of a lowercase or uppercase hex string; nil when it is not one.
    static func hexBytes(_ text: String) -> [UInt8]? { bytes(ofHex: text) }
}
