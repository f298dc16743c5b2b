import ArgumentParser
import Foundation
import LedgerAPI
import LedgerStore
import LedgerErrors

/// `storeledger`: the ledger's one executable (docs/cli.md).
@main
struct StoreLedger: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storeledger",
        abstract: "An event-sourced entitlement ledger for App Store purchases.",
        discussion: """
            Every receipt transaction and notification is kept as an immutable event; timelines and entitlements are \
            folded from them, for any instant (--at) as known at any point of the log (--as-of).
            """,
        version: "0.1.0",
        subcommands: [
            Serve.self, Ingest.self, Timeline.self, Customer.self, Why.self, Events.self, Replay.self, Rules.self, Verify.self,
            Export.self, Stats.self, Rejected.self, Backup.self, Restore.self, Import.self, Reconcile.self, Demo.self,
            LifecycleCommand.self, WebhookCommand.self, RevenueCommand.self, MetricsCommand.self, GrantsCommand.self,
            ForgetCommand.self, ReplicasCommand.self,
        ]
    )

    /// Parses and runs a command with the exit statuses docs/cli.md promises: 0 success, 1 a reported failure (a failed
    /// verification, corruption, a ledger that cannot be opened, a full disk, rejected input), 2 only a usage error
    /// (the arguments do not parse or validate). Every failure is one line `error: <code>: <message>` on stderr.
    static func main() async {
        FaultGuard.install(json: CommandLine.arguments.contains("--json"))
        if let first = CommandLine.arguments.dropFirst().first, let message = unknownCommandMessage(first) {
            usageFailure(message: message)
        }
        var command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            usageFailure(error)
        }
        if command is StoreLedger {
            // No command: what to do is unsaid, so it is a usage error (exit 2), with the commands to choose from.
            FileHandle.standardError.write(
                Data("error: \(ErrorCode.usage): no command given\n\n\(helpMessage())\n".utf8))
            Foundation.exit(2)
        }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let failure as CommandFailure {
            failure.report()
            Foundation.exit(failure.exitCode)
        } catch let code as ExitCode {
            Foundation.exit(code.rawValue)
        } catch let error as ValidationError {
            // A flag whose value `run` found unusable (e.g. `ingest --type coupon`): still a usage error.
            usageFailure(error)
        } catch where exitCode(for: error) == .success || exitCode(for: error) == .validationFailure {
            // The parser's own errors surfacing from `run` (`storeledger help`, `--help` on a subcommand).
            usageFailure(error)
        } catch {
            let failure = LedgerError.from(error)
            CommandFailure(
                code: failure.code, message: failure.message, json: CommandLine.arguments.contains("--json")
            ).report()
            Foundation.exit(1)
        }
    }

    /// Arguments that do not parse: exit 2 (or 0 for --help and --version, which the parser reports as errors).
    private static func usageFailure(_ error: any Error) -> Never {
        if exitCode(for: error) == .success {
            exit(withError: error)
        }
        usageFailure(message: usageMessage(for: error))
    }

    /// A usage error (exit 2): `error: usage: <message>`, the help hint, and the error document with `--json`.
    private static func usageFailure(message: String) -> Never {
        FileHandle.standardError.write(Data("error: \(ErrorCode.usage): \(message)\n".utf8))
        FileHandle.standardError.write(Data("(see \(commandPath()) --help)\n".utf8))
        if CommandLine.arguments.contains("--json") { printJSON(ErrorDocument(CodedError(.usage, message))) }
        Foundation.exit(2)
    }

    /// The names the first argument may take: every command's, its aliases, and the parser's own `help`.
    static var commandNames: [String] {
        configuration.subcommands.flatMap { [$0._commandName] + $0.configuration.aliases } + ["help"]
    }

    /// What to say when the first argument names no command (`timelin`): the parser would only call it an unexpected
    /// argument. The nearest command by edit distance is suggested when it is close enough to be the one meant.
    /// Nil for a known command and for options (`--help`, `--version`).
    static func unknownCommandMessage(_ argument: String) -> String? {
        guard !argument.hasPrefix("-"), !commandNames.contains(argument) else { return nil }
        let names = configuration.subcommands.map { $0._commandName }
        if let nearest = nearestName(to: argument, among: names) {
            return "unknown command '\(argument)'; did you mean '\(nearest)'?"
        }
        return "unknown command '\(argument)'; the commands are \(names.joined(separator: ", "))"
    }

    /// The name nearest to `word` (fewest single-letter insertions, deletions, substitutions or swaps of neighbours,
    /// ignoring case), the first listed on a tie; nil when even the nearest needs more edits than a third of its
    /// length (at least one, at most three): beyond that a suggestion is more likely wrong than helpful.
    static func nearestName(to word: String, among names: [String]) -> String? {
        var best: (name: String, distance: Int)?
        for name in names {
            let distance = editDistance(word.lowercased(), name)
            guard distance <= min(3, max(1, name.count / 3)) else { continue }
            if best == nil || distance < best!.distance { best = (name, distance) }
        }
        return best?.name
    }

    /// The optimal string alignment distance: Levenshtein's, with a swap of two neighbouring letters as one edit
    /// (`tiemline`), the commonest typo.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }

    /// The parser's message in one line, without the `Error: ` it begins with (the line already says `error:`)
    /// and without the usage synopsis it may add.
    static func usageMessage(for error: any Error) -> String {
        let lines = fullMessage(for: error).split(whereSeparator: \.isNewline).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        var message = lines.first { !$0.isEmpty && !$0.hasPrefix("Usage:") } ?? "\(error)"
        while let range = message.range(of: "Error: ", options: [.anchored, .caseInsensitive]) {
            message.removeSubrange(range)
        }
        return message
    }

    /// `storeledger` and the command the arguments name, if any (`storeledger export`), for the help hint.
    private static func commandPath() -> String {
        let names = configuration.subcommands.map { $0._commandName }
        guard let name = CommandLine.arguments.dropFirst().first(where: { names.contains($0) }) else {
            return "storeledger"
        }
        return "storeledger \(name)"
    }
}

/// A reported failure: printed as `error: <code>: <message>` on stderr (and as its error document on stdout with
/// `--json`).
struct CommandFailure: Error {
    var code: ErrorCode
    var message: String
    var json: Bool
    var exitCode: Int32 = 1

    init(code: ErrorCode, message: String, json: Bool) {
        self.code = code
        self.message = message
        self.json = json
    }

    /// The failure of a coded error, with its code and message.
    init(_ error: CodedError, json: Bool) { self.init(code: error.code, message: error.message, json: json) }

    func report() {
        // One line, whatever the message holds (an underlying error's description may span several).
        let message = self.message.split(whereSeparator: \.isNewline).joined(separator: " ")
        FileHandle.standardError.write(Data("error: \(code): \(message)\n".utf8))
        if json { printJSON(ErrorDocument(CodedError(code, message))) }
    }
}
