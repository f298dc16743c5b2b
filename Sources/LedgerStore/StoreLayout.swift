import LMDB
import LedgerCodec
import LedgerCore

/// The named databases of one ledger directory and how their keys are built. The README's "Storage layout" section
/// describes the same thing for operators; keep them in step.
///
/// | database    | key                                  | value                                            |
/// |-------------|--------------------------------------|--------------------------------------------------|
/// | `meta`      | name (UTF-8)                         | schema version, chain head, counters             |
/// | `raw`       | first seq of the input (BE, 8)       | the exact bytes received                         |
/// | `events`    | event key ‖ 0x00 ‖ seq (BE, 8)       | the canonical event (LedgerEvent.encode)         |
/// | `log`       | seq (BE, 8), appended                | chain link (32) ‖ raw key (8) ‖ event key        |
/// | `by_otid`   | environment (1) ‖ OTID               | seq (BE, 8) ‖ event key, dupsort (seq order)     |
/// | `by_user`   | environment (1) ‖ app user id        | environment (1) ‖ OTID, dupsort                  |
/// | `timelines` | environment (1) ‖ OTID               | stamp seq (BE, 8) ‖ Timeline.encoded()           |
/// | `rejected`  | rejection number (BE, 8), appended   | RejectedInput.encoded()                          |
/// | `bindings_any` | OTID                              | seq (BE, 8) ‖ event key, dupsort: claims that named no environment |
///
/// A claim that names no environment is indexed in `bindings_any`, and in `by_otid` and `by_user` under every
/// environment where its subscription is known; when the subscription appears in another environment later, the
/// projection engine adds it there (docs/domain.md, "Owners").
/// Idempotency needs no index of its own: equal facts have equal event keys, so a fact is known when one of the
/// stored revisions under its key has the same canonical bytes. Keys that grow with time are appended in order (log,
/// raw) or cluster by id (events), so a commit dirties few pages; only the per-subscription databases take random
/// writes.
struct StoreLayout {
    /// 2: timelines carry their period bounds (field 10), which the tail path of the incremental core reads.
    /// 3: the fold of docs/domain.md (token claims, restored one-time purchases, upgrades that end the old period,
    /// billing retry that ends), prices on periods, and claims that name no environment (`bindings_any`).
    /// An older ledger opened for writing is upgraded by rebuilding its projections from the log.
    static let schemaVersion: UInt64 = 3

    let meta: Database
    let raw: Database
    let events: Database
    let log: Database
    let byOTID: Database
    let byUser: Database
    let timelines: Database
    let rejected: Database
    let bindingsAny: Database

    init(environment: Environment) throws {
        // One transaction: a ledger being created is never seen (by `stats` in another process) half made.
        let dbs = try environment.openDatabases([
            ("meta", []), ("raw", []), ("events", []), ("log", []), ("by_otid", [.dupSort]), ("by_user", [.dupSort]),
            ("timelines", []), ("rejected", []), ("bindings_any", [.dupSort]),
        ])
        (meta, raw, events, log) = (dbs[0], dbs[1], dbs[2], dbs[3])
        (byOTID, byUser, timelines, rejected, bindingsAny) = (dbs[4], dbs[5], dbs[6], dbs[7], dbs[8])
    }

    /// Every database, for statistics and verification.
    var all: [Database] { [meta, raw, events, log, byOTID, byUser, timelines, rejected, bindingsAny] }

    /// The `bindings_any` key of a subscription.
    static func anyEnvironmentKey(_ otid: OriginalTransactionID) -> [UInt8] {
        otid.withUTF8 { Array($0) }
    }

    // MARK: - Keys

    static func eventKey(_ key: String, seq: UInt64) -> [UInt8] {
        var k = Array(key.utf8)
        k.append(0)
        k.append(contentsOf: seq.bigEndianBytes)
        return k
    }

    /// A `by_otid` value: the seq first (so values sort by seq), then the event key, so that reading a subscription's
    /// events takes one lookup each (in `events`), not two (`log`, then `events`).
    static func eventKey(seq: UInt64, _ key: String) -> [UInt8] {
        var v = seq.bigEndianBytes
        v.append(contentsOf: key.utf8)
        return v
    }

    /// The seq of a `by_otid` value, with the `events` key it names written into `key` (a buffer the caller reuses
    /// from one value to the next); nil when the value is malformed.
    static func eventsKey(byOTIDValue value: UnsafeRawBufferPointer, into key: inout [UInt8]) -> UInt64? {
        guard value.count > 8 else { return nil }
        let seq = UnsafeRawBufferPointer(rebasing: value[0..<8]).bigEndianUInt64
        key.removeAll(keepingCapacity: true)
        key.append(contentsOf: UnsafeRawBufferPointer(rebasing: value[8...]))
        key.append(0)
        withUnsafeBytes(of: seq.bigEndian) { key.append(contentsOf: $0) }
        return seq
    }

    /// The prefix every event of one event key starts with.
    static func eventKeyPrefix(_ key: String) -> [UInt8] {
        var k = Array(key.utf8)
        k.append(0)
        return k
    }

    /// The environment prefix of `by_otid`, `by_user` and `timelines` keys: its code, and for an environment this
    /// build does not know, its name and a 0 after the code (names never hold a 0).
    static func environmentPrefix(_ environment: AppStoreEnvironment) -> [UInt8] {
        let code = environment.code
        guard code == AppStoreEnvironment.otherCode else { return [code] }
        return [code] + Array(environment.rawValue.utf8) + [0]
    }

    static func subscriptionKey(_ environment: AppStoreEnvironment, _ otid: OriginalTransactionID) -> [UInt8] {
        var k = environmentPrefix(environment)
        otid.withUTF8 { k.append(contentsOf: $0) }
        return k
    }

    static func userKey(_ environment: AppStoreEnvironment, _ user: AppUserID) -> [UInt8] {
        var k = environmentPrefix(environment)
        k.append(contentsOf: user.rawValue.utf8)
        return k
    }

    static func decodeSubscriptionKey(_ bytes: UnsafeRawBufferPointer) -> (AppStoreEnvironment, OriginalTransactionID)? {
        guard let first = bytes.first else { return nil }
        var rest = bytes.dropFirst()
        let env: AppStoreEnvironment
        if first == AppStoreEnvironment.otherCode {
            guard let end = rest.firstIndex(of: 0),
                let named = AppStoreEnvironment(storedName: String(decoding: rest[..<end], as: UTF8.self))
            else { return nil }
            env = named
            rest = rest[(end + 1)...]
        } else {
            guard let known = AppStoreEnvironment(code: first) else { return nil }
            env = known
        }
        return (env, OriginalTransactionID(utf8: UnsafeRawBufferPointer(rebasing: rest).assumingMemoryBound(to: UInt8.self)))
    }

    // MARK: - Values

    /// One entry of the log: the chain link after the event, where its raw input is, and the event's key.
    struct LogEntry {
        var link: [UInt8]
        var rawKey: UInt64
        var eventKey: [UInt8]

        static func encode(link: [UInt8], rawKey: UInt64, eventKey: String) -> [UInt8] {
            var v = link
            v.reserveCapacity(40 + eventKey.utf8.count)
            v.append(contentsOf: rawKey.bigEndianBytes)
            v.append(contentsOf: eventKey.utf8)
            return v
        }

        init?(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count > 40 else { return nil }
            link = Array(bytes[0..<32])
            rawKey = UnsafeRawBufferPointer(rebasing: bytes[32..<40]).bigEndianUInt64
            eventKey = Array(bytes[40...])
        }

        /// The key of the event in `events`.
        func eventsKey(seq: UInt64) -> [UInt8] { eventKey + [0] + seq.bigEndianBytes }
    }

    /// Visits the revisions stored under one event key, oldest first, while `body` returns true.
    func forEachRevision(
        of key: String, _ txn: Transaction, _ body: (_ seq: UInt64, _ stored: UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        let prefix = Self.eventKeyPrefix(key)
        let cursor = try txn.cursor(events)
        var entry = try cursor.seek(prefix)
        while let e = entry, e.key.count == prefix.count + 8, e.key.starts(with: prefix) {
            let seq = UnsafeRawBufferPointer(rebasing: e.key[prefix.count...]).bigEndianUInt64
            guard try body(seq, e.value) else { return }
            entry = try cursor.next()
        }
    }

    /// Whether a revision stored under `key` before `seq` states exactly these fact bytes. Equal facts share their
    /// key, so this is the whole idempotency check.
    /// - Complexity: O(revisions of the key), usually one or two.
    func isKnown(_ factBytes: [UInt8], key: String, before seq: UInt64 = .max, _ txn: Transaction) throws -> Bool {
        var known = false
        try forEachRevision(of: key, txn) { revision, stored in
            guard revision < seq else { return false }
            known = Self.factBytes(ofStoredEvent: stored)?.bytesEqual(factBytes) ?? false
            return !known
        }
        return known
    }

    /// The canonical fact bytes inside a stored event (see `LedgerEvent.encode`), without decoding the fact.
    static func factBytes(ofStoredEvent stored: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        var r = BinaryReader(stored)
        guard (try? r.readVarint()) == UInt64(Fact.formatVersion) else { return nil }
        while let (tag, wire) = try? r.nextField() {
            guard wire == .bytes, let bytes = try? r.readBytes() else { return nil }
            if tag == 1 { return bytes }
        }
        return nil
    }

    // MARK: - Meta keys
    static let metaSchema = Array("schema".utf8)
    static let metaChainHead = Array("chain_head".utf8)
    static let metaRejectedCount = Array("rejected_count".utf8)
    /// count (BE, 8) ‖ the last `RejectedChain` link (32). Absent in ledgers whose refusals predate it, until the
    /// next refusal links them all.
    static let metaRejectedHead = Array("rejected_head".utf8)
    static let metaRulesDigest = Array("rules_digest".utf8)
}

extension UnsafeRawBufferPointer {
    /// Whether these bytes equal `other` (`sameBytes(as:)`: eight at a time, not a generic element-by-element loop).
    func bytesEqual(_ other: [UInt8]) -> Bool {
        other.withUnsafeBytes { sameBytes(as: $0) }
    }
}
