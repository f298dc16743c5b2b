import ArgumentParser
import Foundation
import LedgerAPI
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerErrors

/// `storeledger rules`: the rules the ledger folds with, versioned in its log.
struct Rules: ParsableCommand {
    /// A rules file (`rules apply FILE`, `replay --what-if FILE`) and its bytes; `invalid_configuration` when it
    /// cannot be read, or states neither `products` nor `bindingPolicy`.
    static func readFile(_ path: String, json: Bool) throws -> (LedgerConfiguration, bytes: [UInt8]) {
        var file: LedgerConfiguration
        let bytes: [UInt8]
        do {
            bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            file = try LedgerConfiguration(json: bytes, baseDirectory: LedgerConfiguration.directory(of: path))
        } catch {
            throw CommandFailure(code: .invalidConfiguration, message: "\(path): \(error)", json: json)
        }
        file.source = path
        guard file.statesRules else {
            throw CommandFailure(
                code: .invalidConfiguration, message: "\(path) states neither products nor bindingPolicy: it has no rules",
                json: json)
        }
        return (file, bytes)
    }

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
                printJSON(RulesHistoryDocument(changes: changes))
                return
            }
            if changes.isEmpty {
                print("no change of rules recorded: the built-in defaults are in force (no products, bindingPolicy transfer)")
            }
            var before = FoldRules()
            for c in changes {
                print("seq \(c.seq)  \(formatInstant(c.receivedAt))")
                for line in WhatIfDocument.ruleChanges(before, c.change.rules) { print("  \(line)") }
                before = c.change.rules
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
            let (other, bytes) = try Rules.readFile(file, json: json)
            let store = try ledger.openLedger(configuration, readOnly: false, json: json, adoptingRules: false)
            defer { store.close() }
            let before = try store.rulesInLog.inForce()
            let after = other.rules(over: before)
            let changes = WhatIfDocument.ruleChanges(before, after)
            guard after != before else {
                if json { printJSON(RulesAppliedDocument(seq: nil, changes: changes)) } else {
                    print("unchanged: these are the rules in force already")
                }
                return
            }
            // What the change does to the answers, shown before it is recorded, as `replay --what-if` shows it.
            let effect = try store.audit.whatIf(after, at: currentMillis())
            if !json {
                for line in changes { print("rules: \(line)") }
                Replay.printDifferences(effect)
            }
            let seq = try store.rulesInLog.apply(after, raw: bytes, at: currentMillis())
            if json {
                printJSON(RulesAppliedDocument(seq: seq, changes: changes, effect: effect))
            } else if let seq {
                print("recorded at seq \(seq); every subscription refolded under the new rules")
            } else {
                print("unchanged: these are the rules in force already")
            }
        }
    }
}
