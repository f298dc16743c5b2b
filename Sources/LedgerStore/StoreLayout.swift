import LMDB
import LedgerCore

/// The named databases of one ledger directory and how their keys are built. The README's "Storage layout" section
/// describes the same thing for operators; keep them in step.
///
/// | database    | key                                  | value                                            |
/// |-------------|--------------------------------------|--------------------------------------------------|
/// | `meta`      | name (UTF-8)                         | schema version, chain head, counters             |
/// | `raw`       | SHA-256 of the input (32)            | the exact bytes received                         |
/// | `events`    | event key ‖ 0x00 ‖ seq (BE, 8)       | the canonical event (LedgerEvent.encode)         |
/// | `log`       | seq (BE, 8), appended                | chain hash (32) ‖ event key                      |
/// | `idem`      | SHA-256 of the fact's bytes (32)     | seq (BE, 8) of its first event                   |
/// | `by_otid`   | environment (1) ‖ OTID               | seq (BE, 8), dupsort + dupfixed                  |
/// | `by_user`   | environment (1) ‖ app user id        | environment (1) ‖ OTID, dupsort                  |
/// | `timelines` | environment (1) ‖ OTID               | stamp seq (BE, 8) ‖ Timeline.encoded()           |
/// | `rejected`  | rejection number (BE, 8), appended   | RejectedInput.encoded()                          |
struct StoreLayout {
    static let schemaVersion: UInt64 = 1

    let meta: Database
    let raw: Database
    let events: Database
    let log: Database
    let idem: Database
    let byOTID: Database
    let byUser: Database
    let timelines: Database
    let rejected: Database

    init(environment: Environment) throws {
        meta = try environment.openDatabase("meta")
        raw = try environment.openDatabase("raw")
        events = try environment.openDatabase("events")
        log = try environment.openDatabase("log")
        idem = try environment.openDatabase("idem")
        byOTID = try environment.openDatabase("by_otid", flags: [.dupSort, .dupFixed])
        byUser = try environment.openDatabase("by_user", flags: [.dupSort])
        timelines = try environment.openDatabase("timelines")
        rejected = try environment.openDatabase("rejected")
    }

    /// Every database, for statistics and verification.
    var all: [Database] { [meta, raw, events, log, idem, byOTID, byUser, timelines, rejected] }

    // MARK: - Keys

    static func eventKey(_ key: String, seq: UInt64) -> [UInt8] {
        var k = Array(key.utf8)
        k.append(0)
        k.append(contentsOf: seq.bigEndianBytes)
        return k
    }

    /// The prefix every event of one event key starts with.
    static func eventKeyPrefix(_ key: String) -> [UInt8] {
        var k = Array(key.utf8)
        k.append(0)
        return k
    }

    static func subscriptionKey(_ environment: AppStoreEnvironment, _ otid: OriginalTransactionID) -> [UInt8] {
        var k: [UInt8] = [environment.code]
        k.append(contentsOf: otid.rawValue.utf8)
        return k
    }

    static func userKey(_ environment: AppStoreEnvironment, _ user: AppUserID) -> [UInt8] {
        var k: [UInt8] = [environment.code]
        k.append(contentsOf: user.rawValue.utf8)
        return k
    }

    static func decodeSubscriptionKey(_ bytes: UnsafeRawBufferPointer) -> (AppStoreEnvironment, OriginalTransactionID)? {
        guard let first = bytes.first, let env = AppStoreEnvironment(code: first) else { return nil }
        return (env, OriginalTransactionID(String(decoding: bytes.dropFirst(), as: UTF8.self)))
    }

    // MARK: - Meta keys
    static let metaSchema = Array("schema".utf8)
    static let metaChainHead = Array("chain_head".utf8)
    static let metaRejectedCount = Array("rejected_count".utf8)
    static let metaRulesDigest = Array("rules_digest".utf8)
}
