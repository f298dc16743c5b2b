import ArgumentParser
import Foundation

/// `storeledger`: the ledger's one executable (API.md "Executable").
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
            Serve.self, Ingest.self, Timeline.self, Customer.self, Events.self, Replay.self, Verify.self, Export.self,
            Stats.self, Rejected.self, Demo.self,
        ]
    )

    /// Parses and runs a command with the exit statuses API.md promises: 0 success, 1 a reported failure, 2 usage.
    static func main() async {
        do {
            var command = try parseAsRoot()
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
        } catch {
            if exitCode(for: error) == .success {
                exit(withError: error)  // --help, --version
            }
            let message = fullMessage(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
            FileHandle.standardError.write(Data("error: usage: \(message)\n".utf8))
            FileHandle.standardError.write(Data("(see storeledger --help)\n".utf8))
            Foundation.exit(2)
        }
    }
}

/// A reported failure: printed as `error: <code>: <message>` on stderr (and as JSON on stdout with `--json`).
struct CommandFailure: Error {
    var code: String
    var message: String
    var json: Bool
    var exitCode: Int32 = 1

    func report() {
        FileHandle.standardError.write(Data("error: \(code): \(message)\n".utf8))
        if json {
            let doc = ["error": ["code": code, "message": message]]
            if let data = try? JSONSerialization.data(withJSONObject: doc, options: [.sortedKeys]) {
                FileHandle.standardOutput.write(data + Data("\n".utf8))
            }
        }
    }
}
