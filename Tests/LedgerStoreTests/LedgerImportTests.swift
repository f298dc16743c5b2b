import Foundation
import LedgerCore
import LedgerStore
import LedgerErrors
import Testing

/// An export written back by `LedgerImport` is the same ledger: seqs, bytes, raw inputs, chain, indexes and
/// projections; a record altered on the way is named by `ImportCheck` before anything is written.
@Suite struct LedgerImportTests {
    static let day: Int64 = 86_400_000
    static let start: Int64 = 1_740_819_600_000

    /// A source ledger with what an import must carry over: an input with several events (one raw input under the
    /// first one's seq), claims that name no environment (before and after their subscription appears, indexed
    /// by the projection engine), a subscription in two environments, an environment-specific claim, a revision,
    /// a duplicate and refused inputs, over several write transactions.
    static func source() throws -> TemporaryLedger {
        let t = try TemporaryLedger()
        let claimEverywhere = BindingClaim(
            appUserId: "u1", originalTransactionId: "7000", claimedAt: start + day, environment: .production,
            everyEnvironment: true)
        var revised = transaction("6001", otid: "6000", purchase: start + 30 * day)
        _ = try t.ledger.appendAndWait([
            input(
                [.transaction(transaction("6000", otid: "6000", purchase: start)), .transaction(revised)],
                raw: "a receipt with two transactions"),
            input([.binding(claimEverywhere)], raw: "claim of 7000 in every environment", receivedAt: start + day),
            .rejected(RejectedInput(raw: Array("{not json".utf8), code: "invalid_json", message: "not JSON", receivedAt: start)),
        ])
        _ = try t.ledger.appendAndWait([
            input([.transaction(transaction("7000", otid: "7000", purchase: start, environment: .sandbox))], raw: "sandbox 7000"),
            input([.transaction(transaction("7001", otid: "7000", purchase: start + day))], raw: "production 7000"),
        ])
        revised.revocationDate = start + 35 * day
        let claimProduction = BindingClaim(
            appUserId: "u2", originalTransactionId: "6000", claimedAt: start + 2 * day, environment: .production)
        _ = try t.ledger.appendAndWait([
            input([.transaction(revised)], raw: "the refund of 6001"),
            input([.binding(claimProduction)], raw: "claim of 6000 by u2", receivedAt: start + 2 * day),
            input([.transaction(transaction("6000", otid: "6000", purchase: start))], raw: "6000 again"),
            .rejected(RejectedInput(raw: Array("{}".utf8), code: "unknown_input_type", message: "what is it", receivedAt: start)),
        ])
        return t
    }

    /// What an export of `ledger` carries, as import reads it.
    static func exported(_ ledger: Ledger) throws -> (events: [ImportedEvent], refusals: [ImportedRefusal]) {
        let events = try ledger.audit.exportedEvents(after: 0, limit: .max).map {
            ImportedEvent(
                seq: $0.stored.event.seq, key: $0.stored.event.fact.eventKey, bytes: $0.bytes, rawKey: $0.stored.rawKey,
                raw: $0.raw, chainHash: $0.stored.chainHash)
        }
        let refusals = try ledger.audit.exportedRefusals(after: 0, limit: .max).map {
            ImportedRefusal(number: $0.input.number, record: $0.record)
        }
        return (events, refusals)
    }

    @Test(arguments: [1, 2, 1_000])
    func anImportIsTheSameLedgerWhateverItsBatches(batch: Int) throws {
        let source = try Self.source()
        let (events, refusals) = try Self.exported(source.ledger)
        #expect(events.count == 7, "the repeated 6000 is a duplicate")
        #expect(events.map(\.rawKey) == [1, 1, 3, 4, 5, 6, 7], "the receipt's two events share one raw input")
        #expect(refusals.count == 2)

        let target = try TemporaryLedger()
        let importer = try LedgerImport(into: target.ledger)
        for start in stride(from: 0, to: events.count, by: batch) {
            try importer.write(Array(events[start..<min(start + batch, events.count)]))
        }
        try importer.write(refusals)
        try importer.finish()

        // The maintained metrics summed in on both sides (the source's follower may not have got there yet).
        try source.ledger.catchUpMetrics()
        let (a, b) = (try source.ledger.statistics(), try target.ledger.statistics())
        #expect(b.lastSeq == 7)
        #expect(b.chainHead == a.chainHead)
        #expect(b.databases == a.databases, "every index and projection holds as many entries")
        #expect(importer.written.chainHeadHex == a.chainHead)
        let copied = try Self.exported(target.ledger)
        for (x, y) in zip(events, copied.events) {
            #expect(x.seq == y.seq && x.key == y.key && x.rawKey == y.rawKey)
            #expect(x.bytes == y.bytes, "seq \(x.seq): stored bytes")
            #expect(x.raw == y.raw, "seq \(x.seq): raw input")
            #expect(x.chainHash == y.chainHash, "seq \(x.seq): chain link")
        }
        #expect(copied.refusals.map(\.record) == refusals.map(\.record))
        let verification = try target.ledger.audit.verify()
        #expect(verification.fault == nil, "\(verification.fault ?? "")")
        #expect(verification.rejected == 2)
        let (replayA, replayB) = (try source.ledger.audit.replay(check: true), try target.ledger.audit.replay(check: true))
        #expect(replayB.differences.isEmpty)
        #expect(replayB.projectionsDigest == replayA.projectionsDigest)
        // The claim of every environment reached both environments of 7000 in the copy too.
        #expect(
            try target.ledger.timeline("7000", environment: .sandbox, at: Self.start + 2 * Self.day)?.owners.map(\.appUserId)
                == ["u1"])
    }

    /// Each alteration, the code and where `ImportCheck` stops.
    static let alterations: [(String, String, String, @Sendable (inout [ImportedEvent]) -> Void)] = [
        ("a byte of a stored event", "verification_failed", "hash chain breaks at seq 4", { $0[3].bytes[$0[3].bytes.count / 2] ^= 1 }),
        ("a byte of a raw input", "verification_failed", "raw input of seq 5", { $0[4].raw![0] ^= 1 }),
        ("a chain hash", "verification_failed", "hash chain breaks at seq 6", { $0[5].chainHash[31] ^= 1 }),
        ("an event's key", "verification_failed", "hash chain breaks at seq 2", { $0[1].key = "6002" }),
        ("an event removed", "invalid_export", "seq 4 follows seq 2", { $0.remove(at: 2) }),
        ("two events swapped", "invalid_export", "seq 4 follows seq 2", { $0.swapAt(2, 3) }),
        ("the first event removed", "invalid_export", "first event is seq 2", { $0.removeFirst() }),
        ("a shared raw input altered", "verification_failed", "raw input of seq 2", { $0[1].raw![0] ^= 1 }),
    ]

    @Test(arguments: 0..<alterations.count)
    func theCheckNamesWhereAnAlteredExportFails(_ index: Int) throws {
        let (name, code, message, alter) = Self.alterations[index]
        let source = try Self.source()
        var (events, _) = try Self.exported(source.ledger)
        alter(&events)
        var check = ImportCheck()
        var failure: LedgerError?
        for event in events {
            do { _ = try check.check(event) } catch {
                failure = error
                break
            }
        }
        #expect(failure?.code == ErrorCode(code), "\(name): \(failure?.message ?? "no failure")")
        #expect(failure?.message.contains(message) == true, "\(name): \(failure?.message ?? "no failure")")

        // The importer runs the same check as it writes: the transaction holding the altered record is not written.
        let target = try TemporaryLedger()
        let importer = try LedgerImport(into: target.ledger)
        #expect(throws: LedgerError.self) { try importer.write(events) }
        #expect(try target.ledger.lastSeq() == 0, "\(name): nothing was written")
    }

    @Test func anImportIntoALedgerThatHoldsAnythingIsRefused() throws {
        let withEvent = try TemporaryLedger()
        _ = try withEvent.ledger.appendAndWait([input([.transaction(transaction("1"))])])
        let withRefusal = try TemporaryLedger()
        _ = try withRefusal.ledger.appendAndWait([
            .rejected(RejectedInput(raw: [1], code: "invalid_json", message: "x", receivedAt: Self.start))
        ])
        for t in [withEvent, withRefusal] {
            // The metrics follower's sums made first, so that only the import could change what is compared.
            try t.ledger.catchUpMetrics()
            let before = try t.ledger.statistics()
            let error = #expect(throws: LedgerError.self) { _ = try LedgerImport(into: t.ledger) }
            #expect(error?.code == .ledgerNotEmpty)
            #expect(try t.ledger.statistics() == before)
        }
    }
}
