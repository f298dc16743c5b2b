import Crypto
import Foundation
import LedgerAppStore
import LedgerCore
import LedgerStore
import LedgerTestSupport
import Testing

/// V1 notifications used to be keyed by the SHA-256 of their body's bytes; they are now keyed by the SHA-256 of
/// their canonical JSON. A ledger written under the old rule must still verify and replay, and the new rule must
/// make `curl --data` and `--data-binary` of one file one event.
@Suite struct V1NotificationIDUpgradeTests {
    typealias F = AppleFixtures

    /// A V1 notification as a file holds it: pretty-printed over many lines.
    static let body: [UInt8] = {
        let object = try! JSONSerialization.jsonObject(
            with: Data(F.v1Notification(type: "DID_RENEW", latest: [F.v1Transaction()]))
        )
        return [UInt8](try! JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted]))
    }()

    static func hex(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }

    static func decoded(_ raw: [UInt8], receivedAt: Int64) throws -> (facts: [Fact], metadata: FactMetadata) {
        let d = try InputDecoder(configuration: AppStoreConfiguration()).decode(raw, receivedAt: receivedAt)
        return (d.facts, d.metadata)
    }

    @Test func aLedgerWrittenUnderTheByteDigestRuleVerifiesAndLaterCopiesAreOneEvent() throws {
        let t = try TemporaryLedger()
        // What the decoder stored before the change: the same facts, the notification keyed by the bytes' digest.
        var (facts, metadata) = try Self.decoded(Self.body, receivedAt: F.epoch + F.day)
        let oldID = Self.hex(Self.body)
        facts = facts.map { fact in
            guard case .notification(var n) = fact else { return fact }
            n.notificationUUID = oldID
            return .notification(n)
        }
        let first = try t.ledger.appendAndWait([.facts(facts, metadata: metadata, raw: Self.body)])
        #expect(first.map(\.status) == [.appended])
        #expect(try t.ledger.log.events(key: "notification:\(oldID)").count == 1)

        // Reopened by this version: the stored ids are read, never re-derived.
        try t.reopen()
        let verified = try t.ledger.audit.verify()
        #expect(verified.ok, "\(verified.fault ?? "")")
        #expect(try t.ledger.audit.replay(check: true).differences.isEmpty)

        // The same notification received again, now with its canonical id: one more notification event, and only
        // that (its transaction and renewal info are duplicates); the timeline does not move.
        let before = try t.ledger.timeline("1000000000000001", environment: .production, at: F.epoch + 2 * F.day)
        let again = try Self.decoded(Self.body, receivedAt: F.epoch + 2 * F.day)
        let second = try t.ledger.appendAndWait([.facts(again.facts, metadata: again.metadata, raw: Self.body)])
        #expect(second.map(\.status) == [.appended])
        #expect(second.first?.events.map(\.kind) == [.notification])
        let after = try t.ledger.timeline("1000000000000001", environment: .production, at: F.epoch + 2 * F.day)
        #expect(before != nil)
        #expect(before?.periods == after?.periods)
        #expect(before?.status == after?.status)

        // `curl --data` of the same file (newlines stripped) is now a duplicate of that event.
        let stripped = Self.body.filter { $0 != 0x0A && $0 != 0x0D }
        let viaData = try Self.decoded(stripped, receivedAt: F.epoch + 3 * F.day)
        let third = try t.ledger.appendAndWait([.facts(viaData.facts, metadata: viaData.metadata, raw: stripped)])
        #expect(third.map(\.status) == [.duplicate])

        let final = try t.ledger.audit.verify()
        #expect(final.ok, "\(final.fault ?? "")")
        #expect(try t.ledger.audit.replay(check: true).differences.isEmpty)
    }
}
