import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerReplication
import Testing

@Suite("The intake's messages and partitions")
struct IntakeMessageTests {
    @Test("a message carries the raw bytes untouched and the caller's options; its id is its digest")
    func roundTrips() throws {
        let raw = Array("{\"signedPayload\":\"a.b.c\"}\n".utf8)
        let options = IngestPipeline.Options(
            forcedType: .notification, appUserId: AppUserID(rawValue: "u\n1"), receivedAt: nil)
        let message = IntakeMessage(raw: raw, options: options)
        let read = try #require(IntakeMessage(payload: message.payload))
        #expect(read == message && read.raw == raw)
        // Without a stated receivedAt, the stream's timestamp is the one every replica uses.
        let replayed = read.options(streamMillis: 1_700_000_000_123)
        #expect(replayed.receivedAt == 1_700_000_000_123 && replayed.forcedType == .notification)
        #expect(replayed.appUserId?.rawValue == "u\n1")
        // A stated receivedAt wins over the stream's.
        var stated = options
        stated.receivedAt = 1_600_000_000_000
        #expect(IntakeMessage(raw: raw, options: stated).options(streamMillis: 1).receivedAt == 1_600_000_000_000)
        // The same input and options: the same id (de-duplication); another user: another id.
        #expect(message.messageId == IntakeMessage(raw: raw, options: options).messageId)
        #expect(message.messageId.count == 64)
        var other = options
        other.appUserId = AppUserID(rawValue: "u2")
        #expect(IntakeMessage(raw: raw, options: other).messageId != message.messageId)
        #expect(IntakeMessage(payload: Array("not ours".utf8)) == nil)
    }

    @Test("partitions: FNV-1a of the OTID, stable across processes; sets parsed and bounded")
    func partitions() {
        let sixteen = Partitioning(count: 16)
        // FNV-1a 64 modulo 16, computed independently (Python): a change of hash would move every subscription.
        #expect(["1000000741475761", "2000000000000001", "7000001"].map { sixteen.partition(of: $0) } == [10, 4, 9])
        #expect(Partitioning(count: 1).partition(of: "anything") == 0)
        var seen = Set<Int>()
        for n in 0..<1_000 { seen.insert(sixteen.partition(of: String(1_000_000 + n))) }
        #expect(seen == Set(0..<16))
        #expect(Partitioning.parseSet("0,2-3", count: 4) == [0, 2, 3])
        #expect(Partitioning.parseSet("4", count: 4) == nil)
        #expect(Partitioning.parseSet("3-1", count: 4) == nil)
        #expect(Partitioning.parseSet("x", count: 4) == nil)
        let held = Partitioning(count: 4, held: [1])
        #expect(held.holds(1) && !held.holds(0))
    }
}
