import Foundation
import LMDB
import LedgerCodec
import LedgerCore
@testable import LedgerStore
import Logging
import LedgerErrors
import Testing

/// `verify` names the first fault of a ledger altered behind its back, whatever it is (an event, a link, an index
/// entry, a raw input, the head), and the same fault however the log is cut into the ranges it checks side by side.
@Suite struct VerifyFaultTests {
    static let day: Int64 = 86_400_000
    static let start: Int64 = 1_700_000_000_000

    /// A ledger of 22 events: three subscriptions (one of them in the sandbox too) renewing, a renewal info, a
    /// notification naming no subscription, claims with and without an environment, an input of two facts (events
    /// 12 and 13: one raw input for both), a revision of a transaction (refunded), and two refusals.
    static func inputs() -> [LedgerInput] {
        var inputs: [LedgerInput] = []
        func add(_ facts: [Fact], at: Int64) {
            inputs.append(input(facts, raw: "raw \(inputs.count)", receivedAt: at))
        }
        func purchase(_ tid: Int, _ otid: Int, month: Int64, _ environment: AppStoreEnvironment = .production) -> TransactionFact {
            var t = transaction(
                "\(2_000_000_000_000_000 + tid)", otid: "\(2_000_000_000_000_000 + otid)",
                purchase: start + month * 30 * day, environment: environment)
            t.signedDate = start + month * 30 * day
            return t
        }
        for month in 0..<5 {
            for otid in [1, 2, 3] {
                let t = purchase(100 * otid + month, otid, month: Int64(month))
                if month == 2 && otid == 2 {
                    var r = RenewalInfoFact(originalTransactionId: t.originalTransactionId)
                    r.autoRenewStatus = month % 2 == 0
                    r.renewalDate = t.expiresDate
                    add([.transaction(t), .renewal(r)], at: start + Int64(month) * 30 * day)
                } else {
                    add([.transaction(t)], at: start + Int64(month) * 30 * day)
                }
            }
            if month == 1 {
                add([.transaction(purchase(900, 3, month: 1, .sandbox))], at: start + 31 * day)
                add(
                    [.binding(BindingClaim(appUserId: "u1", originalTransactionId: "2000000000000001", claimedAt: start + day))],
                    at: start + day)
                add(
                    [.binding(BindingClaim(appUserId: "u3", originalTransactionId: "2000000000000003", claimedAt: start + 2 * day, everyEnvironment: true))],
                    at: start + 2 * day)
                var test = NotificationFact(notificationUUID: "9d3a5f0e-0000-4e6f-8a7b-000000000001", notificationType: "TEST")
                test.signedDate = start + 3 * day
                add([.notification(test)], at: start + 3 * day)
            }
        }
        var refunded = purchase(101, 1, month: 1)
        refunded.revocationDate = start + 40 * day
        refunded.revocationReason = 0
        add([.transaction(refunded)], at: start + 40 * day)
        inputs.append(.rejected(RejectedInput(raw: Array("{not json".utf8), code: "invalid_json", message: "refused", receivedAt: start)))
        add(
            [.binding(BindingClaim(appUserId: "u2", originalTransactionId: "2000000000000002", claimedAt: start + 50 * day, environment: .production))],
            at: start + 50 * day)
        inputs.append(.rejected(RejectedInput(raw: Array("{}".utf8), code: "no_facts", message: "refused", receivedAt: start)))
        return inputs
    }

    /// The ledger of `inputs()`, copied, altered by `alter` through raw LMDB, and verified with the log checked in
    /// ranges of each of `ranges` entries (one report per range size).
    static func verifyAltered(
        ranges: [UInt64] = [1, 2, 3, 7, LedgerAudit.logRange], _ alter: (Environment, Surgery) throws -> Void
    ) throws -> [VerificationReport] {
        let t = try TemporaryLedger()
        _ = try t.ledger.appendAndWait(inputs())
        let original = try t.ledger.audit.verify()
        #expect(original.ok, "the original is sound: \(original.fault ?? "")")
        #expect(original.events == 22 && original.rejected == 2)
        let copy = NSTemporaryDirectory() + "ledger-verify-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        try t.ledger.copy(to: copy)
        do {
            let env = try Environment(path: copy)
            try alter(env, try Surgery(env))
        }
        var options = Ledger.Options()
        options.readOnly = true
        let reopened = try Ledger(directory: copy, options: options, logger: Logger(label: "t"))
        return try ranges.map { try reopened.audit.verify(progress: nil, logRange: $0) }
    }

    /// Expects every report to name the same fault, and returns it.
    static func sameFault(_ reports: [VerificationReport], sourceLocation: SourceLocation = #_sourceLocation) -> String {
        let faults = reports.map { $0.fault ?? "no fault" }
        #expect(Set(faults).count == 1, "different faults by range size: \(faults)", sourceLocation: sourceLocation)
        #expect(Set(reports.map(\.events)).count == 1, "different counts by range size", sourceLocation: sourceLocation)
        return faults[0]
    }

    /// Raw access to the copy's databases, and the chain written anew after an alteration, so that only the
    /// alteration itself is left to find.
    struct Surgery {
        let env: Environment
        let log, events, raw, meta, byOTID, byUser, bindingsAny: Database

        init(_ env: Environment) throws {
            self.env = env
            log = try env.openDatabase("log")
            events = try env.openDatabase("events")
            raw = try env.openDatabase("raw")
            meta = try env.openDatabase("meta")
            byOTID = try env.openDatabase("by_otid", flags: [.dupSort])
            byUser = try env.openDatabase("by_user", flags: [.dupSort])
            bindingsAny = try env.openDatabase("bindings_any", flags: [.dupSort])
        }

        /// The log entry of `seq`: its link, raw key and event key.
        func logRecord(_ seq: UInt64) throws -> (link: [UInt8], rawKey: UInt64, key: [UInt8]) {
            let value = try #require(try env.read { txn in try txn.value(log, key: bigEndian(seq)) })
            return (Array(value[0..<32]), value[32..<40].reduce(0) { $0 << 8 | UInt64($1) }, Array(value[40...]))
        }

        /// The `events` key of the event at `seq`.
        func revisionKey(_ seq: UInt64) throws -> [UInt8] { try logRecord(seq).key + [0] + bigEndian(seq) }

        /// Every link recomputed from the stored events, and the head in `meta`.
        func rechain() throws {
            try env.write { txn in
                var previous = HashChain.genesis
                let cursor = try txn.cursor(log)
                var entry = try cursor.first()
                var updates: [([UInt8], [UInt8])] = []
                var last: UInt64 = 0
                while let e = entry {
                    let seq = e.key.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self).bigEndian }
                    let value = Array(e.value)
                    let key = Array(value[40...])
                    let stored = try #require(try txn.value(events, key: key + [0] + bigEndian(seq)))
                    previous = stored.withUnsafeBytes { HashChain.link(previous: previous, seq: seq, eventKey: key, event: $0) }
                    updates.append((bigEndian(seq), previous + value[32...]))
                    last = seq
                    entry = try cursor.next()
                }
                for (key, value) in updates { try txn.put(log, key: key, value: value) }
                try txn.put(meta, key: Array("chain_head".utf8), value: bigEndian(last) + previous)
            }
        }
    }

    // MARK: - The log and its events

    @Test(arguments: [1, 2, 3, 4, 7, 8, 21, 22] as [UInt64])
    func anAlteredEventBreaksTheChainAtItsSeq(seq: UInt64) throws {
        let reports = try Self.verifyAltered { env, s in
            let key = try s.revisionKey(seq)
            try env.write { txn in
                var value = try #require(try txn.value(s.events, key: key))
                value[value.count - 3] ^= 0x10
                try txn.put(s.events, key: key, value: value)
            }
        }
        #expect(Self.sameFault(reports) == "hash chain broken at seq \(seq): the event was altered")
        #expect(reports[0].events == seq - 1)
    }

    @Test(arguments: [1, 3, 4, 22] as [UInt64])
    func anAlteredLinkBreaksTheChainAtItsSeq(seq: UInt64) throws {
        let reports = try Self.verifyAltered { env, s in
            try env.write { txn in
                var value = try #require(try txn.value(s.log, key: bigEndian(seq)))
                value[5] ^= 0x01
                try txn.put(s.log, key: bigEndian(seq), value: value)
            }
        }
        #expect(Self.sameFault(reports) == "hash chain broken at seq \(seq): the event was altered")
    }

    @Test(arguments: [1, 3, 4, 16] as [UInt64])
    func aDeletedLogEntryIsNamed(seq: UInt64) throws {
        let reports = try Self.verifyAltered { env, s in
            try env.write { txn in _ = try txn.delete(s.log, key: bigEndian(seq)) }
        }
        #expect(Self.sameFault(reports) == "log entry \(seq) is missing (the log jumps to \(seq + 1))")
    }

    @Test func aDeletedEventIsNamed() throws {
        let reports = try Self.verifyAltered { env, s in
            let key = try s.revisionKey(5)
            try env.write { txn in _ = try txn.delete(s.events, key: key) }
        }
        #expect(Self.sameFault(reports).hasPrefix("event 5 ("))
        #expect(reports[0].fault?.hasSuffix(") is missing") == true)
    }

    @Test func anUndecodableEventIsNamedEvenWhenTheChainWasRewritten() throws {
        let reports = try Self.verifyAltered { env, s in
            let key = try s.revisionKey(9)
            try env.write { txn in try txn.put(s.events, key: key, value: [1, 0xFF, 0xFF]) }
            try s.rechain()
        }
        #expect(Self.sameFault(reports).hasPrefix("event 9 does not decode"))
    }

    /// An event whose fact names another key than the one it is stored under: a transaction (found by the
    /// projections' check, which decodes transactions) and a notification (found by the log's).
    @Test(arguments: [(6, "transaction"), (10, "notification")] as [(UInt64, String)])
    func anEventUnderAnotherKeyIsFound(seq: UInt64, kind: String) throws {
        let reports = try Self.verifyAltered { env, s in
            let key = try s.revisionKey(seq)
            let stored = try #require(try env.read { txn in try txn.value(s.events, key: key) })
            let event = try LedgerEvent(seq: seq, decoding: stored)
            let fact: Fact
            switch event.fact {
            case .transaction(var t):
                t.transactionId = "2000000000000999"
                fact = .transaction(t)
            case .notification(var n):
                n.notificationUUID = "9d3a5f0e-0000-4e6f-8a7b-000000000999"
                fact = .notification(n)
            default:
                Issue.record("event \(seq) is a \(event.fact.kind), not a \(kind)")
                return
            }
            #expect(event.fact.kind.rawValue == kind)
            try env.write { txn in try txn.put(s.events, key: key, value: LedgerEvent.encode(fact: fact, metadata: event.metadata)) }
            try s.rechain()
        }
        #expect(Self.sameFault(reports) == "event \(seq) is stored under another key")
    }

    @Test func aRepeatedFactIsFound() throws {
        // Event 23: the fact of event 1 again, as a revision of its key, chained and counted like any other.
        let reports = try Self.verifyAltered { env, s in
            let first = try s.logRecord(1)
            let stored = try #require(try env.read { txn in try txn.value(s.events, key: try s.revisionKey(1)) })
            try env.write { txn in
                try txn.put(s.events, key: first.key + [0] + bigEndian(23), value: stored)
                try txn.put(s.log, key: bigEndian(23), value: first.link + bigEndian(first.rawKey) + first.key)
                try txn.put(s.byOTID, key: [0] + Array("2000000000000001".utf8), value: bigEndian(23) + first.key)
            }
            try s.rechain()
        }
        #expect(Self.sameFault(reports) == "event 23 repeats a fact already stored under 2000000000000100")
    }

    @Test func anExtraEventIsFound() throws {
        let reports = try Self.verifyAltered { env, s in
            let stored = try #require(try env.read { txn in try txn.value(s.events, key: try s.revisionKey(3)) })
            try env.write { txn in try txn.put(s.events, key: Array("9999".utf8) + [0] + bigEndian(99), value: stored) }
        }
        #expect(Self.sameFault(reports) == "events holds entries the log lacks")
    }

    @Test func anAlteredChainHeadIsFound() throws {
        let reports = try Self.verifyAltered { env, s in
            try env.write { txn in
                var head = try #require(try txn.value(s.meta, key: Array("chain_head".utf8)))
                head[20] ^= 0x01
                try txn.put(s.meta, key: Array("chain_head".utf8), value: head)
            }
        }
        #expect(Self.sameFault(reports) == "stored chain head differs from the log's")
        #expect(reports[0].events == 22)
    }

    // MARK: - Raw inputs

    @Test func aDeletedRawInputIsNamed() throws {
        let reports = try Self.verifyAltered { env, s in
            let rawKey = try s.logRecord(12).rawKey
            try env.write { txn in _ = try txn.delete(s.raw, key: bigEndian(rawKey)) }
        }
        #expect(Self.sameFault(reports) == "raw input of event 12 is missing")
    }

    /// The input of two facts (events 12 and 13) has one raw input: altered, its first event is named.
    @Test func anAlteredRawInputOfTwoEventsIsNamedAtTheFirst() throws {
        let reports = try Self.verifyAltered { env, s in
            let (twelve, thirteen) = (try s.logRecord(12), try s.logRecord(13))
            #expect(twelve.rawKey == 12 && thirteen.rawKey == 12, "events 12 and 13 share their raw input")
            try env.write { txn in try txn.put(s.raw, key: bigEndian(12), value: Array("forged".utf8)) }
        }
        #expect(Self.sameFault(reports) == "raw input of event 12 was altered")
    }

    @Test func anExtraRawInputIsFound() throws {
        let reports = try Self.verifyAltered { env, s in
            try env.write { txn in try txn.put(s.raw, key: bigEndian(1_000), value: Array("extra".utf8)) }
        }
        #expect(Self.sameFault(reports) == "raw holds inputs no event came from")
    }

    // MARK: - Indexes

    @Test func aDeletedSubscriptionEntryIsNamed() throws {
        let reports = try Self.verifyAltered { env, s in
            let key = try s.logRecord(4).key
            try env.write { txn in
                _ = try txn.delete(s.byOTID, key: [0] + Array("2000000000000001".utf8), value: bigEndian(4) + key)
            }
        }
        #expect(Self.sameFault(reports) == "by_otid index lacks event 4 of 2000000000000001")
    }

    @Test func aSubscriptionEntryNamingAnotherSubscriptionsEventIsFound() throws {
        // Entry of event 4 (subscription 1) replaced by one naming event 5 (subscription 2): the count is right.
        let reports = try Self.verifyAltered { env, s in
            let (four, five) = (try s.logRecord(4).key, try s.logRecord(5).key)
            try env.write { txn in
                let one = [0] + Array("2000000000000001".utf8)
                _ = try txn.delete(s.byOTID, key: one, value: bigEndian(4) + four)
                try txn.put(s.byOTID, key: one, value: bigEndian(5) + five)
            }
        }
        #expect(
            Self.sameFault(reports)
                == "by_otid entry of 2000000000000001 in Production names event 5, which is of another subscription")
    }

    @Test func anExtraSubscriptionEntryIsFound() throws {
        let reports = try Self.verifyAltered { env, s in
            let five = try s.logRecord(5).key
            try env.write { txn in try txn.put(s.byOTID, key: [1] + Array("2000000000000002".utf8), value: bigEndian(5) + five) }
        }
        #expect(Self.sameFault(reports) == "by_otid holds entries the log lacks")
    }

    @Test func aClaimWithoutEnvironmentMissingWhereItsSubscriptionIsKnownIsNamed() throws {
        // Subscription 3 is known in Production and in the Sandbox (event 7); its claim of every environment is event
        // 9, indexed under both.
        let reports = try Self.verifyAltered { env, s in
            #expect(try s.logRecord(9).key == Array("binding:2000000000000003".utf8))
            try env.write { txn in
                _ = try txn.delete(
                    s.byOTID, key: [1] + Array("2000000000000003".utf8),
                    value: bigEndian(9) + Array("binding:2000000000000003".utf8))
            }
        }
        #expect(Self.sameFault(reports) == "by_otid index lacks claim 9 of 2000000000000003 in Sandbox")
    }

    @Test func aDeletedClaimOfEveryEnvironmentIsNamed() throws {
        let reports = try Self.verifyAltered { env, s in
            try env.write { txn in _ = try txn.delete(s.bindingsAny, key: Array("2000000000000003".utf8)) }
        }
        #expect(Self.sameFault(reports).hasPrefix("bindings_any index lacks claim"))
    }

    @Test func aDeletedUserEntryIsNamed() throws {
        let reports = try Self.verifyAltered { env, s in
            try env.write { txn in
                _ = try txn.delete(s.byUser, key: [0] + Array("u1".utf8), value: [0] + Array("2000000000000001".utf8))
            }
        }
        #expect(Self.sameFault(reports) == "by_user index lacks u1 → 2000000000000001")
    }

    @Test func anExtraUserEntryIsFound() throws {
        let reports = try Self.verifyAltered { env, s in
            try env.write { txn in try txn.put(s.byUser, key: [0] + Array("mallory".utf8), value: [0] + Array("2000000000000001".utf8)) }
        }
        #expect(Self.sameFault(reports) == "by_user holds entries no claim made")
    }

    // MARK: - Sound ledgers

    @Test func aSoundLedgerVerifiesTheSameWhateverTheRanges() throws {
        let reports = try Self.verifyAltered { _, _ in }
        #expect(Set(reports).count == 1)
        let report = try #require(reports.first)
        #expect(report.ok && report.events == 22 && report.rejected == 2 && report.projections == 4)
    }

    /// Every shape of event key is recognised as its event's own (the check compares bytes without making the key):
    /// decimal ids of every length, ids with leading zeros or letters, synthetic keys of each kind.
    @Test func everyShapeOfEventKeyIsItsEventsOwn() throws {
        let t = try TemporaryLedger()
        var facts: [Fact] = []
        for (tid, otid) in [
            ("7", "7"), ("0012", "0012"), ("2000000000000001", "2000000000000001"), ("123456789012345678901234", "99"),
            ("abc-ü.1", "otid-ü"), ("18446744073709551615", "18446744073709551616"),
        ] {
            facts.append(.transaction(transaction(tid, otid: otid)))
            facts.append(.renewal(RenewalInfoFact(originalTransactionId: OriginalTransactionID(otid))))
            facts.append(.binding(BindingClaim(appUserId: "u", originalTransactionId: OriginalTransactionID(otid), claimedAt: Self.start)))
        }
        facts.append(.notification(NotificationFact(notificationUUID: "9d3a5f0e-1c2b-4e6f-8a7b-00000000000ü", notificationType: "TEST")))
        _ = try t.ledger.appendAndWait(facts.enumerated().map { i, fact in input([fact], raw: "raw \(i)") })
        let report = try t.ledger.audit.verify()
        #expect(report.ok, "\(report.fault ?? "")")
        #expect(report.events == UInt64(facts.count))
    }

    /// Progress counts every event twice (the log, then the replay), halved: it ends at the log's end.
    @Test func progressEndsAtTheLogsEnd() throws {
        let t = try TemporaryLedger()
        _ = try t.ledger.appendAndWait(Self.inputs())
        let seen = Seen()
        let report = try t.ledger.audit.verify(progress: { done, total in seen.add(done, total) }, logRange: 4)
        #expect(report.ok)
        let updates = seen.updates
        #expect(updates.last.map { $0.done == $0.total && $0.total == 22 } == true, "\(updates)")
        #expect(updates.allSatisfy { $0.done <= $0.total })
    }

    final class Seen: @unchecked Sendable {
        private let lock = NSLock()
        private var all: [(done: UInt64, total: UInt64)] = []
        func add(_ done: UInt64, _ total: UInt64) {
            lock.lock()
            all.append((done, total))
            lock.unlock()
        }
        var updates: [(done: UInt64, total: UInt64)] {
            lock.lock()
            defer { lock.unlock() }
            return all
        }
    }
}
