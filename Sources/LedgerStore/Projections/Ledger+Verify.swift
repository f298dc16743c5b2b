import LMDB
import LedgerCodec
import LedgerCore

extension Ledger {
    /// Checks the hash chain over the whole log, every index against the log, the raw inputs against their digests,
    /// the `rejected` store (gapless numbering, decodable records, consistent sizes, its count and chain head in
    /// `meta`), and every stored projection against a replay. Stops at the first fault and names it.
    ///
    /// Reads in batches of short read transactions, so a live writer is never blocked for long.
    public func verify(progress: ProgressHandler? = nil) throws -> VerificationReport {
        var report = VerificationReport(events: 0, projections: 0, rejected: 0, chainHead: hex(HashChain.genesis), fault: nil)
        let total = try lastSeq()
        var previous = HashChain.genesis
        var next: UInt64 = 1
        var withOTID = 0
        var bindings = Set<[UInt8]>()
        var rawInputs = 0
        // Claims that named no environment are indexed under every environment their subscription is known in:
        // counted once the whole log is read.
        var claimsOfEveryEnvironment: [(claim: BindingClaim, seq: UInt64)] = []
        var knownSubscriptions = Set<[UInt8]>()
        let chunk: UInt64 = 20_000

        // 1. The log: contiguous, every event present and decodable, chained, indexed; in chunks of short read
        // transactions. 2. Once a transaction sees the end of the log, the counts in that same snapshot: nothing is
        // stored beside the log (an extra event or index entry is a fault too). A server may append meanwhile: the
        // end is wherever the last snapshot finds it.
        enum Step { case fault(String), more, done }
        while true {
            let step: Step = try environment.read { txn in
                let last = try batch.lastSeq(txn)
                if next <= last {
                    let cursor = try txn.cursor(layout.log)
                    var entry = try cursor.find(StoreLayout.logKey(next))
                    if entry == nil { return .fault("log entry \(next) is missing") }
                    let end = min(last, next + chunk - 1)
                    while let e = entry, next <= end {
                        let seq = BigEndian.uint64(e.key)
                        guard seq == next else { return .fault("log entry \(next) is missing (the log jumps to \(seq))") }
                        guard let log = LogRecord(e.value) else { return .fault("log entry \(seq) is malformed") }
                        let event: LedgerEvent
                        switch try checkEntry(seq: seq, log: log, previous: &previous, txn) {
                        case .failure(let fault): return .fault(fault.description)
                        case .success(let checked): event = checked
                        }
                        if case .binding(let claim) = event.fact, claim.everyEnvironment {
                            claimsOfEveryEnvironment.append((claim, seq))
                        } else if let otid = event.fact.originalTransactionId {
                            withOTID += 1
                            knownSubscriptions.insert(StoreLayout.subscriptionKey(event.fact.environment, otid))
                            if case .binding(let claim) = event.fact {
                                bindings.insert(
                                    StoreLayout.userKey(claim.environment, claim.appUserId) + [0]
                                        + StoreLayout.subscriptionKey(claim.environment, claim.originalTransactionId))
                            }
                        }
                        if log.rawKey == seq { rawInputs += 1 }
                        report.events = seq
                        next = seq + 1
                        entry = try cursor.next()
                    }
                    return .more
                }
                if let stored = try txn.get(layout.meta, key: StoreLayout.metaChainHead), let head = ChainHead(stored) {
                    guard head == ChainHead(last: last, link: previous) else {
                        return .fault("stored chain head differs from the log's")
                    }
                } else if last > 0 {
                    return .fault("the chain head is missing")
                }
                if try txn.statistics(layout.events).entries != Int(last) { return .fault("events holds entries the log lacks") }
                if try txn.statistics(layout.raw).entries != rawInputs { return .fault("raw holds inputs no event came from") }
                for (claim, seq) in claimsOfEveryEnvironment {
                    for environment in AppStoreEnvironment.known {
                        let otidKey = StoreLayout.subscriptionKey(environment, claim.originalTransactionId)
                        guard knownSubscriptions.contains(otidKey) else { continue }
                        let value = EventReference.encode(seq: seq, eventKey: Fact.binding(claim).eventKey)
                        if try txn.cursor(layout.byOTID).find(otidKey, value: value) == nil {
                            return .fault("by_otid index lacks claim \(seq) of \(claim.originalTransactionId) in \(environment.rawValue)")
                        }
                        withOTID += 1
                        bindings.insert(StoreLayout.userKey(environment, claim.appUserId) + [0] + otidKey)
                    }
                }
                if try txn.statistics(layout.bindingsAny).entries != claimsOfEveryEnvironment.count {
                    return .fault("bindings_any holds entries no claim made")
                }
                if try txn.statistics(layout.byOTID).entries != withOTID { return .fault("by_otid holds entries the log lacks") }
                if try txn.statistics(layout.byUser).entries != bindings.count {
                    return .fault("by_user holds entries no claim made")
                }
                return .done
            }
            switch step {
            case .fault(let fault): return failing(report, fault)
            case .more: progress?(next - 1, max(total, next - 1))
            case .done: break
            }
            if case .done = step { break }
        }
        report.chainHead = hex(previous)

        switch try verifyRejected() {
        case .failure(let fault): return failing(report, fault.description)
        case .success(let count): report.rejected = count
        }

        // 3. Projections against a replay.
        let comparison = try compareProjectionsWithReplay(progress: nil)
        report.projections = comparison.compared
        if let difference = comparison.firstDifference { return failing(report, difference) }
        return report
    }

    /// Checks one log entry: its event is present, chained, decodes, sits under its own key, is no repeat, and its raw
    /// input is present and unaltered. Returns the event, or the fault.
    private func checkEntry(seq: UInt64, log: LogRecord, previous: inout [UInt8], _ txn: Transaction) throws
        -> Result<LedgerEvent, Fault>
    {
        let key = log.eventKey
        guard let stored = try txn.get(layout.events, key: log.revisionKey(seq: seq)) else {
            return .failure(Fault("event \(seq) (\(String(decoding: key, as: UTF8.self))) is missing"))
        }
        let link = stored.withUnsafeBytes { HashChain.link(previous: previous, seq: seq, eventKey: key, event: $0) }
        guard link == log.link else { return .failure(Fault("hash chain broken at seq \(seq): the event was altered")) }
        previous = link
        let event: LedgerEvent
        do { event = try stored.withUnsafeBytes { try LedgerEvent(seq: seq, decoding: $0) } } catch {
            return .failure(Fault("event \(seq) does not decode: \(error)"))
        }
        guard Array(event.fact.eventKey.utf8) == key else { return .failure(Fault("event \(seq) is stored under another key")) }
        guard !(try layout.isKnown(event.fact.encoded(), key: event.fact.eventKey, before: seq, txn)) else {
            return .failure(Fault("event \(seq) repeats a fact already stored under \(event.fact.eventKey)"))
        }
        if case .binding(let claim) = event.fact, claim.everyEnvironment {
            let value = EventReference.encode(seq: seq, eventKey: event.fact.eventKey)
            if try txn.cursor(layout.bindingsAny).find(StoreLayout.anyEnvironmentKey(claim.originalTransactionId), value: value)
                == nil
            {
                return .failure(Fault("bindings_any index lacks claim \(seq) of \(claim.originalTransactionId)"))
            }
        } else if let otid = event.fact.originalTransactionId {
            let c = try txn.cursor(layout.byOTID)
            let value = EventReference.encode(seq: seq, eventKey: event.fact.eventKey)
            if try c.find(StoreLayout.subscriptionKey(event.fact.environment, otid), value: value) == nil {
                return .failure(Fault("by_otid index lacks event \(seq) of \(otid)"))
            }
        }
        if case .binding(let claim) = event.fact, !claim.everyEnvironment {
            let userKey = StoreLayout.userKey(claim.environment, claim.appUserId)
            let otidKey = StoreLayout.subscriptionKey(claim.environment, claim.originalTransactionId)
            if try txn.cursor(layout.byUser).find(userKey, value: otidKey) == nil {
                return .failure(Fault("by_user index lacks \(claim.appUserId) → \(claim.originalTransactionId)"))
            }
        }
        guard log.rawKey <= seq, let raw = try txn.get(layout.raw, key: StoreLayout.rawKey(log.rawKey)) else {
            return .failure(Fault("raw input of event \(seq) is missing"))
        }
        guard raw.withUnsafeBytes({ sha256($0) }) == event.metadata.rawDigest else { return .failure(Fault("raw input of event \(seq) was altered")) }
        return .success(event)
    }

    /// Checks the `rejected` store: records numbered 1…n without gaps, each decodable with a code and a size no
    /// smaller than the bytes kept, n equal to `meta`'s count, and the records' chain equal to `meta`'s head (when the
    /// ledger has one: refusals stored before it existed are linked by the next refusal). In chunks of short read
    /// transactions; a writer may add refusals meanwhile, so the end is wherever the last snapshot finds it.
    private func verifyRejected() throws -> Result<UInt64, Fault> {
        var next: UInt64 = 1
        var head = HashChain.genesis
        let chunk: UInt64 = 10_000
        while true {
            let step: Result<Bool, Fault> = try environment.read { txn in
                let count = try batch.rejectedCount(txn)
                let cursor = try txn.cursor(layout.rejected)
                var entry = try cursor.seek(StoreLayout.rejectedKey(next))
                let end = min(count, next + chunk - 1)
                while let e = entry, next <= end {
                    guard e.key.count == 8 else { return .failure(Fault("rejected holds a key that is not a number")) }
                    let number = BigEndian.uint64(e.key)
                    guard number == next else {
                        return .failure(Fault("rejected record \(next) is missing (the numbering jumps to \(number))"))
                    }
                    let record: RejectedInput
                    do { record = try e.value.withUnsafeBytes { try RejectedInput(number: number, decoding: $0) } } catch {
                        return .failure(Fault("rejected record \(number) does not decode: \(error)"))
                    }
                    guard !record.code.isEmpty else { return .failure(Fault("rejected record \(number) has no code")) }
                    guard record.size >= record.raw.count, record.raw.count <= RejectedInput.keptBytesLimit else {
                        return .failure(
                            Fault("rejected record \(number) keeps \(record.raw.count) bytes of an input of \(record.size)"))
                    }
                    head = e.value.withUnsafeBytes { RejectedChain.link(previous: head, number: number, record: $0) }
                    next += 1
                    entry = try cursor.next()
                }
                guard next > count else {
                    if next <= end { return .failure(Fault("rejected record \(next) is missing (meta counts \(count))")) }
                    return .success(false)
                }
                if let extra = entry {
                    return .failure(Fault("rejected holds record \(BigEndian.uint64(extra.key)) beyond meta's count \(count)"))
                }
                if let stored = try txn.get(layout.meta, key: StoreLayout.metaRejectedHead) {
                    guard ChainHead(stored) == ChainHead(last: count, link: head) else {
                        return .failure(Fault("the rejected store's chain differs from meta's head: a refused input's record was altered"))
                    }
                }
                return .success(true)
            }
            switch step {
            case .failure(let fault): return .failure(fault)
            case .success(true): return .success(next - 1)
            case .success(false): continue
            }
        }
    }

    /// A fault found by `verify`, in words.
    struct Fault: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    private func failing(_ report: VerificationReport, _ fault: String) -> VerificationReport {
        var r = report
        r.fault = fault
        return r
    }
}
