import ArgumentParser
import Foundation
import LedgerAPI
import LedgerAppleAPI
import LedgerCore
import LedgerIngest
import LedgerServer
import LedgerStore
import LedgerWire
import Logging
import LedgerCore
import LedgerStore

/// `storeledger serve`: the HTTP/1.1 server on a Unix socket; SIGTERM/SIGINT drain and exit 0.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the ledger over HTTP/1.1 on a Unix socket (default DIR/ledger.sock).",
        discussion: """
            Every route of the socket API (docs/socket-api.md). SIGTERM or SIGINT stop accepting, finish in-flight \
            requests, commit every queued input, remove the socket and exit 0. Log level: $STORELEDGER_LOG_LEVEL \
            (trace, debug, info, notice, warning, error; default info).
            """)

    @OptionGroup var ledger: LedgerOptions

    @Option(name: .long, help: "Socket path (default: the configuration's socket.path, else DIR/ledger.sock).")
    var socket: String?

    @Flag(
        name: .long,
        help: "Answer every request through the general router, the hot reads too (to compare with the fast read path).")
    var noFastReads = false

    @Flag(
        name: .long,
        help: "Make inputs durable with LMDB's own sync on every commit instead of the write-ahead journal (to compare).")
    var noJournal = false

    func run() async throws {
        let configuration = try ledger.loadConfiguration(json: false)
        let path =
            socket ?? configuration.socketPath ?? (ledger.directory as NSString).appendingPathComponent("ledger.sock")
        var logger = Logger(label: "storeledger.server")
        logger.logLevel =
            ProcessInfo.processInfo.environment["STORELEDGER_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
        let store = try ledger.openLedger(configuration, readOnly: false, json: false, journal: !noJournal)
        if let changes = try? store.rulesChanges(), let last = changes.last, last.change.rules != configuration.rules {
            // The log's rules are in force; a configuration file edited since is not applied by a restart.
            logger.warning(
                "the configuration's products or bindingPolicy differ from the rules the ledger recorded at seq \(last.seq); the ledger folds with its own: review with `storeledger replay --what-if`, apply with `storeledger rules apply`")
        }
        let service = LedgerService(ledger: store, configuration: configuration, socketPath: path, logger: logger)
        service.fastReads.isOn = !noFastReads
        let reconciliation = try startReconciliation(configuration, store, logger)
        let outcome: Result<Void, any Error>
        do {
            try await service.runUntilSignalled()
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        await reconciliation?.stop()
        if case .failure(let error) = outcome {
            // The socket path cannot be taken (too long, taken by a file, another server on it).
            if let coded = error as? CodedError { throw CommandFailure(coded, json: false) }
            throw error
        }
    }

    /// The periodic reconciliation with Apple, when the configuration asks for one
    /// (`appStoreServerAPI.reconcileEverySeconds`); nil otherwise.
    private func startReconciliation(_ configuration: LedgerConfiguration, _ store: Ledger, _ logger: Logger) throws
        -> ReconciliationJob?
    {
        guard let source = configuration.source, let data = FileManager.default.contents(atPath: source) else { return nil }
        do {
            guard
                let settings = try AppStoreServerAPISettings.read(
                    configFile: [UInt8](data), baseDirectory: (source as NSString).deletingLastPathComponent),
                let interval = settings.reconcileEverySeconds
            else { return nil }
            let client = try AppStoreServerAPIClient(settings: settings, logger: logger)
            let reconciler = Reconciler(client: client, pipeline: IngestPipeline(ledger: store, configuration: configuration.appStore))
            logger.info(
                "reconciling with Apple periodically",
                metadata: ["every": "\(interval) s", "window": "\(settings.reconcileWindowHours) h",
                           "environment": "\(settings.environment.rawValue)"])
            return ReconciliationJob(
                client: client,
                task: reconciler.startPeriodic(every: interval, window: settings.reconcileWindowHours * 3600, logger: logger))
        } catch {
            throw CommandFailure(error, json: false)
        }
    }
}

/// The running periodic reconciliation: stopped with the server.
struct ReconciliationJob {
    let client: AppStoreServerAPIClient
    let task: Task<Void, Never>

    /// Cancels the job (a run in progress ends at its next request or wait) and closes the client's connections.
    func stop() async {
        task.cancel()
        await task.value
        await client.shutdown()
    }
}
