#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LedgerClient
import LedgerTestSupport
import Testing

/// Forgetting a user of a served ledger (docs/privacy.md), as an operator does it: `storeledger serve --pseudonyms`,
/// inputs over the socket, `POST /v1/customers/{id}/forget`, the server killed, then export, backup, restore, import,
/// `replay --check` and `verify` as processes, and the files scanned byte by byte for the user's id and token.
@Suite(.blocking) struct ForgetProcessTests {
    static let day: Int64 = 86_400_000
    static let start: Int64 = 1_740_819_600_000  // 2025-03-01T09:00:00Z
    static let alice = "alice.forgotten@example.com"
    static let aliceEncoded = "alice.forgotten%40example.com"
    static let aliceToken = "a11ce000-0000-4000-8000-000000000001"
    static let bobToken = "b0b00000-0000-4000-8000-000000000002"

    static func transaction(_ tid: String, otid: String, purchase: Int64, token: String?) -> String {
        """
        {"transactionId":"\(tid)","originalTransactionId":"\(otid)","webOrderLineItemId":"w\(tid)",\
        "bundleId":"com.example.app","productId":"com.example.premium.monthly","purchaseDate":\(purchase),\
        "originalPurchaseDate":\(start),"expiresDate":\(purchase + 30 * day),"quantity":1,\
        "type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED","signedDate":\(purchase),\
        "environment":"Production","price":4990,"currency":"EUR"\(token.map { #","appAccountToken":"\#($0)""# } ?? "")}
        """
    }

    /// Alice buys 101 with her token and renews it; bob buys 202 with his; carol claims 303; bob restores alice's
    /// 101 on his account; carol is granted a month by the operator.
    static let inputs: [String] = [
        #"{"type":"transaction","appUserId":"\#(alice)","receivedAt":\#(start),"payload":\#(transaction("1010", otid: "101", purchase: start, token: aliceToken))}"#,
        #"{"type":"transaction","receivedAt":\#(start + 30 * day),"payload":\#(transaction("1011", otid: "101", purchase: start + 30 * day, token: aliceToken))}"#,
        #"{"type":"transaction","appUserId":"bob","receivedAt":\#(start + day),"payload":\#(transaction("2020", otid: "202", purchase: start + day, token: bobToken))}"#,
        #"{"type":"transaction","receivedAt":\#(start + 2 * day),"payload":\#(transaction("3030", otid: "303", purchase: start + 2 * day, token: nil))}"#,
        #"{"type":"binding","receivedAt":\#(start + 3 * day),"payload":{"appUserId":"carol","originalTransactionId":"303","claimedAt":\#(start + 3 * day)}}"#,
        #"{"type":"binding","receivedAt":\#(start + 45 * day),"payload":{"appUserId":"bob","originalTransactionId":"101","claimedAt":\#(start + 45 * day)}}"#,
    ]

    static func files(under directory: String) -> [String] {
        let all = (try? FileManager.default.subpathsOfDirectory(atPath: directory)) ?? []
        return all.map { (directory as NSString).appendingPathComponent($0) }.filter {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: $0, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
    }

    /// The files under `paths` (files or directories) that hold `needle`'s bytes.
    static func holding(_ needle: String, in paths: [String]) -> [String] {
        let n = Data(needle.utf8)
        return paths.flatMap { p -> [String] in
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: p, isDirectory: &isDirectory)
            return isDirectory.boolValue ? files(under: p) : [p]
        }.filter { (try? Data(contentsOf: URL(fileURLWithPath: $0)))?.range(of: n) != nil }
    }

    static func cli(_ arguments: [String]) throws -> ProcessOutput {
        let out = try runProcess(storeledgerExecutable(), arguments, deadline: 120)
        #expect(out.status == 0, "storeledger \(arguments.joined(separator: " ")): \(out.stderr)")
        return out
    }

    /// Every answer about bob and carol the CLI gives, as known at `asOf`: their customers at three instants, why
    /// they have the entitlement, their grants and revenue.
    static func othersAnswers(_ ledger: String, asOf: UInt64) throws -> [String] {
        var out: [String] = []
        for user in ["bob", "carol"] {
            for at in [start + 10 * day, start + 50 * day, start + 80 * day] {
                out.append(try cli(["customer", user, "--data", ledger, "--json", "--at", "\(at)", "--as-of", "\(asOf)"]).stdout)
            }
            out.append(
                try cli(["why", user, "premium", "--data", ledger, "--json", "--at", "\(start + 50 * day)", "--as-of", "\(asOf)"]).stdout)
            out.append(try cli(["revenue", "--user", user, "--data", ledger, "--json", "--as-of", "\(asOf)"]).stdout)
        }
        return out
    }

    @Test func aForgottenUserIsInNoFileAndEveryOtherAnswerStays() async throws {
        let dir = try TemporaryDirectory(prefix: "sl-forget")
        defer { dir.remove() }
        let ledger = dir.file("ledger")
        let server = try ServerProcess(data: ledger, arguments: ["--pseudonyms"])
        defer { server.killAndWait() }
        try await server.waitUntilAnswering()
        let client = try AsyncLedgerClient(socketPath: server.socketPath, timeoutSeconds: 30)
        for input in Self.inputs {
            let response = try await client.post("/v1/events", body: Array(input.utf8))
            #expect(response.status == 200, "\(response.text)")
        }
        // Refused inputs that name her (a claim that does not parse; requests refused for their query, her id as
        // sent and as every HTTP client percent-encodes it, the '.' left as it is) and bob.
        for (body, query) in [
            (#"{"type":"binding","payload":{"appUserId":"\#(Self.alice)","originalTransactionId":"101","claimedAt":"soon"}}"#, ""),
            (#"{"type":"binding","payload":{"appUserId":"bob","originalTransactionId":"202","claimedAt":"soon"}}"#, ""),
            (#"{"type":"binding","payload":{}}"#, "?appUserId=\(Self.alice)&bogus=1"),
            (#"{"type":"binding","payload":{}}"#, "?appUserId=\(Self.aliceEncoded)&bogus=1"),
        ] {
            let refused = try await client.post("/v1/events" + query, body: Array(body.utf8))
            #expect(refused.status == 400 || refused.text.contains("wrong_type"), "\(refused.text)")
        }
        let grant = try await client.post(
            "/v1/customers/carol/grants", body: Array(#"{"entitlement":"premium","duration":"P1M","reason":"support","from":\#(Self.start)}"#.utf8))
        #expect(grant.status == 200, "\(grant.text)")
        let lastSeq = try #require(
            (try JSONSerialization.jsonObject(with: Data(try await client.get("/v1/health").body)) as? [String: Any])?["lastSeq"] as? Int)
        let before = try Self.othersAnswers(ledger, asOf: UInt64(lastSeq))
        #expect(before.contains { $0.contains("\"active\":true") }, "bob or carol has something to lose")
        let aliceBefore = try await client.get("/v1/customers/\(Self.alice)?at=\(Self.start + 10 * Self.day)")
        #expect(aliceBefore.text.contains("\"101\""), "alice owns 101 before: \(aliceBefore.text)")
        // The journal holds her inputs as they came (the data file never does): the scan can find them.
        #expect(!Self.holding(Self.alice, in: [ledger + "/journal"]).isEmpty, "the scan finds nothing even before")
        #expect(Self.holding(Self.alice, in: [ledger + "/data.mdb"]).isEmpty)

        // Only the ledger's owner may ask; a body must say who asked.
        let refused = try await client.post("/v1/customers/\(Self.alice)/forget", body: Array("{}".utf8))
        #expect(refused.status == 400, "\(refused.text)")
        let forgot = try await client.post(
            "/v1/customers/\(Self.alice)/forget", body: Array(#"{"requestedBy":"ticket 4711","reason":"GDPR Art. 17"}"#.utf8))
        #expect(forgot.status == 200, "\(forgot.text)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(forgot.body)) as? [String: Any])
        let pseudonym = try #require(report["pseudonym"] as? String)
        #expect((report["pseudonyms"] as? [String])?.count == 2, "alice and her token: \(report)")
        #expect(!forgot.text.contains(Self.alice))
        // Answers now: alice is nobody; her subscription keeps its periods under the pseudonym.
        let aliceAfter = try await client.get("/v1/customers/\(Self.alice)?at=\(Self.start + 10 * Self.day)")
        #expect(!aliceAfter.text.contains("\"101\""), "\(aliceAfter.text)")
        let timeline = try await client.get("/v1/subscriptions/101?at=\(Self.start + 10 * Self.day)")
        #expect(timeline.text.contains(pseudonym) && !timeline.text.contains(Self.alice), "\(timeline.text)")
        #expect(timeline.text.contains("\"1011\""), "the renewal is kept")
        let again = try await client.post(
            "/v1/customers/\(Self.alice)/forget", body: Array(#"{"requestedBy":"ticket 4711"}"#.utf8))
        #expect(again.status == 404, "\(again.text)")
        server.killAndWait()

        // Killed: its journal and its data file, as they are on disk.
        for needle in [Self.alice, Self.aliceToken] {
            #expect(Self.holding(needle, in: [ledger]).isEmpty, "\(needle) in \(Self.holding(needle, in: [ledger]))")
        }

        _ = try Self.cli(["verify", "--data", ledger])
        _ = try Self.cli(["replay", "--check", "--data", ledger])
        let export = dir.file("export.ndjson")
        try Self.cli(["export", "--complete", "--data", ledger]).stdout.write(toFile: export, atomically: true, encoding: .utf8)
        let backup = dir.file("backup")
        _ = try Self.cli(["backup", backup, "--data", ledger])
        let restored = dir.file("restored")
        _ = try Self.cli(["restore", backup, "--data", restored])
        let imported = dir.file("imported")
        _ = try Self.cli(["import", export, "--data", imported])
        for copy in [backup, restored, imported] {
            _ = try Self.cli(["verify", "--data", copy])
        }
        _ = try Self.cli(["replay", "--check", "--data", restored])
        for needle in [Self.alice, Self.aliceEncoded, Self.aliceToken] {
            let found = Self.holding(needle, in: [ledger, export, backup, restored, imported])
            #expect(found.isEmpty, "\(needle) is in \(found)")
        }
        // Bob's token and bob are still known (answers name them), but never in a data file.
        #expect(Self.holding(Self.bobToken, in: [export]).count == 1, "the export carries bob's token for an import")
        #expect(Self.holding(Self.bobToken, in: [ledger + "/data.mdb", backup + "/data.mdb", restored + "/data.mdb"]).isEmpty)

        // Every answer about the others is the bytes it was, in the ledger and in each copy.
        for copy in [ledger, restored, imported] {
            #expect(try Self.othersAnswers(copy, asOf: UInt64(lastSeq)) == before, "\(copy) answers otherwise")
        }
        // The refusals that named her are erased; bob's is kept whole, in the ledger and in each copy.
        for copy in [ledger, restored, imported] {
            let refusals = try Self.cli(["rejected", "--data", copy, "--json"]).stdout
            #expect(refusals.components(separatedBy: "\"erased\":true").count - 1 == 3, "\(copy): \(refusals)")
            #expect(!refusals.contains(Self.aliceEncoded), "\(copy): \(refusals)")
            let table = try Self.cli(["rejected", "--data", copy]).stdout
            #expect(table.components(separatedBy: "(erased: it named a person the ledger forgot)").count - 1 == 3, "\(table)")
            #expect(refusals.contains(Data(#"{"type":"binding","payload":{"appUserId":"bob","originalTransactionId":"202","claimedAt":"soon"}}"#.utf8).base64EncodedString()))
        }
        let erasure = try Self.cli(["events", "--data", restored, "--json", "--after", "\(lastSeq)"]).stdout
        #expect(erasure.contains("\"erasure\"") && erasure.contains("ticket 4711") && !erasure.contains(Self.alice))
    }

    /// The server dies (as `kill -9` would end it) right after the erasure's journal record is durable, before LMDB
    /// commits it and before the key and the journal are cleaned: the next writer applies the erasure from the
    /// journal and finishes it. Then no file holds her id, `verify` passes, and she is nobody.
    @Test func anErasureCutShortByACrashIsFinishedByTheNextWriter() async throws {
        let dir = try TemporaryDirectory(prefix: "sl-forget-crash")
        defer { dir.remove() }
        let ledger = dir.file("ledger")
        // Three inputs, one journal record each, then the erasure's: the fourth record ends the process.
        let server = try ServerProcess(
            data: ledger, arguments: ["--pseudonyms"], environment: ["STORELEDGER_TEST_EXIT_AFTER_JOURNAL_RECORDS": "4"])
        defer { server.killAndWait() }
        try await server.waitUntilAnswering()
        let client = try AsyncLedgerClient(socketPath: server.socketPath, timeoutSeconds: 30)
        for input in [Self.inputs[0], Self.inputs[3], Self.inputs[4]] {
            let response = try await client.post("/v1/events", body: Array(input.utf8))
            #expect(response.status == 200, "\(response.text)")
        }
        let forgot = try? await client.post(
            "/v1/customers/\(Self.alice)/forget", body: Array(#"{"requestedBy":"ticket 4711"}"#.utf8))
        #expect(forgot == nil || forgot?.status != 200, "the erasure was answered: \(forgot?.text ?? "")")
        #expect(try await server.waitForExit() != 0)
        #expect(!Self.holding(Self.alice, in: [ledger + "/journal"]).isEmpty, "the journal still holds her inputs")
        #expect(try String(contentsOfFile: ledger + "/identity.key", encoding: .utf8).split(separator: "\n").count == 2)

        // The next writer: the server started again, then stopped.
        let again = try ServerProcess(data: ledger)
        defer { again.killAndWait() }
        try await again.waitUntilAnswering()
        // Finished at its start, while it serves: the journal it recovered from holds her inputs no more.
        #expect(Self.holding(Self.alice, in: [ledger + "/journal"]).isEmpty, "\(Self.holding(Self.alice, in: [ledger]))")
        again.signal(SIGTERM)
        #expect(try await again.waitForExit() == 0)
        for needle in [Self.alice, Self.aliceToken] {
            #expect(Self.holding(needle, in: [ledger]).isEmpty, "\(needle) in \(Self.holding(needle, in: [ledger]))")
        }
        #expect(try String(contentsOfFile: ledger + "/identity.key", encoding: .utf8).split(separator: "\n").count == 1)
        _ = try Self.cli(["verify", "--data", ledger])
        let events = try Self.cli(["events", "--data", ledger, "--json"]).stdout
        #expect(events.contains("\"erasure\"") && !events.contains(Self.alice))
        let customer = try Self.cli(["customer", Self.alice, "--data", ledger, "--json", "--at", "\(Self.start + Self.day)"]).stdout
        #expect(!customer.contains("\"101\""), "\(customer)")
        let carol = try Self.cli(["customer", "carol", "--data", ledger, "--json", "--at", "\(Self.start + 4 * Self.day)"]).stdout
        #expect(carol.contains("\"303\""), "carol keeps her claim: \(carol)")
    }

    /// A ledger made without pseudonyms cannot forget; its export, imported with `--pseudonyms`, is rewritten under
    /// them: every event at its seq, the same answers, no id in the data file, and then it can forget.
    @Test func anExportOfALedgerWithoutPseudonymsIsRewrittenUnderThem() throws {
        let dir = try TemporaryDirectory(prefix: "sl-rewrite")
        defer { dir.remove() }
        let plain = dir.file("plain")
        let inputs = dir.file("inputs.ndjson")
        try Self.inputs.joined(separator: "\n").write(toFile: inputs, atomically: true, encoding: .utf8)
        _ = try Self.cli(["ingest", inputs, "--data", plain, "--quiet"])
        let refused = try runProcess(storeledgerExecutable(), ["forget", Self.alice, "--requested-by", "t", "--data", plain])
        #expect(refused.status == 1 && refused.stderr.contains("cannot_forget"), "\(refused.stderr)")
        let export = dir.file("export.ndjson")
        try Self.cli(["export", "--complete", "--data", plain]).stdout.write(toFile: export, atomically: true, encoding: .utf8)
        let rewritten = dir.file("rewritten")
        let report = try Self.cli(["import", export, "--data", rewritten, "--pseudonyms"]).stdout
        #expect(report.contains("rewritten under pseudonyms"), "\(report)")
        _ = try Self.cli(["verify", "--data", rewritten])
        _ = try Self.cli(["replay", "--check", "--data", rewritten])
        let stats = try JSONSerialization.jsonObject(
            with: Data(try Self.cli(["stats", "--json", "--data", plain]).stdout.utf8)) as? [String: Any]
        let lastSeq = UInt64(try #require(stats?["lastSeq"] as? Int))
        let before = try Self.othersAnswers(plain, asOf: lastSeq)
        #expect(try Self.othersAnswers(rewritten, asOf: lastSeq) == before)
        let aliceThen = try Self.cli(["customer", Self.alice, "--data", plain, "--json", "--at", "\(Self.start + 10 * Self.day)"]).stdout
        #expect(
            try Self.cli(["customer", Self.alice, "--data", rewritten, "--json", "--at", "\(Self.start + 10 * Self.day)"]).stdout
                == aliceThen)
        #expect(!Self.holding(Self.alice, in: [plain + "/data.mdb"]).isEmpty, "the scan finds her in the plain ledger")
        #expect(Self.holding(Self.alice, in: [rewritten + "/data.mdb"]).isEmpty)
        _ = try Self.cli(["forget", Self.alice, "--requested-by", "ticket 9", "--data", rewritten])
        #expect(try Self.othersAnswers(rewritten, asOf: lastSeq) == before)
        for needle in [Self.alice, Self.aliceToken] { #expect(Self.holding(needle, in: [rewritten]).isEmpty) }
    }
}
