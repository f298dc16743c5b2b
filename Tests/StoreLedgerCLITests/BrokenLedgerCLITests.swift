import Foundation
import LedgerClient
import LMDB
import LedgerTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What a `storeledger` run said, and how it ended (a signal is not an exit status).
struct Finished {
    var exited: Bool
    var status: Int32
    var stdout: String
    var stderr: String
    /// The non-empty lines of stderr.
    var errorLines: [Substring] { stderr.split(separator: "\n") }
}

/// Runs `storeledger` (optionally through a wrapper such as setpriv), killing it after `seconds`: a command that
/// should have refused a broken ledger must not hang the suite by serving it. The wait runs off the cooperative pool,
/// which the in-process servers of other suites need (two cores: two blocked pool threads would stall them).
func runStoreLedger(
    _ arguments: [String],
    input: Data? = nil,
    via wrapper: [String] = [],
    seconds: Double = 60
)
    async throws -> Finished
{
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            continuation.resume(
                with: Result { try runStoreLedgerBlocking(arguments, input: input, via: wrapper, seconds: seconds) }
            )
        }
    }
}

private func runStoreLedgerBlocking(
    _ arguments: [String],
    input: Data?,
    via wrapper: [String],
    seconds: Double
) throws
    -> Finished
{
    let executable = storeledgerExecutable()
    let out = try runProcess(
        wrapper.first ?? executable, wrapper.isEmpty ? arguments : Array(wrapper.dropFirst()) + [executable] + arguments,
        input: input, deadline: seconds)
    if out.killed { Issue.record("storeledger \(arguments.joined(separator: " ")) still ran after \(seconds) s") }
    return Finished(exited: out.exited, status: out.status, stdout: out.stdout, stderr: out.stderr)
}

/// A small sound ledger made by the real binary: `count` transactions.
func makeLedger(_ directory: String, count: Int = 40) async throws {
    let file = directory + ".ndjson"
    try (0..<count).map { transactionLine($0, otids: 10) }.joined(separator: "\n").write(
        toFile: file,
        atomically: true,
        encoding: .utf8
    )
    defer { try? FileManager.default.removeItem(atPath: file) }
    let out = try await runStoreLedger(["ingest", "--data", directory, file])
    #expect(out.status == 0, "\(out.stderr)")
}

/// Overwrites `count` bytes at `offset` of `file` with `byte`.
func overwrite(_ file: String, at offset: UInt64, count: Int, with byte: UInt8) throws {
    let handle = try #require(FileHandle(forUpdatingAtPath: file))
    defer { try? handle.close() }
    try handle.seek(toOffset: offset)
    try handle.write(contentsOf: Data(repeating: byte, count: count))
}

/// Writes `value` (little-endian, as LMDB stores it) at `offset` from every occurrence of `pattern` in `file`;
/// returns how many it patched.
func patchEveryNode<T: FixedWidthInteger>(in file: String, matching pattern: [UInt8], at offset: Int, with value: T)
    throws -> Int
{
    var data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
    let width = MemoryLayout<T>.size
    var patched = 0
    var i = 0
    while i + pattern.count <= data.count {
        if data[i..<(i + pattern.count)].elementsEqual(pattern), i + offset >= 0, i + offset + width <= data.count {
            withUnsafeBytes(of: value.littleEndian) { data.replaceSubrange((i + offset)..<(i + offset + width), with: $0) }
            patched += 1
        }
        i += 1
    }
    try Data(data).write(to: URL(fileURLWithPath: file))
    return patched
}

/// Every command refuses a ledger it cannot open with one line `error: <code>: …` and exit 1: never a crash (a failed
/// open must not free the environment twice), never a usage error, never a server started on it.
@Suite("Ledgers that cannot be opened", .serialized, .blocking)
struct BrokenLedgerCLITests {
    /// Every command that opens the ledger, with the arguments it needs.
    static func commands(_ dir: String) -> [[String]] {
        [
            ["serve", "--socket", dir + "/s.sock"], ["ingest", dir + "/../input.json"], ["timeline", "1"],
            ["customer", "u1"], ["events"], ["export"], ["stats"], ["verify"], ["replay", "--check"], ["replay"],
            ["rejected"], ["backup", dir + "/../backup"],
        ].map { $0 + ["--data", dir] }
    }

    /// Runs every command against the broken ledger in `dir` and checks each says `code` in one line and exits 1.
    func expectEveryCommandRefuses(
        _ dir: String,
        code: String,
        mentioning hint: String,
        via wrapper: [String] = []
    )
        async throws
    {
        try #"{"appUserId":"u1","originalTransactionId":"1"}"#.write(
            toFile: dir + "/../input.json",
            atomically: true,
            encoding: .utf8
        )
        for command in Self.commands(dir) {
            let out = try await runStoreLedger(command, via: wrapper, seconds: 30)
            let name = command.prefix(2).joined(separator: " ")
            #expect(out.exited, "\(name): ended by a signal (\(out.status))")
            #expect(out.status == 1, "\(name): exit \(out.status): \(out.stderr)")
            #expect(out.errorLines.count == 1, "\(name): \(out.stderr)")
            #expect(
                out.stderr.hasPrefix("error: \(code): cannot open the ledger in \(dir): "),
                "\(name): \(out.stderr)"
            )
            #expect(out.stderr.contains(hint), "\(name): \(out.stderr)")
            #expect(!out.stderr.contains("double free"), "\(name)")
        }
    }

    @Test func aGarbageDataFileIsCorrupted() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        let dir = root.file("ledger")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var generator = SystemRandomNumberGenerator()
        try Data((0..<65_536).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(
            to: URL(fileURLWithPath: dir + "/data.mdb")
        )
        try await expectEveryCommandRefuses(dir, code: "corrupted", mentioning: "MDB_INVALID")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir)
        #expect(!files.contains("s.sock"), "serve did not bind its socket")
    }

    /// A real ledger whose two meta pages (page 0 and page 1, magic at offset 16) are both overwritten.
    @Test func bothMetaPagesDamagedIsCorrupted() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        let dir = root.file("ledger")
        try await makeLedger(dir)
        let pageSize = UInt64(sysconf(Int32(_SC_PAGESIZE)))
        try overwrite(dir + "/data.mdb", at: 16, count: 16, with: 0xA5)
        try overwrite(dir + "/data.mdb", at: pageSize + 16, count: 16, with: 0xA5)
        try await expectEveryCommandRefuses(dir, code: "corrupted", mentioning: "MDB_INVALID")
    }

    /// A data file cut short of the pages its meta page names: LMDB would fault (SIGBUS) reading them.
    @Test func aTruncatedDataFileIsCorrupted() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        let dir = root.file("ledger")
        try await makeLedger(dir, count: 400)
        let pageSize = off_t(sysconf(Int32(_SC_PAGESIZE)))
        #expect(truncate(dir + "/data.mdb", 3 * pageSize) == 0)
        try await expectEveryCommandRefuses(dir, code: "corrupted", mentioning: "its meta page names")
    }

    /// A stray page number inside the file (here the `meta` database's root, in the record that names it, set past
    /// the end of the data): LMDB finds it out of range and fails the transaction; that is `corrupted` too.
    @Test func aStrayRootPageNumberIsCorrupted() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        let dir = root.file("ledger")
        try await makeLedger(dir)
        // A named database's node in the main database: flags F_SUBDATA (2), key size 4, "meta", then its MDB_db,
        // whose root page number is its last 8 bytes (at 40).
        let patched = try patchEveryNode(
            in: dir + "/data.mdb", matching: [2, 0, 4, 0] + Array("meta".utf8), at: 48, with: UInt64(100_000))
        #expect(patched > 0, "the meta database's record was not found")
        for command in [["stats"], ["verify", "--json"], ["timeline", "1"], ["serve", "--socket", dir + "/s.sock"]] {
            let out = try await runStoreLedger(command + ["--data", dir], seconds: 30)
            #expect(out.exited && out.status == 1, "\(command[0]): \(out.status) \(out.stderr.prefix(300))")
            #expect(out.errorLines.count == 1, "\(command[0]): \(out.stderr.prefix(300))")
            #expect(out.stderr.hasPrefix("error: corrupted: cannot open the ledger in \(dir): "), "\(out.stderr)")
        }
    }

    /// A root page number that names a meta page (0 or 1), in the meta page's own records or in a named database's:
    /// LMDB asserts on it and aborts the process; every command refuses it as corrupted instead, in one line.
    @Test(arguments: [UInt64(0), 1])
    func aRootNamingAMetaPageIsCorrupted(root: UInt64) async throws {
        let root0 = try TemporaryDirectory()
        defer { root0.remove() }
        for place in ["meta", "named"] {
            let dir = root0.file("ledger-\(place)")
            try await makeLedger(dir)
            try #"{"appUserId":"u1","originalTransactionId":"1"}"#.write(
                toFile: dir + "/../input.json", atomically: true, encoding: .utf8)
            if place == "meta" {
                // The main database's root in both meta pages (page header 16, then magic, version, address, map
                // size and the free database's record: the main one's root at 128).
                let pageSize = UInt64(sysconf(Int32(_SC_PAGESIZE)))
                try withUnsafeBytes(of: root.littleEndian) { bytes in
                    let handle = try #require(FileHandle(forUpdatingAtPath: dir + "/data.mdb"))
                    defer { try? handle.close() }
                    for page in [UInt64(0), pageSize] {
                        try handle.seek(toOffset: page + 128)
                        try handle.write(contentsOf: Data(bytes))
                    }
                }
            } else {
                let patched = try patchEveryNode(
                    in: dir + "/data.mdb", matching: [2, 0, 4, 0] + Array("meta".utf8), at: 48, with: root)
                #expect(patched > 0)
            }
            for command in Self.commands(dir) {
                let out = try await runStoreLedger(command, seconds: 30)
                let name = "\(place) root \(root): " + command.prefix(2).joined(separator: " ")
                #expect(out.exited, "\(name): ended by a signal (\(out.status)): \(out.stderr.prefix(300))")
                #expect(out.status == 1, "\(name): exit \(out.status): \(out.stderr.prefix(300))")
                #expect(out.stderr.hasPrefix("error: corrupted: "), "\(name): \(out.stderr.prefix(300))")
            }
        }
    }

    /// A value whose stored size runs past the end of the file (here a raw input in overflow pages whose size field
    /// grew by 16 MiB): LMDB would hand out the view unchecked and the read would fault with SIGBUS. The walk of the
    /// file at open finds it first: one line `error: corrupted: …` naming the page, exit 1 (and the JSON document
    /// with `--json`).
    @Test func aValueRunningPastTheEndOfTheFileIsCorruptedNotACrash() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        let dir = root.file("ledger")
        // One input of 12 KiB, so its raw bytes live in overflow pages.
        let padding = String(repeating: "p", count: 12_000)
        let big = transactionLine(0).replacingOccurrences(
            of: "\"quantity\":1", with: "\"quantity\":1,\"padding\":\"\(padding)\"")
        try big.write(toFile: root.file("big.json"), atomically: true, encoding: .utf8)
        let ingest = try await runStoreLedger(["ingest", "--data", dir, root.file("big.json")])
        #expect(ingest.status == 0, "\(ingest.stderr)")
        // The raw database's node for seq 1: flags F_BIGDATA (1), key size 8, key 1 (big-endian); its size's high
        // 16 bits are the 2 bytes before the flags.
        let patched = try patchEveryNode(
            in: dir + "/data.mdb", matching: [1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 1], at: -2, with: UInt16(0x0100))
        #expect(patched > 0, "the raw input's node was not found")
        for command in [["verify"], ["verify", "--json"], ["export"]] {
            let out = try await runStoreLedger(command + ["--data", dir], seconds: 30)
            #expect(out.exited && out.status == 1, "\(command): \(out.status) \(out.stderr.prefix(300))")
            #expect(out.errorLines.count == 1, "\(command): \(out.stderr.prefix(300))")
            #expect(
                out.stderr.hasPrefix("error: corrupted: cannot open the ledger in \(dir): the LMDB files are damaged")
                    && out.stderr.contains("the overflow run of node 0 of page"),
                "\(command): \(out.stderr.prefix(300))")
            if command.contains("--json") {
                #expect(out.stdout.contains(#"{"error":{"code":"corrupted""#), "\(out.stdout)")
            }
        }
    }

    @Test func aDataFileThatIsADirectoryIsAnInvalidPath() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        let dir = root.file("ledger")
        try FileManager.default.createDirectory(atPath: dir + "/data.mdb", withIntermediateDirectories: true)
        try await expectEveryCommandRefuses(dir, code: "invalid_path", mentioning: "directory")
    }

    @Test func aLockFileThatCannotBeOpenedIsAnInvalidPath() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        let dir = root.file("ledger")
        try await makeLedger(dir)
        try FileManager.default.removeItem(atPath: dir + "/lock.mdb")
        try FileManager.default.createDirectory(atPath: dir + "/lock.mdb", withIntermediateDirectories: true)
        try await expectEveryCommandRefuses(dir, code: "invalid_path", mentioning: "lock.mdb")
    }

    @Test func aLedgerDirectoryThatIsAFileIsAnInvalidPath() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        let dir = root.file("ledger")
        try Data("not a directory".utf8).write(to: URL(fileURLWithPath: dir))
        for command in Self.commands(dir) where command[0] != "ingest" {
            let out = try await runStoreLedger(command, seconds: 30)
            #expect(out.exited && out.status == 1, "\(command[0]): \(out.status) \(out.stderr)")
            #expect(out.errorLines.count == 1, "\(command[0]): \(out.stderr)")
            #expect(
                out.stderr == "error: invalid_path: cannot open the ledger in \(dir): \(dir) is not a directory\n",
                "\(command[0]): \(out.stderr)"
            )
        }
    }

    /// The sandbox runs as root, whom file modes do not stop; so the commands run as `nobody` (setpriv) against a
    /// ledger whose files that user may not read.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func aLedgerTheUserMayNotReadIsPermissionDenied() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        #expect(chmod(root.path, 0o777) == 0)
        let dir = root.file("ledger")
        try await makeLedger(dir)
        #expect(chmod(dir + "/data.mdb", 0o600) == 0)
        #expect(chmod(dir + "/lock.mdb", 0o600) == 0)
        try await expectEveryCommandRefuses(
            dir,
            code: "permission_denied",
            mentioning: "Permission denied",
            via: ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        )
    }
}

/// Exit statuses as docs/cli.md promises: 0 success, 1 a reported failure, 2 only for arguments that do not parse.
@Suite("Exit statuses", .serialized, .blocking)
struct ExitStatusCLITests {
    /// Removes event 2 from the `events` database of the ledger in `dir`, behind the ledger's back.
    func removeSecondEvent(_ dir: String) throws {
        let env = try Environment(path: dir)
        let events = try env.openDatabase("events")
        try env.write { txn in
            let cursor = try txn.cursor(events)
            var entry = try cursor.first()
            while let e = entry {
                if e.key.suffix(8).elementsEqual(withUnsafeBytes(of: UInt64(2).bigEndian, Array.init)) {
                    try cursor.deleteCurrent()
                    return
                }
                entry = try cursor.next()
            }
            Issue.record("event 2 not found")
        }
    }

    @Test func replayCheckOnALedgerMissingAnEventIsCorruptedWithExitOne() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        let dir = root.file("ledger")
        try await makeLedger(dir)
        try removeSecondEvent(dir)
        let replay = try await runStoreLedger(["replay", "--check", "--data", dir])
        #expect(replay.exited && replay.status == 1, "\(replay.status): \(replay.stderr)")
        #expect(replay.errorLines.count == 1, "\(replay.stderr)")
        #expect(replay.stderr.hasPrefix("error: corrupted: "), "\(replay.stderr)")
        #expect(!replay.stderr.contains("usage") && !replay.stderr.contains("Error:"), "\(replay.stderr)")

        let verify = try await runStoreLedger(["verify", "--data", dir])
        #expect(verify.status == 1)
        #expect(verify.stderr.hasPrefix("error: verification_failed: event 2 "), "\(verify.stderr)")

        let json = try await runStoreLedger(["replay", "--check", "--json", "--data", dir])
        #expect(json.status == 1)
        let document = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: [String: String]]
        #expect(document?["error"]?["code"] == "corrupted", "\(json.stdout)")
    }

    /// `ingest --socket` reports the server's own code, not a generic `server_error`.
    @Test func ingestThroughTheSocketReportsTheServersCode() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        let dir = root.file("ledger")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try #"{"limits":{"maxBodyBytes":200}}"#.write(toFile: dir + "/config.json", atomically: true, encoding: .utf8)
        try transactionLine(1).write(toFile: root.file("one.json"), atomically: true, encoding: .utf8)
        let server = try ServerProcess(data: dir)
        do {
            try await server.waitUntilAnswering()
            let out = try await runStoreLedger(["ingest", "--socket", server.socketPath, root.file("one.json")])
            #expect(out.status == 1)
            #expect(out.stderr.hasPrefix("error: too_large: server answered 413: "), "\(out.stderr)")
        } catch {
            server.signal(SIGKILL)
            throw error
        }
        server.signal(SIGTERM)
        #expect(try await server.waitForExit() == 0)
    }

    @Test func usageErrorsAloneExitTwo() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        let dir = root.file("ledger")
        try await makeLedger(dir, count: 3)
        for arguments in [["timeline"], ["events", "--limit", "0"], ["ingest", "--type", "coupon"], ["frobnicate"]] {
            let out = try await runStoreLedger(arguments + ["--data", dir])
            #expect(out.status == 2, "\(arguments): \(out.status) \(out.stderr)")
            #expect(out.stderr.hasPrefix("error: usage: "), "\(arguments): \(out.stderr)")
            #expect(!out.stderr.hasPrefix("error: usage: Error:"), "\(arguments): \(out.stderr)")
        }
        #expect(try await runStoreLedger(["stats", "--data", dir]).status == 0)
        #expect(try await runStoreLedger(["timeline", "nope", "--data", dir]).status == 1)
        #expect(try await runStoreLedger(["--help"]).status == 0)
    }
}

/// A server stopped cleanly, then its data file emptied (a botched copy, a full disk's truncation): the directory
/// still shows a ledger lived there (LMDB's lock file, the journal), so no command opens it as a new, empty ledger
/// that would take writes and pass `verify`; each says `corrupted`, and the journal and data file are left as they
/// are. `--init` is the operator's way to start anew there, and it keeps the old journal aside.
@Suite("An emptied data file", .serialized, .timeLimit(.minutes(3)), .blocking)
struct EmptiedDataFileProcessTests {
    @Test func anEmptiedDataFileIsCorruptedNotANewLedger() async throws {
        let root = try TemporaryDirectory()
        defer { root.remove() }
        let dir = root.file("ledger")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let server = try ServerProcess(data: dir)
        try await server.waitUntilAnswering()
        let client = try AsyncLedgerClient(socketPath: server.socketPath, timeoutSeconds: 10)
        var acknowledged = 0
        for i in 0..<200 {
            let r = try await client.post("/v1/events", body: Array(transactionEnvelope("e\(i)", user: "u\(i % 7)").utf8))
            if r.status == 200 { acknowledged += 1 }
        }
        #expect(acknowledged == 200)
        server.signal(SIGTERM)
        #expect(try await server.waitForExit() == 0)

        #expect(truncate(dir + "/data.mdb", 0) == 0)
        func journalFiles() throws -> [String: Data] {
            var files: [String: Data] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: dir + "/journal") {
                files[name] = try Data(contentsOf: URL(fileURLWithPath: dir + "/journal/" + name))
            }
            return files
        }
        let journal = try journalFiles()
        #expect(!journal.isEmpty)

        try await BrokenLedgerCLITests().expectEveryCommandRefuses(dir, code: "corrupted", mentioning: "data.mdb is empty (0 bytes)")
        let serve = try ServerProcess(data: dir)
        #expect(try await serve.waitForExit() == 1, "serve started on an emptied ledger")
        #expect(serve.log.contains("error: corrupted:") && serve.log.contains("--init"), "\(serve.log)")
        #expect(try journalFiles() == journal, "the journal was touched")
        var st = stat()
        #expect(stat(dir + "/data.mdb", &st) == 0 && st.st_size == 0, "the data file was written")

        // The operator's --init: a new ledger, the old journal kept aside.
        let fresh = try await runStoreLedger(["ingest", "--data", dir, "--init", dir + "/../input.json"])
        #expect(fresh.status == 0, "\(fresh.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).contains { $0.hasPrefix("journal.before-init-") })
        #expect((try await runStoreLedger(["verify", "--data", dir])).status == 0)
    }
}
