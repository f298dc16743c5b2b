import ArgumentParser
import Foundation
import LedgerAPI
import LedgerCore
import LedgerStore
import LedgerWire

/// `storeledger timeline OTID`.
struct Timeline: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "One subscription's timeline at an instant, as known at a point of the log.")

    @OptionGroup var ledger: LedgerOptions
    @OptionGroup var clocks: ClockOptions
    @Argument(help: "The original transaction id.") var originalTransactionId: String
    @Flag(name: .long, help: "One JSON document on stdout.") var json = false

    func run() throws {
        let store = try ledger.openLedger(try ledger.loadConfiguration(json: json), readOnly: true, json: json)
        guard
            let view = try store.timeline(
                OriginalTransactionID(originalTransactionId), environment: try clocks.appStoreEnvironment(),
                at: try clocks.instant(), asOf: clocks.asOf)
        else {
            throw CommandFailure(
                code: .notFound, message: "no \(clocks.environment) subscription \(originalTransactionId) is known", json: json)
        }
        if json {
            printJSON(view)
        } else {
            printTimelineTable(view)
        }
    }
}

/// `storeledger customer USER`.
struct Customer: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "One app user's entitlements, subscriptions and binding history.")

    @OptionGroup var ledger: LedgerOptions
    @OptionGroup var clocks: ClockOptions
    @Argument(help: "The app user id.") var appUserId: String
    @Flag(name: .long, help: "One JSON document on stdout.") var json = false

    func run() throws {
        let store = try ledger.openLedger(try ledger.loadConfiguration(json: json), readOnly: true, json: json)
        let view = try store.customer(
            AppUserID(appUserId), environment: try clocks.appStoreEnvironment(), at: try clocks.instant(), asOf: clocks.asOf)
        if json {
            printJSON(view)
        } else {
            printCustomerTable(view)
        }
    }
}

// MARK: - Tables (the fields of the API.md shapes, so they show what --json shows)

private func yesNo(_ b: Bool?) -> String {
    guard let b else { return "-" }
    return b ? "yes" : "no"
}

private func text(_ s: String?) -> String { s ?? "-" }

private func text(_ n: UInt64?) -> String { n.map { "\($0)" } ?? "-" }

/// An offer as its members, in key order (a flag as 1 or 0), as the table has always shown it.
private func text(_ offer: Offer) -> String {
    var members: [String] = []
    if let discountType = offer.discountType { members.append(#""discountType": "\#(discountType)""#) }
    if let identifier = offer.identifier { members.append(#""identifier": "\#(identifier)""#) }
    members.append(#""isTrial": \#(offer.isTrial ? 1 : 0)"#)
    if let period = offer.period { members.append(#""period": "\#(period)""#) }
    if let type = offer.type { members.append(#""type": \#(type)"#) }
    return "[" + members.joined(separator: ", ") + "]"
}

func printTimelineTable(_ t: TimelineView) {
    print("subscription  \(t.originalTransactionId) (\(t.environment))")
    print("at            \(formatInstant(t.at))   as of seq \(text(t.asOf))")
    print("status        \(t.status)")
    print("product       \(text(t.productId))   expires \(formatInstant(t.expiresAt))")
    print("auto-renew    \(yesNo(t.autoRenew))   pending product \(text(t.pendingProductId))")
    print("\nPERIODS (\(t.periods.count))")
    print("  " + pad("TRANSACTION", 20) + pad("PRODUCT", 34) + pad("START", 22) + pad("END", 22) + "NOTES")
    for p in t.periods {
        var notes: [String] = []
        if let offer = p.offer { notes.append("offer \(text(offer))") }
        if let r = p.revokedAt { notes.append("revoked \(formatInstant(r))") }
        if p.upgraded { notes.append("upgraded") }
        if !p.observedAs.isEmpty { notes.append("restored as \(p.observedAs.joined(separator: ","))") }
        print(
            "  " + pad(p.transactionId, 20) + pad(p.productId, 34) + pad(formatInstant(p.start), 22)
                + pad(formatInstant(p.end), 22) + notes.joined(separator: "; "))
    }
    print("\nCHANGES (\(t.changes.count))")
    for c in t.changes { print("  " + pad(formatInstant(c.at), 22) + pad(c.kind, 18) + "seq \(c.seq)") }
    print("\nOWNERS (\(t.owners.count))")
    for o in t.owners {
        print(
            "  " + pad(o.appUserId, 24) + pad(formatInstant(o.from), 22) + "→ " + pad(formatInstant(o.to), 22)
                + "seq \(o.seq)")
    }
}

func printCustomerTable(_ c: CustomerView) {
    print("user          \(c.appUserId) (\(c.environment))")
    print("at            \(formatInstant(c.at))   as of seq \(text(c.asOf))")
    print("\nENTITLEMENTS (\(c.entitlements.count))")
    print("  " + pad("ENTITLEMENT", 30) + pad("ACTIVE", 8) + pad("EXPIRES", 22) + pad("PRODUCT", 34) + "OTID")
    for name in c.entitlements.keys.sorted() {
        let e = c.entitlements[name]!
        print(
            "  " + pad(name, 30) + pad(yesNo(e.active), 8) + pad(formatInstant(e.expiresAt), 22)
                + pad(e.productId, 34) + e.originalTransactionId)
    }
    if !c.credits.isEmpty {
        print("\nCREDITS")
        for k in c.credits.keys.sorted() { print("  " + pad(k, 24) + "\(c.credits[k]!)") }
    }
    print("\nSUBSCRIPTIONS \(c.subscriptions.isEmpty ? "-" : c.subscriptions.joined(separator: ", "))")
    print("\nBINDINGS (\(c.bindings.count))")
    for b in c.bindings {
        print(
            "  " + pad(b.originalTransactionId, 20) + pad(formatInstant(b.from), 22) + "→ "
                + pad(formatInstant(b.to), 22) + pad(b.cause, 16) + "seq \(b.seq)")
    }
}
