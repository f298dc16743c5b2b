import LedgerCodec
import LedgerCore

/// Where the log stands: its last seq and the number of refused inputs. Every write transaction that stores anything
/// moves one of them forward, so two positions name the transactions between them.
struct LogPosition: Hashable, Sendable, CustomStringConvertible {
    var seq: UInt64
    var rejected: UInt64

    /// Whether everything up to `self` is also in `other`.
    func isReached(by other: LogPosition) -> Bool { seq <= other.seq && rejected <= other.rejected }

    var description: String { "seq \(seq), \(rejected) refused" }
}

/// One group commit as the journal keeps it: the inputs handed to the writer, in order, and the log position before
/// and after their transaction.
///
/// A write transaction is a pure function of its inputs and the ledger it starts from (`AppendBatch.run`: seqs,
/// received-at instants and raw bytes are all in the inputs or the log), so running the same inputs again from
/// `before` writes the same events under the same seqs and reaches `after`: that is what recovery does.
struct JournalRecord {
    var before: LogPosition
    var after: LogPosition
    var inputs: [LedgerInput]
    /// The identity seeds the writer gave inputs that came without one (by index in `inputs`): a recovery must name
    /// the same people alike.
    var seeds: [Int: [UInt8]] = [:]

    /// Tagged binary: 1–4 the positions (varints), then per input 5 (facts: nested 1 raw bytes, 2 each fact as a
    /// stored event with the input's metadata, 3 its identity seed) or 6 (a refusal: `RejectedInput.encoded()`).
    func encoded() -> [UInt8] {
        var w = BinaryWriter(capacity: 64 + inputs.count * 1_024)
        w.write(1, before.seq)
        w.write(2, before.rejected)
        w.write(3, after.seq)
        w.write(4, after.rejected)
        for (index, input) in inputs.enumerated() {
            switch input {
            case .facts(let facts, let metadata, let raw, let given):
                let seed = given ?? seeds[index]
                var inner = BinaryWriter(capacity: raw.count + facts.count * 256)
                inner.write(1, bytes: raw)
                for fact in facts { inner.write(2, bytes: LedgerEvent.encode(fact: fact, metadata: metadata)) }
                if let seed { inner.write(3, bytes: seed) }
                inner.withBytes { w.write(5, bytes: $0) }
            case .rejected(let rejection):
                w.write(6, bytes: rejection.encoded())
            }
        }
        return w.finish()
    }

    /// Decodes `encoded()`; nil when the bytes are not one (the caller names the record).
    init(decoding bytes: UnsafeRawBufferPointer) throws(FactDecodingError) {
        var r = BinaryReader(bytes)
        var positions = [UInt64](repeating: 0, count: 4)
        var inputs: [LedgerInput] = []
        while let (tag, wire) = try r.nextField() {
            switch (tag, wire) {
            case (1...4, .varint): positions[Int(tag) - 1] = try r.readVarint()
            case (5, .bytes):
                var inner = BinaryReader(try r.readBytes())
                var raw: [UInt8] = []
                var facts: [Fact] = []
                var metadata: FactMetadata?
                var seed: [UInt8]?
                while let (innerTag, innerWire) = try inner.nextField() {
                    switch (innerTag, innerWire) {
                    case (1, .bytes): raw = Array(try inner.readBytes())
                    case (2, .bytes):
                        let event = try LedgerEvent(seq: 0, decoding: try inner.readBytes())
                        facts.append(event.fact)
                        metadata = event.metadata
                    case (3, .bytes): seed = Array(try inner.readBytes())
                    default: throw FactDecodingError("journal input field \(innerTag) is unknown")
                    }
                }
                guard let metadata else { throw FactDecodingError("journal input without facts") }
                inputs.append(.facts(facts, metadata: metadata, raw: raw, identitySeed: seed))
            case (6, .bytes):
                inputs.append(.rejected(try RejectedInput(number: 0, decoding: try r.readBytes())))
            default: throw FactDecodingError("journal record field \(tag) is unknown")
            }
        }
        before = LogPosition(seq: positions[0], rejected: positions[1])
        after = LogPosition(seq: positions[2], rejected: positions[3])
        self.inputs = inputs
    }

    init(before: LogPosition, after: LogPosition, inputs: [LedgerInput], seeds: [Int: [UInt8]] = [:]) {
        self.before = before
        self.after = after
        self.inputs = inputs
        self.seeds = seeds
    }
}
