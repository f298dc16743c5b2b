import LMDB
import LedgerCore
import Logging

/// The receipt creation dates the fold reads for receipts an older build stored.
///
/// A verifyReceipt response's `in_app` copies speak from the receipt's creation, not from the request
/// (docs/domain.md, "Two clocks"). Builds before schema 6 stored those copies without `receiptCreationDate`, so they
/// spoke from the request date, and a stale receipt read as a later revision than it was. Events are never
/// rewritten (the chain covers their bytes), but the creation date is in the raw input each of them keeps: this
/// build derives it from there, through Apple's parsing it is given (`Ledger.Options.receiptCreationDates`), and keeps
/// it in `receipt_created` by seq. Every fold reads events through `SubscriptionScan`, which adds the date to the
/// event it names, so replays, refolds, what-ifs and answers at any log position all see it.
///
/// Derived where this build first folds events an older build stored: the upgrade of a ledger of schema 5 or
/// older, and an import (whose export may come from one). An event written by this build states its own date.
enum ReceiptCreationDates {
    /// Whether the event may be an `in_app` copy stored without its receipt's creation date: a transaction of a
    /// verifyReceipt response that states no instant of its own.
    @inline(__always)
    static func mayLackIt(_ event: LedgerEvent) -> Bool {
        guard event.metadata.source == .receipt, case .transaction(let t) = event.fact else { return false }
        return t.statedDate == nil
    }

    /// The event as the fold reads it: with its receipt's creation date when one was derived for it.
    @inline(__always)
    static func apply(to event: inout LedgerEvent, _ layout: StoreLayout, _ txn: Transaction) throws {
        guard mayLackIt(event), case .transaction(var t) = event.fact,
            let stored = try txn.get(layout.receiptCreated, key: StoreLayout.logKey(event.seq))
        else { return }
        t.receiptCreationDate = Int64(bitPattern: try BigEndian.uint64(value: stored, of: "receipt_created", name: "seq \(event.seq)"))
        event.fact = .transaction(t)
    }

    /// Adds to `event`, if it may lack it, the creation date `dates` (a receipt's, by transaction id) give its
    /// transaction; returns the date added.
    static func add(_ dates: [TransactionID: UnixMillis], to event: inout LedgerEvent) -> UnixMillis? {
        guard mayLackIt(event), case .transaction(var t) = event.fact, let date = dates[t.transactionId] else { return nil }
        t.receiptCreationDate = date
        event.fact = .transaction(t)
        return date
    }

    /// Derives the dates of one input's events: those of `events` that may lack it and whose transaction the raw
    /// input's `in_app` states, with the date it speaks from.
    static func derive(
        _ events: [LedgerEvent], raw: [UInt8], _ parse: (_ raw: [UInt8]) -> [TransactionID: UnixMillis]
    ) -> [(seq: UInt64, date: UnixMillis)] {
        let candidates = events.filter(mayLackIt)
        guard !candidates.isEmpty, !raw.isEmpty else { return [] }
        let dates = parse(raw)
        return candidates.compactMap { event in
            guard case .transaction(let t) = event.fact, let date = dates[t.transactionId] else { return nil }
            return (event.seq, date)
        }
    }

    /// Follows an export's events in log order and gives each receipt copy that lacks it the creation date its
    /// input's raw bytes state (an import and a rewrite under pseudonyms). A value: a write that is run again
    /// starts from the copy it started with.
    struct OfAnExport {
        let parse: @Sendable (_ raw: [UInt8]) -> [TransactionID: UnixMillis]
        /// The dates of the last verifyReceipt response read, whose events may go on in the next write.
        private var input: (rawKey: UInt64, dates: [TransactionID: UnixMillis])?

        init(_ parse: @escaping @Sendable (_ raw: [UInt8]) -> [TransactionID: UnixMillis]) { self.parse = parse }

        /// The date added to `event` (the export's `seq`, `rawKey` and `raw`), if any.
        mutating func add(to event: inout LedgerEvent, seq: UInt64, rawKey: UInt64, raw: [UInt8]?) -> UnixMillis? {
            guard event.metadata.source == .receipt else { return nil }
            if rawKey == seq { input = (rawKey, parse(raw ?? [])) }
            guard let input, input.rawKey == rawKey else { return nil }
            return ReceiptCreationDates.add(input.dates, to: &event)
        }
    }

    static func write(_ derived: [(seq: UInt64, date: UnixMillis)], _ layout: StoreLayout, _ txn: Transaction) throws {
        for (seq, date) in derived {
            try txn.put(layout.receiptCreated, key: StoreLayout.logKey(seq), value: BigEndian.bytes(UInt64(bitPattern: date)))
        }
    }
}

extension Ledger {
    /// The upgrade of a ledger an older build wrote: every receipt it stored is parsed again and the creation dates
    /// of its `in_app` copies kept (`ReceiptCreationDates`), before the projections are rebuilt. Returns how many.
    func deriveReceiptCreationDates(
        _ parse: @Sendable (_ raw: [UInt8]) -> [TransactionID: UnixMillis], logger: Logger
    ) throws -> Int {
        var derived: [(seq: UInt64, date: UnixMillis)] = []
        var input: (rawKey: UInt64, raw: [UInt8], events: [LedgerEvent])?
        func finishInput() {
            if let input { derived += ReceiptCreationDates.derive(input.events, raw: input.raw, parse) }
        }
        var visited = 0
        try audit.forEachEvent(after: 0) { stored, _, raw, _ in
            visited += 1
            if visited % 100_000 == 0 { logger.notice("reading stored receipts again", metadata: ["events": "\(visited)"]) }
            if input?.rawKey == stored.rawKey {
                input!.events.append(stored.event)
                return
            }
            finishInput()
            // Only a verifyReceipt response's raw bytes are copied out of the map (an input's events share its
            // metadata).
            input = (stored.rawKey, stored.event.metadata.source == .receipt ? Array(raw) : [], [stored.event])
        }
        finishInput()
        for start in stride(from: 0, to: derived.count, by: 10_000) {
            let part = derived[start..<min(start + 10_000, derived.count)]
            try environment.write { txn in try ReceiptCreationDates.write(Array(part), layout, txn) }
        }
        return derived.count
    }
}

extension Ledger {
    /// `verify`'s check of `receipt_created`: each entry names an event of the log that may lack its receipt's
    /// creation date (a verifyReceipt transaction stating no instant of its own) and holds an instant; the first
    /// that does not, named.
    func receiptCreationDatesFault() throws -> String? {
        try environment.read { txn in
            let cursor = try txn.cursor(layout.receiptCreated)
            var entry = try cursor.first()
            while let e = entry {
                guard e.key.count == 8, e.value.count == 8 else {
                    return "receipt_created holds an entry of \(e.key.count) and \(e.value.count) bytes, not 8 and 8"
                }
                let seq = try BigEndian.uint64(key: e.key, of: "receipt_created")
                guard let logged = try txn.get(layout.log, key: StoreLayout.logKey(seq)),
                    let stored = try txn.get(layout.events, key: try LogRecord(logged, seq: seq).revisionKey(seq: seq))
                else { return "receipt_created names event \(seq), which the log does not hold" }
                guard ReceiptCreationDates.mayLackIt(try StoreLayout.decodeEvent(seq: seq, stored)) else {
                    return "receipt_created gives event \(seq) a receipt creation date, and it is no receipt's copy without one"
                }
                entry = try cursor.next()
            }
            return nil
        }
    }
}
