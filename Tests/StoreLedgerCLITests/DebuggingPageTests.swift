import Foundation
import LedgerTestSupport
import Testing

/// docs/debugging-a-subscription.md says what each `why` answers (`# active: …`, `# not active: …`). Its commands
/// are run in order, as a reader runs them, in a scratch directory; each `why` is asked again with `--json`, and its
/// answer must be what the comment says. (`tools/run-doc-blocks.sh` only sees that a command succeeds: `why` answers
/// a user without access with exit 0.)
@Suite("The debugging page says what the commands answer", .serialized, .timeLimit(.minutes(5)), .blocking)
struct DebuggingPageTests {
    /// The commands of the page's shell blocks, in order, each with its comment.
    static func commands() throws -> [(command: String, comment: String)] {
        let page = try String(contentsOfFile: ExampleFiles.repositoryRoot + "/docs/debugging-a-subscription.md", encoding: .utf8)
        var commands: [(String, String)] = []
        var inBlock = false
        for line in page.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("```") {
                inBlock = !inBlock && line == "```sh"
                continue
            }
            guard inBlock, !line.hasPrefix("#"), !line.trimmingCharacters(in: .whitespaces).isEmpty else { continue }
            // A comment starts at "  #" (the commands hold no such text).
            if let mark = line.range(of: "  # ") {
                commands.append((String(line[..<mark.lowerBound]).trimmingCharacters(in: .whitespaces), String(line[mark.upperBound...])))
            } else {
                commands.append((line, ""))
            }
        }
        return commands
    }

    @Test func everyWhyAnswersWhatItsCommentSays() async throws {
        let commands = try Self.commands()
        let whys = commands.filter { $0.command.hasPrefix("storeledger why ") }
        #expect(whys.count >= 3, "\(commands)")
        let dir = try TemporaryDirectory(prefix: "sl-debugging-page")
        defer { dir.remove() }
        let bin = (storeledgerExecutable() as NSString).deletingLastPathComponent
        for (command, comment) in commands {
            // The page's commands as a shell runs them, from a directory of their own, with this build first on PATH.
            let shell = "cd '\(dir.path)' && PATH='\(bin)':\"$PATH\" && "
            let run = try runProcess("/bin/sh", ["-c", shell + command], deadline: 120)
            #expect(run.status == 0, "\(command): exit \(run.status): \(run.stderr)")
            guard command.hasPrefix("storeledger why ") else { continue }
            let asked = try runProcess("/bin/sh", ["-c", shell + command + " --json"], deadline: 60)
            let answer = try #require(
                try JSONSerialization.jsonObject(with: Data(asked.stdout.utf8)) as? [String: Any], "\(command): \(asked.stdout)")
            let active = try #require(answer["active"] as? Bool, "\(command): \(answer)")
            let said = comment.hasPrefix("active")
            #expect(comment.hasPrefix("active") || comment.hasPrefix("not active"), "\(command): the comment says neither")
            #expect(active == said, "\(command) answers active \(active), reason \(answer["reason"] ?? "-"); the page says: \(comment)")
        }
    }
}
