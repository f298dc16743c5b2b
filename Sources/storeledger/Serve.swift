import ArgumentParser
import Foundation
import LedgerAPI
import LedgerAppleAPI
import LedgerCore
import LedgerIngest
import LedgerReplication
import LedgerServer
import LedgerStore
import LedgerErrors
import Logging
import NATSClient

/// `storeledger serve`: the HTTP/1.1 server on a Unix socket; SIGTERM/SIGINT drain and exit 0.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the ledger over HTTP/1.1 on a Unix socket (default DIR/ledger.sock).",
        discussion: """
            Every route of the socket API (docs/socket-api.md). SIGTERM or SIGINT stop accepting, finish in-flight \
            requests, commit every queued input, remove the socket and exit 0. Log level: $STORELEDGER_LOG_LEVEL \
            (trace, debug, info, notice, warning, error; default info). With --intake, accepted inputs go through \
            a replicated NATS JetStream stream that every replica appends from in one order (docs/scaling.md).
            """)

    @OptionGroup var ledger: LedgerOptions

    @Option(name: .long, help: "Socket path (default: the configuration's socket.path, else DIR/ledger.sock).")
    var socket: String?

    @Flag(
        name: [.customLong("no-fast-path"), .customLong("no-fast-reads")],
        help: "Answer every request through the general router, the hot reads and plain appends too (to compare with the fast path).")
    var noFastPath = false

    @Flag(
        name: .long,
        help: "Make inputs durable with LMDB's own sync on every commit instead of the write-ahead journal (to compare).")
    var noJournal = false

    @Flag(
        name: .long,
        help: "Make every read's answer anew: keep no answers between the commits that change them (to compare).")
    var noAnswerCache = false

    @Option(
        name: .long,
        help: "Replicate through NATS JetStream: nats://host:port[,nats://host:port…] (the servers of one cluster).")
    var intake: String?

    @Option(name: .long, help: "With --intake: this replica's name, unique and stable (its durable consumer).")
    var node: String?

    @Option(name: .long, help: "With --intake: how many partitions the inputs are spread over (by OTID; default 1).")
    var partitions: Int = 1

    @Option(name: .long, help: "With --intake: the partitions this ledger holds, e.g. 0,2-3 (default: all).")
    var partitionSet: String?

    @Option(name: .long, help: "With --intake: the stream's replicas when it is made (default 3 in a cluster, else 1).")
    var intakeReplicas: Int?

    func validate() throws {
        if intake == nil {
            guard node == nil, partitions == 1, partitionSet == nil, intakeReplicas == nil else {
                throw ValidationError("--node, --partitions, --partition-set and --intake-replicas need --intake")
            }
            return
        }
        _ = try natsServers()
        guard let node, !node.isEmpty, node.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else { throw ValidationError("--intake needs --node NAME (letters, digits, - and _): this replica's stable name") }
        guard (1...1024).contains(partitions) else { throw ValidationError("--partitions must be 1…1024") }
        if let partitionSet, Partitioning.parseSet(partitionSet, count: partitions) == nil {
            throw ValidationError("--partition-set '\(partitionSet)' is not a list of partitions below \(partitions) (e.g. 0,2-3)")
        }
        if let intakeReplicas, !(1...5).contains(intakeReplicas) { throw ValidationError("--intake-replicas must be 1…5") }
    }

    private func natsServers() throws -> [NATSServer] {
        do {
            return try NATSServer.parseList(intake ?? "")
        } catch {
            throw ValidationError("--intake: \(error)")
        }
    }

    func run() async throws {
        let configuration = try ledger.loadConfiguration(json: false)
        let path =
            socket ?? configuration.socketPath ?? (ledger.directory as NSString).appendingPathComponent("ledger.sock")
        var logger = Logger(label: "storeledger.server")
        logger.logLevel =
            ProcessInfo.processInfo.environment["STORELEDGER_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
        let store = try ledger.openLedger(configuration, readOnly: false, json: false, journal: !noJournal)
        var replicated: ReplicatedIntake?
        if intake != nil, let node {
            var settings = ReplicatedIntake.Settings(servers: try natsServers(), node: node)
            settings.partitioning = Partitioning(
                count: partitions, held: partitionSet.flatMap { Partitioning.parseSet($0, count: partitions) })
            settings.replicas = intakeReplicas
            do {
                replicated = try await ReplicatedIntake.start(
                    ledger: store,
                    pipeline: IngestPipeline(ledger: store, configuration: LedgerRoutes.decoding(configuration)),
                    settings: settings, logger: logger)
            } catch {
                store.close()
                throw CommandFailure(
                    code: .intakeUnavailable, message: "cannot start the intake on \(intake ?? ""): \(error)", json: false)
            }
        }
        let service = LedgerService(
            ledger: store, configuration: configuration, socketPath: path, logger: logger, keepAnswers: !noAnswerCache,
            intake: replicated)
        service.fastPath.isOn = !noFastPath
        // The periodic reconciliation appends to the ledger directly; with a replicated intake that would write past
        // the stream (and differ between replicas), so it is not started then (docs/scaling.md).
        let reconciliation = replicated == nil ? try startReconciliation(configuration, store, logger) : nil
        let outcome: Result<Void, any Error>
        do {
            try await service.runUntilSignalled()
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        await reconciliation?.stop()
        await replicated?.stop()
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
                    configFile: [UInt8](data), baseDirectory: LedgerConfiguration.directory(of: source)),
                let interval = settings.reconcileEverySeconds
            else { return nil }
            let client = try AppStoreServerAPIClient(settings: settings, logger: logger)
            let reconciler = Reconciler(client: client, pipeline: IngestPipeline(ledger: store, configuration: configuration.appStore))
            logger.info(
                "reconciling with Apple periodically",
                metadata: ["every": "\(interval) s", "window": "\(settings.reconcileWindowHours) h",
                           "modes": "\(settings.reconcileModes.map(\.rawValue).joined(separator: ","))",
                           "onlyFailures": "\(settings.reconcileOnlyFailures)",
                           "environment": "\(settings.environment.rawValue)"])
            return ReconciliationJob(
                client: client,
                task: reconciler.startPeriodic(
                    every: interval, window: settings.reconcileWindowHours * 3600, modes: settings.reconcileModes,
                    onlyFailures: settings.reconcileOnlyFailures, logger: logger))
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
