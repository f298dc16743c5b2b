import ArgumentParser
import Foundation
import LedgerAPI
import LedgerCore
import LedgerStore

/// `storeledger grants`: the operator's grants to one app user.
struct GrantsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "grants",
        abstract: "The operator's grants of entitlements to one app user, as known at a point of the log.",
        discussion: """
            Each grant: its id, the entitlement, its span [from, until), the reason, whether it grants at --at, and \
            the revoke that ended it early. A grant or revoke is an input of type grant, appended like any other: \
            POST /v1/customers/{id}/grants on the socket, or \
            `echo '{"entitlement":"pro","duration":"P1M","reason":"support"}' | storeledger ingest --type grant \
            --app-user-id ID` (revoke: '{"revoke":true,"grantId":"…"}'). --json: the document of \
            GET /v1/customers/{id}/grants.
            """)

    @OptionGroup var ledger: LedgerOptions
    @OptionGroup var clocks: ClockOptions
    @Argument(help: "The app user id.") var appUserId: String
    @Flag(name: .long, help: "One JSON document on stdout.") var json = false

    func run() throws {
        let store = try ledger.openLedger(try ledger.loadConfiguration(json: json), readOnly: true, json: json)
        let last = try store.lastSeq()
        let asOf = min(clocks.asOf ?? last, last)
        let at = try clocks.instant()
        let environment = try clocks.appStoreEnvironment()
        let grants = try store.grants(AppUserID(appUserId), environment: environment, asOf: asOf)
        let document = GrantsDocument(
            appUserId: appUserId, environment: environment.rawValue, at: at, asOf: asOf,
            grants: grants.map { GrantState(record: $0, active: $0.grants(at: at)) })
        if json {
            printJSON(document)
        } else {
            printGrantsTable(document.grants, user: appUserId, environment: environment.rawValue, at: at, asOf: asOf)
        }
    }
}

/// One line per grant, and under it its reason and revoke.
func printGrantsTable(_ grants: [GrantState], user: String, environment: String, at: UnixMillis, asOf: UInt64?) {
    print("user          \(user) (\(environment))")
    print("at            \(formatInstant(at))   as of seq \(asOf.map(String.init) ?? "-")")
    printGrantLines(grants)
}

func printGrantLines(_ grants: [GrantState]) {
    print("\nGRANTS (\(grants.count))")
    guard !grants.isEmpty else { return }
    print("  " + pad("GRANT", 22) + pad("ENTITLEMENT", 24) + pad("ACTIVE", 8) + pad("FROM", 22) + pad("UNTIL", 22) + "SEQ")
    for g in grants {
        let r = g.record
        print(
            "  " + pad(r.grantId, 22) + pad(r.entitlement, 24) + pad(g.active ? "yes" : "no", 8)
                + pad(formatInstant(r.from), 22) + pad(r.grantedUntil.map(formatInstant) ?? "no end", 22) + "\(r.seq)")
        var notes: [String] = []
        if let reason = r.reason { notes.append("reason: \(reason)") }
        if let revoked = r.revokedAt {
            var note = "revoked from \(formatInstant(revoked)) (seq \(r.revokeSeq.map(String.init) ?? "-"))"
            if let why = r.revokeReason { note += ": \(why)" }
            notes.append(note)
        }
        if !notes.isEmpty { print("  " + pad("", 22) + notes.joined(separator: "; ")) }
    }
}
