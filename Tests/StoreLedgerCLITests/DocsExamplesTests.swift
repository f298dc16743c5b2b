import Foundation
import LedgerTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

// MARK: - The documented curl commands

/// One `curl` command of a document's shell blocks, with the status the document states for it (`# → 200`).
struct DocumentedCommand: CustomStringConvertible {
    var document: String
    /// 1-based line of the command's first line.
    var line: Int
    var text: String
    var expectedStatus: Int?

    var description: String { "\(document):\(line)" }

    /// Every `curl` command in the ```sh / ```bash blocks of `markdown`, in order, with the shell variable
    /// assignments (`S=…`, `J=…`) made in those blocks. A command runs on while its line ends with `\` or a single
    /// quote is open (a JSON body over several lines).
    static func parse(_ markdown: String, document: String) -> (commands: [DocumentedCommand], assignments: [String]) {
        var commands: [DocumentedCommand] = []
        var assignments: [String] = []
        var inShell = false
        var current: DocumentedCommand?
        for (index, raw) in markdown.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(raw)
            if line.hasPrefix("```") {
                inShell = !inShell && (line == "```sh" || line == "```bash" || line == "```shell")
                continue
            }
            guard inShell else { continue }
            if var command = current {
                command.text += "\n" + line
                current = command
            } else if line.hasPrefix("curl ") {
                current = DocumentedCommand(document: document, line: index + 1, text: line)
            } else {
                if line.range(of: #"^[A-Za-z_][A-Za-z0-9_]*="#, options: .regularExpression) != nil {
                    assignments.append(line)
                }
                continue
            }
            guard var command = current else { continue }
            let quotes = command.text.filter { $0 == "'" }.count
            if quotes % 2 == 0, !line.hasSuffix("\\") {
                command.expectedStatus = line.range(of: #"# → [0-9]{3}"#, options: .regularExpression)
                    .flatMap { Int(line[$0].suffix(3)) }
                commands.append(command)
                current = nil
            }
        }
        return (commands, assignments)
    }
}

// MARK: - Tests

extension LiveProcesses {
    /// Every `curl` line of README.md and docs/socket-api.md, run in document order against a live `storeledger serve`
    /// (a fresh ledger per document, with examples/config.json), must answer the status the document states next to it.
    /// So the docs cannot drift from the server or from examples/.
    @Suite("Documented curl commands", .serialized, .timeLimit(.minutes(3)))
    struct DocsExamplesTests {
        static let curl = installedTool("curl")

        /// The fewest commands each document holds today: fewer found means the parser lost some.
        @Test(
            .enabled(if: curl != nil, "curl is not installed (apt-get install curl; .ci/run does)"),
            arguments: [("README.md", 7), ("docs/socket-api.md", 24)]
        )
        func everyCurlCommandAnswersItsDocumentedStatus(document: String, atLeast: Int) async throws {
            try await withTaskExecutorPreference(TestExecutor.shared) { try await run(document, atLeast: atLeast) }
        }

        private func run(_ document: String, atLeast: Int) async throws {
            let markdown = try String(contentsOfFile: ExampleFiles.repositoryRoot + "/" + document, encoding: .utf8)
            let (commands, assignments) = DocumentedCommand.parse(markdown, document: document)
            #expect(
                commands.count >= atLeast,
                "\(document): found \(commands.count) curl commands, expected \(atLeast) or more"
            )
            for command in commands where command.expectedStatus == nil {
                Issue.record("\(command): a curl command without its status (end it with `# → 200`):\n\(command.text)")
            }

            let directory = try TemporaryDirectory(prefix: "sl-docs")
            defer { directory.remove() }
            let server = try ServerProcess(
                data: directory.file("ledger"),
                arguments: ["--config", ExampleFiles.path("config.json")]
            )
            defer { server.killAndWait() }
            try await server.waitUntilAnswering()

            let body = directory.file("answer")
            // The document's own assignments, then its socket replaced by the test's; `curl` records the status.
            let preamble =
                (["set -u", "cd '\(ExampleFiles.repositoryRoot)'"] + assignments.filter { !$0.hasPrefix("S=") } + [
                    "S='\(server.socketPath)'",
                    #"curl() { command curl -sS --max-time 20 -o '\#(body)' -w '%{http_code}' "$@"; }"#,
                ]).joined(separator: "\n")
            for command in commands {
                guard let expected = command.expectedStatus else { continue }
                let run = try runProcess("/bin/bash", ["-c", preamble + "\n" + command.text], deadline: 40)
                let answer = (try? String(contentsOfFile: body, encoding: .utf8)) ?? ""
                #expect(run.status == 0, "\(command): curl failed (\(run.status)): \(run.stderr)\n\(command.text)")
                #expect(
                    Int(run.stdout) == expected,
                    "\(command): answered \(run.stdout), the document says \(expected)\n\(command.text)\n\(answer.prefix(500))"
                )
            }
        }

        // MARK: - The parser itself

        @Test func theParserJoinsContinuationsAndOpenQuotesAndReadsTheStatedStatus() {
            let markdown = """
                ```sh
                S=ledger-data/ledger.sock
                J='content-type: application/json'
                curl --unix-socket $S http://localhost/v1/health   # → 200
                # a comment, not a command
                curl --unix-socket $S -H "$J" http://localhost/v1/events -d '{"a":1,
                  "b":2}'   # → 207
                curl --unix-socket $S --data-binary @x \\
                  http://localhost/v1/apple/notifications # → 422
                curl --unix-socket $S http://localhost/metrics
                ```
                ```python
                curl = "not shell"
                ```
                """
            let (commands, assignments) = DocumentedCommand.parse(markdown, document: "t.md")
            #expect(assignments == ["S=ledger-data/ledger.sock", "J='content-type: application/json'"])
            #expect(commands.map(\.line) == [4, 6, 8, 10])
            #expect(commands.map(\.expectedStatus) == [200, 207, 422, nil])
            #expect(commands[1].text.hasSuffix(#""b":2}'   # → 207"#))
            #expect(commands[2].text.contains("\n"))
        }
    }
}
