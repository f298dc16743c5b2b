import Crypto
import Foundation
import LedgerAppStore
import LedgerCore
import LedgerIngest

/// What goes into the stream for one accepted input: the options the caller gave (type, app user, receivedAt) as
/// one line of JSON, a newline, then the raw bytes exactly as received. Every replica decodes the raw bytes again
/// with those options and the stream's timestamp, so the stored raw input and its digest are the caller's bytes.
public struct IntakeMessage: Sendable, Equatable {
    public var raw: [UInt8]
    public var type: InputType?
    public var appUserId: String?
    public var receivedAt: UnixMillis?
    /// An erasure instead of an input (`Intake.forget`): every replica forgets the user at this place of the stream.
    public var erasure: ErasureRequest?

    /// Whom to forget (the pseudonym the log names them by: the stream never holds the id), who asked, why and when:
    /// the arguments of `LedgerPrivacy.forget(pseudonym:)`.
    public struct ErasureRequest: Codable, Sendable, Equatable {
        public var pseudonym: String
        public var requestedBy: String
        public var reason: String?
        public var requestedAt: Int64
    }

    /// An erasure's message (no raw bytes).
    public init(erasure: ErasureRequest) {
        raw = []
        type = nil
        appUserId = nil
        receivedAt = nil
        self.erasure = erasure
    }

    public init(raw: [UInt8], options: IngestPipeline.Options) {
        self.raw = raw
        self.type = options.forcedType
        self.appUserId = options.appUserId?.rawValue
        self.receivedAt = options.receivedAt
        self.erasure = nil
    }

    /// The options, with the stream's timestamp as `receivedAt` when the caller named none (an envelope's own
    /// `receivedAt` still wins in the decoder).
    ///
    /// The identity seed (a ledger with pseudonyms, docs/privacy.md) is derived from the message, so that every
    /// replica names the people it states alike: SHA-256 of a label and the payload, which the data file never
    /// holds (its raw input is sealed there, and the chain keeps only the raw bytes' own digest).
    public func options(streamMillis: UnixMillis) -> IngestPipeline.Options {
        IngestPipeline.Options(
            forcedType: type, appUserId: appUserId.map { AppUserID(rawValue: $0) }, receivedAt: receivedAt ?? streamMillis,
            identitySeed: Array(SHA256.hash(data: Array("storeledger identity seed\n".utf8) + payload)).prefix(16).map { $0 })
    }

    private struct Header: Codable {
        var type: String?
        var appUserId: String?
        var receivedAt: Int64?
        var erasure: ErasureRequest?
    }

    /// The message's bytes; the same input with the same options always gives the same bytes (sorted keys).
    public var payload: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let header = (try? encoder.encode(Header(type: type?.rawValue, appUserId: appUserId, receivedAt: receivedAt, erasure: erasure)))
            ?? Data("{}".utf8)
        return Array(header) + [0x0A] + raw
    }

    /// `Nats-Msg-Id`: the SHA-256 of the payload, so the same input sent twice within the stream's duplicate window
    /// is stored once.
    public var messageId: String {
        SHA256.hash(data: payload).map { String($0, radix: 16).leftPadded(2) }.joined()
    }

    /// Reads a payload; nil when it is not one (a message some other publisher put on the intake's subjects).
    public init?(payload: [UInt8]) {
        guard let newline = payload.firstIndex(of: 0x0A),
            let header = try? JSONDecoder().decode(Header.self, from: Data(payload[..<newline]))
        else { return nil }
        if let name = header.type {
            guard let type = InputType(rawValue: name) else { return nil }
            self.type = type
        } else {
            self.type = nil
        }
        self.appUserId = header.appUserId
        self.receivedAt = header.receivedAt
        self.erasure = header.erasure
        self.raw = Array(payload[(newline + 1)...])
    }
}

/// Which partition an input belongs to: a stable hash (FNV-1a, 64 bits) of its least original transaction id,
/// modulo the partition count. Stable across builds, machines and restarts (Swift's `Hasher` is seeded per process).
public struct Partitioning: Sendable, Equatable {
    public let count: Int
    /// The partitions this server's ledger holds; every one when nil.
    public let held: Set<Int>?

    public init(count: Int = 1, held: Set<Int>? = nil) {
        self.count = max(1, count)
        self.held = held
    }

    public func partition(of otid: String) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in otid.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return Int(hash % UInt64(count))
    }

    /// The partition of an input's facts: that of the least OTID among them (a receipt may hold several
    /// subscriptions; it goes, whole, to one partition). 0 when no fact names one.
    public func partition(of facts: [Fact]) -> Int {
        guard let least = facts.compactMap(\.originalTransactionId).min() else { return 0 }
        return partition(of: least.rawValue)
    }

    public func holds(_ partition: Int) -> Bool { held?.contains(partition) ?? true }

    /// `0,2,5-7` → {0, 2, 5, 6, 7}; each below `count`.
    public static func parseSet(_ text: String, count: Int) -> Set<Int>? {
        var set = Set<Int>()
        for item in text.split(separator: ",") {
            let bounds = item.split(separator: "-", omittingEmptySubsequences: false)
            guard (1...2).contains(bounds.count), let low = Int(bounds[0]), let high = Int(bounds.last!), low <= high,
                low >= 0, high < count
            else { return nil }
            set.formUnion(low...high)
        }
        return set.isEmpty ? nil : set
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
