import Foundation
@testable import LMDB
import LedgerCore
@testable import LedgerStore
import LedgerErrors
import Testing

/// The value layouts of `Layout/`, each written and read back, and the append result's derived fields.
@Suite struct LayoutTests {
    /// `bytes` as LMDB would hand them out.
    func mapped<R>(_ bytes: [UInt8], _ body: (MappedBytes) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes { try body(MappedBytes($0)) }
    }

    /// `body` throws `corrupted` with exactly `message`.
    func expectCorrupted<R>(
        _ message: String, _ body: () throws -> R, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            _ = try body()
            Issue.record("no error: expected \(message)", sourceLocation: sourceLocation)
        } catch let error as LedgerError {
            #expect(error.code == .corrupted && error.message == message, "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("not a LedgerError: \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func bigEndianKeysOrderNumerically() throws {
        let values: [UInt64] = [0, 1, 255, 256, 1 << 40, .max]
        let encoded = values.map(BigEndian.bytes)
        #expect(encoded == encoded.sorted { $0.lexicographicallyPrecedes($1) })
        for (v, bytes) in zip(values, encoded) {
            #expect(bytes.count == 8)
            #expect(bytes.withUnsafeBytes { BigEndian.uint64($0) } == v)
            #expect(([9] + bytes).withUnsafeBytes { BigEndian.uint64($0, at: 1) } == v)
            #expect(try mapped(bytes) { try BigEndian.uint64(key: $0, of: "log") } == v)
            let lifecycleKey = bytes + [1, 2, 3, 4, 5]
            #expect(try mapped(lifecycleKey) { try BigEndian.uint64(key: $0, of: "lifecycle", length: 13) } == v)
            #expect(try mapped(bytes) { try BigEndian.uint64(value: $0, of: "meta", name: "key `schema`") } == v)
        }
    }

    /// A stored integer of another length than its layout's is `corrupted`, named, never read past its end.
    @Test func aStoredIntegerOfAnotherLengthIsCorrupted() {
        for length in [0, 1, 5, 7, 9, 16, 17] {
            let bytes = (0..<length).map { UInt8($0) }
            let shown = hex(bytes.prefix(16)) + (length > 16 ? "…" : "")
            expectCorrupted("a key of `rejected` is \(length) bytes, not 8: \(shown)") {
                try mapped(bytes) { try BigEndian.uint64(key: $0, of: "rejected") }
            }
            expectCorrupted("the value of `meta` key `rejected_count` is \(length) bytes, not 8") {
                try mapped(bytes) { try BigEndian.uint64(value: $0, of: "meta", name: "key `rejected_count`") }
            }
        }
        expectCorrupted("a key of `lifecycle` is 8 bytes, not 13: 0000000000000001") {
            try mapped(BigEndian.bytes(1)) { try BigEndian.uint64(key: $0, of: "lifecycle", length: 13) }
        }
    }

    @Test func aRevisionKeyIsTheEventKeyAZeroAndTheSeq() {
        let key = StoreLayout.revisionKey("1000000741475761".utf8, seq: 258)
        #expect(key == Array("1000000741475761".utf8) + [0, 0, 0, 0, 0, 0, 0, 1, 2])
        #expect(StoreLayout.revisionKey(Array("1000000741475761".utf8), seq: 258) == key)
        #expect(key.starts(with: StoreLayout.revisionKeyPrefix("1000000741475761".utf8)))
    }

    @Test func anEventReferenceNamesItsRevision() {
        let reference = EventReference.encode(seq: 7, eventKey: "renewal:42")
        #expect(reference == [0, 0, 0, 0, 0, 0, 0, 7] + Array("renewal:42".utf8))
        var revisionKey: [UInt8] = [1, 2, 3]  // a buffer reused: overwritten
        #expect(mapped(reference) { EventReference.decode($0, revisionKey: &revisionKey) } == 7)
        #expect(revisionKey == StoreLayout.revisionKey("renewal:42".utf8, seq: 7))
        #expect(mapped(Array(reference.prefix(8))) { EventReference.decode($0, revisionKey: &revisionKey) } == nil)
    }

    @Test func aLogRecordKeepsItsLinkRawKeyAndEventKey() throws {
        let link = (0..<32).map { UInt8($0) }
        let bytes = LogRecord.encode(link: link, rawKey: 5, eventKey: "1001")
        #expect(bytes.count == 44)
        let record = try mapped(bytes) { try LogRecord($0, seq: 9) }
        #expect(record.link == link && record.rawKey == 5 && record.eventKey == Array("1001".utf8))
        #expect(record.revisionKey(seq: 9) == StoreLayout.revisionKey("1001".utf8, seq: 9))
        expectCorrupted("`log` entry 9 is 40 bytes, shorter than a record (41 or more)") {
            try mapped(Array(bytes.prefix(40))) { try LogRecord($0, seq: 9) }
        }
    }

    @Test func aChainHeadIsItsLastNumberAndLink() throws {
        let head = ChainHead(last: 300, link: Array(repeating: 0xAB, count: 32))
        #expect(head.encoded == [0, 0, 0, 0, 0, 0, 1, 44] + Array(repeating: 0xAB, count: 32))
        #expect(try mapped(head.encoded) { try ChainHead($0, name: "chain_head") } == head)
        expectCorrupted("the value of `meta` key `chain_head` is 39 bytes, not 40") {
            try mapped(Array(head.encoded.dropLast())) { try ChainHead($0, name: "chain_head") }
        }
    }

    /// Status and seq follow from the events written and the error, and the wire form still states both.
    @Test func anAppendResultDerivesItsStatusAndSeq() throws {
        #expect(AppendResult.duplicate.status == .duplicate && AppendResult.duplicate.seq == nil)
        #expect(AppendResult(events: []) == .duplicate)
        let appended = AppendResult(events: [
            .init(seq: 6, kind: .transaction, transactionId: "1", originalTransactionId: "1"),
            .init(seq: 7, kind: .renewal, transactionId: nil, originalTransactionId: "1"),
        ])
        #expect(appended.status == .appended && appended.seq == 7)
        let rejected = AppendResult.rejected(code: "invalid_json", message: "no")
        #expect(rejected.status == .rejected && rejected.seq == nil && rejected.error?.code == "invalid_json")

        for result in [appended, .duplicate, rejected] {
            let json = try JSONEncoder().encode(result)
            let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
            #expect(object["status"] as? String == result.status.rawValue)
            #expect((object["seq"] as? NSNumber)?.uint64Value == result.seq)
            #expect(try JSONDecoder().decode(AppendResult.self, from: json) == result)
        }
    }
}
