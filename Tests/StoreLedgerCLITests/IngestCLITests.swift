import Foundation
import LedgerTestSupport
import Testing

/// One decoded StoreKit 2 transaction as an envelope (docs/inputs.md) (one NDJSON line).
func transactionLine(_ i: Int, otids: Int = 500) -> String {
    let day: Int64 = 86_400_000
    let purchase = 1_605_243_570_000 + Int64(i / otids) * 30 * day
    return #"{"type":"transaction","receivedAt":\#(purchase),"payload":{"transactionId":"\#(4_000_000_000 + i)","originalTransactionId":"\#(3_000_000_000 + i % otids)","webOrderLineItemId":"\#(5_000_000_000 + i)","productId":"com.example.premium.monthly","purchaseDate":\#(purchase),"expiresDate":\#(purchase + 30 * day),"signedDate":\#(purchase),"type":"Auto-Renewable Subscription","environment":"Production","quantity":1}}"#
}

func stats(_ dir: String) throws -> [String: Any] {
    let out = try runProcess(storeledgerExecutable(), ["stats", "--data", dir, "--json"])
    #expect(out.status == 0, "stats failed: \(out.stderr)")
    return (try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]) ?? [:]
}

/// `stats` of a ledger another process may be creating right now: nil while it cannot be opened yet (its named
/// databases not yet committed), without recording an issue.
func statsIfOpen(_ dir: String) throws -> [String: Any]? {
    let out = try runProcess(storeledgerExecutable(), ["stats", "--data", dir, "--json"])
    guard out.status == 0 else { return nil }
    return try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]
}

@Suite(.serialized, .blocking) struct IngestCLITests {
    @Test func ingestAppendsThenReportsDuplicates() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let file = dir.file("batch.ndjson")
        try (0..<30).map { transactionLine($0, otids: 10) }.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let first = try runProcess(storeledgerExecutable(), ["ingest", "--data", dir.file("ledger"), "--json", file])
        #expect(first.status == 0, "\(first.stderr)")
        let results = first.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(results.count == 30)
        #expect(results.allSatisfy { $0["status"] as? String == "appended" })
        #expect(results.last?["seq"] as? Int == 30)
        let again = try runProcess(storeledgerExecutable(), ["ingest", "--data", dir.file("ledger"), "--json", file])
        #expect(again.status == 0)
        #expect(again.stdout.components(separatedBy: "\"duplicate\"").count - 1 == 30)
        #expect(try stats(dir.file("ledger"))["lastSeq"] as? Int == 30)
        let verify = try runProcess(storeledgerExecutable(), ["verify", "--data", dir.file("ledger")])
        #expect(verify.status == 0, "\(verify.stderr)")
    }

    /// Bad input is refused with a code, exits 1, and leaves the log as it was.
    @Test(arguments: [
        ("not JSON", Data("{this is not json".utf8), "invalid_json"),
        ("wrong types", Data(#"{"type":"transaction","payload":{"transactionId":7,"originalTransactionId":"1","productId":"p","purchaseDate":"soon"}}"#.utf8), "wrong_type"),
        ("missing ids", Data(#"{"type":"transaction","payload":{"productId":"p","purchaseDate":1}}"#.utf8), "missing_field"),
        ("100k-deep nesting", Data(String(repeating: "[", count: 100_000).utf8), "too_deep"),
    ])
    func badInputIsRejectedAndTheLogUnchanged(_ name: String, _ body: Data, _ code: String) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let ledger = dir.file("ledger")
        let seed = dir.file("seed.ndjson")
        try transactionLine(1).write(toFile: seed, atomically: true, encoding: .utf8)
        #expect(try runProcess(storeledgerExecutable(), ["ingest", "--data", ledger, seed]).status == 0)
        let before = try stats(ledger)

        let out = try runProcess(storeledgerExecutable(), ["ingest", "--data", ledger, "--json", "-"], input: body)
        #expect(out.status == 1, "\(name): exit \(out.status)")
        #expect(out.stdout.contains("\"rejected\""), "\(name): \(out.stdout)")
        #expect(out.stdout.contains("\"\(code)\""), "\(name): expected \(code), got \(out.stdout.prefix(300))")
        #expect(out.stderr.hasPrefix("error: \(code):"), "\(name): \(out.stderr)")

        let after = try stats(ledger)
        #expect(after["lastSeq"] as? Int == before["lastSeq"] as? Int)
        #expect(after["chainHead"] as? String == before["chainHead"] as? String)
        #expect(after["rejected"] as? Int == 1, "the refused input is kept for the auditor")
    }

    @Test func aHundredMegabyteLineIsRejectedWithoutDisturbingTheLedger() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let ledger = dir.file("ledger")
        var line = Data(#"{"type":"transaction","payload":{"transactionId":""#.utf8)
        line.append(Data(repeating: UInt8(ascii: "9"), count: 100 << 20))
        line.append(Data(#""}}"#.utf8))
        let file = dir.file("huge.json")
        try line.write(to: URL(fileURLWithPath: file))
        let out = try runProcess(storeledgerExecutable(), ["ingest", "--data", ledger, "--json", file])
        #expect(out.status == 1)
        #expect(out.stdout.contains("\"too_large\""), "\(out.stdout.prefix(300))")
        let s = try stats(ledger)
        #expect(s["lastSeq"] as? Int == 0)
        #expect(s["rejected"] as? Int == 1)
    }

    @Test func usageErrorsExitTwo() throws {
        let out = try runProcess(storeledgerExecutable(), ["timeline"])
        #expect(out.status == 2)
        #expect(out.stderr.hasPrefix("error: usage:"))
        let bad = try runProcess(storeledgerExecutable(), ["timeline", "1", "--at", "yesterday-ish"])
        #expect(bad.status == 2)
    }

    /// kill -9 in the middle of a large ingest: what was committed is a gapless prefix of the input, and the ledger
    /// verifies (hash chain, indexes, projections).
    @Test func killNineDuringALargeIngestLeavesAVerifiableLedger() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let ledger = dir.file("ledger")
        let file = dir.file("large.ndjson")
        // Enough that the ingest is still running when its first commit is seen (about 1,000 inputs a second in a
        // debug build): the kill lands mid-way, and the resume below has the rest to append.
        let count = 20_000
        try (0..<count).map { transactionLine($0) }.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)

        let process = try ChildProcess(storeledgerExecutable(), ["ingest", "--data", ledger, file])
        // Wait until some chunks are committed, then kill without warning.
        let deadline = Date().addingTimeInterval(60)
        var seen = 0
        while Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            if FileManager.default.fileExists(atPath: ledger + "/data.mdb"),
                let s = try? statsIfOpen(ledger), let last = s["lastSeq"] as? Int, last > 0
            {
                seen = last
                break
            }
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal, "the ingest finished before it could be killed")
        #expect(seen > 0)

        let verify = try runProcess(storeledgerExecutable(), ["verify", "--data", ledger])
        #expect(verify.status == 0, "verify after kill -9: \(verify.stderr)")
        let s = try stats(ledger)
        let last = try #require(s["lastSeq"] as? Int)
        #expect(last >= seen && last < count, "killed mid-way: \(last) of \(count)")
        // What landed is exactly the first `last` inputs, in order.
        let events = try runProcess(storeledgerExecutable(), ["events", "--data", ledger, "--after", "\(last - 3)", "--json"])
        let doc = try JSONSerialization.jsonObject(with: Data(events.stdout.utf8)) as? [String: Any]
        let ids = (doc?["events"] as? [[String: Any]])?.compactMap { $0["transactionId"] as? String }
        #expect(ids == (last - 3..<last).map { "\(4_000_000_000 + $0)" })

        // Ingesting the whole file again completes it: the committed part answers duplicate.
        let resume = try runProcess(storeledgerExecutable(), ["ingest", "--data", ledger, file])
        #expect(resume.status == 0, "\(resume.stderr)")
        #expect(resume.stdout.contains("\(count - last) appended, \(last) duplicate"), "\(resume.stdout.suffix(200))")
    }
}

@Suite(.blocking) struct ClaimIdempotencyCLITests {
    /// A backend re-posting the same signed transaction for the same user (no receivedAt, so "now" differs) states
    /// the same claim: the second ingest is all duplicates and the log does not grow.
    @Test func rePostingTheSameTransactionForTheSameUserIsADuplicate() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let ledger = dir.file("ledger")
        let file = dir.file("one.json")
        try #"{"type":"transaction","payload":{"transactionId":"777","originalTransactionId":"777","productId":"p","purchaseDate":1700000000000,"expiresDate":1702592000000,"signedDate":1700000001000,"environment":"Production"}}"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        let first = try runProcess(storeledgerExecutable(), ["ingest", "--data", ledger, "--app-user-id", "alice", "--json", file])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("\"appended\""))
        Thread.sleep(forTimeInterval: 0.01)
        let second = try runProcess(storeledgerExecutable(), ["ingest", "--data", ledger, "--app-user-id", "alice", "--json", file])
        #expect(second.stdout.contains("\"duplicate\""), "\(second.stdout)")
        #expect(try stats(ledger)["lastSeq"] as? Int == 2, "the transaction and alice's claim, once")
    }
}

@Suite(.blocking) struct TamperCLITests {
    /// Alter stored bytes in a copy of a ledger (a product id inside a stored value): `storeledger verify` exits 1 and
    /// names the fault; the original still verifies.
    @Test func verifyExitsOneOnAnAlteredCopy() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let ledger = dir.file("ledger")
        let file = dir.file("batch.ndjson")
        try (0..<20).map { transactionLine($0, otids: 5) }.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try runProcess(storeledgerExecutable(), ["ingest", "--data", ledger, file]).status == 0)
        #expect(try runProcess(storeledgerExecutable(), ["verify", "--data", ledger]).status == 0)

        let copy = dir.file("copy")
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: ledger + "/data.mdb")))
        let marker = Array("com.example.premium.monthly".utf8)
        let at = try #require(
            (0...(bytes.count - marker.count)).first { bytes[$0] == marker[0] && Array(bytes[$0..<($0 + marker.count)]) == marker })
        bytes[at + marker.count - 1] = UInt8(ascii: "X")
        try Data(bytes).write(to: URL(fileURLWithPath: copy + "/data.mdb"))

        let verify = try runProcess(storeledgerExecutable(), ["verify", "--data", copy])
        #expect(verify.status == 1, "\(verify.stdout) \(verify.stderr)")
        #expect(verify.stderr.hasPrefix("error: verification_failed:"), "\(verify.stderr)")
        #expect(try runProcess(storeledgerExecutable(), ["verify", "--data", ledger]).status == 0)
    }
}

@Suite(.blocking) struct RejectedCLITests {
    @Test func refusedInputsAreListedWithTheirCodesAndBytes() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let ledger = dir.file("ledger")
        let body = Data(#"{"type":"transaction","payload":{"productId":"p","purchaseDate":1}}"#.utf8)
        #expect(try runProcess(storeledgerExecutable(), ["ingest", "--data", ledger, "-"], input: body).status == 1)
        let out = try runProcess(storeledgerExecutable(), ["rejected", "--data", ledger, "--json"])
        #expect(out.status == 0, "\(out.stderr)")
        let doc = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]
        let rows = try #require(doc?["rejected"] as? [[String: Any]])
        #expect(rows.count == 1)
        #expect(rows.first?["code"] as? String == "missing_field")
        #expect((rows.first?["raw"] as? String).flatMap { Data(base64Encoded: $0) } == body)
        let table = try runProcess(storeledgerExecutable(), ["rejected", "--data", ledger])
        #expect(table.stdout.contains("missing_field"))
    }
}
