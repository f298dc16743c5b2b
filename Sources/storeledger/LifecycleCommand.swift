import ArgumentParser
import Foundation
import LedgerAPI
import LedgerCore
import LedgerStore

/// `storeledger lifecycle`: the typed lifecycle events derived from timeline changes, in stream order.
struct LifecycleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lifecycle",
        abstract: "Show the lifecycle events (INITIAL_PURCHASE, RENEWAL, REFUND, …) the inputs after a seq said.",
        discussion: """
            What downstream systems hear (GET /v1/lifecycle serves the same stream): one line per event, in the \
            order the inputs were appended. A CORRECTION says that an event said before no longer stands as said \
            (a late input changed it). Go on with --after the SEQ of the last line shown.
            """)

    @OptionGroup var ledger: LedgerOptions
    @Option(name: .long, help: "Events said by inputs after this sequence number.") var after: UInt64 = 0
    @Option(name: .long, help: "At most this many events (and the rest of the last seq's); a note says how to go on.")
    var limit: Int = 100
    @Flag(name: .long, help: "One JSON document on stdout: {\"events\": […], \"more\", \"nextAfter\"}.")
    var json = false

    func validate() throws {
        if limit <= 0 { throw ValidationError("--limit must be positive") }
        try checkSeqArgument("after", after)
    }

    func run() throws {
        let store = try ledger.openLedger(try ledger.loadConfiguration(json: json), readOnly: true, json: json)
        let page = try store.lifecycleEvents(after: after, limit: limit)
        // More follow when events come after where the page ends.
        let more = try !page.events.isEmpty && !store.lifecycleEvents(after: page.next, limit: 1).events.isEmpty
        let nextAfter = more ? page.next : nil
        if json {
            printJSON(LifecycleListing(events: page.events, more: more, nextAfter: nextAfter))
            return
        }
        print(
            pad("SEQ", 8) + pad("TYPE", 24) + pad("AT", 26) + pad("OTID", 20) + pad("USER", 12) + pad("PRODUCT", 30)
                + "DETAIL")
        for e in page.events {
            let s = e.statement
            var detail: [String] = []
            if let t = s.periodType, t != .normal { detail.append(t.rawValue) }
            if let price = s.price { detail.append("\(price) \(s.currency ?? "")") }
            if let reason = s.reason { detail.append(reason) }
            if let from = s.fromProductId { detail.append("from \(from)") }
            if let new = s.newProductId { detail.append("to \(new) (pending)") }
            if let amount = s.refundAmount { detail.append("refunded \(amount)") }
            if s.type == .transfer { detail.append("from \(s.fromAppUserIds.joined(separator: ","))") }
            if e.late { detail.append("late") }
            if let corrects = e.corrects { detail.append((e.retracted ? "retracts " : "corrects ") + corrects) }
            let type = e.corrects == nil ? e.type.rawValue : "CORRECTION \(s.type.rawValue)"
            print(
                pad("\(e.seq)", 8) + pad(type, 24) + pad(formatInstant(s.at), 26)
                    + pad(e.originalTransactionId.rawValue, 20) + pad(e.appUserId ?? "-", 12)
                    + pad(s.productId ?? "-", 30) + detail.joined(separator: "; "))
        }
        if page.events.isEmpty { print("(no lifecycle events)") }
        if let nextAfter {
            FileHandle.standardError.write(
                Data("note: more lifecycle events follow: go on with --after \(nextAfter)\n".utf8))
        }
    }
}

/// `storeledger lifecycle --json`.
struct LifecycleListing: JSONDocument {
    var events: [LifecycleEvent]
    var more: Bool
    var nextAfter: UInt64?

    func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("events"); o.array(events) { $1.write(to: &$0) }
            o.key("more"); o.bool(more)
            if let nextAfter { o.key("nextAfter"); o.number(nextAfter) }
        }
    }
}
