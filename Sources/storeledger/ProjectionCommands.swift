import ArgumentParser
import Foundation
import LedgerCore
import LedgerServer
import LedgerStore

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
                code: "not_found", message: "no \(clocks.environment) subscription \(originalTransactionId) is known", json: json)
        }
        if json {
            try printJSON(view)
        } else {
            printTimelineTable(try jsonObject(view))
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
            try printJSON(view)
        } else {
            printCustomerTable(try jsonObject(view))
        }
    }
}

// MARK: - Tables (rendered from the API.md JSON shapes, so they always show what --json shows)

private func ms(_ v: Any?) -> UnixMillis? { (v as? NSNumber)?.int64Value }
private func yesNo(_ v: Any?) -> String {
    guard let b = v as? Bool else { return "-" }
    return b ? "yes" : "no"
}
private func str(_ v: Any?) -> String {
    switch v {
    case let s as String: s
    case let n as NSNumber: n.stringValue
    case nil, is NSNull: "-"
    default: "\(v!)"
    }
}

func printTimelineTable(_ t: [String: Any]) {
    print("subscription  \(str(t["originalTransactionId"])) (\(str(t["environment"])))")
    print("at            \(formatInstant(ms(t["at"])))   as of seq \(str(t["asOf"]))")
    print("status        \(str(t["status"]))")
    print("product       \(str(t["productId"]))   expires \(formatInstant(ms(t["expiresAt"])))")
    print("auto-renew    \(yesNo(t["autoRenew"]))   pending product \(str(t["pendingProductId"]))")
    let periods = t["periods"] as? [[String: Any]] ?? []
    print("\nPERIODS (\(periods.count))")
    print("  " + pad("TRANSACTION", 20) + pad("PRODUCT", 34) + pad("START", 22) + pad("END", 22) + "NOTES")
    for p in periods {
        var notes: [String] = []
        if let offer = p["offer"], !(offer is NSNull) { notes.append("offer \(str(offer))") }
        if let r = ms(p["revokedAt"]) { notes.append("revoked \(formatInstant(r))") }
        if (p["upgraded"] as? Bool) == true { notes.append("upgraded") }
        if let o = p["observedAs"] as? [String], !o.isEmpty { notes.append("restored as \(o.joined(separator: ","))") }
        print(
            "  " + pad(str(p["transactionId"]), 20) + pad(str(p["productId"]), 34) + pad(formatInstant(ms(p["start"])), 22)
                + pad(formatInstant(ms(p["end"])), 22) + notes.joined(separator: "; "))
    }
    let changes = t["changes"] as? [[String: Any]] ?? []
    print("\nCHANGES (\(changes.count))")
    for c in changes { print("  " + pad(formatInstant(ms(c["at"])), 22) + pad(str(c["kind"]), 18) + "seq \(str(c["seq"]))") }
    let owners = t["owners"] as? [[String: Any]] ?? []
    print("\nOWNERS (\(owners.count))")
    for o in owners {
        print("  " + pad(str(o["appUserId"]), 24) + pad(formatInstant(ms(o["from"])), 22) + "→ " + pad(formatInstant(ms(o["to"])), 22) + "seq \(str(o["seq"]))")
    }
}

func printCustomerTable(_ c: [String: Any]) {
    print("user          \(str(c["appUserId"])) (\(str(c["environment"])))")
    print("at            \(formatInstant(ms(c["at"])))   as of seq \(str(c["asOf"]))")
    let entitlements = c["entitlements"] as? [String: [String: Any]] ?? [:]
    print("\nENTITLEMENTS (\(entitlements.count))")
    print("  " + pad("ENTITLEMENT", 30) + pad("ACTIVE", 8) + pad("EXPIRES", 22) + pad("PRODUCT", 34) + "OTID")
    for name in entitlements.keys.sorted() {
        let e = entitlements[name]!
        print(
            "  " + pad(name, 30) + pad(yesNo(e["active"]), 8) + pad(formatInstant(ms(e["expiresAt"])), 22)
                + pad(str(e["productId"]), 34) + str(e["originalTransactionId"]))
    }
    if let credits = c["credits"] as? [String: Any], !credits.isEmpty {
        print("\nCREDITS")
        for k in credits.keys.sorted() { print("  " + pad(k, 24) + str(credits[k])) }
    }
    let subs = c["subscriptions"] as? [String] ?? []
    print("\nSUBSCRIPTIONS \(subs.isEmpty ? "-" : subs.joined(separator: ", "))")
    let bindings = c["bindings"] as? [[String: Any]] ?? []
    print("\nBINDINGS (\(bindings.count))")
    for b in bindings {
        print(
            "  " + pad(str(b["originalTransactionId"]), 20) + pad(formatInstant(ms(b["from"])), 22) + "→ "
                + pad(formatInstant(ms(b["to"])), 22) + pad(str(b["cause"]), 16) + "seq \(str(b["seq"]))")
    }
}
