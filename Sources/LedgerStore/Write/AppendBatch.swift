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

    /// What the transaction has done so far, stage by stage.
    private struct Progress {
        var head: Pending
        /// What it wrote that readers' answers are made of (`WriteReport`).
        var report = WriteReport()
        /// The events logged, in log order, and the input of each (the seq of its first event, its raw key): what
        /// the projections fold.
        var written: [LedgerEvent] = []
        var inputOf: [UInt64] = []
        /// Names people by pseudonyms, in a ledger with them.
        var naming: Pseudonymizer?
        /// The people named for the first time (`CommitChanges.identities`).
        var named: [String: Identities.Identity] = [:]
    }

    /// Appends `inputs`; `changes` learns what the commit will change (for the readers' answer cache, from the
    /// `WriteReport` of what it wrote), `seeds` the identity seed given to each input (by index) that came without
    /// one and named someone for the first time. `digests`, when given, holds the SHA-256 of each input's raw bytes
    /// (made before the writer took them); otherwise each is hashed here.
    ///
    /// The stages, in order: refusals are kept apart (`reject`); each accepted input gets its digest and its people
    /// named by pseudonyms (`append`); each fact not known yet is logged with its raw bytes and chain link (`log`) and
    /// indexed (`EventIndexes`); then the projections fold what was logged (`ProjectionEngine`), and the heads and
    /// the report say what changed (`finish`).
    func run(
        _ inputs: [LedgerInput], digests: [[UInt8]]? = nil, in txn: Transaction, changes: inout CommitChanges,
        seeds: inout [Int: [UInt8]]
    ) throws -> [AppendResult] {
        let refusedBefore = try rejectedCount(txn)
        var progress = try Progress(
            head: Pending(
                seq: lastSeq(txn), chainHead: chainHead(txn), rejectedCount: refusedBefore, rejectedHead: nil,
                rejectedCountBefore: refusedBefore),
            naming: naming(txn, inputs: inputs.count))
        var results: [AppendResult] = []
        results.reserveCapacity(inputs.count)
        for (position, input) in inputs.enumerated() {
            switch input {
            case .rejected(let rejection):
                try reject(rejection, &progress.head, txn, sealingWith: progress.naming?.generation)
                results.append(.rejected(code: rejection.code, message: rejection.message))
            case .facts(let facts, let metadata, let raw, let seed):
                if let problem = Self.problem(in: facts)
                    ?? (progress.naming == nil ? nil : Self.pseudonymShapedValue(in: facts, metadata))
                {
                    let rejection = RejectedInput(
                        raw: raw, code: problem.code, message: problem.message, receivedAt: metadata.receivedAt)
                    try reject(rejection, &progress.head, txn, sealingWith: progress.naming?.generation)
                    results.append(.rejected(code: problem.code, message: problem.message))
                    continue
                }
                var used = seed
                let digest = digests?[position] ?? sha256(raw)
                results.append(try append(facts, metadata, raw, digest, seed: &used, inputs.count, &progress, txn))
                if seed == nil, let used { seeds[position] = used }
            }
        }
        changes = try finish(&progress, txn)
        return results
    }

    /// The ledger's pseudonymizer for a batch of `inputs` (nil in a ledger without pseudonyms).
    private func naming(_ txn: Transaction, inputs: Int) throws -> Pseudonymizer? {
        try identities.generation(layout, txn).map {
            Pseudonymizer(identities: identities, generation: $0, layout: layout, inputs: inputs)
        }
    }

    /// One accepted input with the digest of its raw bytes: its people named by pseudonyms (`seed` learns the
    /// identity seed it was given), then each of its facts the log does not hold yet, logged and indexed.
    private func append(
        _ facts: [Fact], _ metadata: FactMetadata, _ raw: [UInt8], _ digest: [UInt8], seed: inout [UInt8]?,
        _ batchSize: Int, _ progress: inout Progress, _ txn: Transaction
    ) throws -> AppendResult {
        var (facts, metadata) = (facts, metadata)
        metadata.rawDigest = digest
        // The log names people by pseudonyms; an input that names anyone is kept sealed with their keys.
        var people: [Identities.Identity] = []
        if progress.naming != nil {
            (facts, metadata, people) = try progress.naming!.rename(facts, metadata, seed: &seed, txn)
        }
        var events: [AppendResult.WrittenEvent] = []
        var rawKey: UInt64? = nil
        for fact in facts {
            let key = fact.eventKey
            let factBytes = fact.encoded()
            // Idempotency: the same revision again is the same event.
            if try layout.isKnown(factBytes, key: key, txn) { continue }
            let seq = try log(
                factBytes, key: key, metadata, raw: raw, sealedFor: people, rawKey: &rawKey, &progress.head, txn)
            try EventIndexes.write(fact, seq: seq, eventKey: key, layout, txn, report: &progress.report)
            if case .erasure(let erasure) = fact { try forget(erasure, &progress, batchSize: batchSize, txn) }
            progress.written.append(LedgerEvent(seq: seq, fact: fact, metadata: metadata))
            progress.inputOf.append(rawKey!)
            events.append(
                AppendResult.WrittenEvent(
                    seq: seq, kind: fact.kind, transactionId: fact.transactionId?.rawValue,
                    originalTransactionId: fact.originalTransactionId?.rawValue,
                    grantId: { if case .grant(let g) = fact { g.grantId } else { nil } }()))
        }
        return AppendResult(events: events)
    }

    /// The log and its chain: the event under the next seq, its link, and (for the first event of its input) the raw
    /// input, stored once under that seq (`rawKey`), sealed when it names `people`. Returns the seq.
    private func log(
        _ factBytes: [UInt8], key: String, _ metadata: FactMetadata, raw: [UInt8],
        sealedFor people: [Identities.Identity], rawKey: inout UInt64?, _ head: inout Pending, _ txn: Transaction
    ) throws -> UInt64 {
        head.seq = try Self.successor(head.seq, of: "log")
        let seq = head.seq
        if rawKey == nil {
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
        head.chainHead = HashChain.link(previous: head.chainHead, seq: seq, eventKey: key, event: stored)
        try txn.put(
            layout.log, key: StoreLayout.logKey(seq),
            value: LogRecord.encode(link: head.chainHead, rawKey: rawKey!, eventKey: key), flags: .append)
        return seq
    }

    /// An erasure logged: the people it names are destroyed with their keys, and the batch names people with the
    /// generation in force after it.
    private func forget(_ erasure: Erasure, _ progress: inout Progress, batchSize: Int, _ txn: Transaction) throws {
        if let named = progress.naming?.named { progress.named.merge(named) { _, new in new } }
        let forgotten = Set(erasure.pseudonyms)
        progress.named = progress.named.filter { !forgotten.contains($0.value.pseudonym) }
        try identities.erase(erasure, layout, txn)
        progress.naming = try naming(txn, inputs: batchSize)
    }

    /// The projections of what was logged, the heads of the log and of the refusals, and what the commit changes
    /// for the readers (from the report).
    private func finish(_ progress: inout Progress, _ txn: Transaction) throws -> CommitChanges {
        if let named = progress.naming?.named { progress.named.merge(named) { _, new in new } }
        let head = progress.head
        if !progress.written.isEmpty {
            try projections.apply(progress.written, inputs: progress.inputOf, in: txn, report: &progress.report)
            try txn.put(
                layout.meta, key: StoreLayout.metaChainHead,
                value: ChainHead(last: head.seq, link: head.chainHead).encoded)
        }
        if let link = head.rejectedHead, head.rejectedCount != head.rejectedCountBefore {
            try txn.put(layout.meta, key: StoreLayout.metaRejectedCount, value: BigEndian.bytes(head.rejectedCount))
            try txn.put(
                layout.meta, key: StoreLayout.metaRejectedHead,
                value: ChainHead(last: head.rejectedCount, link: link).encoded)
        }
        let valueOf = progress.naming?.valueOf ?? [:]
        var changes = try progress.report.changes(lastSeq: head.seq) { user in
            try valueOf[user.rawValue] ?? identities.shown(user.rawValue, layout, txn)
        }
        changes.identities = progress.named
        return changes
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

    /// In a ledger with pseudonyms, the refusal of an input naming a person by a value of the pseudonyms' form. The
    /// ledger answers reads of such a value as the person it names so: the input would mix a stranger into their
    /// history, a forgotten person's included (whose pseudonym `forget` reports).
    static func pseudonymShapedValue(in facts: [Fact], _ metadata: FactMetadata) -> AppendResult.ErrorInfo? {
        var found = metadata.appUserId.map(\.rawValue).flatMap { Identities.looksLikePseudonym($0) ? $0 : nil }
        for fact in facts where found == nil {
            fact.forEachPersonalValue { value in
                if found == nil, Identities.looksLikePseudonym(value) { found = value }
            }
        }
        guard let found else { return nil }
        return AppendResult.ErrorInfo(
            code: .pseudonymShapedID,
            message: "'\(found)' has the form of the pseudonyms this ledger names people by (\(Identities.pseudonymPrefix) "
                + "and base32 digits), and would read as the person named so: give the person another id")
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
