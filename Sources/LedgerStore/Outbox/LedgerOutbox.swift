import LMDB
import LedgerCodec
import LedgerCore
import LedgerErrors

// MARK: - Outbound webhook: where delivery stands, and the dead letters

/// Where an event stands in the lifecycle stream: the seq of the input that said it, its environment's code, its
/// index among what that input said about that subscription (the `lifecycle` key). Written `SEQ.ENV.INDEX`.
public struct LifecyclePosition: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var seq: UInt64
    public var environmentCode: UInt8
    public var index: Int

    public init(seq: UInt64, environmentCode: UInt8, index: Int) {
        self.seq = seq
        self.environmentCode = environmentCode
        self.index = index
    }

    /// The position a key of `database` (`lifecycle`, or `webhook_dead`, whose keys are `lifecycle` keys) names; a
    /// key of another length is `corrupted`.
    init(key: MappedBytes, of database: StaticString) throws(LedgerError) {
        self.init(
            measured: key, seq: try BigEndian.uint64(key: key, of: database, length: StoreLayout.lifecycleKeyLength))
    }

    /// The position stored as the value of `meta` key `webhook_position`; a value of another length is `corrupted`.
    init(webhookPosition value: MappedBytes) throws(LedgerError) {
        self.init(
            measured: value,
            seq: try BigEndian.uint64(
                value: value, of: "meta", name: "key `webhook_position`", length: StoreLayout.lifecycleKeyLength))
    }

    /// The position in `bytes`, a `lifecycle` key whose length the caller checked, and whose seq it read.
    private init(measured bytes: MappedBytes, seq: UInt64) {
        self.init(
            seq: seq, environmentCode: bytes[8],
            index: Int(bytes[9]) << 24 | Int(bytes[10]) << 16 | Int(bytes[11]) << 8 | Int(bytes[12]))
    }

    /// `SEQ.ENV.INDEX`, as `description` writes it.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let seq = UInt64(parts[0]), let code = UInt8(parts[1]), let index = Int(parts[2]),
            index >= 0, index <= Int(UInt32.max)
        else { return nil }
        self.init(seq: seq, environmentCode: code, index: index)
    }

    var key: [UInt8] {
        var k = BigEndian.bytes(seq)
        k.append(environmentCode)
        for shift in [24, 16, 8, 0] { k.append(UInt8(truncatingIfNeeded: index >> shift)) }
        return k
    }

    public var description: String { "\(seq).\(environmentCode).\(index)" }

    public static func < (a: LifecyclePosition, b: LifecyclePosition) -> Bool {
        (a.seq, a.environmentCode, a.index) < (b.seq, b.environmentCode, b.index)
    }
}

/// A lifecycle event the webhook gave up on after its attempts, kept until the operator replays it.
public struct DeadLetter: Hashable, Sendable {
    public var position: LifecyclePosition
    public var event: LifecycleEvent
    /// Attempts made, replays included.
    public var attempts: Int
    /// When the last attempt failed (ms since epoch).
    public var failedAt: UnixMillis
    /// Why the last attempt failed: the receiver's status, or the connection's error.
    public var reason: String
    /// The operator asked for another attempt (`storeledger webhook replay`); the server makes it and removes the
    /// letter when it succeeds.
    public var replayRequested: Bool
}

/// What the outbound webhook keeps in the ledger (docs/socket-api.md, "The outbound webhook"): where its delivery of the lifecycle stream stands,
/// and the dead letters of the events it gave up on. A delivery is written in the ledger's own write transactions,
/// beside the writer's, so a crash never loses the position without the letter.
public struct LedgerOutbox: LedgerRole {
    let ledger: Ledger
}

extension Ledger {
    /// The outbound webhook's position and dead letters.
    public var outbox: LedgerOutbox { LedgerOutbox(ledger: self) }
}

extension LedgerOutbox {
    /// The lifecycle events after `position` (from the first when nil), with their positions, at most `limit`.
    public func entries(after position: LifecyclePosition?, limit: Int) throws
        -> [(position: LifecyclePosition, event: LifecycleEvent)]
    {
        try environment.read { txn in
            let cursor = try txn.cursor(layout.lifecycle)
            var entry = try position.map { p in
                var e = try cursor.seek(p.key)
                if let found = e, found.key.hasSameBytes(as: p.key) { e = try cursor.next() }
                return e
            } ?? cursor.first()
            var out: [(position: LifecyclePosition, event: LifecycleEvent)] = []
            let names = try IdentityNames(identities, layout, txn)
            while let e = entry, out.count < limit {
                let p = try LifecyclePosition(key: e.key, of: "lifecycle")
                out.append((p, try names.shown(try Self.decodeLifecycle(e.value, at: p))))
                entry = try cursor.next()
            }
            return out
        }
    }

    /// The position of the last event the webhook delivered (or dead-lettered); nil before the first.
    public func position() throws -> LifecyclePosition? {
        try environment.read { txn in
            guard let stored = try txn.get(layout.meta, key: StoreLayout.metaWebhookPosition) else { return nil }
            return try LifecyclePosition(webhookPosition: stored)
        }
    }

    /// The webhook delivered the event at `position`: delivery goes on after it, also after a restart.
    public func delivered(_ position: LifecyclePosition) throws {
        try environment.write { txn in
            try txn.put(layout.meta, key: StoreLayout.metaWebhookPosition, value: position.key)
        }
    }

    /// The webhook gave up on the event at `position`: a dead letter, and delivery goes on after it (one write
    /// transaction, so a crash leaves neither without the other).
    public func gaveUp(_ position: LifecyclePosition, attempts: Int, reason: String, at instant: UnixMillis)
        throws
    {
        try environment.write { txn in
            try txn.put(
                layout.webhookDead, key: position.key,
                value: Self.encodeDeadLetter(attempts: attempts, failedAt: instant, reason: reason, replay: false))
            try txn.put(layout.meta, key: StoreLayout.metaWebhookPosition, value: position.key)
        }
    }

    /// Every dead letter, in stream order.
    public func deadLetters() throws -> [DeadLetter] {
        try environment.read { txn in
            let cursor = try txn.cursor(layout.webhookDead)
            var out: [DeadLetter] = []
            let names = try IdentityNames(identities, layout, txn)
            var entry = try cursor.first()
            while let e = entry {
                let p = try LifecyclePosition(key: e.key, of: "webhook_dead")
                let (attempts, failedAt, reason, replay) = try Self.decodeDeadLetter(e.value, at: p)
                guard let said = try txn.get(layout.lifecycle, key: p.key) else {
                    throw LedgerError.corrupted("dead letter \(p) names no lifecycle event")
                }
                out.append(
                    DeadLetter(
                        position: p, event: try names.shown(try Self.decodeLifecycle(said, at: p)), attempts: attempts,
                        failedAt: failedAt,
                        reason: reason, replayRequested: replay))
                entry = try cursor.next()
            }
            return out
        }
    }

    /// Asks the server to try the dead letters at `positions` again (every one when nil); returns how many were
    /// asked. A position with no dead letter is `not_found`.
    @discardableResult
    public func replayDeadLetters(_ positions: [LifecyclePosition]?) throws -> Int {
        try environment.write { txn in
            var targets: [LifecyclePosition] = []
            if let positions {
                targets = positions
            } else {
                let cursor = try txn.cursor(layout.webhookDead)
                var entry = try cursor.first()
                while let e = entry {
                    targets.append(try LifecyclePosition(key: e.key, of: "webhook_dead"))
                    entry = try cursor.next()
                }
            }
            for p in targets {
                let key = p.key
                guard let v = try txn.get(layout.webhookDead, key: key) else {
                    throw LedgerError(code: .notFound, message: "no dead letter at \(p)")
                }
                let d = try Self.decodeDeadLetter(v, at: p)
                try txn.put(
                    layout.webhookDead, key: key,
                    value: Self.encodeDeadLetter(attempts: d.attempts, failedAt: d.failedAt, reason: d.reason, replay: true))
            }
            return targets.count
        }
    }

    /// A replayed dead letter was delivered: it is removed.
    public func deadLetterDelivered(_ position: LifecyclePosition) throws {
        try environment.write { txn in _ = try txn.delete(layout.webhookDead, key: position.key) }
    }

    /// A replayed dead letter failed again: kept, with one attempt more, until replayed again.
    public func deadLetterFailed(_ letter: DeadLetter, reason: String, at instant: UnixMillis) throws {
        try environment.write { txn in
            try txn.put(
                layout.webhookDead, key: letter.position.key,
                value: Self.encodeDeadLetter(attempts: letter.attempts + 1, failedAt: instant, reason: reason, replay: false))
        }
    }

    // MARK: - Records

    private static func decodeLifecycle(_ value: MappedBytes, at p: LifecyclePosition) throws -> LifecycleEvent {
        do {
            return try value.withUnsafeBytes { (bytes) throws(FactDecodingError) in try LifecycleEvent(decoding: bytes) }
        } catch {
            throw LedgerError.corrupted("the lifecycle event at \(p) does not decode: \(error)")
        }
    }

    /// attempts (BE, 8) ‖ failed at (BE, 8) ‖ replay requested (1) ‖ reason (UTF-8).
    private static func encodeDeadLetter(attempts: Int, failedAt: UnixMillis, reason: String, replay: Bool) -> [UInt8] {
        var v = BigEndian.bytes(UInt64(max(0, attempts)))
        BigEndian.append(UInt64(bitPattern: failedAt), to: &v)
        v.append(replay ? 1 : 0)
        v.append(contentsOf: reason.utf8)
        return v
    }

    /// The dead letter stored at `p`; a value too short to be one is `corrupted`.
    private static func decodeDeadLetter(_ v: MappedBytes, at p: LifecyclePosition) throws(LedgerError)
        -> (attempts: Int, failedAt: UnixMillis, reason: String, replay: Bool)
    {
        guard v.count >= 17 else {
            throw LedgerError.corrupted(
                "the `webhook_dead` letter at \(p) is \(v.count) bytes, shorter than one (17 or more)")
        }
        // Measured above: two integers and a flag, then the reason.
        return v.withUnsafeBytes { b in
            (
                Int(clamping: BigEndian.uint64(b)), Int64(bitPattern: BigEndian.uint64(b, at: 8)), String(decoding: b[17...], as: UTF8.self),
                b[16] == 1
            )
        }
    }
}
