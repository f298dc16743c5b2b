import Foundation

/// JetStream's JSON API over request-reply (`$JS.API.…`): streams, durable pull consumers, publishing with
/// de-duplication, fetching and acknowledging. Only what a replicated intake needs.
public struct JetStream: Sendable {
    public let connection: NATSConnection
    /// How long an API call or a publish waits for its answer.
    public var timeout: Duration

    public init(_ connection: NATSConnection, timeout: Duration = .seconds(5)) {
        self.connection = connection
        self.timeout = timeout
    }

    // MARK: - Streams

    /// A stream's configuration (the subset the ledger sets; the server fills the rest with its defaults).
    public struct StreamConfig: Codable, Sendable, Equatable {
        public var name: String
        public var subjects: [String]
        public var numReplicas: Int
        /// `file` (durable) or `memory`.
        public var storage: String = "file"
        /// `limits`: messages stay until limits say otherwise (none here): every replica can replay from 1.
        public var retention: String = "limits"
        /// The window in which a second publish with the same `Nats-Msg-Id` is answered as a duplicate, in ns.
        public var duplicateWindow: Int64
        /// How many messages the stream keeps per subject (the older ones are dropped); nil or -1: no limit.
        public var maxMsgsPerSubject: Int64?
        public init(
            name: String, subjects: [String], numReplicas: Int, duplicateWindow: Duration = .seconds(120),
            maxMsgsPerSubject: Int64? = nil
        ) {
            self.name = name
            self.subjects = subjects
            self.numReplicas = numReplicas
            self.duplicateWindow = duplicateWindow.nanoseconds
            self.maxMsgsPerSubject = maxMsgsPerSubject
        }
    }

    public struct StreamState: Codable, Sendable {
        public var messages: UInt64
        public var firstSeq: UInt64
        public var lastSeq: UInt64
    }

    public struct StreamInfo: Codable, Sendable {
        public var config: StreamConfig
        public var state: StreamState
    }

    /// Creates the stream, or returns the existing one's info when a stream of that name exists.
    @discardableResult
    public func addStream(_ config: StreamConfig) async throws -> StreamInfo {
        do {
            return try await call("STREAM.CREATE.\(config.name)", config, as: StreamInfo.self)
        } catch NATSError.jetStream(_, let errorCode, _) where errorCode == 10058 {
            // JSStreamNameExistErr: another node made it first (its configuration differs in a default).
            guard let info = try await streamInfo(config.name) else { throw NATSError.timeout }
            return info
        }
    }

    /// The stream's info; nil when there is no such stream.
    public func streamInfo(_ name: String) async throws -> StreamInfo? {
        do {
            return try await call("STREAM.INFO.\(name)", Empty(), as: StreamInfo.self)
        } catch NATSError.jetStream(404, _, _) {
            return nil
        }
    }

    public func deleteStream(_ name: String) async throws {
        _ = try await call("STREAM.DELETE.\(name)", Empty(), as: Success.self)
    }

    /// Removes the stream's messages below sequence `seq`, or whose subject is `subject`, or both (JetStream's
    /// purge with `seq` and `filter`); the count removed.
    @discardableResult
    public func purge(stream: String, below seq: UInt64? = nil, subject: String? = nil) async throws -> UInt64 {
        struct Request: Encodable {
            var seq: UInt64?
            var filter: String?
        }
        struct Answer: Decodable { var purged: UInt64? }
        return try await call("STREAM.PURGE.\(stream)", Request(seq: seq, filter: subject), as: Answer.self).purged ?? 0
    }

    /// A message as the stream stores it.
    public struct StoredMessage: Sendable {
        public var subject: String
        public var seq: UInt64
        public var payload: [UInt8]
    }

    /// The first message at or after sequence `seq` whose subject matches `subject` (wildcards allowed); nil when
    /// there is none.
    public func message(stream: String, from seq: UInt64, subject: String) async throws -> StoredMessage? {
        struct Request: Encodable {
            var seq: UInt64
            var nextBySubj: String
        }
        struct Answer: Decodable {
            struct Message: Decodable {
                var subject: String
                var seq: UInt64
                var data: String?
            }
            var message: Message
        }
        do {
            let answer = try await call(
                "STREAM.MSG.GET.\(stream)", Request(seq: max(seq, 1), nextBySubj: subject), as: Answer.self)
            let payload = answer.message.data.flatMap { Data(base64Encoded: $0) }.map { Array($0) } ?? []
            return StoredMessage(subject: answer.message.subject, seq: answer.message.seq, payload: payload)
        } catch NATSError.jetStream(404, _, _) {
            return nil
        }
    }

    // MARK: - Consumers

    public struct ConsumerConfig: Codable, Sendable {
        public var durableName: String
        /// `all`, or `by_start_sequence` with `optStartSeq`.
        public var deliverPolicy: String
        public var optStartSeq: UInt64?
        public var ackPolicy: String = "explicit"
        /// How long a delivered message may stay unacknowledged before it is delivered again, in ns.
        public var ackWait: Int64
        public var maxAckPending: Int
        public var filterSubject: String?
        public init(
            durableName: String, startSequence: UInt64, filterSubject: String? = nil, ackWait: Duration = .seconds(30),
            maxAckPending: Int = 20_000
        ) {
            self.durableName = durableName
            self.deliverPolicy = startSequence <= 1 ? "all" : "by_start_sequence"
            self.optStartSeq = startSequence <= 1 ? nil : startSequence
            self.filterSubject = filterSubject
            self.ackWait = ackWait.nanoseconds
            self.maxAckPending = maxAckPending
        }
    }

    public struct SequenceInfo: Codable, Sendable {
        public var consumerSeq: UInt64
        public var streamSeq: UInt64
    }

    public struct ConsumerInfo: Codable, Sendable {
        public var streamName: String
        public var name: String
        public var config: ConsumerConfig
        public var delivered: SequenceInfo
        public var ackFloor: SequenceInfo
        public var numPending: UInt64
        public var numAckPending: Int
    }

    /// Creates a durable consumer (or updates it to `config` where JetStream allows).
    @discardableResult
    public func addConsumer(stream: String, _ config: ConsumerConfig) async throws -> ConsumerInfo {
        struct Request: Encodable {
            var streamName: String
            var config: ConsumerConfig
        }
        return try await call(
            "CONSUMER.DURABLE.CREATE.\(stream).\(config.durableName)", Request(streamName: stream, config: config),
            as: ConsumerInfo.self)
    }

    /// The consumer's info; nil when there is no such consumer.
    public func consumerInfo(stream: String, name: String) async throws -> ConsumerInfo? {
        do {
            return try await call("CONSUMER.INFO.\(stream).\(name)", Empty(), as: ConsumerInfo.self)
        } catch NATSError.jetStream(404, _, _) {
            return nil
        }
    }

    /// Deletes the consumer; false when there was none.
    @discardableResult
    public func deleteConsumer(stream: String, name: String) async throws -> Bool {
        do {
            _ = try await call("CONSUMER.DELETE.\(stream).\(name)", Empty(), as: Success.self)
            return true
        } catch NATSError.jetStream(404, _, _) {
            return false
        }
    }

    // MARK: - Publishing

    /// JetStream's answer to a publish: the stream and the message's sequence in it; `duplicate` when a message of
    /// the same `Nats-Msg-Id` was stored within the window (then `seq` is that message's).
    public struct PubAck: Codable, Sendable, Equatable {
        public var stream: String
        public var seq: UInt64
        public var duplicate: Bool?
    }

    /// Publishes and waits until the stream stored the message (on a quorum of its replicas).
    public func publish(_ subject: String, payload: [UInt8], messageId: String? = nil) async throws -> PubAck {
        let headers = messageId.map { [("Nats-Msg-Id", $0)] } ?? []
        let answer = try await connection.request(subject, payload: payload, headers: headers, timeout: timeout)
        return try Self.decode(answer.payload, as: PubAck.self)
    }

    // MARK: - Pull consumers

    /// Up to `batch` messages of a pull consumer, waiting at most `expires` for the first; fewer (or none) when the
    /// stream has no more.
    public func fetch(stream: String, consumer: String, batch: Int, expires: Duration) async throws -> [JetStreamMessage] {
        struct Next: Encodable {
            var batch: Int
            var expires: Int64
        }
        // A subscription of its own: JetStream delivers the messages with their own subjects to the pull request's
        // subscription (by its sid), so the request-reply inbox, which routes by subject, cannot take them.
        let inbox = connection.fetchInbox()
        let collector = FetchCollector(batch: batch)
        let sid = connection.subscribe(inbox) { collector.add($0) }
        defer { connection.unsubscribe(sid) }
        let body = try JSONEncoder.jetStream.encode(Next(batch: batch, expires: expires.nanoseconds))
        try connection.publish(
            "$JS.API.CONSUMER.MSG.NEXT.\(stream).\(consumer)", payload: Array(body), replyTo: inbox)
        return try await collector.wait(for: expires + .milliseconds(500))
    }

    /// A pull consumer's messages as JetStream delivers them (see `PullConsumer`); `close()` it when done.
    public func pull(stream: String, consumer: String, batch: Int, expires: Duration) -> PullConsumer {
        PullConsumer(
            connection: connection, subject: "$JS.API.CONSUMER.MSG.NEXT.\(stream).\(consumer)", batch: batch,
            expires: expires)
    }

    /// Acknowledges a message: JetStream will not deliver it again to this consumer.
    public func ack(_ message: JetStreamMessage) throws(NATSError) {
        try connection.publish(message.replyTo, payload: Array("+ACK".utf8))
    }

    // MARK: - The API call

    private struct Empty: Codable {}
    private struct Success: Codable { var success: Bool? }
    private struct APIError: Codable {
        struct Detail: Codable {
            var code: Int
            var errCode: Int?
            var description: String?
        }
        var error: Detail?
    }

    private func call<Answer: Decodable>(
        _ api: String, _ body: some Encodable, as: Answer.Type
    ) async throws -> Answer {
        let payload = try JSONEncoder.jetStream.encode(body)
        let answer = try await connection.request("$JS.API." + api, payload: Array(payload), timeout: timeout)
        return try Self.decode(answer.payload, as: Answer.self)
    }

    /// The answer, or the JetStream error it carries.
    static func decode<Answer: Decodable>(_ bytes: [UInt8], as: Answer.Type) throws -> Answer {
        let data = Data(bytes)
        if let failure = try? JSONDecoder.jetStream.decode(APIError.self, from: data), let error = failure.error {
            throw NATSError.jetStream(
                code: error.code, errorCode: error.errCode ?? 0, description: error.description ?? "")
        }
        do {
            return try JSONDecoder.jetStream.decode(Answer.self, from: data)
        } catch {
            throw NATSError.protocolViolation(
                "JetStream answered what is not a \(Answer.self): \(String(decoding: bytes.prefix(200), as: UTF8.self))")
        }
    }
}

/// A message delivered by a pull consumer, with what its reply subject says about it.
public struct JetStreamMessage: Sendable {
    public var subject: String
    public var payload: [UInt8]
    public var headers: [(name: String, value: String)]
    /// `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>` (or the form with a domain and an
    /// account hash before the stream): where the acknowledgement goes.
    public var replyTo: String
    public var stream: String
    public var streamSequence: UInt64
    public var consumerSequence: UInt64
    /// How many times this message was delivered (1 the first time).
    public var deliveries: UInt64
    /// When the stream stored the message, in nanoseconds since epoch (set by the stream's leader).
    public var timestamp: Int64
    public var pending: UInt64

    /// Reads the metadata from the reply subject; nil when it is not JetStream's.
    public init?(_ message: NATSMessage) {
        guard let reply = message.replyTo else { return nil }
        let tokens = reply.split(separator: ".", omittingEmptySubsequences: false)
        guard tokens.count >= 9, tokens[0] == "$JS", tokens[1] == "ACK" else { return nil }
        // The older form has 9 tokens; the newer one adds a domain and an account hash before the stream (and may
        // end with a random token).
        let base = tokens.count == 9 ? 2 : 4
        guard tokens.count >= base + 7,
            let delivered = UInt64(tokens[base + 2]), let sseq = UInt64(tokens[base + 3]),
            let cseq = UInt64(tokens[base + 4]), let ts = Int64(tokens[base + 5]), let pending = UInt64(tokens[base + 6])
        else { return nil }
        self.subject = message.subject
        self.payload = message.payload
        self.headers = message.headers
        self.replyTo = reply
        self.stream = String(tokens[base])
        self.streamSequence = sseq
        self.consumerSequence = cseq
        self.deliveries = delivered
        self.timestamp = ts
        self.pending = pending
    }
}

/// A pull consumer read as a stream: one pull request is kept open (made again when its batch has been delivered,
/// when it expires, or when its time is up without a word from the server), and `next()` hands over whatever has
/// arrived, waiting only while nothing has. A reader so gets each message as soon as JetStream delivers it, not when a
/// batch fills or a request expires (`fetch`'s latency), and an idle consumer costs one request per `expires`.
public final class PullConsumer: @unchecked Sendable {
    private let connection: NATSConnection
    private let subject: String
    private let inbox: String
    private let batch: Int
    private let expires: Duration
    private var sid = 0
    private let lock = NSLock()
    // Guarded by `lock`.
    private var buffer: [JetStreamMessage] = []
    /// Messages the open request may still deliver; 0 when no request is open.
    private var outstanding = 0
    private var requestDeadline = ContinuousClock.now
    private var failure: NATSError?
    private var waiter: CheckedContinuation<Void, Never>?

    init(connection: NATSConnection, subject: String, batch: Int, expires: Duration) {
        self.connection = connection
        self.subject = subject
        self.batch = batch
        self.expires = expires
        // Its own subscription: JetStream delivers a pull request's messages to the request's reply subject.
        inbox = connection.fetchInbox()
        sid = connection.subscribe(inbox) { [weak self] in self?.add($0) }
    }

    /// Ends the subscription; messages still in flight to it are delivered again to the next reader (unacknowledged).
    public func close() { connection.unsubscribe(sid) }

    /// The messages delivered since the last call, in delivery order; waits while there are none, making a pull
    /// request when none is open. Returns an empty array when a request ended without messages (the stream has none
    /// now), so the caller can look at its own state between requests. Throws when the connection dropped, the
    /// server ended the request with an error (409: the consumer was deleted or changed leader), or the task was
    /// cancelled.
    public func next() async throws -> [JetStreamMessage] {
        var asked = false
        while true {
            try Task.checkCancellation()
            switch nextStep(asked: asked) {
            case .deliver(let messages): return messages
            case .fail(let failure): throw failure
            case .endedEmpty: return []
            case .wait(let deadline): await waitForDelivery(until: deadline)
            case .ask(let deadline):
                asked = true
                struct Next: Encodable {
                    var batch: Int
                    var expires: Int64
                }
                let body = try JSONEncoder.jetStream.encode(Next(batch: batch, expires: expires.nanoseconds))
                try connection.publish(subject, payload: Array(body), replyTo: inbox)
                await waitForDelivery(until: deadline)
            }
        }
    }

    private enum Step {
        case deliver([JetStreamMessage])
        case fail(NATSError)
        /// The request this call made ended with nothing.
        case endedEmpty
        case ask(until: ContinuousClock.Instant)
        case wait(until: ContinuousClock.Instant)
    }

    private func nextStep(asked: Bool) -> Step {
        let now = ContinuousClock.now
        return lock.withLock {
            if !buffer.isEmpty {
                defer { buffer.removeAll(keepingCapacity: true) }
                return .deliver(buffer)
            }
            if let failure {
                self.failure = nil
                outstanding = 0
                return .fail(failure)
            }
            // Is the last request over (delivered, expired, or silent past its time)?
            guard outstanding == 0 || now >= requestDeadline else { return .wait(until: requestDeadline) }
            if asked { return .endedEmpty }
            outstanding = batch
            requestDeadline = now + expires + .milliseconds(500)
            return .ask(until: requestDeadline)
        }
    }

    /// Waits until `add` has something for `next` (a message, the end of the request, a failure) or `deadline`.
    private func waitForDelivery(until deadline: ContinuousClock.Instant) async {
        let timer = Task { [weak self] in
            try? await Task.sleep(until: deadline)
            self?.wake()
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = lock.withLock {
                    if !buffer.isEmpty || failure != nil || outstanding == 0 || Task.isCancelled { return true }
                    waiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            wake()
        }
        timer.cancel()
    }

    private func wake() {
        let waiter = lock.withLock {
            defer { self.waiter = nil }
            return self.waiter
        }
        waiter?.resume()
    }

    func add(_ message: NATSMessage) {
        lock.withLock {
            if let status = message.status {
                switch status {
                case 100: return  // an idle heartbeat
                case 404, 408: outstanding = 0  // no messages; the request expired
                case -1: failure = .notConnected
                default: failure = .server("the pull request ended with status \(status) \(message.statusDescription ?? "")")
                }
            } else if let js = JetStreamMessage(message) {
                buffer.append(js)
                outstanding = max(0, outstanding - 1)
            } else {
                return
            }
        }
        wake()
    }
}

/// Gathers a fetch's messages until the batch is full, a status ends it (404 no messages, 408 expired, 409 the
/// consumer changed), the connection drops, or the time is up.
final class FetchCollector: @unchecked Sendable {
    private let condition = NSCondition()
    private let batch: Int
    private var messages: [JetStreamMessage] = []
    private var finished = false
    private var failure: NATSError?
    private var continuation: CheckedContinuation<Void, Never>?

    init(batch: Int) { self.batch = batch }

    func add(_ message: NATSMessage) {
        condition.lock()
        if let status = message.status {
            switch status {
            case 100: break  // an idle heartbeat
            case 404, 408: finished = true  // no messages; the request expired
            case -1:
                failure = .notConnected
                finished = true
            default:
                // 409: the consumer was deleted or changed leader; 503: no consumer answers. The caller makes it again.
                failure = .server("the fetch ended with status \(status) \(message.statusDescription ?? "")")
                finished = true
            }
        } else if let js = JetStreamMessage(message) {
            messages.append(js)
            if messages.count >= batch { finished = true }
        }
        let resume = finished ? continuation : nil
        if finished { continuation = nil }
        condition.unlock()
        resume?.resume()
    }

    private func finish() {
        condition.lock()
        finished = true
        let resume = continuation
        continuation = nil
        condition.unlock()
        resume?.resume()
    }

    func wait(for limit: Duration) async throws -> [JetStreamMessage] {
        let timer = Task {
            try? await Task.sleep(for: limit)
            self.finish()
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            if finished {
                condition.unlock()
                continuation.resume()
            } else {
                self.continuation = continuation
                condition.unlock()
            }
        }
        timer.cancel()
        return try outcome()
    }

    private func outcome() throws -> [JetStreamMessage] {
        condition.lock()
        defer { condition.unlock() }
        if let failure, messages.isEmpty { throw failure }
        return messages
    }
}

extension JSONEncoder {
    static var jetStream: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return encoder
    }
}

extension JSONDecoder {
    static var jetStream: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }
}
