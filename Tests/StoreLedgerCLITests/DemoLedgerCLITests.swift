import Foundation
import LedgerTestSupport
import Testing

/// The demo's ledger is the docs' world: it folds with the catalog of examples/config.json (entitlement `premium`),
/// recorded in its log, and every command the demo prints works on it as printed.
@Suite(.serialized, .timeLimit(.minutes(5)), .blocking)
struct DemoLedgerCLITests {
    /// Runs the demo into a fresh `demo` directory of `dir`; its stdout.
    static func demo(_ dir: TemporaryDirectory) throws -> (ledger: String, stdout: String) {
        let ledger = dir.file("demo")
        let out = try runProcess(storeledgerExecutable(), ["demo", "--data", ledger], deadline: 120)
        #expect(out.status == 0, "\(out.stderr)")
        return (ledger, out.stdout)
    }

    /// The demo embeds its catalog rather than reading examples/config.json at run time: the two must stay the same
    /// rules. `rules apply` compares a file's products and bindingPolicy with the rules the ledger records, and
    /// records nothing when they are equal.
    @Test func theDemoLedgerRecordsTheCatalogOfTheExamplesConfiguration() throws {
        let dir = try TemporaryDirectory(prefix: "sl-demo")
        defer { dir.remove() }
        let (ledger, _) = try Self.demo(dir)
        let rules = try runProcess(storeledgerExecutable(), ["rules", "--data", ledger, "--json"])
        #expect(rules.status == 0, "\(rules.stderr)")
        let history = try #require(try JSONSerialization.jsonObject(with: Data(rules.stdout.utf8)) as? [String: Any])
        let changes = try #require(history["changes"] as? [[String: Any]], "\(rules.stdout)")
        #expect(changes.map { $0["seq"] as? Int } == [1], "the catalog is the ledger's first event: \(rules.stdout)")

        let apply = try runProcess(
            storeledgerExecutable(), ["rules", "apply", ExampleFiles.path("config.json"), "--data", ledger, "--json"])
        #expect(apply.status == 0, "\(apply.stderr)")
        #expect(
            apply.stdout == #"{"changes":["the same catalog and binding policy"],"seq":null}"# + "\n",
            "the demo's catalog differs from examples/config.json's products/bindingPolicy: \(apply.stdout)")
    }

    /// Every `storeledger …` line the demo prints (the commands it shows, and the ones it suggests) is run as
    /// printed, by a shell in a scratch directory, and succeeds; without --config, `why alice premium` finds the subscription
    /// alice bought (no `no_grantor`), and the timeline page is written where the command says.
    @Test func everyCommandTheDemoPrintsWorksAsPrinted() throws {
        let dir = try TemporaryDirectory(prefix: "sl-demo")
        defer { dir.remove() }
        let (_, stdout) = try Self.demo(dir)
        let lines = stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let commands = lines.compactMap { line -> String? in
            if line.hasPrefix("$ storeledger ") { return String(line.dropFirst(2)) }
            return line.hasPrefix("storeledger ") ? line : nil
        }
        #expect(commands.count >= 6, "\(stdout)")
        #expect(commands.contains { $0.hasPrefix("storeledger why alice premium ") }, "\(stdout)")
        #expect(commands.contains { $0.hasPrefix("storeledger customer alice ") }, "\(stdout)")
        #expect(commands.contains { $0.hasPrefix("storeledger timeline ") && $0.contains(" --html ") }, "\(stdout)")

        let scratch = dir.file("scratch")
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false)
        let bin = (storeledgerExecutable() as NSString).deletingLastPathComponent
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = bin + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        for command in commands {
            let out = try runProcess(
                "/bin/sh", ["-c", "cd '\(scratch)' && \(command)"], environment: environment, deadline: 60)
            #expect(out.status == 0, "\(command): exit \(out.status): \(out.stderr)")
            #expect(!out.stdout.contains("no_grantor"), "\(command): \(out.stdout)")
            if command.hasPrefix("storeledger why alice premium ") {
                #expect(out.stdout.hasPrefix("alice "), "\(out.stdout)")
                #expect(out.stdout.contains("com.example.premium.monthly"), "the period alice bought: \(out.stdout)")
            }
            if command.hasPrefix("storeledger customer ") {
                #expect(out.stdout.contains("premium "), "the catalog's entitlement: \(out.stdout)")
                #expect(
                    !out.stdout.contains("\n  com.example.premium.monthly "), "one named after the product: \(out.stdout)")
            }
            if command.contains(" --html demo-timeline.html") {
                #expect(FileManager.default.fileExists(atPath: scratch + "/demo-timeline.html"))
                #expect(out.stdout.contains("wrote demo-timeline.html ("), "\(out.stdout)")
            }
        }
    }
}
