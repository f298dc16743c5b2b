import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A NATS server's address (`nats://host:port`).
public struct NATSServer: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `nats://host:port[,nats://host:port…]` (the scheme may be left out; the port defaults to 4222).
    public static func parseList(_ text: String) throws(NATSError) -> [NATSServer] {
        let servers = try text.split(separator: ",").map { item throws(NATSError) -> NATSServer in
            var rest = Substring(item.trimmingCharacters(in: .whitespaces))
            if rest.hasPrefix("nats://") { rest = rest.dropFirst("nats://".count) }
            guard !rest.isEmpty, !rest.contains("/") else { throw NATSError.server("not a NATS address: \(item)") }
            if let colon = rest.lastIndex(of: ":") {
                guard let port = Int(rest[rest.index(after: colon)...]), (1...65535).contains(port) else {
                    throw NATSError.server("not a port in \(item)")
                }
                return NATSServer(host: String(rest[..<colon]), port: port)
            }
            return NATSServer(host: String(rest), port: 4222)
        }
        guard !servers.isEmpty else { throw NATSError.server("no NATS address given") }
        return servers
    }

    public var description: String { "nats://\(host):\(port)" }
}

/// A client connection to a NATS cluster: the text protocol (CONNECT, PUB/HPUB, SUB/UNSUB, MSG/HMSG, PING/PONG),
/// request-reply through one wildcard inbox, and reconnection to the next server of the list when the connection
/// drops (subscriptions are made again there; requests in flight fail with `notConnected`, for the caller to retry).
public final class NATSConnection: @unchecked Sendable {
    public typealias Handler = @Sendable (NATSMessage) -> Void

    public let servers: [NATSServer]
    let group: any EventLoopGroup
    private let name: String
    private let lock = NIOLock()
    // Guarded by `lock`.
    private var channel: (any Channel)?
    private var connectedServer: NATSServer?
    private var subscriptions: [Int: (subject: String, handler: Handler)] = [:]
    private var nextSid = 1
    private var responders: [String: Handler] = [:]
    private var nextToken: UInt64 = 0
    private var pongWaiters: [EventLoopPromise<Void>] = []
    private var closed = false
    private var reconnecting = false
    private var serverIndex = 0
    private var _reconnects = 0
    private var _info: [String: any Sendable] = [:]

    /// The subject prefix of this connection's replies: `_INBOX.<random>.`.
    let inboxPrefix: String

    /// Connects to the first server of `servers` that answers (trying each in turn until `timeout`).
    public static func connect(
        to servers: [NATSServer], name: String = "storeledger", timeout: Duration = .seconds(10)
    ) async throws -> NATSConnection {
        let connection = NATSConnection(servers: servers, name: name)
        try await connection.connectToAny(deadline: ContinuousClock.now + timeout)
        return connection
    }

    init(servers: [NATSServer], name: String) {
        self.servers = servers
        self.name = name
        self.group = MultiThreadedEventLoopGroup.singleton
        var random = SystemRandomNumberGenerator()
        inboxPrefix = "_INBOX." + String(random.next() & 0xFFFF_FFFF_FFFF, radix: 36) + "."
    }

    /// The server connected to right now (nil while reconnecting).
    public var server: NATSServer? { lock.withLock { connectedServer } }
    /// How many times the connection was made again after a drop.
    public var reconnects: Int { lock.withLock { _reconnects } }
    /// Whether the server said it belongs to a cluster (its INFO names one).
    public var isClustered: Bool { lock.withLock { _info["cluster"] != nil } }

    // MARK: - Connecting

    private func connectToAny(deadline: ContinuousClock.Instant) async throws {
        var lastError: any Error = NATSError.notConnected
        while ContinuousClock.now < deadline {
            let (isClosed, start) = lock.withLock { (closed, serverIndex) }
            if isClosed { throw NATSError.closed }
            for offset in 0..<servers.count {
                let index = (start + offset) % servers.count
                do {
                    try await connect(servers[index])
                    lock.withLock { serverIndex = index }
                    return
                } catch {
                    lastError = error
                }
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw lastError is NATSError ? lastError : NATSError.notConnected
    }

    private func connect(_ server: NATSServer) async throws {
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(.seconds(2))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(NATSFrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(NATSInboundHandler(connection: self))
                }
            }
        let channel = try await bootstrap.connect(host: server.host, port: server.port).get()
        // CONNECT, the subscriptions (again, after a reconnect), then PING: its PONG says the server took them all.
        let connect: [String: any Sendable] = [
            "verbose": false, "pedantic": false, "headers": true, "no_responders": true, "protocol": 1,
            "name": name, "lang": "swift", "version": "1.0",
        ]
        let json = String(decoding: try JSONSerialization.data(withJSONObject: connect, options: [.sortedKeys]), as: UTF8.self)
        var text = "CONNECT \(json)\r\n"
        let pong = channel.eventLoop.makePromise(of: Void.self)
        lock.withLock {
            for (sid, subscription) in subscriptions.sorted(by: { $0.key < $1.key }) {
                text += "SUB \(subscription.subject) \(sid)\r\n"
            }
            pongWaiters = [pong]
            self.channel = channel
            connectedServer = server
        }
        text += "PING\r\n"
        channel.writeAndFlush(ByteBuffer(string: text), promise: nil)
        let timeout = channel.eventLoop.scheduleTask(in: .seconds(5)) {
            pong.fail(NATSError.timeout)
        }
        do {
            try await pong.futureResult.get()
            timeout.cancel()
        } catch {
            timeout.cancel()
            lock.withLock {
                if self.channel === channel { self.channel = nil; connectedServer = nil }
            }
            try? await channel.close()
            throw error
        }
    }

    /// The channel closed: fail what waits on it and connect again, to the next server first.
    func lost(_ channel: any Channel) {
        let (shouldReconnect, waiters, pending) = lock.withLock { () -> (Bool, [EventLoopPromise<Void>], [Handler]) in
            guard self.channel === channel else { return (false, [], []) }
            self.channel = nil
            connectedServer = nil
            let waiters = pongWaiters
            pongWaiters = []
            let pending = Array(responders.values)
            responders = [:]
            guard !closed, !reconnecting else { return (false, waiters, pending) }
            reconnecting = true
            serverIndex = (serverIndex + 1) % servers.count
            return (true, waiters, pending)
        }
        for waiter in waiters { waiter.fail(NATSError.notConnected) }
        // Requests in flight may never be answered: each fails, and its caller retries.
        let lostMessage = NATSMessage(
            subject: "", sid: 0, replyTo: nil, headers: [], status: -1, statusDescription: "disconnected", payload: [])
        for responder in pending { responder(lostMessage) }
        guard shouldReconnect else { return }
        Task {
            while true {
                do {
                    try await self.connectToAny(deadline: ContinuousClock.now + .seconds(3600))
                    lock.withLock {
                        reconnecting = false
                        _reconnects += 1
                    }
                    return
                } catch {
                    if lock.withLock({ closed }) { return }
                    try? await Task.sleep(for: .milliseconds(200))
                }
            }
        }
    }

    func received(info: String) {
        guard let data = info.data(using: .utf8),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return }
        var sendable: [String: any Sendable] = [:]
        for (key, value) in object { sendable[key] = "\(value)" }
        lock.withLock { _info = sendable }
    }

    func receivedPong() {
        let waiter = lock.withLock { pongWaiters.isEmpty ? nil : pongWaiters.removeFirst() }
        waiter?.succeed()
    }

    func dispatch(_ message: NATSMessage) {
        if message.subject.hasPrefix(inboxPrefix) {
            let token = String(message.subject.dropFirst(inboxPrefix.count))
            if let responder = lock.withLock({ responders[token] }) { responder(message) }
            return
        }
        if let subscription = lock.withLock({ subscriptions[message.sid] }) { subscription.handler(message) }
    }

    /// Closes the connection for good.
    public func close() async {
        let channel = lock.withLock { () -> (any Channel)? in
            closed = true
            let channel = self.channel
            self.channel = nil
            return channel
        }
        try? await channel?.close()
    }

    // MARK: - Publishing and subscribing

    /// Publishes `payload` on `subject` (HPUB when there are headers). Throws `notConnected` while no server is
    /// connected: nothing was sent, and the caller may retry.
    public func publish(
        _ subject: String, payload: [UInt8], replyTo: String? = nil, headers: [(String, String)] = []
    ) throws(NATSError) {
        guard let channel = lock.withLock({ self.channel }) else { throw .notConnected }
        var buffer = channel.allocator.buffer(capacity: subject.utf8.count + payload.count + 64)
        let reply = replyTo.map { " " + $0 } ?? ""
        if headers.isEmpty {
            buffer.writeString("PUB \(subject)\(reply) \(payload.count)\r\n")
        } else {
            var block = "NATS/1.0\r\n"
            for (name, value) in headers { block += "\(name): \(value)\r\n" }
            block += "\r\n"
            let headerLength = block.utf8.count
            buffer.writeString("HPUB \(subject)\(reply) \(headerLength) \(headerLength + payload.count)\r\n")
            buffer.writeString(block)
        }
        buffer.writeBytes(payload)
        buffer.writeString("\r\n")
        channel.writeAndFlush(buffer, promise: nil)
    }

    /// Subscribes to `subject` (wildcards allowed); the subscription is made again after a reconnect.
    @discardableResult
    public func subscribe(_ subject: String, handler: @escaping Handler) -> Int {
        let (sid, channel) = lock.withLock { () -> (Int, (any Channel)?) in
            let sid = nextSid
            nextSid += 1
            subscriptions[sid] = (subject, handler)
            return (sid, self.channel)
        }
        channel?.writeAndFlush(ByteBuffer(string: "SUB \(subject) \(sid)\r\n"), promise: nil)
        return sid
    }

    public func unsubscribe(_ sid: Int) {
        let channel = lock.withLock { () -> (any Channel)? in
            subscriptions[sid] = nil
            return self.channel
        }
        channel?.writeAndFlush(ByteBuffer(string: "UNSUB \(sid)\r\n"), promise: nil)
    }

    /// Round trip to the server: when it returns, the server has processed everything sent before.
    public func flush(timeout: Duration = .seconds(5)) async throws {
        guard let channel = lock.withLock({ self.channel }) else { throw NATSError.notConnected }
        let pong = channel.eventLoop.makePromise(of: Void.self)
        lock.withLock { pongWaiters.append(pong) }
        channel.writeAndFlush(ByteBuffer(string: "PING\r\n"), promise: nil)
        let task = channel.eventLoop.scheduleTask(in: .nanoseconds(timeout.nanoseconds)) {
            pong.fail(NATSError.timeout)
        }
        defer { task.cancel() }
        try await pong.futureResult.get()
    }

    // MARK: - Request-reply

    /// A fresh reply subject under this connection's inbox, and its token (to register a responder).
    func newInbox() -> (subject: String, token: String) {
        let token = lock.withLock { () -> String in
            nextToken += 1
            return String(nextToken, radix: 36)
        }
        ensureInboxSubscription()
        return (inboxPrefix + token, token)
    }

    /// A fresh subject for one pull request, outside the request-reply inbox's wildcard (so its messages reach only
    /// the subscription made for it).
    func fetchInbox() -> String {
        let token = lock.withLock { () -> String in
            nextToken += 1
            return String(nextToken, radix: 36)
        }
        return String(inboxPrefix.dropLast()) + "-fetch." + token
    }

    private func ensureInboxSubscription() {
        let needed = lock.withLock { () -> Bool in
            if subscriptions.values.contains(where: { $0.subject == inboxPrefix + "*" }) { return false }
            return true
        }
        if needed { subscribe(inboxPrefix + "*") { _ in } }
    }

    /// Calls `handler` for every message sent to `token`'s inbox until `removeResponder(token)`; a message with
    /// status -1 says the connection was lost.
    func setResponder(_ token: String, _ handler: @escaping Handler) {
        lock.withLock { responders[token] = handler }
    }

    func removeResponder(_ token: String) {
        _ = lock.withLock { responders.removeValue(forKey: token) }
    }

    /// Sends a request and waits for the first answer.
    public func request(
        _ subject: String, payload: [UInt8], headers: [(String, String)] = [], timeout: Duration = .seconds(5)
    ) async throws -> NATSMessage {
        let (inbox, token) = newInbox()
        let once = OnceBox()
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<NATSMessage, any Error>) in
            once.set(continuation)
            setResponder(token) { message in
                if message.status == -1 {
                    once.resume(.failure(NATSError.notConnected))
                } else if message.status == 503 {
                    once.resume(.failure(NATSError.noResponders(subject)))
                } else {
                    once.resume(.success(message))
                }
            }
            let timer = group.next().scheduleTask(in: .nanoseconds(timeout.nanoseconds)) {
                once.resume(.failure(NATSError.timeout))
            }
            once.onResume { [weak self] in
                timer.cancel()
                self?.removeResponder(token)
            }
            do {
                try publish(subject, payload: payload, replyTo: inbox, headers: headers)
            } catch {
                once.resume(.failure(error))
            }
        }
    }
}

/// A continuation resumed exactly once, by whichever comes first (the answer, the timer, a lost connection).
final class OnceBox: @unchecked Sendable {
    private let lock = NIOLock()
    private var continuation: CheckedContinuation<NATSMessage, any Error>?
    private var cleanup: (@Sendable () -> Void)?
    private var done = false

    func set(_ continuation: CheckedContinuation<NATSMessage, any Error>) {
        lock.withLock { self.continuation = continuation }
    }

    func onResume(_ cleanup: @escaping @Sendable () -> Void) {
        let runNow = lock.withLock { () -> Bool in
            if done { return true }
            self.cleanup = cleanup
            return false
        }
        if runNow { cleanup() }
    }

    func resume(_ result: Result<NATSMessage, any Error>) {
        let (continuation, cleanup) = lock.withLock { () -> (CheckedContinuation<NATSMessage, any Error>?, (@Sendable () -> Void)?) in
            if done { return (nil, nil) }
            done = true
            defer { self.continuation = nil; self.cleanup = nil }
            return (self.continuation, self.cleanup)
        }
        cleanup?()
        continuation?.resume(with: result)
    }
}

/// Answers PING, hands messages to the connection, and tells it when the channel closes.
final class NATSInboundHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = NATSFrame
    let connection: NATSConnection

    init(connection: NATSConnection) { self.connection = connection }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .ping: context.writeAndFlush(NIOAny(ByteBuffer(string: "PONG\r\n")), promise: nil)
        case .pong: connection.receivedPong()
        case .info(let json): connection.received(info: json)
        case .message(let message): connection.dispatch(message)
        case .ok: break
        case .error(let text):
            // Permissions and parser errors close the connection on the server's side; others are informational.
            if text.lowercased().contains("permissions") { return }
            context.close(promise: nil)
            _ = text
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.lost(context.channel)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

extension Duration {
    /// The duration in whole nanoseconds (JetStream's API and NIO's timers count in them).
    public var nanoseconds: Int64 {
        components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }
}
