import ArgumentParser
import Foundation
import LedgerAPI
import LedgerCore
import LedgerStore
import LedgerErrors

/// `storeledger timeline OTID`.
struct Timeline: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "One subscription's timeline at an instant, as known at a point of the log.")

    @OptionGroup var ledger: LedgerOptions
    @OptionGroup var clocks: ClockOptions
    @Argument(help: "The original transaction id.") var originalTransactionId: String
    @Flag(name: .long, help: "One JSON document on stdout.") var json = false
    @Option(name: .long, help: "Also draw the timeline as an SVG picture into FILE ('-': stdout, instead of the table).")
    var svg: String?
    @Option(name: .long, help: "Also write a self-contained HTML page of the picture into FILE ('-': stdout).")
    var html: String?

    func validate() throws {
        if svg == "-" && html == "-" { throw ValidationError("only one of --svg and --html can write to stdout") }
        if json && (svg == "-" || html == "-") { throw ValidationError("--json prints to stdout: give --svg/--html a FILE") }
    }

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
        let picture = TimelinePicture(view)
        var toStdout: String?
        var written: [String] = []
        for (path, text, what) in [(svg, picture.svg, "an SVG picture"), (html, picture.html, "a web page")] {
            guard let path else { continue }
            if path == "-" {
                toStdout = text
                continue
            }
            let bytes = Data(text.utf8)
            do {
                try bytes.write(to: URL(fileURLWithPath: path), options: .atomic)
            } catch {
                throw CommandFailure(
                    code: .storageError, message: "cannot write \(path): \(error.localizedDescription)", json: json)
            }
            written.append("wrote \(path) (\(humanSize(bytes.count))): \(what), open it in a browser")
        }
        if let toStdout {
            FileHandle.standardOutput.write(Data(toStdout.utf8))
        } else if json {
            printJSON(view)
        } else {
            printTimelineTable(view)
        }
        // A file written silently is easily missed. When stdout carries the picture or the JSON document, its readers
        // expect nothing else there, so the line goes to stderr then.
        for line in written {
            if toStdout != nil || json {
                FileHandle.standardError.write(Data("\(line)\n".utf8))
            } else {
                print(line)
            }
        }
    }
}

/// `storeledger customer USER`.
struct Customer: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "One app user's entitlements, subscriptions and binding history.",
        discussion: "Under each entitlement: its grantor's period type, transaction and purchase dates, whether it will renew, when a cancellation or a billing issue was seen, ownership (family shared) and sandbox. Then the products active at --at and every product bought, and where subscriptions are managed. --json: the document of GET /v1/customers/{id} (docs/socket-api.md).")

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

// MARK: - Tables (the fields of the documents, so they show what --json shows)

private func yesNo(_ b: Bool?) -> String {
    guard let b else { return "-" }
    return b ? "yes" : "no"
}

private func text(_ s: String?) -> String { s ?? "-" }

private func text(_ n: UInt64?) -> String { n.map { "\($0)" } ?? "-" }

private func list(_ items: [String]) -> String { items.isEmpty ? "-" : items.joined(separator: ", ") }

/// An offer as a phrase: its kind, its id, how it is paid and for how long (`introductory offer: free trial for 1
/// week`, `offer code SPRING: pay up front for 3 months`). Values Apple may add later are shown as they come.
func offerText(_ offer: Offer) -> String {
    var text: String
    switch offer.type {
    case 1: text = "introductory offer"
    case 2: text = "promotional offer"
    case 3: text = "offer code"
    case 4: text = "win-back offer"
    case let type?: text = "offer of type \(type)"
    case nil: text = "offer"
    }
    if let identifier = offer.identifier, !identifier.isEmpty { text += " \(identifier)" }
    let payment: String?
    switch offer.discountType {
    case "FREE_TRIAL": payment = "free trial"
    case "PAY_AS_YOU_GO": payment = "pay as you go"
    case "PAY_UP_FRONT": payment = "pay up front"
    case let other?: payment = other.lowercased().replacingOccurrences(of: "_", with: " ")
    case nil: payment = offer.isTrial ? "free trial" : nil
    }
    if let payment { text += ": \(payment)" }
    if let period = offer.period { text += " for \(durationText(period))" }
    return text
}

/// An ISO-8601 duration of one unit (`P1W`, `P3M`, `P1Y`, `P3D`) in words; anything else as written.
func durationText(_ iso: String) -> String {
    let units: [Character: String] = ["D": "day", "W": "week", "M": "month", "Y": "year"]
    guard iso.count >= 3, iso.first == "P", let unit = iso.last.flatMap({ units[$0] }),
        let count = Int(iso.dropFirst().dropLast()), count >= 0
    else { return iso }
    return count == 1 ? "1 \(unit)" : "\(count) \(unit)s"
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
        if let offer = p.offer { notes.append(offerText(offer)) }
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
    print("\nCHECKED AGAINST APPLE")
    if let r = t.reconciliation {
        let c = r.check
        let how: String
        switch c.mode {
        case ReconciliationFact.missedMode?:
            how = "the whole app's notifications since \(formatInstant(c.windowStart))"
        case let mode?:
            how = "\(mode), history revision \(text(c.revision))"
        case nil:
            how = "history revision \(text(c.revision))"
        }
        print("  \(formatInstant(c.checkedAt))   \(how)   seq \(r.seq)")
        print(
            "  " + counted(c.transactionsSeen, "transaction") + " at Apple, \(c.transactionsAdded.count) missing"
                + (c.transactionsAdded.isEmpty ? "" : ": " + c.transactionsAdded.joined(separator: ", ")))
        print(
            "  " + counted(c.notificationsSeen, "notification") + " at Apple, \(c.notificationsAdded.count) missing"
                + (c.notificationsAdded.isEmpty ? "" : ": " + c.notificationsAdded.joined(separator: ", ")))
        if !c.notificationsUndelivered.isEmpty {
            print("  Apple could not deliver: " + c.notificationsUndelivered.joined(separator: ", "))
        }
        if c.renewalInfoAdded { print("  a newer renewal info was missing") }
        if let refunds = c.refundsSeen, refunds > 0 { print("  " + counted(refunds, "refund") + " at Apple") }
    } else {
        print("  never (storeledger reconcile)")
    }
}

func printCustomerTable(_ c: CustomerView) {
    print("user          \(c.appUserId) (\(c.environment))")
    print("at            \(formatInstant(c.at))   as of seq \(text(c.asOf))")
    print("\nENTITLEMENTS (\(c.entitlements.count))")
    print("  " + pad("ENTITLEMENT", 30) + pad("ACTIVE", 8) + pad("EXPIRES", 22) + pad("PRODUCT", 34) + "OTID")
    for name in c.entitlements.keys.sorted() {
        let e = c.entitlements[name]!
        if let grant = e.grantId {
            print(
                "  " + pad(name, 30) + pad(yesNo(e.active), 8) + pad(formatInstant(e.expiresAt), 22)
                    + "operator grant \(grant)")
            continue
        }
        print(
            "  " + pad(name, 30) + pad(yesNo(e.active), 8) + pad(formatInstant(e.expiresAt), 22)
                + pad(e.productId, 34) + e.originalTransactionId)
        // The grantor under each entitlement: what RevenueCat's EntitlementInfo tells beyond the line above.
        var notes = [
            e.periodType.rawValue, "transaction \(e.transactionId)", "bought \(formatInstant(e.latestPurchaseDate))",
            "first \(formatInstant(e.originalPurchaseDate))", e.willRenew ? "will renew" : "will not renew",
        ]
        if let u = e.unsubscribeDetectedAt { notes.append("auto-renew off since \(formatInstant(u))") }
        if let b = e.billingIssueDetectedAt { notes.append("billing issue since \(formatInstant(b))") }
        if let o = e.ownershipType { notes.append(o == "FAMILY_SHARED" ? "family shared" : o.lowercased()) }
        if e.isSandbox { notes.append("sandbox") }
        print("  " + pad("", 30) + notes.joined(separator: "; "))
    }
    print("\nPRODUCTS      active \(list(c.activeProductIds))   ever \(list(c.allPurchasedProductIds))")
    print("manage at     \(text(c.managementURL))")
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
    if !c.grants.isEmpty { printGrantLines(c.grants) }
}
