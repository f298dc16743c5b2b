#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Hummingbird
import HummingbirdCore
import LedgerAPI
import LedgerIngest
import LedgerStore
import LedgerClient
import LedgerErrors
import Logging
import NIOCore
import ServiceLifecycle
import UnixSignals

// MARK: - LedgerService

/// The ledger's server: HTTP/1.1 on a Unix socket (Hummingbird), serving `LedgerRoutes`.
///
/// `run()` refuses to start when another server answers on the socket path, replaces a stale socket file left by a
/// crashed run, binds, sets the socket's mode, and serves until graceful shutdown (SIGTERM/SIGINT through a
/// `ServiceGroup`). Then it stops accepting, finishes in-flight requests, ends followers, closes the ledger (every
/// queued input is committed first) and removes the socket file.
public final class LedgerService: Service, Sendable {
    public let api: LedgerRoutes
    public let socketPath: String
    let logger: Logger
    private let bound = BoundSocket()
    /// Whether new connections answer the hot reads and plain appends on their event loop (`FastPathHandler`); on by default.
    public let fastPath = FastPathSwitch()
    private let connections = ConnectionRegistry()

    /// - Parameters:
    ///   - ledger: an open, writable ledger. The service closes it when it stops.
    ///   - configuration: limits, writers, socket mode, Apple decoding.
    ///   - socketPath: where to listen.
    ///   - keepAnswers: whether the hot reads' answers are kept between the commits that change them
    ///     (`AnswerCache`; `serve --no-answer-cache` turns it off).
    ///   - intake: a replicated intake that appends in the place of the ledger (`serve --intake`); nil by default.
    public init(
        ledger: Ledger, configuration: LedgerConfiguration, socketPath: String, logger: Logger, keepAnswers: Bool = true,
        intake: (any Intake)? = nil
    ) {
        self.api = LedgerRoutes(
            ledger: ledger, configuration: configuration, logger: logger, keepAnswers: keepAnswers, intake: intake)
        self.socketPath = socketPath
        self.logger = logger
    }

    /// Serves until graceful shutdown or cancellation; closes the ledger and removes the socket in every case.
    public func run() async throws {
        defer {
            api.endFollowers()
            api.ledger.close()
            bound.removeSocketFile(at: socketPath)
        }
        try SocketFile.prepare(socketPath)
        warnIfDescriptorsCannotHoldTheConnectionLimit()
        let mode = api.configuration.socketMode
        let path = socketPath
        let bound = self.bound
        let logger = self.logger
        let limits = ConnectionLimits(api.configuration.limits)
        let connections = self.connections
        let api = self.api
        let fastPath = self.fastPath
        // The outbound webhook runs beside the server; made before the server binds, so a trusted certificate it
        // cannot read stops the start. Nothing after it throws before the `do` below, which closes its client.
        let delivery = try api.configuration.webhook.map { webhook throws(CodedError) in
            try WebhookDelivery(ledger: api.ledger, webhook: webhook, commits: api.commits, logger: logger)
        }
        let app = Application(
            router: api.makeRouter(),
            server: HTTPServerBuilder { responder in
                GuardedHTTP1Channel(
                    responder: responder, limits: limits, connections: connections,
                    writers: api.configuration.writers, metrics: api.metrics,
                    fastPath: (api, fastPath),
                    onMalformedHead: { channel, head, message in
                        api.recordMalformedHead(channel, head: head, message: message)
                    })
            },
            configuration: .init(address: .unixDomainSocket(path: socketPath), serverName: nil),
            onServerRunning: { _ in
                if chmod(path, mode_t(mode)) != 0 {
                    logger.error("cannot set the socket's mode", metadata: ["path": "\(path)", "errno": "\(errno)"])
                }
                bound.remember(path)
                logger.info("listening", metadata: ["socket": "\(path)", "mode": "\(String(mode, radix: 8))"])
            },
            logger: logger
        )
        // The webhook is stopped (and awaited, its HTTP client closed) before the ledger closes. What it had not
        // delivered by then is delivered after the next start.
        let deliveryTask = delivery.map { d in Task { await d.run() } }
        do {
            try await withGracefulShutdownHandler {
                try await app.run()
            } onGracefulShutdown: {
                logger.info("shutting down: finishing in-flight requests")
                api.endFollowers()
            }
        } catch {
            deliveryTask?.cancel()
            await deliveryTask?.value
            await delivery?.shutdown()
            throw error
        }
        deliveryTask?.cancel()
        await deliveryTask?.value
        await delivery?.shutdown()
        logger.info("stopped", metadata: ["lastSeq": "\((try? api.ledger.lastSeq()) ?? 0)"])
    }

    /// The connection limit only protects the server if that many connections fit in its descriptor limit, with
    /// room for the ledger's files and the listening socket.
    private func warnIfDescriptorsCannotHoldTheConnectionLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let wanted = UInt64(api.configuration.limits.maxConnections) + 64
        if UInt64(limit.rlim_cur) < wanted {
            logger.warning(
                "limits.maxConnections does not fit in the file descriptor limit: raise ulimit -n or lower it",
                metadata: ["maxConnections": "\(api.configuration.limits.maxConnections)", "nofile": "\(limit.rlim_cur)"])
        }
    }

    /// Runs the service in a `ServiceGroup` that shuts it down gracefully on SIGTERM and SIGINT (`storeledger serve`).
    public func runUntilSignalled() async throws {
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: self)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }

    /// Connections open right now (including ones being refused over `limits.maxConnections`).
    public var openConnections: Int { connections.current }

    /// Whether the socket is bound and the server accepts connections.
    public var isListening: Bool { bound.inode != nil }
}

// MARK: - The socket file

enum SocketFile {
    /// Makes `path` free for binding: refuses when a live server answers on it or when it is not a socket
    /// (`socket_path_too_long`, `socket_path_taken`, `socket_in_use`); unlinks a stale socket file (nobody accepts on
    /// it, as after kill -9).
    static func prepare(_ path: String) throws(CodedError) {
        guard path.utf8.count <= UnixSocket.maxPathLength else {
            throw CodedError(
                .socketPathTooLong, "\(path) is longer than \(UnixSocket.maxPathLength) bytes (use --socket)")
        }
        guard let info = FileIdentity(path) else { return }  // nothing there
        guard info.isSocket else {
            throw CodedError(.socketPathTaken, "\(path) exists and is not a socket")
        }
        if UnixSocket.isLive(path) {
            throw CodedError(.socketInUse, "another server is listening on \(path)")
        }
        guard unlink(path) == 0 || errno == ENOENT else {
            throw CodedError(
                .socketPathTaken, "cannot remove the stale socket \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// The identity of the socket file this server bound, so that shutdown removes that file and never another
/// server's that replaced it.
final class BoundSocket: @unchecked Sendable {
    private let lock = NSLock()
    private var _inode: UInt64?

    var inode: UInt64? { lock.withLock { _inode } }

    func remember(_ path: String) {
        guard let info = FileIdentity(path) else { return }
        lock.withLock { _inode = info.inode }
    }

    func removeSocketFile(at path: String) {
        guard let inode = lock.withLock({ _inode }) else { return }
        if let info = FileIdentity(path), info.inode == inode, info.isSocket {
            unlink(path)
        }
        lock.withLock { _inode = nil }
    }
}

