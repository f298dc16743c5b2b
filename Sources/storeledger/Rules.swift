import ArgumentParser
import Foundation
import LedgerAPI
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerErrors

/// `storeledger rules`: the rules the ledger folds with, versioned in its log.
struct Rules: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The catalog and binding policy the ledger folds with, as recorded in its log.",
        discussion: """
            Until the log records rules, the ledger folds with the configuration file's `products` and \
            `bindingPolicy`. `rules apply FILE` records FILE's as a change at the next log position and refolds \
            every subscription under them; answers as of an earlier position (`--as-of`) keep the rules of their \
            time. Review a change first with `storeledger replay --what-if FILE`.
            """,
        subcommands: [Show.self, Apply.self], defaultSubcommand: Show.self)

    /// `storeledger rules [show]`: every recorded change, and the rules in force.
    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every change of rules the log records.")
        @OptionGroup var ledger: LedgerOptions
        @Flag(name: .long, help: "One JSON document on stdout.") var json = false

        func run() throws {
            let configuration = try ledger.loadConfiguration(json: json)
            let store = try ledger.openLedger(configuration, readOnly: true, json: json)
            let changes = try store.rulesInLog.changes()
            if json {
                printJSON(RulesHistoryDocument(configured: configuration.rules, changes: changes))
                return
            }
            if changes.isEmpty {
                print("no change of rules recorded: the configuration file's rules are in force")
            }
            var before = configuration.rules
            for c in changes {
                print("seq \(c.seq)  \(formatInstant(c.receivedAt))")
                for line in WhatIfDocument.ruleChanges(before, c.change.rules) { print("  \(line)") }
                before = c.change.rules
            }
            if let last = changes.last, last.change.rules != configuration.rules {
                print("note: the configuration file's rules differ from the ones in force (seq \(last.seq))")
            }
        }
    }

    /// `storeledger rules apply FILE`.
    struct Apply: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Record FILE's catalog and binding policy as the ledger's rules from the next log position on.")
        @OptionGroup var ledger: LedgerOptions
        @Argument(help: "A configuration file (its `products` and `bindingPolicy` are read).") var file: String
        @Flag(name: .long, help: "One JSON document on stdout.") var json = false

        func run() throws {
            let configuration = try ledger.loadConfiguration(json: json)
            let bytes: [UInt8]
            let other: LedgerConfiguration
            do {
                bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
                other = try LedgerConfiguration(contentsOf: file)
            } catch {
                throw CommandFailure(code: .invalidConfiguration, message: "\(file): \(error)", json: json)
            }
            let store = try ledger.openLedger(configuration, readOnly: false, json: json, adoptingRules: false)
            defer { store.close() }
            let before = try store.rulesInLog.inForce()
            let seq = try store.rulesInLog.apply(other.rules, raw: bytes, at: currentMillis())
            if json {
                printJSON(RulesAppliedDocument(seq: seq, changes: WhatIfDocument.ruleChanges(before, other.rules)))
            } else if let seq {
                print("recorded at seq \(seq); every subscription refolded under the new rules")
                for line in WhatIfDocument.ruleChanges(before, other.rules) { print("  \(line)") }
            } else {
                print("unchanged: these are the rules in force already")
            }
        }
    }
}
