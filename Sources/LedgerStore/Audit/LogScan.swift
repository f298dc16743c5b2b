import LMDB
import LedgerCodec
import LedgerCore

// MARK: - Reading the whole log (export)

extension LedgerAudit {
    /// Visits every event with seq > `after` in log order: the event, the bytes it is stored as (what the chain
    /// covers) and the raw input it was decoded from; `batchSize` events per short read transaction, so a live writer
    /// is never blocked for long, and events appended meanwhile are visited too, up to the end the last transaction
    /// sees. The bytes are valid only inside `body`.
    ///
    /// Reads what `exportedEvents(after:limit:)` reads, in place: the events of one input are neighbours in the log
    /// and share its raw input, which is read once.
    /// - Complexity: O(n) lookups for n events (each event is found under its key; `raw` is read in key order).
    public func forEachEvent(
        after: UInt64, batchSize: Int = 4_096,
        _ body: (
            _ event: StoredEvent, _ bytes: UnsafeRawBufferPointer, _ raw: UnsafeRawBufferPointer,
            _ people: [String: String?]
        ) throws -> Void
    ) throws {
        precondition(batchSize > 0, "a batch of no events")
        var next = after &+ 1
        var revisionKey: [UInt8] = []
        revisionKey.reserveCapacity(64)
        var strings = RepeatedStrings()
        while next != 0 {  // 0: the seq after UInt64.max, which no log reaches
            let visited: Int = try environment.read { txn in
                let log = try txn.cursor(layout.log)
                // One `events` cursor per kind of key (`StoreLayout.eventKeyKinds`).
                let events = ForwardCursors(txn, layout.events, count: StoreLayout.eventKeyKinds)
                let raws = try txn.cursor(layout.raw)
                var rawInput: (key: UInt64, bytes: ScannedRaw)? = nil
                var entry = try log.seek(StoreLayout.logKey(next))
                var count = 0
                while let e = entry, count < batchSize {
                    let seq = try BigEndian.uint64(key: e.key, of: "log")
                    let record = try LogRecord(e.value, seq: seq)
                    revisionKey.removeAll(keepingCapacity: true)
                    revisionKey.append(contentsOf: record.eventKey)
                    revisionKey.append(0)
                    BigEndian.append(seq, to: &revisionKey)
                    let kind = StoreLayout.eventKeyKind(first: record.eventKey.first)
                    guard let bytes = try revisionKey.withUnsafeBytes({ try events.find($0, through: kind) })?.value else {
                        throw LedgerError.corrupted("log seq \(seq) names an event that is missing")
                    }
                    if rawInput?.key != record.rawKey {
                        let key = StoreLayout.rawKey(record.rawKey)
                        if let found = try key.withUnsafeBytes({ try raws.findForward($0) })?.value {
                            rawInput = (record.rawKey, .mapped(found))
                        } else {
                            let people = try ledger.people(ofSealed: record.rawKey, txn)
                            switch try ledger.rawInput(of: record.rawKey, txn) {
                            case .bytes(let raw): rawInput = (record.rawKey, .opened(raw, people: people))
                            case .erased: rawInput = (record.rawKey, .opened([], people: people))
                            case .missing: throw LedgerError.corrupted("raw input of event \(seq) is missing")
                            }
                        }
                    }
                    let event = try StoreLayout.decodeEvent(seq: seq, bytes, strings: &strings)
                    let stored = StoredEvent(event: event, chainHash: record.link, rawKey: record.rawKey)
                    try bytes.withUnsafeBytes { bytes in
                        switch rawInput!.bytes {
                        case .mapped(let raw): try raw.withUnsafeBytes { raw in try body(stored, bytes, raw, [:]) }
                        case .opened(let raw, let people):
                            try raw.withUnsafeBytes { raw in try body(stored, bytes, raw, people) }
                        }
                    }
                    next = seq &+ 1
                    count += 1
                    entry = try log.next()
                }
                return count
            }
            if visited < batchSize { return }
        }
    }
}

/// A raw input as a scan of the log reads it: where the map holds it, or opened from its sealed form.
private enum ScannedRaw {
    case mapped(MappedBytes)
    /// With the people it names, pseudonym → value (nil: forgotten, and the bytes with them).
    case opened([UInt8], people: [String: String?])
}
