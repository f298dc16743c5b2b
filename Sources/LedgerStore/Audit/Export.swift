import LMDB
import LedgerCodec
import LedgerCore

// MARK: - Reading the log for an export

/// One event as `storeledger export` writes it: the event, the exact bytes the hash chain covers, and its raw input.
public struct ExportedEvent: Sendable {
    public var stored: StoredEvent
    /// The canonical event exactly as stored (and chained): what `Ledger.importEvents` writes back.
    public var bytes: [UInt8]
    /// The raw input the event was decoded from (shared by the events of one input).
    public var raw: [UInt8]
}

/// One refused input as `storeledger export --complete` writes it.
public struct ExportedRefusal: Sendable {
    public var input: RejectedInput
    /// The record exactly as the `rejected` store keeps it (and chains it).
    public var record: [UInt8]
}

extension LedgerAudit {
    /// Events with seq > `after`, in log order, at most `limit`, each with its stored bytes and raw input; one read
    /// transaction per call, so a caller paging through the log never holds a reader for long.
    public func exportedEvents(after: UInt64, limit: Int) throws -> [ExportedEvent] {
        try environment.read { txn in
            let cursor = try txn.cursor(layout.log)
            var out: [ExportedEvent] = []
            var entry = try cursor.seek(StoreLayout.logKey(after &+ 1))
            while let e = entry, out.count < limit {
                let seq = try BigEndian.uint64(key: e.key, of: "log")
                let log = try LogRecord(e.value, seq: seq)
                guard let stored = try txn.get(layout.events, key: log.revisionKey(seq: seq)) else {
                    throw LedgerError.corrupted("log seq \(seq) names an event that is missing")
                }
                let raw: [UInt8]
                switch try ledger.rawInput(of: log.rawKey, txn) {
                case .bytes(let bytes): raw = bytes
                case .erased: raw = []
                case .missing: throw LedgerError.corrupted("raw input of event \(seq) is missing")
                }
                let event = try StoreLayout.decodeEvent(seq: seq, stored)
                out.append(
                    ExportedEvent(
                        stored: StoredEvent(event: event, chainHash: log.link, rawKey: log.rawKey),
                        bytes: stored.withUnsafeBytes { Array($0) },
                        raw: raw))
                entry = try cursor.next()
            }
            return out
        }
    }

    /// Refused inputs numbered after `after`, oldest first, at most `limit`, each with its stored record.
    public func exportedRefusals(after: UInt64, limit: Int) throws -> [ExportedRefusal] {
        try environment.read { txn in
            let cursor = try txn.cursor(layout.rejected)
            var out: [ExportedRefusal] = []
            var entry = try cursor.seek(StoreLayout.rejectedKey(after &+ 1))
            while let e = entry, out.count < limit {
                let number = try BigEndian.uint64(key: e.key, of: "rejected")
                let input = try ledger.opened(try RejectedInput(number: number, stored: e.value), txn)
                out.append(ExportedRefusal(input: input, record: e.value.withUnsafeBytes { Array($0) }))
                entry = try cursor.next()
            }
            return out
        }
    }
}

// MARK: - The refusals' chain, outside the store

/// The `rejected` store's running hash over records as they are exported or imported (`RejectedChain`): what
/// `export --complete` states in its last line and `import` recomputes.
public struct RefusalChainHead: Sendable, Hashable {
    /// The number of the last record linked (0 before any).
    public private(set) var last: UInt64 = 0
    public private(set) var link: [UInt8] = HashChain.genesis

    public init() {}

    /// Links the record numbered `last + 1`.
    public mutating func add(_ record: [UInt8]) {
        last += 1
        link = RejectedChain.link(previous: link, number: last, record: record)
    }

    /// The link in lowercase hex.
    public var hexLink: String { hex(link) }
}
