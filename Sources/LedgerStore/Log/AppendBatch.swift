import LMDB
import LedgerCodec
import LedgerCore
import LedgerErrors

/// What one write transaction does with a batch of inputs: idempotency, raw bytes, events, log and hash chain,
/// indexes, then the projections of the subscriptions it touched. Runs on the writer thread only.
///
/// `run` is a pure function of the inputs and the transaction's view: `Environment.write` may call it again after
/// growing the map, so it keeps no state across calls.
struct AppendBatch {
    let layout: StoreLayout
    let projections: ProjectionEngine
    let identities: Identities

    /// The head of the log as this transaction advances it.
    private struct Pending {
        var seq: UInt64
        var chainHead: [UInt8]
        var rejectedCount: UInt64
        /// The `RejectedChain` link of the last refusal; nil until a refusal is written (read lazily: most
        /// batches refuse nothing).
        var rejectedHead: [UInt8]?
        let rejectedCountBefore: UInt64
    }

    /// Appends `inputs`; `changes` learns what the commit will change (for the readers' answer cache, from the
    /// `WriteReport` of what it wrote), `seeds` the identity seed given to each input (by index) that came without
    /// one and named someone for the first time.
    func run(
        _ inputs: [LedgerInput], in txn: Transaction, changes: inout CommitChanges, seeds: inout [Int: [UInt8]]
    ) throws -> [AppendResult] {
        let refusedBefore = try rejectedCount(txn)
        var state = try Pending(
            seq: lastSeq(txn), chainHead: chainHead(txn), rejectedCount: refusedBefore, rejectedHead: nil,
            rejectedCountBefore: refusedBefore)
        var results: [AppendResult] = []
        results.reserveCapacity(inputs.count)
        var report = WriteReport()
        var written: [LedgerEvent] = []
        // The input of each written event: the seq of its first event (its raw key).
        var inputOf: [UInt64] = []
        var naming = try identities.generation(layout, txn).map {
            Pseudonymizer(identities: identities, generation: $0, layout: layout, inputs: inputs.count)
        }

        for (position, input) in inputs.enumerated() {
            switch input {
            case .rejected(let rejection):
                try reject(rejection, &state, txn, sealingWith: naming?.generation)
                results.append(.rejected(code: rejection.code, message: rejection.message))
            case .facts(var facts, var metadata, let raw, let seed):
                if let problem = Self.problem(in: facts) {
                    try reject(
                        RejectedInput(raw: raw, code: problem.code, message: problem.message, receivedAt: metadata.receivedAt),
                        &state, txn, sealingWith: naming?.generation)
                    results.append(.rejected(code: problem.code, message: problem.message))
                    continue
                }
                metadata.rawDigest = sha256(raw)
                // The log names people by pseudonyms; an input that names anyone is kept sealed with their keys.
                var people: [Identities.Identity] = []
                if naming != nil {
                    var used = seed
                    (facts, metadata, people) = try naming!.rename(facts, metadata, seed: &used, txn)
                    if seed == nil, let used { seeds[position] = used }
                }
                var writtenForInput: [AppendResult.WrittenEvent] = []
                var rawKey: UInt64? = nil
                for fact in facts {
                    let key = fact.eventKey
                    let factBytes = fact.encoded()
                    if try layout.isKnown(factBytes, key: key, txn) { continue }
                    state.seq = try Self.successor(state.seq, of: "log")
                    let seq = state.seq
                    if rawKey == nil {
                        // The raw input is stored once, under the seq of the first event it produced.
                        rawKey = seq
                        if people.isEmpty {
                            try txn.put(layout.raw, key: StoreLayout.rawKey(seq), value: raw, flags: .append)
                        } else {
                            try txn.put(
                                layout.rawSealed, key: StoreLayout.rawKey(seq), value: try SealedRaw.seal(raw, for: people),
                                flags: .append)
                        }
                    }
                    let stored = LedgerEvent.encode(factBytes: factBytes, metadata: metadata)
                    try txn.put(layout.events, key: StoreLayout.revisionKey(key.utf8, seq: seq), value: stored)
                    state.chainHead = HashChain.link(previous: state.chainHead, seq: seq, eventKey: key, event: stored)
                    try txn.put(
                        layout.log, key: StoreLayout.logKey(seq),
                        value: LogRecord.encode(link: state.chainHead, rawKey: rawKey!, eventKey: key),
                        flags: .append)
                    try EventIndexes.write(fact, seq: seq, eventKey: key, layout, txn, report: &report)
                    if case .erasure(let erasure) = fact {
                        // The people it names can no longer be told (every answer that showed them changes).
                        if let named = naming?.named { changes.identities.merge(named) { _, new in new } }
                        let forgotten = Set(erasure.pseudonyms)
                        changes.identities = changes.identities.filter { !forgotten.contains($0.value.pseudonym) }
                        try identities.erase(erasure, layout, txn)
                        naming = try identities.generation(layout, txn).map {
                            Pseudonymizer(identities: identities, generation: $0, layout: layout, inputs: inputs.count)
                        }
                    }
                    written.append(LedgerEvent(seq: seq, fact: fact, metadata: metadata))
                    inputOf.append(rawKey!)
                    writtenForInput.append(
                        AppendResult.WrittenEvent(
                            seq: seq, kind: fact.kind, transactionId: fact.transactionId?.rawValue,
                            originalTransactionId: fact.originalTransactionId?.rawValue,
                            grantId: { if case .grant(let g) = fact { g.grantId } else { nil } }()))
                }
                results.append(AppendResult(events: writtenForInput))
            }
        }

        if let named = naming?.named { changes.identities.merge(named) { _, new in new } }
        let valueOf = naming?.valueOf ?? [:]
        if !written.isEmpty {
            try projections.apply(written, inputs: inputOf, in: txn, report: &report)
            try txn.put(layout.meta, key: StoreLayout.metaChainHead, value: ChainHead(last: state.seq, link: state.chainHead).encoded)
        }
        if let head = state.rejectedHead, state.rejectedCount != state.rejectedCountBefore {
            try txn.put(layout.meta, key: StoreLayout.metaRejectedCount, value: BigEndian.bytes(state.rejectedCount))
            try txn.put(
                layout.meta, key: StoreLayout.metaRejectedHead, value: ChainHead(last: state.rejectedCount, link: head).encoded)
        }
        let named = changes.identities
        changes = try report.changes(lastSeq: state.seq) { user in
            try valueOf[user.rawValue] ?? identities.shown(user.rawValue, layout, txn)
        }
        changes.identities = named
        changes.valueOf = valueOf
        return results
    }

    /// Checks the store's own invariants on facts (the decoders should already have refused these).
    static func problem(in facts: [Fact]) -> AppendResult.ErrorInfo? {
        if facts.isEmpty { return AppendResult.ErrorInfo(code: .noFacts, message: "the input states no fact") }
        for fact in facts {
            let key = fact.eventKey
            if key.isEmpty || key.utf8.contains(0) || key.utf8.count > 400 {
                return AppendResult.ErrorInfo(code: .invalidID, message: "event key '\(key)' is empty, too long or holds NUL")
            }
            if let otid = fact.originalTransactionId, otid.utf8Count == 0 || otid.utf8Count > 400 {
                return AppendResult.ErrorInfo(code: .missingField, message: "originalTransactionId is empty or too long")
            }
            if case .transaction(let t) = fact, t.transactionId.utf8Count == 0 {
                return AppendResult.ErrorInfo(code: .missingField, message: "transactionId is empty")
            }
            if case .binding(let b) = fact, b.appUserId.rawValue.isEmpty || b.appUserId.rawValue.utf8.count > 400 {
                return AppendResult.ErrorInfo(code: .missingField, message: "appUserId is empty or too long")
            }
            if case .grant(let g) = fact, g.appUserId.rawValue.isEmpty {
                return AppendResult.ErrorInfo(code: .missingField, message: "appUserId is empty")
            }
        }
        return nil
    }

    /// Stores a refusal; in a ledger with pseudonyms (`generation`) its content is sealed apart, in
    /// `rejected_sealed`, and the record the chain covers holds its digest.
    private func reject(
        _ rejection: RejectedInput, _ state: inout Pending, _ txn: Transaction, sealingWith generation: Identities.Generation?
    ) throws {
        var head = try state.rejectedHead ?? rejectedHead(count: state.rejectedCount, txn)
        state.rejectedCount = try Self.successor(state.rejectedCount, of: "rejected")
        var stored = rejection
        if let generation {
            let (record, content) = rejection.sealedForm()
            stored = record
            try txn.put(
                layout.rejectedSealed, key: StoreLayout.rejectedKey(state.rejectedCount),
                value: try identities.sealRefusal(content, generation), flags: .append)
        }
        let record = stored.encoded()
        head = RejectedChain.link(previous: head, number: state.rejectedCount, record: record)
        state.rejectedHead = head
        try txn.put(layout.rejected, key: StoreLayout.rejectedKey(state.rejectedCount), value: record, flags: .append)
    }

    /// The link of the last of `count` stored refusals: from `meta`, or (once, for refusals stored before the chain
    /// existed) recomputed over the records.
    private func rejectedHead(count: UInt64, _ txn: Transaction) throws -> [UInt8] {
        if let stored = try txn.get(layout.meta, key: StoreLayout.metaRejectedHead) {
            let head = try ChainHead(stored, name: "rejected_head")
            if head.last == count { return head.link }
        }
        var head = HashChain.genesis
        let cursor = try txn.cursor(layout.rejected)
        var entry = try cursor.first()
        while let e = entry {
            let number = try BigEndian.uint64(key: e.key, of: "rejected")
            head = e.value.withUnsafeBytes { RejectedChain.link(previous: head, number: number, record: $0) }
            entry = try cursor.next()
        }
        return head
    }

    /// The number after `last`, the last seq of the log or the last number of the rejected store: only a damaged
    /// key or count reads as the largest number, after which there is none.
    private static func successor(_ last: UInt64, of database: StaticString) throws(LedgerError) -> UInt64 {
        guard last < .max else {
            throw LedgerError.corrupted(
                "the last number of `\(database)` reads as \(last), the largest there is: nothing can follow it")
        }
        return last + 1
    }

    // MARK: - Reading the head

    /// The log's position as the transaction sees it (the journal's check that a record continues the ledger).
    func position(_ txn: Transaction) throws -> LogPosition {
        LogPosition(seq: try lastSeq(txn), rejected: try rejectedCount(txn))
    }

    func lastSeq(_ txn: Transaction) throws -> UInt64 {
        let cursor = try txn.cursor(layout.log)
        guard let last = try cursor.last() else { return 0 }
        return try BigEndian.uint64(key: last.key, of: "log")
    }

    /// The link the log's chain ends in: genesis before the first event.
    func chainHead(_ txn: Transaction) throws -> [UInt8] {
        guard let stored = try txn.get(layout.meta, key: StoreLayout.metaChainHead) else { return HashChain.genesis }
        return try ChainHead(stored, name: "chain_head").link
    }

    /// How many inputs were refused: 0 before the first.
    func rejectedCount(_ txn: Transaction) throws -> UInt64 {
        guard let v = try txn.get(layout.meta, key: StoreLayout.metaRejectedCount) else { return 0 }
        return try BigEndian.uint64(value: v, of: "meta", name: "key `rejected_count`")
    }
}
