import Foundation
import LedgerTestSupport
import Testing

/// What a newcomer meets after the tour: a typo in the configuration, a rules file that states one part of the
/// rules, and the ways out of a ledger and back in that must restore it.
@Suite("Configuration typos, rules files and the ways back in", .serialized, .timeLimit(.minutes(5)), .blocking)
struct ConfigurationAndWaysBackCLITests {
    static let start: Int64 = 1_700_000_000_000
    static let day: Int64 = 86_400_000

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    func write(_ lines: [String], to file: String) throws {
        try lines.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
    }

    static func transaction(_ id: String, otid: String, user: String, environment: String = "Production") -> String {
        #"{"type":"transaction","appUserId":"\#(user)","receivedAt":\#(start),"payload":{"transactionId":"\#(id)","originalTransactionId":"\#(otid)","productId":"com.example.premium.monthly","purchaseDate":\#(start),"expiresDate":\#(start + 30 * day),"type":"Auto-Renewable Subscription","environment":"\#(environment)"}}"#
    }

    // MARK: - A typo is an error

    /// A misspelled key is refused by every command that reads the file, naming the key, where it is and the key
    /// meant; nothing is written. Before, `requireSignature` let a signed input be stored `unverified`.
    @Test func aMisspelledKeyIsRefusedByEveryCommandThatReadsTheFile() async throws {
        let dir = try TemporaryDirectory(prefix: "sl-typo")
        defer { dir.remove() }
        let data = dir.file("ledger")
        let inputs = dir.file("inputs.ndjson")
        try write([Self.transaction("1001", otid: "1001", user: "u1")], to: inputs)
        _ = try await storeLedgerSucceeds(["ingest", "--data", data, inputs])
        let before = try await storeLedgerSucceeds(["export", "--complete", "--data", data])

        let cases: [(file: String, message: String)] = [
            (#"{"requireSignature": true}"#,
             #"unknown key "requireSignature" at the top level (did you mean "requireSignatures"?)"#),
            (#"{"bundleID": "com.example.app"}"#, #"unknown key "bundleID" at the top level (did you mean "bundleId"?)"#),
            (#"{"products": {"com.example.premium.monthly": {"type": "autoRenewable", "entitlement": ["premium"]}}}"#,
             #"unknown key "entitlement" in products["com.example.premium.monthly"] (did you mean "entitlements"?)"#),
            (#"{"socket": {"writers": {"uid": [1000]}}}"#,
             #"unknown key "uid" in socket.writers (did you mean "uids"?)"#),
        ]
        for (index, c) in cases.enumerated() {
            let config = dir.file("config-\(index).json")
            try c.file.write(toFile: config, atomically: true, encoding: .utf8)
            for command in [
                ["ingest", "--data", data, "--config", config, inputs], ["verify", "--data", data, "--config", config],
                ["customer", "u1", "--data", data, "--config", config],
                ["serve", "--data", data, "--config", config, "--socket", dir.file("s.sock")],
                ["replay", "--what-if", config, "--data", data], ["rules", "apply", config, "--data", data],
            ] {
                let out = try await runStoreLedger(command, seconds: 30)
                #expect(out.status != 0, "\(command): \(out.stdout)")
                #expect(out.stderr.contains("invalid_configuration"), "\(command): \(out.stderr)")
                #expect(out.stderr.contains(c.message), "\(command): \(out.stderr)")
            }
        }
        #expect(try await storeLedgerSucceeds(["export", "--complete", "--data", data]) == before, "nothing written")
    }

    /// `--config config.json`, a file named without a directory: its relative paths are read beside it, not from
    /// the root of the file system.
    @Test func aConfigurationNamedWithoutADirectoryReadsItsPathsBesideIt() async throws {
        let dir = try TemporaryDirectory(prefix: "sl-config-dir")
        defer { dir.remove() }
        try Data(TestPKI.shared.rootDER).write(to: URL(fileURLWithPath: dir.file("root.cer")))
        try #"{"trustedRoots": ["root.cer"]}"#.write(toFile: dir.file("config.json"), atomically: true, encoding: .utf8)
        try write([Self.transaction("1001", otid: "1001", user: "u1")], to: dir.file("inputs.ndjson"))
        let out = try await runStoreLedger(
            ["ingest", "--data", "ledger", "--config", "config.json", "inputs.ndjson"], via: ["/usr/bin/env", "-C", dir.path])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(!out.stderr.contains("/root.cer"), "\(out.stderr)")
    }

    // MARK: - A rules file states a change

    /// `rules apply` of a file stating only `bindingPolicy` keeps the catalog in force (it removed all four of the
    /// demo's products), and shows the answers it changes before it records the change.
    @Test func aRulesFileOfTheBindingPolicyAloneKeepsTheCatalogAndShowsItsEffectFirst() async throws {
        let dir = try TemporaryDirectory(prefix: "sl-rules-file")
        defer { dir.remove() }
        let data = dir.file("demo")
        _ = try await storeLedgerSucceeds(["demo", "--data", data])
        let keep = dir.file("keep.json")
        try #"{"bindingPolicy": "keep"}"#.write(toFile: keep, atomically: true, encoding: .utf8)
        let at = "2021-01-20T00:00:00Z"
        // What docs/debugging-a-subscription.md says of the demo under `transfer`: bob's restore moved premium to
        // him, and alice lost it to the transfer.
        let bob = try json(try await storeLedgerSucceeds(["why", "bob", "premium", "--data", data, "--at", at, "--json"]))
        #expect(bob["active"] as? Bool == true && bob["reason"] as? String == "purchase", "\(bob)")
        let before = try json(try await storeLedgerSucceeds(["why", "alice", "premium", "--data", data, "--at", at, "--json"]))
        #expect(before["active"] as? Bool == false && before["reason"] as? String == "transferred", "\(before)")

        let whatIf = try await storeLedgerSucceeds(["replay", "--what-if", keep, "--data", data, "--at", at])
        #expect(whatIf.contains("what if: bindingPolicy transfer → keep"), "\(whatIf)")
        #expect(!whatIf.contains("removed"), "the catalog is not part of the change: \(whatIf)")

        let applied = try await storeLedgerSucceeds(["rules", "apply", keep, "--data", data])
        let lines = applied.split(separator: "\n").map(String.init)
        let change = try #require(lines.firstIndex { $0 == "rules: bindingPolicy transfer → keep" }, "\(applied)")
        let effect = try #require(lines.firstIndex { $0.contains("would differ") }, "\(applied)")
        let recorded = try #require(lines.firstIndex { $0.hasPrefix("recorded at seq ") }, "\(applied)")
        #expect(change < effect && effect < recorded, "the change and its effect come before the record: \(applied)")
        // Today both ended long ago: what changes is that bob never had premium under keep.
        #expect(
            lines.contains { $0.hasPrefix("  bob ") && $0.contains("inactive since 2021-02-11T04:59:30Z") && $0.hasSuffix("never had it") },
            "bob's answer changes: \(applied)")
        #expect(!applied.contains("removed"), "\(applied)")

        let history = try json(try await storeLedgerSucceeds(["rules", "--data", data, "--json"]))
        let changes = try #require(history["changes"] as? [[String: Any]])
        #expect(changes.last?["bindingPolicy"] as? String == "keep")
        #expect(changes.last?["products"] as? Int == 4, "the catalog stays: \(changes)")
        #expect(changes.last?["changed"] as? [String] == ["bindingPolicy transfer → keep"])

        let alice = try json(try await storeLedgerSucceeds(["why", "alice", "premium", "--data", data, "--at", at, "--json"]))
        #expect(alice["active"] as? Bool == true, "alice keeps premium under keep: \(alice)")

        // A file stating neither part has nothing to record; the same file again changes nothing.
        let empty = dir.file("empty.json")
        try #"{"limits": {"maxBodyBytes": 1000}}"#.write(toFile: empty, atomically: true, encoding: .utf8)
        let refused = try await runStoreLedger(["rules", "apply", empty, "--data", data])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("invalid_configuration") && refused.stderr.contains("neither products nor bindingPolicy"), "\(refused.stderr)")
        let again = try await storeLedgerSucceeds(["rules", "apply", keep, "--data", data])
        #expect(again.contains("unchanged"), "\(again)")
        #expect((try await runStoreLedger(["verify", "--data", data])).status == 0)
    }

    // MARK: - Ways back in

    /// A catalog, a claim that names no environment and a Sandbox claim of the same subscription: the export of such
    /// a ledger imported (it failed: `by_otid index lacks claim 4 of 1001 in Production`), verified and answering
    /// the same.
    @Test func anExportOfACatalogAndAClaimOfEveryEnvironmentImports() async throws {
        let dir = try TemporaryDirectory(prefix: "sl-import-claims")
        defer { dir.remove() }
        let config = dir.file("config.json")
        try #"{"products": {"com.example.premium.monthly": {"type": "autoRenewable", "entitlements": ["premium"]}}}"#
            .write(toFile: config, atomically: true, encoding: .utf8)
        let source = dir.file("source")
        let inputs = dir.file("inputs.ndjson")
        try write([
            Self.transaction("1001", otid: "1001", user: "u1"),
            #"{"type":"binding","appUserId":"u2","originalTransactionId":"1001","receivedAt":\#(Self.start + Self.day)}"#,
            #"{"type":"binding","appUserId":"u3","originalTransactionId":"1001","environment":"Sandbox","receivedAt":\#(Self.start + 2 * Self.day)}"#,
        ], to: inputs)
        _ = try await storeLedgerSucceeds(["ingest", "--data", source, "--config", config, inputs])
        #expect((try await runStoreLedger(["verify", "--data", source])).status == 0)
        let export = dir.file("export.ndjson")
        try (try await storeLedgerSucceeds(["export", "--complete", "--data", source]))
            .write(toFile: export, atomically: true, encoding: .utf8)
        let imported = dir.file("imported")
        _ = try await storeLedgerSucceeds(["import", export, "--data", imported])
        for command in [["verify"], ["replay", "--check"]] {
            let out = try await runStoreLedger(command + ["--data", imported])
            #expect(out.status == 0, "\(command): \(out.stdout) \(out.stderr)")
        }
        let at = "\(Self.start + 3 * Self.day)"
        for (user, environment) in [("u1", "Production"), ("u2", "Production"), ("u2", "Sandbox"), ("u3", "Sandbox")] {
            let ask = ["customer", user, "--at", at, "--environment", environment, "--json"]
            #expect(
                try await storeLedgerSucceeds(ask + ["--data", imported]) == storeLedgerSucceeds(ask + ["--data", source]),
                "\(user) in \(environment)")
        }
    }

    /// `import --pseudonyms` of a ledger holding a refused input (it failed: `on the second reading (did the file
    /// change?)`): the refusal is recorded again, and the rewritten ledger holds as many refused inputs.
    @Test func aRewriteUnderPseudonymsKeepsTheRefusedInputs() async throws {
        let dir = try TemporaryDirectory(prefix: "sl-rewrite-refused")
        defer { dir.remove() }
        let source = dir.file("source")
        let inputs = dir.file("inputs.ndjson")
        try write([
            Self.transaction("1001", otid: "1001", user: "u1"),
            #"{"type":"transaction","appUserId":"u1","payload":{"transactionId":"1002"}}"#,
            "{not json",
        ], to: inputs)
        let ingest = try await runStoreLedger(["ingest", "--data", source, inputs])
        #expect(ingest.status == 1, "two inputs are refused: \(ingest.stderr)")
        let export = dir.file("export.ndjson")
        try (try await storeLedgerSucceeds(["export", "--complete", "--data", source]))
            .write(toFile: export, atomically: true, encoding: .utf8)
        let rewritten = dir.file("rewritten")
        _ = try await storeLedgerSucceeds(["import", "--pseudonyms", export, "--data", rewritten])
        #expect((try await runStoreLedger(["verify", "--data", rewritten])).status == 0)
        let (a, b) = (try await ledgerStats(source), try await ledgerStats(rewritten))
        #expect(b["rejected"] as? Int == 2, "\(b)")
        #expect(b["rejected"] as? Int == a["rejected"] as? Int)
        #expect(b["lastSeq"] as? Int == a["lastSeq"] as? Int)
        let refusals = try await storeLedgerSucceeds(["rejected", "--data", rewritten, "--json"])
        #expect(refusals.contains("missing_field") && refusals.contains("invalid_json"), "\(refusals)")
        let ask = ["customer", "u1", "--at", "\(Self.start + Self.day)", "--json"]
        #expect(try await storeLedgerSucceeds(ask + ["--data", rewritten]) == storeLedgerSucceeds(ask + ["--data", source]))
    }
}
