import ArgumentParser
import Foundation
import LedgerAPI
import LedgerServer
import LedgerWire
import Logging

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
        let service = LedgerService(ledger: store, configuration: configuration, socketPath: path, logger: logger)
        service.fastReads.isOn = !noFastReads
        do {
            try await service.runUntilSignalled()
        } catch let error as CodedError {
            // The socket path cannot be taken (too long, taken by a file, another server on it).
            throw CommandFailure(error, json: false)
        }
    }
}
