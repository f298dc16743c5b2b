import ArgumentParser
import Foundation
import LedgerAPI
import LedgerCore
import LedgerStore

/// `storeledger forget USER`: erases one app user (docs/privacy.md).
struct ForgetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Erase an app user: their id, the appAccountTokens mapped to them and the raw inputs that name them.",
        discussion: """
            The ledger must have been made with --pseudonyms: its log names people by pseudonyms, and the values \
            behind them are kept apart, sealed with DIR/identity.key. Forgetting deletes the user's values, records \
            the erasure as an event of the log (who asked, when, the pseudonyms; never the id), seals every other \
            value with a new key and destroys the old one, and empties the journal of the records before it. The \
            hash chain is untouched and `verify` passes; every other user's answers are unchanged; the user's \
            subscriptions keep their periods and revenue under the pseudonym printed. Backups taken before still \
            hold the user: take a new one and delete those (docs/privacy.md). While `serve` runs, use \
            POST /v1/customers/{id}/forget (with --intake, every replica forgets through the stream).
            """)

    @OptionGroup var ledger: LedgerOptions
    @Argument(help: "The app user id to erase.") var appUserId: String
    @Option(name: .long, help: "Who asked, as the log should keep it (a ticket, a name): never the user's id.")
    var requestedBy: String
    @Option(name: .long, help: "Why, as the log should keep it.") var reason: String?
    @Flag(name: .long, help: "One JSON document on stdout.") var json = false

    func run() throws {
        let store = try ledger.openLedger(try ledger.loadConfiguration(json: json), readOnly: false, json: json)
        defer { store.close() }
        let report: ForgetReport
        do {
            report = try store.privacy.forget(
                AppUserID(appUserId), requestedBy: requestedBy, reason: reason, at: currentMillis())
        } catch {
            let failure = LedgerError.from(error)
            throw CommandFailure(code: failure.code, message: failure.message, json: json)
        }
        if json {
            printJSON(ForgetDocument(report))
        } else {
            print("forgotten     as \(report.pseudonym), erasure recorded at seq \(report.seq)")
            print("pseudonyms    \(report.pseudonyms.count) (the user and the tokens mapped to them)")
            print("subscriptions \(report.subscriptions) kept under the pseudonym")
        }
    }
}
