import Foundation
import LedgerTestSupport
import Testing

/// Runs `storeledger` with `arguments`.
private func storeledger(_ arguments: [String], input: Data? = nil) throws -> ProcessOutput {
    try runProcess(storeledgerExecutable(), arguments, input: input, deadline: 120)
}

/// The directory's entries, sorted.
private func entries(_ path: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: path).sorted()
}

// MARK: - demo

@Suite(.blocking) struct DemoCLITests {
    static let hint =
        "; the demo writes only to a missing or empty directory, or one an earlier demo made (marked by "
        + ".storeledger-demo): give another --data\n"

    @Test func aDirectoryHoldingAnUnrelatedFileIsRefusedAndTheFileSurvives() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let target = dir.file("mine")
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: false)
        try "keep me\n".write(toFile: target + "/notes.txt", atomically: true, encoding: .utf8)

        let out = try storeledger(["demo", "--data", target])
        #expect(out.status == 1)
        #expect(
            out.stderr == "error: directory_not_empty: \(target) is not empty and no demo made it (notes.txt)"
                + Self.hint
        )
        #expect(out.stdout == "")
        #expect(try entries(target) == ["notes.txt"])
        #expect(try String(contentsOfFile: target + "/notes.txt", encoding: .utf8) == "keep me\n")
    }

    @Test func aLedgerTheDemoDidNotMakeIsRefusedAndKept() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let ledger = dir.file("ledger")
        let file = dir.file("one.ndjson")
        try transactionLine(1).write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try storeledger(["ingest", "--data", ledger, file]).status == 0)
        let before = try stats(ledger)

        let out = try storeledger(["demo", "--data", ledger])
        #expect(out.status == 1)
        #expect(
            out.stderr
                == "error: directory_not_empty: \(ledger) holds a ledger the demo did not make (data.mdb, lock.mdb)"
                + Self.hint
        )
        #expect(try entries(ledger) == ["data.mdb", "lock.mdb"])
        let after = try stats(ledger)
        #expect(after["lastSeq"] as? Int == 1)
        #expect(after["chainHead"] as? String == before["chainHead"] as? String)
    }

    @Test func aFileIsRefusedAndKept() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let file = dir.file("ledger")
        try "not a directory\n".write(toFile: file, atomically: true, encoding: .utf8)
        let out = try storeledger(["demo", "--data", file])
        #expect(out.status == 1)
        #expect(
            out.stderr
                == "error: invalid_path: \(file) is not a directory; give the demo an empty or missing directory\n"
        )
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "not a directory\n")
    }

    @Test(arguments: ["missing", "empty"])
    func aMissingOrEmptyDirectoryIsUsedAndMarked(_ state: String) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let target = dir.file("demo")
        if state == "empty" {
            try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: false)
        }
        let out = try storeledger(["demo", "--data", target])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.stdout.contains("Ingesting 7 inputs into \(target) …\n"), "\(out.stdout)")
        #expect(try entries(target) == [".storeledger-demo", "data.mdb", "lock.mdb"])
        // The catalog's rules (seq 1), then the six inputs accepted.
        #expect(try stats(target)["lastSeq"] as? Int == 7)
        #expect(try storeledger(["verify", "--data", target]).status == 0)
    }

    /// A second demo in the directory of the first resets it: the same story appended afresh (not duplicates), and
    /// what was added meanwhile gone.
    @Test func anEarlierDemoIsReset() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let target = dir.file("demo")
        let first = try storeledger(["demo", "--data", target])
        #expect(first.status == 0, "\(first.stderr)")
        let story = try stats(target)
        let extra = dir.file("extra.ndjson")
        try transactionLine(1).write(toFile: extra, atomically: true, encoding: .utf8)
        #expect(try storeledger(["ingest", "--data", target, extra]).status == 0)
        #expect(try stats(target)["lastSeq"] as? Int == (story["lastSeq"] as? Int ?? 0) + 1)

        let second = try storeledger(["demo", "--data", target])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout == first.stdout)
        #expect(!second.stdout.contains("duplicate seq"))
        let reset = try stats(target)
        #expect(reset["lastSeq"] as? Int == story["lastSeq"] as? Int)
        #expect(reset["chainHead"] as? String == story["chainHead"] as? String)
        #expect(reset["rejected"] as? Int == 1)
    }

    /// A directory an earlier demo made that now holds something else too is no longer the demo's to reset.
    @Test func aDemoDirectoryWithAForeignFileIsRefused() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let target = dir.file("demo")
        #expect(try storeledger(["demo", "--data", target]).status == 0)
        try "mine\n".write(toFile: target + "/notes.txt", atomically: true, encoding: .utf8)
        let out = try storeledger(["demo", "--data", target])
        #expect(out.status == 1)
        #expect(
            out.stderr == "error: directory_not_empty: \(target) holds files besides a demo ledger (notes.txt)"
                + Self.hint
        )
        #expect(try entries(target) == [".storeledger-demo", "data.mdb", "lock.mdb", "notes.txt"])
        #expect(try stats(target)["lastSeq"] as? Int == 7)
    }
}

// MARK: - Usage errors

@Suite(.blocking) struct UsageCLITests {
    @Test func noCommandIsAUsageErrorWithTheCommands() throws {
        let out = try storeledger([])
        #expect(out.status == 2)
        #expect(out.stdout == "")
        #expect(out.stderr.hasPrefix("error: usage: no command given\n\nOVERVIEW: "), "\(out.stderr)")
        #expect(out.stderr.contains("\nSUBCOMMANDS:\n"))
        #expect(out.stderr.contains("  demo "))
    }

    /// A mistyped command is named as unknown, with the command nearest to it when one is close (a swap of two
    /// letters counts as one edit), in the one-line format of every usage error; exit 2. Commands and options that
    /// exist are left to the parser.
    @Test func aMistypedCommandIsUnknownWithTheNearestOne() throws {
        for (typed, meant) in [("timelin", "timeline"), ("tiemline", "timeline"), ("Why", "why"), ("vrify", "verify")] {
            let out = try storeledger([typed, "1"])
            #expect(out.status == 2, "\(typed): \(out.stderr)")
            #expect(
                out.stderr
                    == "error: usage: unknown command '\(typed)'; did you mean '\(meant)'?\n(see storeledger --help)\n")
            #expect(out.stdout == "")
        }
        let json = try storeledger(["timelin", "1", "--json"])
        #expect(json.status == 2)
        #expect(
            json.stdout
                == #"{"error":{"code":"usage","message":"unknown command 'timelin'; did you mean 'timeline'?"}}"# + "\n")
        let far = try storeledger(["frobnicate"])
        #expect(far.status == 2)
        #expect(far.stderr.hasPrefix("error: usage: unknown command 'frobnicate'; the commands are serve, ingest, "))
        #expect(!far.stderr.contains("did you mean"))
        #expect(try storeledger(["--version"]).status == 0)
        #expect(try storeledger(["help", "timeline"]).status == 0)
        #expect(try storeledger(["timeline", "--help"]).status == 0)
    }

    /// One message, once: no `Error:` after `error: usage:`; the help hint names the command; exit 2.
    @Test func anUnknownFlagIsOneLineAndExitTwo() throws {
        let out = try storeledger(["export", "--json", "--data", "/nonexistent"])
        #expect(out.status == 2)
        #expect(out.stderr == "error: usage: Unknown option '--json'\n(see storeledger export --help)\n")
        #expect(out.stdout == #"{"error":{"code":"usage","message":"Unknown option '--json'"}}"# + "\n")
        let validation = try storeledger(["events", "--limit", "0"])
        #expect(validation.status == 2)
        #expect(validation.stderr == "error: usage: --limit must be positive\n(see storeledger events --help)\n")
        #expect(validation.stdout == "")
        let quiet = try storeledger(["ingest", "--quiet", "--json", "/dev/null"])
        #expect(quiet.status == 2)
        #expect(
            quiet.stderr.hasPrefix("error: usage: --quiet and --json do not go together"),
            "\(quiet.stderr)"
        )
    }

    @Test(arguments: [["--help"], ["--version"], ["demo", "--help"], ["help", "events"]])
    func helpAndVersionExitZero(_ arguments: [String]) throws {
        let out = try storeledger(arguments)
        #expect(out.status == 0, "\(out.stderr)")
        #expect(!out.stdout.isEmpty)
        #expect(out.stderr == "")
    }
}

// MARK: - Readable output

@Suite(.blocking) struct ReadableOutputCLITests {
    /// An offer in the timeline's NOTES reads as words, not as a Swift dictionary.
    @Test func offersReadAsWords() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let ledger = dir.file("ledger")
        let day: Int64 = 86_400_000
        let start: Int64 = 1_700_000_000_000
        func transaction(_ tid: String, _ purchase: Int64, _ expires: Int64, offer: String) -> String {
            #"{"type":"transaction","receivedAt":\#(purchase),"payload":{"transactionId":"\#(tid)","originalTransactionId":"8001","productId":"com.example.premium.monthly","purchaseDate":\#(purchase),"expiresDate":\#(expires),"signedDate":\#(purchase),"type":"Auto-Renewable Subscription","environment":"Production",\#(offer)}}"#
        }
        let lines = [
            transaction(
                "8001",
                start,
                start + 7 * day,
                offer: #""offerType":1,"offerIdentifier":"SPRING","offerDiscountType":"FREE_TRIAL","offerPeriod":"P1W""#
            ),
            transaction(
                "8002",
                start + 7 * day,
                start + 37 * day,
                offer:
                    #""offerType":2,"offerIdentifier":"winter50","offerDiscountType":"PAY_AS_YOU_GO","offerPeriod":"P3M""#
            ),
            transaction(
                "8003",
                start + 37 * day,
                start + 67 * day,
                offer: #""offerType":3,"offerDiscountType":"PAY_UP_FRONT""#
            ),
        ]
        let file = dir.file("offers.ndjson")
        try lines.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try storeledger(["ingest", "--data", ledger, "--quiet", file]).status == 0)

        let out = try storeledger(["timeline", "8001", "--at", "\(start + day)", "--data", ledger])
        #expect(out.status == 0, "\(out.stderr)")
        let periods = out.stdout.split(separator: "\n").filter { $0.hasPrefix("  800") }
        #expect(periods.count == 3, "\(out.stdout)")
        #expect(periods.first?.hasSuffix("introductory offer SPRING: free trial for 1 week") == true, "\(out.stdout)")
        #expect(periods.dropFirst().first?.hasSuffix("promotional offer winter50: pay as you go for 3 months") == true)
        #expect(periods.last?.hasSuffix("offer code: pay up front") == true, "\(out.stdout)")
        #expect(!out.stdout.contains("[\""), "no Swift dictionary: \(out.stdout)")
    }

    /// The text view says sizes as people read them; the JSON keeps the byte counts.
    @Test func statsShowsHumanSizes() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let ledger = dir.file("ledger")
        let file = dir.file("batch.ndjson")
        try (0..<200).map { transactionLine($0) }.joined(separator: "\n").write(
            toFile: file,
            atomically: true,
            encoding: .utf8
        )
        #expect(try storeledger(["ingest", "--data", ledger, "--quiet", file]).status == 0)
        let json = try stats(ledger)
        let bytes = try #require(json["bytes"] as? Int)
        let map = try #require(json["mapSize"] as? Int)
        /// An independent reading of the units: KiB below a MiB, MiB below a GiB.
        func human(_ n: Int) -> String {
            n < 1 << 20
                ? String(format: "%.1f KiB", Double(n) / 1024)
                : n < 1 << 30
                    ? String(format: "%.1f MiB", Double(n) / 1_048_576)
                    : String(format: "%.1f GiB", Double(n) / 1_073_741_824)
        }
        #expect(bytes >= 1024, "a ledger of 200 events fills more than a KiB")
        let out = try storeledger(["stats", "--data", ledger])
        #expect(out.status == 0)
        let line = out.stdout.split(separator: "\n").first { $0.hasPrefix("bytes ") }.map(String.init)
        #expect(line == "bytes         \(human(bytes)) in use (\(bytes) bytes), map \(human(map))", "\(out.stdout)")
    }

    /// `--quiet` prints the summary (and the errors), not a line per input; no progress in a pipe.
    @Test func ingestQuietPrintsOnlyTheSummary() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let ledger = dir.file("ledger")
        let file = dir.file("batch.ndjson")
        let lines =
            (0..<4).map { transactionLine($0) } + [
                #"{"type":"transaction","payload":{"productId":"p","purchaseDate":1}}"#
            ]
        try lines.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let quiet = try storeledger(["ingest", "--data", ledger, "--quiet", file])
        #expect(quiet.status == 1)
        #expect(quiet.stdout == "5 inputs: 4 appended, 0 duplicate, 1 rejected\n")
        #expect(quiet.stderr.hasPrefix("error: missing_field: 1 input(s) rejected; first: "), "\(quiet.stderr)")
        #expect(quiet.stderr.split(separator: "\n").count == 1)

        let loud = try storeledger(["ingest", "--data", ledger, file])
        #expect(loud.status == 1)
        #expect(loud.stdout.split(separator: "\n").count == 6)
        #expect(loud.stdout.hasPrefix("#1 duplicate\n"))
        #expect(!loud.stderr.contains("\r") && !loud.stderr.contains("ingesting"))
    }
}

// MARK: - Progress

extension LiveProcesses {
    /// Heavier than the others (a long ingest and export, twice): run with the live-process suites, one at a time, so
    /// it does not slow the timing-bound process tests beside it.
    @Suite("Progress on a terminal", .serialized, .timeLimit(.minutes(5)))
    struct ProgressCLITests {
        /// On a terminal a long ingest and export show their progress on stderr (not with `--quiet`); in a pipe
        /// nothing (verify neither).
        @Test func progressShowsOnATerminalOnly() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let ledger = dir.file("ledger")
            let file = dir.file("large.ndjson")
            let count = 12_000
            try (0..<count).map { transactionLine($0) }.joined(separator: "\n").write(
                toFile: file,
                atomically: true,
                encoding: .utf8
            )
            // `script` runs the command on a pseudo-terminal and copies what it shows to its own stdout.
            let command = "'\(storeledgerExecutable())' ingest --quiet --data '\(ledger)' '\(file)'"
            let onTerminal = try runProcess("/usr/bin/script", ["-qec", command, "/dev/null"], deadline: 300)
            #expect(onTerminal.status == 0, "\(onTerminal.stdout)")
            #expect(onTerminal.stdout.contains("\ringesting "), "\(onTerminal.stdout.suffix(300))")
            #expect(onTerminal.stdout.contains("ingesting \(count)/\(count) (100%)"), "\(onTerminal.stdout.suffix(300))")
            #expect(onTerminal.stdout.hasSuffix("\(count) inputs: \(count) appended, 0 duplicate, 0 rejected\r\n"))

            let exportCommand = "'\(storeledgerExecutable())' export --data '\(ledger)' > /dev/null"
            let export = try runProcess("/usr/bin/script", ["-qec", exportCommand, "/dev/null"], deadline: 300)
            #expect(export.status == 0, "\(export.stdout)")
            #expect(export.stdout.contains("exporting \(count)/\(count) (100%), "), "\(export.stdout.suffix(300))")
            #expect(export.stdout.contains(" events/s"), "\(export.stdout.suffix(300))")

            // --quiet: the same export on a terminal, no progress.
            let quietCommand = "'\(storeledgerExecutable())' export --quiet --data '\(ledger)' > /dev/null"
            let quiet = try runProcess("/usr/bin/script", ["-qec", quietCommand, "/dev/null"], deadline: 300)
            #expect(quiet.status == 0 && !quiet.stdout.contains("exporting"), "\(quiet.stdout.suffix(300))")

            // The same work in pipes: not a byte of progress.
            let piped = try storeledger(["ingest", "--quiet", "--data", ledger, file])
            #expect(piped.status == 0)
            #expect(piped.stderr == "")
            #expect(piped.stdout == "\(count) inputs: 0 appended, \(count) duplicate, 0 rejected\n")
            let exported = try storeledger(["export", "--data", ledger])
            #expect(exported.stderr == "")
            #expect(exported.stdout.split(separator: "\n").count == count)
            let verified = try storeledger(["verify", "--data", ledger])
            #expect(verified.status == 0 && verified.stderr == "")
            #expect(verified.stdout.hasPrefix("ok: \(count) events chained to "))
        }
    }
}

// MARK: - Paging and refused bytes

@Suite(.blocking) struct EventsAndRejectedCLITests {
    /// `events` says when its limit cut the list, and how to go on; JSON says it with `more` and `nextAfter`.
    @Test func eventsSaysWhenMoreFollow() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let ledger = dir.file("ledger")
        let file = dir.file("batch.ndjson")
        try (0..<5).map { transactionLine($0) }.joined(separator: "\n").write(
            toFile: file,
            atomically: true,
            encoding: .utf8
        )
        #expect(try storeledger(["ingest", "--data", ledger, "--quiet", file]).status == 0)

        let cut = try storeledger(["events", "--data", ledger, "--limit", "3"])
        #expect(cut.status == 0)
        #expect(cut.stdout.split(separator: "\n").count == 4, "header and 3 rows: \(cut.stdout)")
        #expect(cut.stderr == "note: more events follow; showing the first 3: go on with --after 3\n")
        let rest = try storeledger(["events", "--data", ledger, "--limit", "3", "--after", "3"])
        #expect(rest.stdout.split(separator: "\n").count == 3, "header and 2 rows: \(rest.stdout)")
        #expect(rest.stderr == "")
        let whole = try storeledger(["events", "--data", ledger, "--limit", "5"])
        #expect(whole.stderr == "", "exactly the limit: nothing more")

        func document(_ arguments: [String]) throws -> [String: Any] {
            let out = try storeledger(["events", "--data", ledger, "--json"] + arguments)
            #expect(out.status == 0)
            #expect(out.stderr == "")
            return try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any])
        }
        let first = try document(["--limit", "3"])
        #expect((first["events"] as? [Any])?.count == 3)
        #expect(first["more"] as? Bool == true)
        #expect(first["nextAfter"] as? Int == 3)
        let last = try document(["--limit", "3", "--after", "3"])
        #expect((last["events"] as? [Any])?.count == 2)
        #expect(last["more"] as? Bool == false)
        #expect(last["nextAfter"] == nil)
        let byOriginal = try document(["--original", "3000000001", "--limit", "1"])
        #expect(byOriginal["more"] as? Bool == false, "one event of that subscription")
    }

    /// The table shows the bytes of each refused input: text escaped on one line, hex when binary, and how many
    /// more bytes there were.
    @Test func rejectedShowsTheBytes() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let ledger = dir.file("ledger")
        let text = #"{"type":"transaction",\#t"payload":{"transactionId":"é\#u{7}"}}"#
        let binary: [UInt8] = [0x00, 0xFF, 0xFE, 0x01, 0x02, 0x7B]
        let long = #"{"type":"transaction","payload":{"productId":""# + String(repeating: "a", count: 300) + #""}}"#
        for body in [Data(text.utf8), Data(binary), Data(long.utf8)] {
            #expect(try storeledger(["ingest", "--data", ledger, "-"], input: body).status == 1)
        }
        let out = try storeledger(["rejected", "--data", ledger])
        #expect(out.status == 0, "\(out.stderr)")
        let lines = out.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first?.hasPrefix("#       RECEIVED") == true)
        #expect(lines.count == 8, "\(out.stdout)")
        let indent = String(repeating: " ", count: 8)
        #expect(lines[1].hasPrefix("1       ") && lines[1].contains("invalid_json"), "\(lines[1])")
        #expect(lines[2] == indent + #"text {"type":"transaction",\t"payload":{"transactionId":"é\u{7}"}}"#)
        #expect(lines[3].hasPrefix("2       "), "\(lines[3])")
        #expect(lines[4] == indent + "hex  00 ff fe 01 02 7b")
        #expect(lines[5].hasPrefix("3       "), "\(lines[5])")
        #expect(lines[6] == indent + "text " + String(long.prefix(256)) + " … (\(long.utf8.count - 256) more bytes)")
        #expect(lines[7] == "")
    }
}
