import ArgumentParser
import Foundation
import LedgerAPI
import LedgerCore
import LedgerErrors
import LedgerStore

/// `storeledger webhook`: where the outbound webhook stands, its dead letters, and replaying them.
struct WebhookCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhook",
        abstract: "The outbound webhook's position and dead letters; replay dead letters.",
        discussion: """
            `storeledger serve` delivers the lifecycle stream to the configured webhook (docs/socket-api.md, \
            "The outbound webhook"). An event the receiver refused through every attempt is a dead letter; \
            `replay` records a request that the next server started tries it again (stop a running server first: \
            it is the ledger's only writer).
            """,
        subcommands: [DeadLetters.self, Replay.self],
        defaultSubcommand: DeadLetters.self)

    /// `storeledger webhook dead-letters`.
    struct DeadLetters: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dead-letters", abstract: "List the dead letters and where delivery stands.")

        @OptionGroup var ledger: LedgerOptions
        @Flag(name: .long, help: "One JSON document on stdout.") var json = false

        func run() throws {
            let store = try ledger.openLedger(try ledger.loadConfiguration(json: json), readOnly: true, json: json)
            let letters = try store.outbox.deadLetters()
            let position = try store.outbox.position()
            if json {
                printJSON(DeadLetterListing(position: position, letters: letters))
                return
            }
            print("delivered through \(position?.description ?? "nothing yet")")
            print(pad("POSITION", 14) + pad("TYPE", 24) + pad("ATTEMPTS", 10) + pad("FAILED", 26) + pad("REPLAY", 8) + "ID / REASON")
            for d in letters {
                print(
                    pad(d.position.description, 14) + pad(d.event.type.rawValue, 24) + pad("\(d.attempts)", 10)
                        + pad(formatInstant(d.failedAt), 26) + pad(d.replayRequested ? "asked" : "-", 8) + d.event.id)
                print(pad("", 82) + d.reason)
            }
            if letters.isEmpty { print("(no dead letters)") }
        }
    }

    /// `storeledger webhook replay`.
    struct Replay: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Ask the server to deliver dead letters again (each removed once delivered).")

        @OptionGroup var ledger: LedgerOptions
        @Argument(help: "Positions (SEQ.ENV.INDEX, as `dead-letters` lists them).") var positions: [String] = []
        @Flag(name: .long, help: "Every dead letter.") var all = false
        @Flag(name: .long, help: "One JSON document on stdout.") var json = false

        func validate() throws {
            if all == !positions.isEmpty { throw ValidationError("give positions or --all") }
            for p in positions where LifecyclePosition(p) == nil {
                throw ValidationError("'\(p)' is not a position (SEQ.ENV.INDEX)")
            }
        }

        func run() throws {
            let store = try ledger.openLedger(try ledger.loadConfiguration(json: json), readOnly: false, json: json)
            do {
                let count = try store.outbox.replayDeadLetters(all ? nil : positions.compactMap { LifecyclePosition($0) })
                if json {
                    try printJSON(encoding: ["replayRequested": count])
                } else {
                    print("asked to replay \(count) dead letter\(count == 1 ? "" : "s")")
                }
            } catch let error as LedgerError {
                throw CommandFailure(code: error.code, message: error.message, json: json)
            }
        }
    }
}

/// `storeledger webhook dead-letters --json`.
struct DeadLetterListing: JSONDocument {
    var position: LifecyclePosition?
    var letters: [DeadLetter]

    func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("deliveredThrough"); o.string(position?.description)
            o.key("deadLetters")
            o.array(letters) { a, d in
                a.object { l in
                    l.key("position"); l.string(d.position.description)
                    l.key("attempts"); l.number(d.attempts)
                    l.key("failedAt"); l.number(d.failedAt)
                    l.key("reason"); l.string(d.reason)
                    l.key("replayRequested"); l.bool(d.replayRequested)
                    l.key("event"); d.event.write(to: &l)
                }
            }
        }
    }
}
