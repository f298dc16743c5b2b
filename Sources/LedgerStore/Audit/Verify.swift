import Foundation
import LMDB
import LedgerCodec
import LedgerCore
import LedgerErrors

extension LedgerAudit {
    /// Walks every page of the data file (`checkDataFile`: a damaged one is thrown as `corrupted`), then checks the
    /// hash chain over the whole log, every index against the log, the raw inputs against their digests, the
    /// `rejected` store (gapless numbering, decodable records, consistent sizes, its count and chain head in `meta`),
    /// and every stored projection against a replay. Stops at the first fault and names it.
    ///
    /// Reads in batches of short read transactions, so a live writer is never blocked for long, and with every core:
    /// ranges of the log are checked side by side (each link is recomputed from the one stored before it), then the
    /// projections are rebuilt chunk by chunk as a replay does, which also reads every `by_otid` entry. `progress`
    /// is told the events checked, in the log and then in the replay (each counted half), against the log's end.
    public func verify(progress: ProgressHandler? = nil) throws -> VerificationReport {
        try verify(progress: progress, logRange: Self.logRange)
    }

    /// `verify(progress:)` with the log checked in ranges of `logRange` entries.
    func verify(progress: ProgressHandler?, logRange: UInt64) throws -> VerificationReport {
        precondition(logRange > 0, "ranges of no entries")
        // 0. Every page of the file, before LMDB reads any of it for the checks below.
        _ = try ledger.checkDataFile()
        var report = VerificationReport(events: 0, projections: 0, rejected: 0, chainHead: hex(HashChain.genesis), fault: nil)
        let total = try ledger.lastSeq()
        let log = try verifyLog(logRange: logRange) { checked, end in progress?(checked / 2, end) }
        report.events = log.checkedThrough
        report.chainHead = hex(log.link.bytes)
        if let fault = log.fault { return failing(report, fault) }

        switch try verifyRejected() {
        case .failure(let fault): return failing(report, fault.description)
        case .success(let count): report.rejected = count
        }
        if let fault = try ledger.receiptCreationDatesFault() { return failing(report, fault) }

        // 3. Projections against a replay, and every `by_otid` entry against the event it names.
        let end = max(total, log.checkedThrough)
        let comparison = try compareProjectionsWithReplay(validatingIndexes: true) { done, subscriptions in
            progress?((end + end * done / max(subscriptions, 1)) / 2, end)
        }
        report.projections = comparison.compared
        if let difference = comparison.firstDifference { return failing(report, difference) }
        progress?(end, end)
        return report
    }

    /// What the log's check found: how far it went, the chain's last link there, and the first fault.
    struct LogVerification {
        var checkedThrough: UInt64 = 0
        var link = ChainLink.genesis
        var fault: String?
    }

    /// Log entries per range (and per read transaction) of the log's check.
    static let logRange: UInt64 = 8_192

    /// 1. The log: contiguous, every event present and decodable, chained, indexed, its raw input intact; in ranges
    /// checked side by side on every core. 2. Once a transaction sees the end of the log where the ranges ended, the
    /// counts in that same snapshot: nothing is stored beside the log (an extra or missing event or index entry is a
    /// fault too). A server may append meanwhile: the end is wherever the last snapshot finds it.
    private func verifyLog(logRange: UInt64, progress: @escaping @Sendable (UInt64, UInt64) -> Void) throws
        -> LogVerification
    {
        var result = LogVerification()
        var withOTID = 0
        var rawInputs = 0
        var bindings = Set<[UInt8]>()
        var claimsOfEveryEnvironment: [(claim: BindingClaim, seq: UInt64)] = []
        while true {
            // A sound log of n entries holds the seqs 1…n. A last key that reads as a larger seq (a gap, or damage:
            // a damaged key reads as any number) leaves a seq up to n missing, which the ranges find; cut beyond n,
            // they would be as many as that number says.
            let last = try environment.read { txn in
                min(try batch.lastSeq(txn), UInt64(try txn.statistics(layout.log).entries))
            }
            if result.checkedThrough < last {
                let first = result.checkedThrough + 1
                let ranges = try checkLogRanges(first...last, logRange: logRange) { checked in progress(first - 1 + checked, last) }
                for range in ranges {
                    withOTID += range.withOTID
                    rawInputs += range.rawInputs
                    bindings.formUnion(range.bindings)
                    claimsOfEveryEnvironment += range.claimsOfEveryEnvironment
                    result.checkedThrough = range.checkedThrough
                    result.link = range.link
                    if let fault = range.fault {
                        result.fault = fault.description
                        return result
                    }
                }
                continue
            }
            // The counts, in a snapshot whose log ends where the ranges ended.
            enum Step { case appended, counted(fault: String?) }
            let step: Step = try environment.read { txn in
                guard try batch.lastSeq(txn) == result.checkedThrough else { return .appended }
                return .counted(
                    fault: try countsFault(
                        last: result.checkedThrough, link: result.link, withOTID: withOTID, rawInputs: rawInputs,
                        bindings: bindings, claimsOfEveryEnvironment: claimsOfEveryEnvironment, txn))
            }
            switch step {
            case .appended: continue
            case .counted(let fault):
                result.fault = fault
                return result
            }
        }
    }

    /// Checks the log entries of `seqs` in ranges of `logRange` entries, each in its own read transaction, on every core;
    /// `progress` is told the entries checked so far. The ranges in log order, up to the first with a fault (the
    /// ranges before it are all checked, so its fault is the first of the log).
    private func checkLogRanges(
        _ seqs: ClosedRange<UInt64>, logRange: UInt64, progress: @escaping @Sendable (UInt64) -> Void
    ) throws
        -> [LogRangeCheck]
    {
        let count = Int((seqs.upperBound - seqs.lowerBound) / logRange) + 1
        let work = RangeWork(count: count)
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 8, count))
        let body: @Sendable (Int) -> Void = { _ in
            do {
                while let index = work.next() {
                    let first = seqs.lowerBound + UInt64(index) * logRange
                    let last = min(seqs.upperBound, first + logRange - 1)
                    let check = try self.environment.read { txn in try self.checkLog(from: first, through: last, txn) }
                    progress(work.finish(index, check))
                }
            } catch {
                work.fail(error)
            }
        }
        if workers == 1 {
            body(0)
        } else {
            DispatchQueue.concurrentPerform(iterations: workers, execute: body)
        }
        return try work.results()
    }

    /// The counts of the whole log (`last` events, the chain ending in `link`) against what is stored beside it, in
    /// `txn`: the chain head in `meta`, the entries of `events`, `raw`, `bindings_any`, `by_otid` and `by_user`, and
    /// the claims that named no environment indexed wherever their subscription is known. The first fault, or nil.
    private func countsFault(
        last: UInt64, link: ChainLink, withOTID: Int, rawInputs: Int, bindings: Set<[UInt8]>,
        claimsOfEveryEnvironment: [(claim: BindingClaim, seq: UInt64)], _ txn: Transaction
    ) throws -> String? {
        if let stored = try txn.get(layout.meta, key: StoreLayout.metaChainHead) {
            let head: ChainHead
            do throws(LedgerError) { head = try ChainHead(stored, name: "chain_head") } catch { return error.message }
            guard head == ChainHead(last: last, link: link.bytes) else { return "stored chain head differs from the log's" }
        } else if last > 0 {
            return "the chain head is missing"
        }
        if try txn.statistics(layout.events).entries != Int(last) { return "events holds entries the log lacks" }
        if try txn.statistics(layout.raw).entries + txn.statistics(layout.rawSealed).entries != rawInputs {
            return "raw holds inputs no event came from"
        }
        var withOTID = withOTID
        var bindings = bindings
        let byOTID = try txn.cursor(layout.byOTID)
        for (claim, seq) in claimsOfEveryEnvironment {
            for environment in AppStoreEnvironment.known {
                // Known there: the subscription has a projection in that environment (the projections' check says
                // each one is the fold of its own events).
                let otidKey = StoreLayout.subscriptionKey(environment, claim.originalTransactionId)
                guard try txn.get(layout.timelines, key: otidKey) != nil else { continue }
                let value = EventReference.encode(seq: seq, eventKey: Fact.binding(claim).eventKey)
                if try byOTID.find(otidKey, value: value) == nil {
                    return "by_otid index lacks claim \(seq) of \(claim.originalTransactionId) in \(environment.rawValue)"
                }
                withOTID += 1
                bindings.insert(StoreLayout.userKey(environment, claim.appUserId) + [0] + otidKey)
            }
        }
        if try txn.statistics(layout.bindingsAny).entries != claimsOfEveryEnvironment.count {
            return "bindings_any holds entries no claim made"
        }
        let indexed = try txn.statistics(layout.byOTID).entries
        if indexed < withOTID {
            // Which event lacks its entry: found by looking each one up (a fault's path, not a sound ledger's).
            return try firstEventLackingItsEntry(last: last, txn) ?? "by_otid lacks entries of the log"
        }
        if indexed > withOTID { return "by_otid holds entries the log lacks" }
        if try txn.statistics(layout.byUser).entries != bindings.count { return "by_user holds entries no claim made" }
        return nil
    }

    /// The first event of the log (up to `last`) whose `by_otid` entry under its own subscription is missing, named.
    private func firstEventLackingItsEntry(last: UInt64, _ txn: Transaction) throws -> String? {
        let log = try txn.cursor(layout.log)
        let byOTID = try txn.cursor(layout.byOTID)
        var entry = try log.first()
        while let e = entry {
            let seq = try BigEndian.uint64(key: e.key, of: "log")
            guard seq <= last else { break }
            let record = try LogRecord(e.value, seq: seq)
            if let stored = try txn.get(layout.events, key: record.revisionKey(seq: seq)) {
                let event: LedgerEvent
                do { event = try stored.withUnsafeBytes { try LedgerEvent(seq: seq, decoding: $0) } } catch {
                    return "event \(seq) does not decode: \(error)"
                }
                guard let otid = event.fact.originalTransactionId else {
                    entry = try log.next()
                    continue
                }
                let everyEnvironment = if case .binding(let claim) = event.fact { claim.everyEnvironment } else { false }
                let value = EventReference.encode(seq: seq, eventKey: event.fact.eventKey)
                if !everyEnvironment,
                    try byOTID.find(StoreLayout.subscriptionKey(event.fact.environment, otid), value: value) == nil
                {
                    return "by_otid index lacks event \(seq) of \(otid)"
                }
            }
            entry = try log.next()
        }
        return nil
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
                    let number: UInt64
                    do throws(LedgerError) { number = try BigEndian.uint64(key: e.key, of: "rejected") } catch {
                        return .failure(Fault(error.message))
                    }
                    guard number == next else {
                        return .failure(Fault("rejected record \(next) is missing (the numbering jumps to \(number))"))
                    }
                    let record: RejectedInput
                    do { record = try e.value.withUnsafeBytes { try RejectedInput(number: number, decoding: $0) } } catch {
                        return .failure(Fault("rejected record \(number) does not decode: \(error)"))
                    }
                    guard !record.code.rawValue.isEmpty else { return .failure(Fault("rejected record \(number) has no code")) }
                    guard record.size >= record.raw.count, record.raw.count <= RejectedInput.keptBytesLimit else {
                        return .failure(
                            Fault("rejected record \(number) keeps \(record.raw.count) bytes of an input of \(record.size)"))
                    }
                    // Sealed apart in a ledger with pseudonyms: the content must be the one the record's digest
                    // names, unless its key was destroyed with a person's erasure.
                    if let digest = record.contentDigest,
                        let sealed = try txn.value(layout.rejectedSealed, key: StoreLayout.rejectedKey(number))
                    {
                        let content: [UInt8]
                        do { content = try identities.openRefusal(sealed, number: number) } catch {
                            return .failure(Fault("\(error)"))
                        }
                        guard sha256(content) == digest else {
                            return .failure(Fault("the sealed content of refused input \(number) was altered"))
                        }
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
                    let number: UInt64
                    do throws(LedgerError) { number = try BigEndian.uint64(key: extra.key, of: "rejected") } catch {
                        return .failure(Fault(error.message))
                    }
                    return .failure(Fault("rejected holds record \(number) beyond meta's count \(count)"))
                }
                if let stored = try txn.get(layout.meta, key: StoreLayout.metaRejectedHead) {
                    let storedHead: ChainHead
                    do throws(LedgerError) { storedHead = try ChainHead(stored, name: "rejected_head") } catch {
                        return .failure(Fault(error.message))
                    }
                    guard storedHead == ChainHead(last: count, link: head) else {
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

/// The ranges of the log's check: handed out in order to the workers, their results kept in order.
private final class RangeWork: @unchecked Sendable {
    private let lock = NSLock()
    private var checks: [LogRangeCheck?]
    private var taken = 0
    /// The first range with a fault: no range after it is handed out.
    private var firstFault = Int.max
    private var error: (any Error)?
    private var checked: UInt64 = 0

    init(count: Int) { checks = Array(repeating: nil, count: count) }

    func next() -> Int? {
        lock.lock()
        defer { lock.unlock() }
        guard error == nil, taken < checks.count, taken < firstFault else { return nil }
        taken += 1
        return taken - 1
    }

    /// Keeps the check of range `index`; returns the entries checked in every range so far.
    func finish(_ index: Int, _ check: LogRangeCheck) -> UInt64 {
        lock.lock()
        defer { lock.unlock() }
        checks[index] = check
        if check.fault != nil { firstFault = min(firstFault, index) }
        checked += check.checkedThrough + 1 - check.first
        return checked
    }

    func fail(_ e: any Error) {
        lock.lock()
        defer { lock.unlock() }
        if error == nil { error = e }
    }

    /// The checks in order, up to the first with a fault.
    func results() throws -> [LogRangeCheck] {
        lock.lock()
        defer { lock.unlock() }
        if let error { throw error }
        var out: [LogRangeCheck] = []
        for check in checks {
            guard let check else { break }
            out.append(check)
            if check.fault != nil { break }
        }
        return out
    }
}
