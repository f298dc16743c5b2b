import Foundation
import LMDB
import LedgerCodec
import LedgerCore
import LedgerStore
import LedgerErrors
import Logging
import Testing

/// A damaged page can hand out any bytes as a key or a value. Whatever a reader finds in a database, a key of the
/// wrong length, a value cut short, a record that does not decode, it answers `corrupted` naming the database, and
/// never traps.
@Suite struct DamagedEntryTests {
    /// A small real ledger: twenty transactions of four subscriptions (so lifecycle events too) and three refusals.
    /// Its directory is copied; `alter` changes the copy through raw LMDB.
    final class Copy {
        let original: TemporaryLedger
        let directory: String
        /// The events of the original, in log order.
        let events: [StoredEvent]

        init(_ alter: (Environment, Copy) throws -> Void) throws {
            original = try TemporaryLedger()
            let day: Int64 = 86_400_000
            let start: Int64 = 1_605_243_570_000
            _ = try original.ledger.appendAndWait(
                (0..<20).map { i in
                    let purchase = start + Int64(i) * day
                    let t = transaction(
                        "\(500 + i)", otid: "\(900 + i % 4)", purchase: purchase, expires: purchase + 30 * day)
                    return input([.transaction(t)])
                })
            _ = try original.ledger.appendAndWait(
                (1...3).map { i in
                    .rejected(
                        RejectedInput(
                            raw: Array("refused input \(i)".utf8), code: "invalid_json", message: "refusal \(i)",
                            receivedAt: start))
                })
            events = try original.ledger.log.events(after: 0, limit: 100)
            directory = NSTemporaryDirectory() + "ledger-damaged-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try original.ledger.copy(to: directory)
            let env = try Environment(path: directory)
            try alter(env, self)
        }

        /// The copy, opened as the read commands open a ledger.
        func open(readOnly: Bool = true) throws -> Ledger {
            var options = Ledger.Options()
            options.readOnly = readOnly
            return try Ledger(directory: directory, options: options, logger: Logger(label: "damaged"))
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// `body` throws `corrupted`, and its message has `naming` in it.
    func expectCorrupted<T>(
        naming: String, _ body: () throws -> T, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            _ = try body()
            Issue.record("no error: expected corrupted naming \(naming)", sourceLocation: sourceLocation)
        } catch let error as LedgerError {
            #expect(error.code == .corrupted, "\(error.code): \(error.message)", sourceLocation: sourceLocation)
            #expect(error.message.contains(naming), "\(error.message)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("not a LedgerError: \(type(of: error)): \(error)", sourceLocation: sourceLocation)
        }
    }

    /// The first `count` bytes of the value stored under `key`.
    static func truncate(_ db: Database, key: [UInt8], to count: Int, _ env: Environment) throws {
        try env.write { txn in
            let value = try #require(try txn.value(db, key: key))
            try txn.put(db, key: key, value: Array(value.prefix(count)))
        }
    }

    // MARK: - `log`

    /// Five bytes sort after every seq below 2^24: the last key of the log, where every reader finds it.
    @Test func aShortLogKey() throws {
        let copy = try Copy { env, _ in
            let log = try env.openDatabase("log")
            try env.write { txn in
                let value = try #require(try txn.value(log, key: bigEndian(20)))
                try txn.put(log, key: [0, 0, 0, 0, 1], value: value)
            }
        }
        let ledger = try copy.open()
        let naming = "key of `log` is 5 bytes, not 8"
        expectCorrupted(naming: naming) { try ledger.log.events(after: 0, limit: 100) }
        expectCorrupted(naming: naming) { try ledger.lastSeq() }
        expectCorrupted(naming: naming) { try ledger.audit.exportedEvents(after: 0, limit: 100) }
        expectCorrupted(naming: naming) { try ledger.audit.forEachEvent(after: 0) { _, _, _, _ in } }
        expectCorrupted(naming: naming) { try ledger.statistics() }
        expectCorrupted(naming: naming) { try ledger.lifecycleEvents(after: 0, limit: 1000) }
        expectCorrupted(naming: naming) { try ledger.audit.verify() }
        // The writer reads where the log ends before it appends.
        ledger.close()
        let writer = try copy.open(readOnly: false)
        defer { writer.close() }
        expectCorrupted(naming: naming) { try writer.appendAndWait([input([.transaction(transaction("77"))])]) }
    }

    /// Nine bytes (a seq and one more) sort between two seqs: read as the first eight, it would be an event twice.
    @Test func aLongLogKey() throws {
        let copy = try Copy { env, _ in
            let log = try env.openDatabase("log")
            try env.write { txn in
                let value = try #require(try txn.value(log, key: bigEndian(3)))
                try txn.put(log, key: bigEndian(3) + [0], value: value)
            }
        }
        let ledger = try copy.open()
        let naming = "key of `log` is 9 bytes, not 8"
        expectCorrupted(naming: naming) { try ledger.log.events(after: 0, limit: 100) }
        expectCorrupted(naming: naming) { try ledger.audit.exportedEvents(after: 0, limit: 100) }
        expectCorrupted(naming: naming) { try ledger.audit.forEachEvent(after: 0) { _, _, _, _ in } }
        let report = try ledger.audit.verify()
        #expect(report.fault?.contains("`log`") == true, "\(report.fault ?? "no fault")")
    }

    @Test func aTruncatedLogValue() throws {
        let copy = try Copy { env, _ in try Self.truncate(try env.openDatabase("log"), key: bigEndian(2), to: 12, env) }
        let ledger = try copy.open()
        let naming = "`log` entry 2 is 12 bytes"
        expectCorrupted(naming: naming) { try ledger.log.events(after: 0, limit: 100) }
        expectCorrupted(naming: naming) { try ledger.log.event(seq: 2) }
        expectCorrupted(naming: naming) { try ledger.log.events(key: copy.events[1].event.fact.eventKey) }
        expectCorrupted(naming: naming) { try ledger.audit.exportedEvents(after: 0, limit: 100) }
        expectCorrupted(naming: naming) { try ledger.audit.forEachEvent(after: 0) { _, _, _, _ in } }
        let report = try ledger.audit.verify()
        #expect(report.fault?.contains("`log` entry 2") == true, "\(report.fault ?? "no fault")")
    }

    // MARK: - `rejected`

    /// Five bytes sort after the three refusals: where a reader of the store, or `verify` counting it, ends.
    @Test func aShortRejectedKey() throws {
        let copy = try Copy { env, _ in
            let rejected = try env.openDatabase("rejected")
            try env.write { txn in
                let value = try #require(try txn.value(rejected, key: bigEndian(3)))
                try txn.put(rejected, key: [0, 0, 0, 0, 1], value: value)
            }
        }
        let ledger = try copy.open()
        let naming = "key of `rejected` is 5 bytes, not 8"
        expectCorrupted(naming: naming) { try ledger.log.rejectedInputs(after: 0, limit: 100) }
        expectCorrupted(naming: naming) { try ledger.audit.exportedRefusals(after: 0, limit: 100) }
        let report = try ledger.audit.verify()
        #expect(report.fault?.contains(naming) == true, "\(report.fault ?? "no fault")")
    }

    @Test func anUndecodableRejectedRecord() throws {
        let copy = try Copy { env, _ in
            let rejected = try env.openDatabase("rejected")
            try Self.truncate(rejected, key: bigEndian(2), to: 9, env)
            let cut = try #require(try env.read { txn in try txn.value(rejected, key: bigEndian(2)) })
            #expect(throws: FactDecodingError.self) {
                try cut.withUnsafeBytes { try RejectedInput(number: 2, decoding: $0) }
            }
        }
        let ledger = try copy.open()
        let naming = "rejected record 2 does not decode"
        expectCorrupted(naming: naming) { try ledger.log.rejectedInputs(after: 0, limit: 100) }
        expectCorrupted(naming: naming) { try ledger.audit.exportedRefusals(after: 0, limit: 100) }
        #expect(try ledger.log.rejectedInputs(after: 2, limit: 100).map(\.number) == [3])
    }

    // MARK: - `lifecycle`

    /// Five bytes sort after every lifecycle key (seq, environment, index: 13 bytes) of seqs below 2^24.
    @Test func aShortLifecycleKeyAtTheEnd() throws {
        let copy = try Copy { env, _ in
            let lifecycle = try env.openDatabase("lifecycle")
            try env.write { txn in
                let first = try #require(try txn.cursor(lifecycle).first())
                try txn.put(lifecycle, key: [0, 0, 0, 0, 1], value: Array(first.value))
            }
        }
        let ledger = try copy.open()
        #expect(try ledger.lifecycleEvents(after: 0, limit: 1).events.count >= 1)
        let naming = "key of `lifecycle` is 5 bytes, not 13"
        expectCorrupted(naming: naming) { try ledger.lifecycleEvents(after: 0, limit: 10_000) }
        expectCorrupted(naming: naming) { try ledger.outbox.entries(after: nil, limit: 10_000) }
    }

    /// Five zero bytes sort before every lifecycle key: the first one a replay that rewrites the stream clears.
    @Test func aShortLifecycleKeyAtTheStart() throws {
        let copy = try Copy { env, _ in
            let lifecycle = try env.openDatabase("lifecycle")
            try env.write { txn in
                let first = try #require(try txn.cursor(lifecycle).first())
                try txn.put(lifecycle, key: [0, 0, 0, 0, 0], value: Array(first.value))
            }
        }
        let naming = "key of `lifecycle` is 5 bytes, not 13"
        do {
            let ledger = try copy.open()
            expectCorrupted(naming: naming) { try ledger.outbox.entries(after: nil, limit: 10) }
            ledger.close()
        }
        let writer = try copy.open(readOnly: false)
        defer { writer.close() }
        expectCorrupted(naming: naming) { try writer.audit.replay(check: false) }
    }

    @Test func aTruncatedLifecycleEvent() throws {
        let copy = try Copy { env, _ in
            let lifecycle = try env.openDatabase("lifecycle")
            let key = try #require(try env.read { txn in try txn.cursor(lifecycle).first().map { Array($0.key) } })
            try Self.truncate(lifecycle, key: key, to: 3, env)
        }
        let ledger = try copy.open()
        expectCorrupted(naming: "lifecycle event at") { try ledger.lifecycleEvents(after: 0, limit: 10_000) }
        expectCorrupted(naming: "lifecycle event at") { try ledger.outbox.entries(after: nil, limit: 10_000) }
    }

    // MARK: - `events`

    /// An `events` key is event key ‖ 0 ‖ seq (8): one whose seq is four zero bytes sorts before every revision of
    /// its event key, where a reader of those revisions starts.
    @Test func aShortEventsKey() throws {
        let copy = try Copy { env, copy in
            let events = try env.openDatabase("events")
            let key = Array(copy.events[4].event.fact.eventKey.utf8) + [0]
            try env.write { txn in
                let value = try #require(try txn.value(events, key: key + bigEndian(5)))
                try txn.put(events, key: key + [0, 0, 0, 0], value: value)
                // The rules' key, read by every query that folds.
                try txn.put(events, key: Array(RulesChange.eventKey.utf8) + [0, 0, 0, 0, 0], value: value)
            }
        }
        let ledger = try copy.open()
        let tid = copy.events[4].event.fact.eventKey
        let length = tid.utf8.count + 1 + 4
        expectCorrupted(naming: "key of `events` under \(tid) is \(length) bytes, not \(length + 4)") {
            try ledger.log.events(key: tid)
        }
        let naming = "key of `events` under \(RulesChange.eventKey) is"
        expectCorrupted(naming: naming) { try ledger.rulesInLog.inForce() }
        expectCorrupted(naming: naming) { try ledger.rulesInLog.changes() }
        expectCorrupted(naming: naming) {
            try ledger.timeline("900", at: 1_605_243_570_000)
        }
    }

    @Test func aTruncatedEvent() throws {
        let copy = try Copy { env, copy in
            let events = try env.openDatabase("events")
            let key = Array(copy.events[4].event.fact.eventKey.utf8) + [0] + bigEndian(5)
            try Self.truncate(events, key: key, to: 4, env)
        }
        let ledger = try copy.open()
        let tid = copy.events[4].event.fact.eventKey
        expectCorrupted(naming: "event 5 does not decode") { try ledger.log.events(after: 0, limit: 100) }
        expectCorrupted(naming: "event 5 does not decode") { try ledger.log.events(key: tid) }
        expectCorrupted(naming: "event 5 does not decode") { try ledger.audit.exportedEvents(after: 0, limit: 100) }
    }

    // MARK: - `meta`

    @Test func aSchemaVersionOfTheWrongLength() throws {
        let copy = try Copy { env, _ in
            let meta = try env.openDatabase("meta")
            try env.write { txn in try txn.put(meta, key: Array("schema".utf8), value: [0, 0, 6]) }
        }
        expectCorrupted(naming: "value of `meta` key `schema` is 3 bytes, not 8") { try copy.open() }
        expectCorrupted(naming: "value of `meta` key `schema` is 3 bytes, not 8") { try copy.open(readOnly: false) }
    }

    /// A value of `meta` of another length than its layout's is `corrupted`, not read as absent (a count of 0, the
    /// genesis link, no webhook position: each would let the writer or the webhook start over).
    @Test func metaValuesOfTheWrongLength() throws {
        let copy = try Copy { env, _ in
            let meta = try env.openDatabase("meta")
            try env.write { txn in
                try txn.put(meta, key: Array("rejected_count".utf8), value: [0, 0, 3])
                try txn.put(meta, key: Array("chain_head".utf8), value: bigEndian(20) + [1, 2, 3])
                try txn.put(meta, key: Array("webhook_position".utf8), value: [0, 0, 0, 0, 0, 0, 0, 1, 1])
            }
        }
        let ledger = try copy.open()
        expectCorrupted(naming: "value of `meta` key `chain_head` is 11 bytes, not 40") { try ledger.statistics() }
        expectCorrupted(naming: "value of `meta` key `webhook_position` is 9 bytes, not 13") {
            try ledger.outbox.position()
        }
        // `verify` names what it finds first, the head of the log's chain.
        let report = try ledger.audit.verify()
        #expect(report.fault == "the value of `meta` key `chain_head` is 11 bytes, not 40", "\(report.fault ?? "none")")
        ledger.close()
        let writer = try copy.open(readOnly: false)
        defer { writer.close() }
        let naming = "value of `meta` key `rejected_count` is 3 bytes, not 8"
        expectCorrupted(naming: naming) {
            try writer.appendAndWait([
                .rejected(RejectedInput(raw: [1], code: "invalid_json", message: "m", receivedAt: 1))
            ])
        }
        expectCorrupted(naming: naming) { try LedgerImport(into: writer) }
    }

    /// The largest seq as the log's last key: the writer has no seq after it, and `verify` checks the log as far as
    /// its entries go (cut into ranges up to that seq, the ranges would not fit in memory).
    @Test func theLargestSeqAsTheLastLogKey() throws {
        let copy = try Copy { env, _ in
            let log = try env.openDatabase("log")
            try env.write { txn in
                let value = try #require(try txn.value(log, key: bigEndian(20)))
                try txn.put(log, key: bigEndian(.max), value: value)
            }
        }
        let writer = try copy.open(readOnly: false)
        defer { writer.close() }
        expectCorrupted(naming: "the last number of `log` reads as \(UInt64.max)") {
            try writer.appendAndWait([input([.transaction(transaction("77"))])])
        }
        let report = try writer.audit.verify()
        #expect(report.fault == "log entry 21 is missing (the log jumps to \(UInt64.max))", "\(report.fault ?? "none")")
        #expect(report.events == 20)
    }
}
