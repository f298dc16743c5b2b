import LMDB
import LedgerCodec
import LedgerCore
import LedgerErrors

// MARK: - What an export holds, as the store reads it back

/// One event of an export (`storeledger export`), to be written back byte for byte.
public struct ImportedEvent: Sendable {
    public var seq: UInt64
    /// The event's key (its transaction id or synthetic key), which the chain covers with the bytes.
    public var key: String
    /// The canonical event exactly as the source stored and chained it.
    public var bytes: [UInt8]
    /// The seq of the first event of the input this event came from (the raw input is stored once, under it).
    public var rawKey: UInt64
    /// The raw input; required on the first event of each input, checked against the digest on the others.
    public var raw: [UInt8]?
    /// The hash-chain link the export states after this event.
    public var chainHash: [UInt8]
    /// The people the input names, pseudonym → value (nil: forgotten, and the raw input with them: `raw` is empty).
    public var people: [String: String?]

    public init(
        seq: UInt64, key: String, bytes: [UInt8], rawKey: UInt64, raw: [UInt8]?, chainHash: [UInt8],
        people: [String: String?] = [:]
    ) {
        self.seq = seq
        self.key = key
        self.bytes = bytes
        self.rawKey = rawKey
        self.raw = raw
        self.chainHash = chainHash
        self.people = people
    }

    /// Whether the input names someone forgotten: its raw bytes are gone, its digest is all that is left.
    var erased: Bool { people.values.contains(where: { $0 == nil }) }
}

/// One refused input of an export (`storeledger export --complete`), to be written back byte for byte.
public struct ImportedRefusal: Sendable {
    public var number: UInt64
    /// The record exactly as the source's `rejected` store kept it.
    public var record: [UInt8]
    /// The refusal as the export's line states it (its message, bytes and request), which a record sealed in a
    /// ledger with pseudonyms holds only as a digest; nil when the line says it was erased.
    public var stated: RejectedInput?

    public init(number: UInt64, record: [UInt8], stated: RejectedInput? = nil) {
        self.number = number
        self.record = record
        self.stated = stated
    }

    /// The content to seal in the imported ledger: a sealed record's, when the line states it.
    var sealedContent: [UInt8]? {
        guard let stated, (try? record.withUnsafeBytes { try RejectedInput(number: number, decoding: $0) })?.contentDigest != nil
        else { return nil }
        return stated.content()
    }
}

// MARK: - Checking an export without writing

/// Recomputes what an export's records chain to, record by record, without writing anything: `import` runs it over
/// the whole file before it writes, and `LedgerImport` runs it again on what it writes (the file may have changed
/// in between).
///
/// The event chain is the store's own (`HashChain`) over the exported stored bytes, so an altered, missing or
/// reordered event breaks it at that event; a raw input is checked against the SHA-256 its (chained) event records.
/// Failures are `LedgerError`s: `invalid_export` for records that are not what an export writes, and
/// `verification_failed` for records whose chain or digest does not hold.
public struct ImportCheck: Sendable {
    /// The seq of the last event checked (0 before any).
    public private(set) var lastSeq: UInt64 = 0
    /// The chain link after the last event checked.
    public private(set) var chainHead: [UInt8] = HashChain.genesis
    /// The refusals checked and their chain.
    public private(set) var refusals = RefusalChainHead()
    /// The input the last event came from: its raw key and the SHA-256 of its bytes.
    private var input: (rawKey: UInt64, digest: [UInt8])?

    public init() {}

    /// The chain head in lowercase hex.
    public var chainHeadHex: String { hex(chainHead) }

    /// Checks the next event: it follows the last one checked, its key and stored bytes chain from the last link to
    /// the link the export states, the bytes decode to a fact of that key, and its raw input matches the digest it
    /// records. Returns the decoded event.
    public mutating func check(_ e: ImportedEvent) throws(LedgerError) -> LedgerEvent {
        guard e.seq == lastSeq &+ 1 else {
            throw Self.invalid(
                lastSeq == 0 && e.seq > 1
                    ? "the first event is seq \(e.seq): an export of part of a log (`export --after`) cannot rebuild a ledger; export from the start"
                    : "seq \(e.seq) follows seq \(lastSeq): the export skips, repeats or reorders events")
        }
        // The chain first: any byte changed in the event or its key shows here, as a break at this seq.
        let link = HashChain.link(previous: chainHead, seq: e.seq, eventKey: e.key, event: e.bytes)
        guard link == e.chainHash else {
            throw Self.altered(
                "the hash chain breaks at seq \(e.seq): its event chains to \(hex(link)) but the export states "
                    + "\(hex(e.chainHash)) (an event, its key or a chain hash was altered, removed or reordered)")
        }
        let event: LedgerEvent
        do {
            event = try LedgerEvent(seq: e.seq, decoding: e.bytes)
        } catch {
            throw Self.invalid("the stored event of seq \(e.seq) does not decode: \(error)")
        }
        guard event.fact.eventKey == e.key else {
            throw Self.invalid("the event of seq \(e.seq) is exported under key '\(e.key)' but its fact's key is '\(event.fact.eventKey)'")
        }
        if let problem = AppendBatch.problem(in: [event.fact]) {
            throw Self.invalid("the event of seq \(e.seq) cannot be stored: \(problem.message)")
        }
        let recorded = event.metadata.rawDigest
        if e.rawKey == e.seq, e.erased {
            input = (e.seq, recorded)
        } else if e.rawKey == e.seq {
            guard let raw = e.raw else { throw Self.invalid("the raw input of seq \(e.seq) is missing") }
            let digest = sha256(raw)
            guard digest == recorded else {
                throw Self.altered(
                    "the raw input of seq \(e.seq) has SHA-256 \(hex(digest)), but its event records \(hex(recorded)): "
                        + "the raw input was altered")
            }
            input = (e.seq, digest)
        } else {
            // An input's events are written one after another, its raw bytes once, under the first one's seq.
            guard let current = input, current.rawKey == e.rawKey else {
                throw Self.invalid(
                    "seq \(e.seq) names the raw input of seq \(e.rawKey), which is not the input of the events before it")
            }
            guard recorded == current.digest else {
                throw Self.altered("the event of seq \(e.seq) records another raw input than seq \(e.rawKey)'s")
            }
            if let raw = e.raw, !e.erased, sha256(raw) != current.digest {
                throw Self.altered("the raw input of seq \(e.seq) differs from seq \(e.rawKey)'s, which it shares")
            }
        }
        lastSeq = e.seq
        chainHead = link
        return event
    }

    /// Checks the next refused input: numbered after the last one, its record decodes and is coherent. Returns it.
    public mutating func check(_ r: ImportedRefusal) throws(LedgerError) -> RejectedInput {
        guard r.number == refusals.last &+ 1 else {
            throw Self.invalid(
                "refused input \(r.number) follows refused input \(refusals.last): the export skips, repeats or reorders them")
        }
        let input: RejectedInput
        do {
            input = try r.record.withUnsafeBytes { try RejectedInput(number: r.number, decoding: $0) }
        } catch {
            throw Self.invalid("the record of refused input \(r.number) does not decode: \(error)")
        }
        if let digest = input.contentDigest, let stated = r.stated, sha256(stated.content()) != digest {
            throw Self.altered("the message, bytes or request stated for refused input \(r.number) are not the ones its record seals")
        }
        guard !input.code.rawValue.isEmpty, input.size >= input.raw.count, input.raw.count <= RejectedInput.keptBytesLimit else {
            throw Self.invalid("the record of refused input \(r.number) is incoherent (no code, or more bytes than its size)")
        }
        refusals.add(r.record)
        return input
    }

    static func invalid(_ message: String) -> LedgerError { LedgerError(code: .invalidExport, message: message) }
    static func altered(_ message: String) -> LedgerError { LedgerError(code: .verificationFailed, message: message) }
}

// MARK: - Writing an export into an empty ledger

/// Rebuilds a ledger from an export: into an empty ledger, the exported events are written back byte for byte
/// (their raw inputs, the `events`, `log` and index entries, in write transactions of the caller's batches, each
/// checked again by `ImportCheck` as it is written), the projections brought up to date by the incremental engine
/// as an append would, then the refused inputs. The result has the source's seqs, bytes and chain head; `verify`
/// then checks it like any ledger.
///
/// Not thread-safe: one importer, one thread. Writes go straight to the environment, beside the ledger's (idle)
/// writer thread; LMDB serialises them.
public final class LedgerImport {
    public let ledger: Ledger
    private var check: ImportCheck
    /// The events of the last input written, whose projections wait for the next write (or `finish`): an input
    /// split between two writes would otherwise say its lifecycle events in two parts, where the source said them
    /// once (each input's are derived from the timelines before and after all of it).
    private var carried: (events: [LedgerEvent], inputs: [UInt64]) = ([], [])
    /// The receipt creation dates the export's receipts state, when the ledger was given Apple's parsing.
    private var receipt: ReceiptCreationDates.OfAnExport?

    /// An importer into `ledger`, which must hold no event and no refused input (`ledger_not_empty` otherwise).
    public init(into ledger: Ledger) throws {
        let (last, refused) = try ledger.environment.read { txn in
            (try ledger.batch.lastSeq(txn), try ledger.batch.rejectedCount(txn))
        }
        guard last == 0, refused == 0 else {
            throw LedgerError(
                code: .ledgerNotEmpty,
                message: "\(ledger.directory) already holds \(last) events and \(refused) refused inputs; an import "
                    + "writes a new ledger and never appends to one")
        }
        self.ledger = ledger
        self.receipt = ledger.receiptCreationDates.map(ReceiptCreationDates.OfAnExport.init)
        self.check = ImportCheck()
    }

    /// What has been written so far.
    public var written: ImportCheck { check }

    /// Writes the next events (in log order, continuing the last call's) in one write transaction.
    public func write(_ events: [ImportedEvent]) throws {
        guard !events.isEmpty else { return }
        let layout = ledger.layout
        let batch = ledger.batch
        var next = check
        let carriedBefore = carried
        var carriedAfter = carried
        let receiptBefore = receipt
        var receiptAfter = receipt
        // `Environment.write` runs the closure again after growing the map: it starts from `check` each time.
        try ledger.environment.write { txn in
            next = check
            var (written, inputs) = carriedBefore
            written.reserveCapacity(written.count + events.count)
            // An import fills a ledger no server serves yet: no reader keeps answers to tell of these changes.
            var report = WriteReport()
            var receipt = receiptBefore
            for e in events {
                var event = try next.check(e)
                // An export may come from a ledger an older build wrote: its receipts' `in_app` copies get the
                // creation date this build reads in their raw bytes, as an upgrade gives them.
                if let date = receipt?.add(to: &event, seq: e.seq, rawKey: e.rawKey, raw: e.raw) {
                    try ReceiptCreationDates.write([(e.seq, date)], layout, txn)
                }
                let fact = event.fact
                let key = fact.eventKey
                if e.rawKey == e.seq, let raw = e.raw {
                    if e.people.isEmpty {
                        try txn.put(layout.raw, key: StoreLayout.rawKey(e.seq), value: raw, flags: .append)
                    } else {
                        try txn.put(
                            layout.rawSealed, key: StoreLayout.rawKey(e.seq),
                            value: try ledger.sealForImport(raw, people: e.people, txn), flags: .append)
                    }
                }
                try txn.put(layout.events, key: StoreLayout.revisionKey(key.utf8, seq: e.seq), value: e.bytes)
                try txn.put(
                    layout.log, key: StoreLayout.logKey(e.seq),
                    value: LogRecord.encode(link: e.chainHash, rawKey: e.rawKey, eventKey: key), flags: .append)
                // The index entries an append writes; the claims that name no environment reach `by_otid` and
                // `by_user` through the projection engine below, as they did in the source.
                try EventIndexes.write(fact, seq: e.seq, eventKey: key, layout, txn, report: &report)
                written.append(event)
                inputs.append(e.rawKey)
            }
            // The last input may go on in the next write.
            var cut = written.count
            while cut > 0, inputs[cut - 1] == inputs.last { cut -= 1 }
            try batch.projections.apply(
                Array(written[..<cut]), inputs: Array(inputs[..<cut]), in: txn, report: &report)
            carriedAfter = (Array(written[cut...]), Array(inputs[cut...]))
            receiptAfter = receipt
            try txn.put(
                layout.meta, key: StoreLayout.metaChainHead,
                value: ChainHead(last: next.lastSeq, link: next.chainHead).encoded)
        }
        check = next
        carried = carriedAfter
        receipt = receiptAfter
    }

    /// Writes the next refused inputs (numbered on from the last call's) in one write transaction.
    public func write(_ refusals: [ImportedRefusal]) throws {
        guard !refusals.isEmpty else { return }
        let layout = ledger.layout
        var next = check
        try ledger.environment.write { txn in
            next = check
            for r in refusals {
                _ = try next.check(r)
                try txn.put(layout.rejected, key: StoreLayout.rejectedKey(r.number), value: r.record, flags: .append)
                if let content = r.sealedContent {
                    guard let generation = try ledger.identities.generation(layout, txn) else {
                        throw LedgerError(
                            code: .invalidExport, message: "refused input \(r.number) is sealed, and this ledger was made without pseudonyms")
                    }
                    try txn.put(
                        layout.rejectedSealed, key: StoreLayout.rejectedKey(r.number),
                        value: try ledger.identities.sealRefusal(content, generation), flags: .append)
                }
            }
            try txn.put(layout.meta, key: StoreLayout.metaRejectedCount, value: BigEndian.bytes(next.refusals.last))
            try txn.put(
                layout.meta, key: StoreLayout.metaRejectedHead,
                value: ChainHead(last: next.refusals.last, link: next.refusals.link).encoded)
        }
        check = next
    }

    /// Makes everything written durable (a ledger opened with `unsafeNoSync` for the import's speed).
    public func finish() throws {
        if !carried.events.isEmpty {
            let (events, inputs) = carried
            try ledger.environment.write { txn in
                var report = WriteReport()  // no server serves an import yet
                try ledger.batch.projections.apply(events, inputs: inputs, in: txn, report: &report)
            }
            carried = ([], [])
        }
        try ledger.catchUpMetrics()
        try ledger.environment.sync(force: true)
    }
}

// MARK: - Rewriting an export under pseudonyms

/// Makes a ledger with pseudonyms of an export of a ledger without them (`storeledger import --pseudonyms`): each
/// exported event is checked against the source's chain as `LedgerImport` checks it, then its input is appended again
/// through the writer, whose write transaction names its people by pseudonyms and seals its raw bytes (and a refused
/// input's). Every event keeps its seq (each one the source stored was new to it, and renaming values keeps them
/// apart), so answers as of a position are the same; the chain is new, since its events no longer hold the values:
/// the source's head is what an auditor keeps to tie the two (`sourceChainHead`).
///
/// Not thread-safe: one rewriter, one thread.
public final class LedgerRewrite {
    public let ledger: Ledger
    private var check = ImportCheck()
    /// The events of the input read last, which may go on in the next call.
    private var pending: (rawKey: UInt64, facts: [Fact], metadata: FactMetadata, raw: [UInt8])?
    /// The receipt creation dates the export's receipts state, when the ledger was given Apple's parsing.
    private var receipt: ReceiptCreationDates.OfAnExport?

    /// A rewriter into `ledger`, which must be empty and made with pseudonyms.
    public init(into ledger: Ledger) throws {
        let (last, refused, generation) = try ledger.environment.read { txn in
            (try ledger.batch.lastSeq(txn), try ledger.batch.rejectedCount(txn), try ledger.identities.generation(ledger.layout, txn))
        }
        guard last == 0, refused == 0 else {
            throw LedgerError(code: .ledgerNotEmpty, message: "\(ledger.directory) is not empty: a rewrite makes a new ledger")
        }
        guard generation != nil else {
            throw LedgerError(code: .invalidExport, message: "a rewrite under pseudonyms needs a ledger made with them")
        }
        self.ledger = ledger
        self.receipt = ledger.receiptCreationDates.map(ReceiptCreationDates.OfAnExport.init)
    }

    /// The source's chain as checked so far: its last seq and head, which the rewritten ledger's chain replaces.
    public var sourceChainHead: (seq: UInt64, link: [UInt8]) { (check.lastSeq, check.chainHead) }

    /// Checks and appends the next events (in log order, continuing the last call's).
    public func write(_ events: [ImportedEvent]) throws {
        var inputs: [LedgerInput] = []
        for e in events {
            var event = try check.check(e)
            // The rewritten events are new: a receipt an older build stored states its creation date in them.
            _ = receipt?.add(to: &event, seq: e.seq, rawKey: e.rawKey, raw: e.raw)
            if let p = pending, p.rawKey == e.rawKey {
                pending!.facts.append(event.fact)
                continue
            }
            if let p = pending { inputs.append(.facts(p.facts, metadata: p.metadata, raw: p.raw)) }
            guard e.rawKey == e.seq, let raw = e.raw else {
                throw ImportCheck.invalid("the raw input of seq \(e.seq) is missing")
            }
            pending = (e.rawKey, [event.fact], event.metadata, raw)
        }
        try append(inputs)
    }

    /// Checks and appends the refused inputs, after every event.
    public func write(_ refusals: [ImportedRefusal]) throws {
        try flush()
        var inputs: [LedgerInput] = []
        for r in refusals {
            var refusal = try check.check(r)
            refusal.number = 0
            inputs.append(.rejected(refusal))
        }
        try append(inputs)
    }

    /// Appends the input read last.
    public func flush() throws {
        guard let p = pending else { return }
        pending = nil
        try append([.facts(p.facts, metadata: p.metadata, raw: p.raw)])
    }

    /// Appends `inputs` through the writer. A refused input of the source is recorded refused again (its result is
    /// a refusal with the source's code); any other input must be appended.
    private func append(_ inputs: [LedgerInput]) throws {
        guard !inputs.isEmpty else { return }
        for (input, result) in zip(inputs, try ledger.appendAndWait(inputs)) {
            if case .rejected(let refusal) = input {
                guard result.status == .rejected, result.error?.code == refusal.code else {
                    throw LedgerError(
                        code: .verificationFailed,
                        message: "rewriting a refused input (\(refusal.code.rawValue)): it was not recorded as refused")
                }
            } else if let error = result.error {
                throw LedgerError(code: error.code, message: "rewriting an input: \(error.message)")
            }
        }
    }

    /// Makes everything written durable, and checks that every event kept its seq.
    public func finish() throws {
        try flush()
        let (last, refused) = try ledger.environment.read { txn in
            (try ledger.batch.lastSeq(txn), try ledger.batch.rejectedCount(txn))
        }
        guard last == check.lastSeq else {
            throw LedgerError(
                code: .verificationFailed,
                message: "the rewrite holds \(last) events where the export held \(check.lastSeq)")
        }
        guard refused == check.refusals.last else {
            throw LedgerError(
                code: .verificationFailed,
                message: "the rewrite holds \(refused) refused inputs where the export held \(check.refusals.last)")
        }
        try ledger.catchUpMetrics()
        try ledger.environment.sync(force: true)
    }
}
