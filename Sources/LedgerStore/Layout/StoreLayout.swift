import LMDB
import LedgerCore

/// The named databases of one ledger directory. docs/architecture.md, "Storage layout", describes the same thing for
/// operators; keep them in step. How each key is built is in `StoreLayout+Keys.swift`; the values with a layout of
/// their own are `LogRecord`, `EventReference` and `StoredTimeline`.
///
/// | database    | key                                  | value                                            |
/// |-------------|--------------------------------------|--------------------------------------------------|
/// | `meta`      | name (UTF-8)                         | schema version, chain head, counters             |
/// | `raw`       | first seq of the input (BE, 8)       | the exact bytes received                         |
/// | `events`    | event key ‖ 0x00 ‖ seq (BE, 8)       | the canonical event (LedgerEvent.encode)         |
/// | `log`       | seq (BE, 8), appended                | `LogRecord`: chain link (32) ‖ raw key (8) ‖ event key |
/// | `by_otid`   | environment (1) ‖ OTID               | `EventReference`: seq (BE, 8) ‖ event key, dupsort (seq order) |
/// | `by_user`   | environment (1) ‖ app user id        | environment (1) ‖ OTID, dupsort                  |
/// | `timelines` | environment (1) ‖ OTID               | `StoredTimeline`: stamp seq (BE, 8) ‖ the timeline's binary form |
/// | `rejected`  | rejection number (BE, 8), appended   | RejectedInput.encoded()                          |
/// | `bindings_any` | OTID                              | `EventReference`, dupsort: claims that named no environment |
/// | `lifecycle` | seq (BE, 8) ‖ environment code (1) ‖ index (BE, 4) | a lifecycle event (LedgerCodec's form)   |
/// | `webhook_dead` | a `lifecycle` key                  | a dead letter: attempts, when and why the last failed, replay asked |
/// | `metric_days` | environment ‖ UTC day (8) ‖ product | `StoredMetricDay`: the subscriptions' metric changes summed |
/// | `metric_points` | environment (1) ‖ OTID             | `MetricPoints`: what the subscription's timeline added when summed in |
/// | `metric_dirty` | environment (1) ‖ OTID              | empty: the timeline changed since it was summed in    |
/// | `identities` | pseudonym (UTF-8)                     | generation (BE, 8) ‖ the value and its data key, sealed (`Identities`) |
/// | `identity_index` | SHA-256(index key ‖ value)        | the value's pseudonym                            |
/// | `raw_sealed` | first seq of the input (BE, 8)        | an input that names a person, sealed (`SealedRaw`); not in `raw` |
/// | `rejected_sealed` | rejection number (BE, 8)         | a refusal's message, bytes and request, sealed (`Identities.sealRefusal`) |
/// | `receipt_created` | seq (BE, 8)                       | the receipt creation date (BE, 8) an older build's `in_app` copy speaks from (`ReceiptCreationDates`) |
///
/// The log names people by pseudonyms only; the values behind them are in `identities`, sealed with a key kept
/// beside the data file (`identity.key`), so that `forget` can make them unreadable (docs/privacy.md).
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
    /// 4: the lifecycle events derived from timeline changes (`lifecycle`), the webhook's dead letters
    /// (`webhook_dead`) and position (`meta`).
    /// 5: periods keep Apple's `inAppOwnershipType` with their terms (field 22), for the customer answer's
    /// `ownershipType` and the revenue a family member's period does not bring.
    /// 6: the fold of two clocks (docs/domain.md): a token belongs to the user it was first claimed for, claims
    /// at one instant fold by cause and then in log order, billing retry and grace periods stated late begin at the
    /// expiry, a receipt's `in_app` copies speak from its creation.
    /// 7: the subscription metrics summed by UTC day (`metric_days`, `metric_points`, `metric_dirty`), maintained as
    /// the timelines change.
    /// 8: personal values kept apart (`identities`, `identity_index`, `raw_sealed`, `rejected_sealed`); a ledger made by an older build
    /// keeps the values in its log and reads as before (`meta` has no `identity_generation`).
    /// 9: a revision in the receipt format (verifyReceipt, V1 notifications) keeps the price, currency, reason and
    /// offer details a signed revision of the transaction stated (docs/domain.md, "What each format states").
    /// 10: the MRR of the old side of an upgrade is spread over the length it was billed for (`metric_days`).
    /// 11: receipts stored before schema 6 speak from their creation too (`receipt_created`, derived from their raw
    /// bytes by the upgrade, and by an import).
    /// An older ledger opened for writing is upgraded by rebuilding its projections from the log.
    static let schemaVersion: UInt64 = 11

    let meta: Database
    let raw: Database
    let events: Database
    let log: Database
    let byOTID: Database
    let byUser: Database
    let timelines: Database
    let rejected: Database
    let bindingsAny: Database
    let lifecycle: Database
    let webhookDead: Database
    let metricDays: Database
    let metricPoints: Database
    let metricDirty: Database
    let identities: Database
    let identityIndex: Database
    let rawSealed: Database
    let rejectedSealed: Database
    let receiptCreated: Database

    init(environment: Environment) throws {
        // One transaction: a ledger being created is never seen (by `stats` in another process) half made.
        let dbs = try environment.openDatabases([
            ("meta", []), ("raw", []), ("events", []), ("log", []), ("by_otid", [.dupSort]), ("by_user", [.dupSort]),
            ("timelines", []), ("rejected", []), ("bindings_any", [.dupSort]), ("lifecycle", []),
            ("webhook_dead", []), ("metric_days", []),
            ("metric_points", []), ("metric_dirty", []), ("identities", []), ("identity_index", []),
            ("raw_sealed", []), ("rejected_sealed", []), ("receipt_created", []),
        ])
        (meta, raw, events, log) = (dbs[0], dbs[1], dbs[2], dbs[3])
        (byOTID, byUser, timelines, rejected, bindingsAny) = (dbs[4], dbs[5], dbs[6], dbs[7], dbs[8])
        lifecycle = dbs[9]
        webhookDead = dbs[10]
        (metricDays, metricPoints, metricDirty) = (dbs[11], dbs[12], dbs[13])
        (identities, identityIndex, rawSealed, rejectedSealed) = (dbs[14], dbs[15], dbs[16], dbs[17])
        receiptCreated = dbs[18]
    }

    /// Every database, for statistics and verification.
    var all: [Database] { [meta, raw, events, log, byOTID, byUser, timelines, rejected, bindingsAny, lifecycle, webhookDead, metricDays, metricPoints, metricDirty, identities, identityIndex, rawSealed, rejectedSealed, receiptCreated] }

    // MARK: - Meta keys

    /// The schema version (BE, 8).
    static let metaSchema = Array("schema".utf8)
    /// The last seq (BE, 8) ‖ its chain link (32).
    static let metaChainHead = Array("chain_head".utf8)
    /// How many inputs were refused (BE, 8).
    static let metaRejectedCount = Array("rejected_count".utf8)
    /// count (BE, 8) ‖ the last `RejectedChain` link (32). Absent in ledgers whose refusals predate it, until the
    /// next refusal links them all.
    static let metaRejectedHead = Array("rejected_head".utf8)
    /// The `lifecycle` key of the last event the outbound webhook delivered or gave up on.
    static let metaWebhookPosition = Array("webhook_position".utf8)
    /// The generation of `identity.key` the `identities` rows are sealed with (BE, 8); absent in a ledger whose log
    /// keeps personal values as they came.
    static let metaIdentityGeneration = Array("identity_generation".utf8)
}
