import Foundation
import LedgerTestSupport
import Testing

/// `storeledger why`, `timeline --svg/--html`, `replay --what-if` and `rules apply` on a real ledger: a purchase by
/// alice, moved to bob by his restore ten days later.
@Suite(.serialized, .blocking) struct ExplainCLITests {
    static let day: Int64 = 86_400_000
    static let start: Int64 = 1_740_819_600_000  // 2025-03-01T09:00:00Z
    static let product = "com.example.premium.monthly"

    static func ledger(_ dir: TemporaryDirectory) throws -> (ledger: String, config: String) {
        let config = dir.file("config.json")
        try #"{"bindingPolicy":"transfer","products":{"com.example.premium.monthly":{"type":"autoRenewable","entitlements":["premium"]}}}"#
            .write(toFile: config, atomically: true, encoding: .utf8)
        let inputs = [
            #"{"type":"transaction","appUserId":"alice","receivedAt":\#(start),"payload":{"transactionId":"7001","originalTransactionId":"7001","webOrderLineItemId":"97001","productId":"\#(product)","purchaseDate":\#(start),"expiresDate":\#(start + 30 * day),"signedDate":\#(start),"type":"Auto-Renewable Subscription","environment":"Production"}}"#,
            #"{"type":"binding","receivedAt":\#(start + 10 * day),"payload":{"appUserId":"bob","originalTransactionId":"7001","claimedAt":\#(start + 10 * day)}}"#,
        ]
        let file = dir.file("inputs.ndjson")
        try inputs.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let ledger = dir.file("ledger")
        let ingest = try runProcess(storeledgerExecutable(), ["ingest", "--data", ledger, "--config", config, file])
        #expect(ingest.status == 0, "\(ingest.stderr)")
        return (ledger, config)
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func whyTellsTheTransferWithItsFacts() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (ledger, config) = try Self.ledger(dir)
        let at = "\(Self.start + 15 * Self.day)"
        let text = try runProcess(
            storeledgerExecutable(), ["why", "alice", "premium", "--data", ledger, "--config", config, "--at", at])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.hasPrefix("alice not active for premium"))
        #expect(text.stdout.contains("reason        transferred"))
        #expect(text.stdout.contains("transferred_away"))

        let out = try runProcess(
            storeledgerExecutable(),
            ["why", "alice", "premium", "--data", ledger, "--config", config, "--at", at, "--json"])
        let doc = try json(out.stdout)
        #expect(doc["active"] as? Bool == false && doc["reason"] as? String == "transferred")
        let grantor = try #require((doc["grantors"] as? [[String: Any]])?.first)
        let facts = try #require(grantor["facts"] as? [[String: Any]])
        #expect(facts.map { $0["role"] as? String } == ["purchase", "catalog_rule", "owner", "transferred_away"])
        #expect((facts[0]["rawDigest"] as? String)?.count == 64)

        let bob = try json(
            try runProcess(
                storeledgerExecutable(),
                ["why", "bob", "premium", "--data", ledger, "--config", config, "--at", at, "--json"]
            ).stdout)
        #expect(bob["active"] as? Bool == true && bob["reason"] as? String == "purchase")
    }

    @Test func timelineWritesItsPictureAndPage() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (ledger, config) = try Self.ledger(dir)
        let svg = dir.file("t.svg"), html = dir.file("t.html")
        let run = try runProcess(
            storeledgerExecutable(), ["timeline", "7001", "--data", ledger, "--config", config, "--svg", svg, "--html", html])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("PERIODS (1)"), "the table still prints")
        let picture = try String(contentsOfFile: svg, encoding: .utf8)
        #expect(picture.hasPrefix("<?xml") && picture.components(separatedBy: "class=\"period ").count == 2)
        #expect(picture.contains("class=\"owner transfer\""))
        #expect(try String(contentsOfFile: html, encoding: .utf8).hasPrefix("<!DOCTYPE html>"))
        let stdout = try runProcess(storeledgerExecutable(), ["timeline", "7001", "--data", ledger, "--svg", "-"])
        #expect(stdout.stdout.hasPrefix("<?xml") && !stdout.stdout.contains("PERIODS"), "the picture alone on stdout")
        let unknown = try runProcess(storeledgerExecutable(), ["timeline", "999", "--data", ledger, "--svg", svg])
        #expect(unknown.status == 1 && unknown.stderr.hasPrefix("error: not_found:"))
    }

    /// A file written is said on stdout, one line each, after the table; when stdout carries the picture or the
    /// JSON document, it stays exactly that, and the line goes to stderr.
    @Test func timelineSaysWhichFilesItWrote() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (ledger, _) = try Self.ledger(dir)
        let svg = dir.file("t.svg"), html = dir.file("t.html")
        func size(_ path: String) throws -> String {
            let bytes = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
            return String(format: "%.1f KiB", Double(bytes) / 1024)
        }
        // One instant for every run: the picture and the document show it.
        let timeline = ["timeline", "7001", "--data", ledger, "--at", "\(Self.start + 15 * Self.day)"]
        let both = try runProcess(storeledgerExecutable(), timeline + ["--svg", svg, "--html", html])
        #expect(both.status == 0, "\(both.stderr)")
        let wroteSVG = "wrote \(svg) (\(try size(svg))): an SVG picture, open it in a browser\n"
        let wroteHTML = "wrote \(html) (\(try size(html))): a web page, open it in a browser\n"
        #expect(both.stdout.contains("PERIODS (1)"), "the table still prints")
        #expect(both.stdout.hasSuffix("\n" + wroteSVG + wroteHTML), "\(both.stdout)")
        #expect(both.stderr == "")

        let picture = try runProcess(storeledgerExecutable(), timeline + ["--svg", "-", "--html", html])
        #expect(picture.status == 0, "\(picture.stderr)")
        #expect(picture.stdout == (try String(contentsOfFile: svg, encoding: .utf8)), "the picture alone on stdout")
        #expect(picture.stderr == wroteHTML)

        let plain = try runProcess(storeledgerExecutable(), timeline + ["--json"])
        let json = try runProcess(storeledgerExecutable(), timeline + ["--json", "--html", html])
        #expect(json.status == 0, "\(json.stderr)")
        #expect(json.stdout == plain.stdout, "the JSON document unchanged")
        #expect(json.stderr == wroteHTML)
    }

    @Test func whatIfThenApplyTheRules() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let (ledger, config) = try Self.ledger(dir)
        let keep = dir.file("keep.json")
        try #"{"bindingPolicy":"keep","products":{"com.example.premium.monthly":{"type":"autoRenewable","entitlements":["premium"]}}}"#
            .write(toFile: keep, atomically: true, encoding: .utf8)
        let at = "\(Self.start + 15 * Self.day)"
        let whatIf = try runProcess(
            storeledgerExecutable(),
            ["replay", "--what-if", keep, "--at", at, "--data", ledger, "--config", config, "--json"])
        #expect(whatIf.status == 0, "\(whatIf.stderr)")
        let report = try json(whatIf.stdout)
        #expect(report["changes"] as? [String] == ["bindingPolicy transfer → keep"])
        let differences = try #require(report["differences"] as? [[String: Any]])
        #expect(differences.map { $0["appUserId"] as? String } == ["alice", "bob"])
        #expect(differences[1]["after"] is NSNull, "under keep bob never had it")
        let text = try runProcess(
            storeledgerExecutable(), ["replay", "--what-if", keep, "--at", at, "--data", ledger, "--config", config])
        #expect(text.stdout.contains("2 customers would differ"), "\(text.stdout)")

        let apply = try runProcess(storeledgerExecutable(), ["rules", "apply", keep, "--data", ledger, "--config", config])
        #expect(apply.status == 0, "\(apply.stderr)")
        // Seq 1 is the rules the ledger was created with; the three inputs 2–4; the change 5. Before it is
        // recorded, the command says what it changes, as the what-if above did.
        #expect(apply.stdout.hasPrefix("rules: bindingPolicy transfer → keep\n"), "\(apply.stdout)")
        // Now, long after both periods ended, only bob's answer differs: under keep he never had premium.
        #expect(apply.stdout.contains("1 customer would differ"), "\(apply.stdout)")
        #expect(apply.stdout.contains("never had it"), "\(apply.stdout)")
        #expect(apply.stdout.hasSuffix("recorded at seq 5; every subscription refolded under the new rules\n"), "\(apply.stdout)")
        let bob = try json(
            try runProcess(
                storeledgerExecutable(), ["customer", "bob", "--data", ledger, "--config", config, "--at", at, "--json"]
            ).stdout)
        #expect((bob["entitlements"] as? [String: Any])?.isEmpty == true)
        let before = try json(
            try runProcess(
                storeledgerExecutable(),
                ["customer", "bob", "--data", ledger, "--config", config, "--at", at, "--as-of", "4", "--json"]
            ).stdout)
        #expect(((before["entitlements"] as? [String: Any])?["premium"] as? [String: Any])?["active"] as? Bool == true)
        let verify = try runProcess(storeledgerExecutable(), ["verify", "--data", ledger, "--config", config])
        #expect(verify.status == 0, "\(verify.stderr)")
        let rules = try runProcess(storeledgerExecutable(), ["rules", "--data", ledger, "--config", config])
        #expect(rules.stdout.contains("seq 5") && rules.stdout.contains("bindingPolicy transfer → keep"))
    }
}
