import LedgerCore
import LedgerStore

/// Where the server's accepted inputs go instead of the ledger's own append: a replicated intake (`LedgerReplication`,
/// `storeledger serve --intake nats://…`) publishes each to a log that every replica appends from in one order, and
/// answers once the local replica appended it. Without one (the default) the server appends to its ledger directly.
public protocol Intake: Sendable {
    /// Appends `inputs`, each decoded and verified from `raws[i]` with `options`; one result per input, in order,
    /// once the local replica has appended it (the same results `Ledger.append` gives).
    func append(_ inputs: [LedgerInput], raws: [ArraySlice<UInt8>], options: IngestPipeline.Options) async throws
        -> [AppendResult]

    /// Forgets `user` (`LedgerPrivacy.forget`) on every replica: published to the stream and applied by each in its
    /// order; answered once the local replica applied it.
    func forget(_ user: AppUserID, requestedBy: String, reason: String?, at instant: UnixMillis) async throws
        -> ForgetReport
}
