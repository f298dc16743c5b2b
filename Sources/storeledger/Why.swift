import ArgumentParser
import Foundation
import LedgerAPI
import LedgerCore
import LedgerStore

/// `storeledger why USER ENTITLEMENT`.
struct Why: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Why an app user has, or has not, an entitlement: the chain of facts behind the answer.",
        discussion: """
            The answer `customer` gives for the entitlement, the deciding reason, and for each period it rests on: \
            its transaction, the catalog rule, the claim that made the user its owner (and the claim that took it \
            away), the refund, revoke, expiry, grace period or billing retry that decides it, each with its seq, \
            when it was received and the SHA-256 of its raw input.
            """)

    @OptionGroup var ledger: LedgerOptions
    @OptionGroup var clocks: ClockOptions
    @Argument(help: "The app user id.") var appUserId: String
    @Argument(help: "The entitlement (as the catalog names it, or a product id when the catalog names none).")
    var entitlement: String
    @Flag(name: .long, help: "One JSON document on stdout.") var json = false

    func run() throws {
        let store = try ledger.openLedger(try ledger.loadConfiguration(json: json), readOnly: true, json: json)
        let explanation = try store.explain(
            AppUserID(appUserId), entitlement: entitlement, environment: try clocks.appStoreEnvironment(),
            at: try clocks.instant(), asOf: clocks.asOf)
        if json {
            printJSON(explanation)
        } else {
            printExplanation(explanation)
        }
    }
}

/// The explanation as text: the answer in one line, then each grantor's facts in the order they happened.
func printExplanation(_ e: EntitlementExplanation) {
    let state = e.active ? "active" : "not active"
    var answer = "\(e.appUserId) \(state) for \(e.entitlement)"
    if let expires = e.expiresAt { answer += e.active ? " until \(formatInstant(expires))" : " (ended \(formatInstant(expires)))" }
    print(answer)
    print("at            \(formatInstant(e.at))   as of seq \(e.asOf.map { "\($0)" } ?? "-")   (\(e.environment))")
    print("reason        \(e.reason.rawValue)")
    if e.grantors.isEmpty {
        print("\nno period of a subscription \(e.appUserId) owned, and no operator grant, grants \(e.entitlement)")
    }
    for g in e.grantors {
        let verdict = g.grants ? "grants until \(formatInstant(g.until))" : "stopped \(formatInstant(g.until))"
        let grantor = g.grantId.map { "operator grant \($0)" } ?? "\(g.originalTransactionId) / \(g.transactionId) (\(g.productId))"
        print("\n\(grantor): \(g.reason.rawValue), \(verdict)")
        print("  " + pad("AT", 22) + pad("FACT", 20) + pad("SEQ", 7) + pad("RECEIVED", 22) + pad("RAW SHA-256", 14) + "WHAT")
        for f in g.facts {
            let digest = f.rawDigest.map { String(lowercaseHex($0).prefix(12)) } ?? "-"
            print(
                "  " + pad(formatInstant(f.at), 22) + pad(f.role.rawValue, 20) + pad(f.seq.map { "\($0)" } ?? "-", 7)
                    + pad(formatInstant(f.receivedAt), 22) + pad(digest, 14) + f.detail)
        }
    }
}
