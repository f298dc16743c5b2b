#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LMDB
import LedgerClient
import LedgerTestSupport
import LedgerErrors
import Testing

// MARK: - A varied ledger, made by the real binary

/// A ledger directory, its configuration (trusting the test PKI, so signed inputs are verified) and the scratch
/// directory holding both.
struct VariedLedger {
    let scratch: TemporaryDirectory
    var data: String { scratch.file("source") }
    var config: String { scratch.file("config.json") }

    /// Three `ingest` runs (three write transactions): V1 notifications (one with two transactions: two events of
    /// one raw input), a verifyReceipt response claimed by a user, a signed V2 notification, a signed transaction
    /// and renewal, a claim naming no environment made before its sandbox subscription appears, refused inputs
    /// (not JSON, a receipt status, a missing field) and a duplicate.
    static func make() async throws -> VariedLedger {
        let scratch = try TemporaryDirectory(prefix: "sl-backup")
        let ledger = VariedLedger(scratch: scratch)
        try Data(TestPKI.shared.rootDER).write(to: URL(fileURLWithPath: scratch.file("root.cer")))
        let config = #"{"bundleId": "\#(AppleFixtures.bundleId)", "trustedRoots": ["root.cer"]}"#
        try Data(config.utf8).write(to: URL(fileURLWithPath: ledger.config))

        let F = AppleFixtures.self
        let (e, d) = (F.epoch, F.day)
        let v1 = F.v1Notification(
            type: "DID_RENEW",
            latest: [
                F.v1Transaction(
                    transactionId: "1000000000000001", originalTransactionId: "1000000000000001", purchaseDate: e,
                    expiresDate: e + 30 * d, webOrderLineItemId: "1000000000000101"),
                F.v1Transaction(
                    transactionId: "1000000000000002", originalTransactionId: "1000000000000001",
                    purchaseDate: e + 30 * d, expiresDate: e + 60 * d, webOrderLineItemId: "1000000000000102"),
            ])
        let receiptTransaction = F.v1Transaction(
            transactionId: "1000000000000003", originalTransactionId: "1000000000000003", purchaseDate: e + d,
            expiresDate: e + 31 * d, webOrderLineItemId: "1000000000000103")
        let receipt = F.receiptIOS7(inApp: [receiptTransaction], latest: [receiptTransaction])
        let renewed = F.v2Transaction(
            transactionId: "2000000000000002", originalTransactionId: "2000000000000001", purchaseDate: e + 30 * d,
            expiresDate: e + 60 * d, signedDate: e + 30 * d, webOrderLineItemId: "3000000000000002")
        let v2 = F.v2Notification(type: "DID_RENEW", subtype: nil, signedDate: e + 30 * d, transaction: renewed)
        let sandbox = F.v2Transaction(
            transactionId: "2000000000000009", originalTransactionId: "2000000000000009", environment: "Sandbox")

        let first = [
            F.envelope(type: "notification", receivedAt: e + 30 * d, payload: v1),
            F.envelope(type: "receipt", appUserId: "u1", receivedAt: e + d + F.minute, payload: receipt),
            Array("{not json".utf8),
        ]
        let second = [
            F.envelope(type: "transaction", appUserId: "u2", receivedAt: e + 1_000, jws: F.signedTransaction()),
            F.envelope(type: "renewal", receivedAt: e + d, jws: F.signedRenewal(F.v2Renewal(signedDate: e + d))),
            F.envelope(
                type: "binding", receivedAt: e + 2 * d,
                payload: F.binding(appUserId: "u3", originalTransactionId: "2000000000000009", claimedAt: e + 2 * d)),
            F.envelope(type: "receipt", receivedAt: e, payload: F.receiptStatus(21002)),
        ]
        let third = [
            F.envelope(type: "notification", receivedAt: e + 30 * d + 1_000, payload: v2),
            F.envelope(type: "transaction", receivedAt: e + 3 * d, payload: F.json(sandbox)),
            F.envelope(type: "transaction", receivedAt: e, payload: F.json(["transactionId": "1", "originalTransactionId": "1"])),
            F.envelope(type: "notification", receivedAt: e + 30 * d, payload: v1),
        ]
        for (index, inputs) in [first, second, third].enumerated() {
            let file = scratch.file("inputs-\(index).ndjson")
            try Data(inputs.joined(separator: [UInt8(ascii: "\n")])).write(to: URL(fileURLWithPath: file))
            let out = try await runStoreLedger(["ingest", "--data", ledger.data, "--config", ledger.config, "--json", file])
            // Each run holds one refused input: exit 1, the others appended (or, the V1 notification sent again, a
            // duplicate).
            #expect(out.status == 1, "ingest \(index): \(out.stderr)")
            #expect(out.stdout.components(separatedBy: #""status":"rejected""#).count == 2, "ingest \(index): \(out.stdout)")
            #expect(!out.stdout.contains(#""code":"export_line""#))
        }
        return ledger
    }
}

/// Runs `storeledger` and expects exit 0; returns stdout.
func storeLedgerSucceeds(_ arguments: [String]) async throws -> String {
    let out = try await runStoreLedger(arguments)
    #expect(out.status == 0, "storeledger \(arguments.joined(separator: " ")): exit \(out.status): \(out.stderr)")
    return out.stdout
}

/// `stats --json` of a ledger.
func ledgerStats(_ data: String) async throws -> [String: Any] {
    let out = try await storeLedgerSucceeds(["stats", "--data", data, "--json"])
    return try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any])
}

/// Every entry of every database of the ledger in `data`, read through LMDB itself (not through the ledger's code).
func databaseContents(_ data: String) throws -> [String: [[UInt8]]] {
    var options = Environment.Options()
    options.readOnly = true
    let env = try Environment(path: data, options: options)
    var contents: [String: [[UInt8]]] = [:]
    for (name, flags) in [
        ("meta", Database.Flags()), ("raw", []), ("events", []), ("log", []), ("by_otid", [.dupSort]),
        ("by_user", [.dupSort]), ("timelines", []), ("rejected", []), ("bindings_any", [.dupSort]),
    ] {
        let db = try env.openDatabase(name, flags: flags)
        contents[name] = try env.read { txn in
            var entries: [[UInt8]] = []
            let cursor = try txn.cursor(db)
            var entry = try cursor.first()
            while let e = entry {
                entries.append(Array(e.key) + [0xFF] + Array(e.value))
                entry = try cursor.next()
            }
            return entries
        }
    }
    return contents
}

/// The export's lines, parsed.
func exportLines(_ text: String) -> [[String: Any]] {
    text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
}

// MARK: - Export and import

@Suite("export, import, backup and restore", .serialized, .timeLimit(.minutes(5)), .blocking)
struct BackupCLITests {
    @Test func anExportImportsIntoTheSameLedger() async throws {
        let source = try await VariedLedger.make()
        defer { source.scratch.remove() }
        let exported = try await storeLedgerSucceeds(["export", "--complete", "--data", source.data])
        let lines = exportLines(exported)
        let events = lines.filter { $0["seq"] != nil }
        // What the ledger holds is varied: every kind, signed inputs verified, inputs of several events.
        #expect(Set(events.compactMap { $0["kind"] as? String }) == ["transaction", "renewal", "notification", "binding"])
        #expect(events.contains { $0["signature"] as? String == "verified" })
        #expect(events.contains { ($0["rawKey"] as? Int) != ($0["seq"] as? Int) }, "an input with several events")
        #expect(lines.filter { $0["rejected"] != nil }.count == 3)
        #expect((lines.first?["begin"] as? [String: Any])?["format"] as? Int == 1)
        let end = try #require(lines.last?["end"] as? [String: Any])
        let stats = try await ledgerStats(source.data)
        #expect(end["lastSeq"] as? Int == stats["lastSeq"] as? Int)
        #expect(end["chainHead"] as? String == stats["chainHead"] as? String)
        #expect(events.count == stats["lastSeq"] as? Int)

        let file = source.scratch.file("ledger.ndjson")
        try Data(exported.utf8).write(to: URL(fileURLWithPath: file))
        let target = source.scratch.file("imported")
        let report = try await storeLedgerSucceeds(
            ["import", file, "--data", target, "--config", source.config, "--json"])
        let imported = try #require(try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any])
        #expect(imported["chainHead"] as? String == stats["chainHead"] as? String)
        #expect(imported["lastSeq"] as? Int == stats["lastSeq"] as? Int)
        #expect(imported["rejected"] as? Int == 3)
        #expect(imported["complete"] as? Bool == true)

        // The same ledger: stats, the export byte for byte, every database entry by entry.
        let copied = try await ledgerStats(target)
        for key in ["lastSeq", "events", "rejected", "chainHead", "subscriptions", "users", "rawInputs"] {
            #expect("\(copied[key] ?? "-")" == "\(stats[key] ?? "-")", "stats \(key)")
        }
        let reexported = try await storeLedgerSucceeds(["export", "--complete", "--data", target])
        #expect(reexported == exported, "the import's export is the source's, byte for byte")
        let (a, b) = (try databaseContents(source.data), try databaseContents(target))
        for (name, entries) in a.sorted(by: { $0.key < $1.key }) {
            #expect(b[name] == entries, "database \(name): \(entries.count) entries in the source, \(b[name]?.count ?? 0) in the import")
        }
        #expect(a["raw"]?.count == stats["rawInputs"] as? Int)

        // Checked like any ledger, with the same projections.
        #expect(try await storeLedgerSucceeds(["verify", "--data", target, "--config", source.config]).hasPrefix("ok:"))
        let replayed = try await storeLedgerSucceeds(["replay", "--check", "--json", "--data", target, "--config", source.config])
        let original = try await storeLedgerSucceeds(["replay", "--check", "--json", "--data", source.data, "--config", source.config])
        let digest = { (text: String) in
            ((try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any])?["projectionsDigest"] as? String
        }
        #expect(digest(replayed) != nil)
        #expect(digest(replayed) == digest(original))
        // Each projection alone too, with its own digest.
        for only in ["timelines", "lifecycle"] {
            let a = try await storeLedgerSucceeds(
                ["replay", "--check", "--only", only, "--json", "--data", target, "--config", source.config])
            let b = try await storeLedgerSucceeds(
                ["replay", "--check", "--only", only, "--json", "--data", source.data, "--config", source.config])
            #expect(digest(a) != nil && digest(a) == digest(b) && digest(a) != digest(original), "--only \(only)")
        }
        let text = try await storeLedgerSucceeds(["replay", "--check", "--only", "timelines", "--data", target])
        #expect(text.contains("(timelines only)") && text.contains("ok: every stored timeline is byte-identical"), "\(text)")
        let wrong = try await runStoreLedger(["replay", "--check", "--only", "customers", "--data", target])
        #expect(wrong.status != 0 && wrong.stderr.contains("--only 'customers' is neither"), "\(wrong.stderr)")
        #expect(FileManager.default.fileExists(atPath: target + "/data.mdb"))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: target).filter { $0.hasPrefix(".storeledger") }.isEmpty,
            "the staging directory is gone")
    }

    /// One alteration of an export, as text: the line changed, and what `import` must say.
    struct Alteration: Sendable, CustomStringConvertible {
        var description: String
        var code: String
        var mentions: String
        /// Alters the export's lines; returns the (1-based) number of the line `import` must name.
        var alter: @Sendable (inout [String]) throws -> Int
    }

    static let alterations: [Alteration] = [
        Alteration(description: "one byte of a raw input", code: "verification_failed", mentions: "raw input") { lines in
            let index = try #require(lines.firstIndex { $0.contains(#""kind":"transaction""#) && $0.contains(#""raw":""#) })
            var object = try #require(try JSONSerialization.jsonObject(with: Data(lines[index].utf8)) as? [String: Any])
            let text = try #require(object["raw"] as? String)
            var raw = try #require(Data(base64Encoded: text))
            raw[raw.count / 2] ^= 0x01
            object["raw"] = raw.base64EncodedString()
            lines[index] = String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
            return index + 1
        },
        Alteration(description: "one digit of a chain hash", code: "verification_failed", mentions: "hash chain breaks") { lines in
            let index = 3
            let range = try #require(lines[index].range(of: #""chainHash":""#))
            var text = lines[index]
            let digit = text.index(range.upperBound, offsetBy: 10)
            text.replaceSubrange(digit...digit, with: text[digit] == "0" ? "1" : "0")
            lines[index] = text
            return index + 1
        },
        Alteration(description: "a receivedAt edited", code: "verification_failed", mentions: "receivedAt") { lines in
            let index = 2
            lines[index] = lines[index].replacingOccurrences(of: #""receivedAt":"#, with: #""receivedAt":1"#)
            return index + 1
        },
        Alteration(description: "an event line removed", code: "invalid_export", mentions: "seq 3 follows seq 1") { lines in
            lines.remove(at: 2)  // seq 2 (the first line is the export's header)
            return 3
        },
        Alteration(description: "a refused input's record altered", code: "verification_failed", mentions: "rejected head") { lines in
            let index = try #require(lines.firstIndex { $0.hasPrefix(#"{"rejected""#) })
            var object = try #require(try JSONSerialization.jsonObject(with: Data(lines[index].utf8)) as? [String: Any])
            var refusal = try #require(object["rejected"] as? [String: Any])
            // A letter of the message, which the line does not repeat: only the chain over the records can tell.
            let text = try #require(refusal["record"] as? String)
            var record = [UInt8](try #require(Data(base64Encoded: text)))
            let messageText = try #require(refusal["message"] as? String)
            let message = Array(messageText.utf8)
            let at = try #require((0...(record.count - message.count)).first { record[$0..<($0 + message.count)].elementsEqual(message) })
            record[at] = record[at] == UInt8(ascii: "X") ? UInt8(ascii: "Y") : UInt8(ascii: "X")
            refusal["record"] = Data(record).base64EncodedString()
            object["rejected"] = refusal
            lines[index] = String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
            return lines.count  // the end line states the refused inputs' chain head
        },
        Alteration(description: "the end line cut off", code: "invalid_export", mentions: "cut short") { lines in
            lines.removeLast()
            return 0
        },
    ]

    @Test(arguments: alterations)
    func anAlteredExportIsRefusedAndNothingIsWritten(_ alteration: Alteration) async throws {
        let source = try await VariedLedger.make()
        defer { source.scratch.remove() }
        var lines = try await storeLedgerSucceeds(["export", "--complete", "--data", source.data])
            .split(separator: "\n").map(String.init)
        let line = try alteration.alter(&lines)
        let file = source.scratch.file("altered.ndjson")
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: file))

        // Into a directory that does not exist, and into an empty one: neither gains anything.
        let missing = source.scratch.file("never-made")
        let empty = source.scratch.file("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false)
        for target in [missing, empty] {
            let out = try await runStoreLedger(["import", file, "--data", target, "--config", source.config])
            #expect(out.status == 1, "\(alteration): exit \(out.status)")
            #expect(out.stderr.hasPrefix("error: \(alteration.code): "), "\(alteration): \(out.stderr)")
            #expect(out.stderr.contains(alteration.mentions), "\(alteration): \(out.stderr)")
            if line > 0 { #expect(out.stderr.contains("line \(line):"), "\(alteration): \(out.stderr)") }
            #expect(out.stderr.contains("nothing was written"), "\(alteration): \(out.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: missing), "\(alteration): the directory was not made")
        #expect(try FileManager.default.contentsOfDirectory(atPath: empty).isEmpty, "\(alteration): nothing was written")
    }

    @Test func anImportIntoALedgerThatHoldsEventsIsRefused() async throws {
        let source = try await VariedLedger.make()
        defer { source.scratch.remove() }
        let file = source.scratch.file("ledger.ndjson")
        try Data(try await storeLedgerSucceeds(["export", "--complete", "--data", source.data]).utf8)
            .write(to: URL(fileURLWithPath: file))
        let target = source.scratch.file("busy")
        let seed = source.scratch.file("seed.ndjson")
        try transactionLine(1).write(toFile: seed, atomically: true, encoding: .utf8)
        _ = try await storeLedgerSucceeds(["ingest", "--data", target, seed])
        let before = try await ledgerStats(target)

        let out = try await runStoreLedger(["import", file, "--data", target])
        #expect(out.status == 1)
        #expect(out.stderr.hasPrefix("error: ledger_not_empty: "), "\(out.stderr)")
        #expect(out.stderr.contains("1 event"), "\(out.stderr)")
        let after = try await ledgerStats(target)
        #expect(after["lastSeq"] as? Int == 1)
        #expect(after["chainHead"] as? String == before["chainHead"] as? String)
        #expect(after["rejected"] as? Int == 0)
    }

    @Test func ingestRefusesAnExportAndPointsToImport() async throws {
        let source = try await VariedLedger.make()
        defer { source.scratch.remove() }
        let file = source.scratch.file("ledger.ndjson")
        try Data(try await storeLedgerSucceeds(["export", "--data", source.data]).utf8).write(to: URL(fileURLWithPath: file))

        let fresh = source.scratch.file("fresh")
        let out = try await runStoreLedger(["ingest", "--data", fresh, file])
        #expect(out.status == 1)
        #expect(out.stderr.hasPrefix("error: export_line: \(file) line 1: "), "\(out.stderr)")
        #expect(out.stderr.contains("storeledger import"), "\(out.stderr)")
        #expect(!FileManager.default.fileExists(atPath: fresh), "nothing was written, not even the directory")

        // Into the source itself: neither an event nor a refusal is added.
        let before = try await ledgerStats(source.data)
        let again = try await runStoreLedger(["ingest", "--data", source.data, "--json", file])
        #expect(again.status == 1)
        #expect(again.stdout.contains(#""code":"export_line""#), "\(again.stdout)")
        let after = try await ledgerStats(source.data)
        for key in ["lastSeq", "rejected", "chainHead"] { #expect("\(after[key] ?? "-")" == "\(before[key] ?? "-")", "\(key)") }
    }

    @Test func aBackupRestoresIntoTheSameLedger() async throws {
        let source = try await VariedLedger.make()
        defer { source.scratch.remove() }
        let stats = try await ledgerStats(source.data)
        let backup = source.scratch.file("backup")
        let report = try await storeLedgerSucceeds(["backup", backup, "--data", source.data, "--config", source.config])
        #expect(report.contains("\(stats["lastSeq"] as? Int ?? -1) events"), "\(report)")
        #expect(report.contains("chain head \(stats["chainHead"] as? String ?? "?")"), "\(report)")
        #expect(report.contains("3 refused inputs"), "\(report)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: backup) == ["data.mdb"])

        let restored = source.scratch.file("restored")
        let json = try await storeLedgerSucceeds(
            ["restore", backup, "--data", restored, "--config", source.config, "--json"])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(document["chainHead"] as? String == stats["chainHead"] as? String)
        #expect(document["lastSeq"] as? Int == stats["lastSeq"] as? Int)
        let exports = (
            try await storeLedgerSucceeds(["export", "--complete", "--data", source.data]),
            try await storeLedgerSucceeds(["export", "--complete", "--data", restored])
        )
        #expect(exports.0 == exports.1)
        #expect(try databaseContents(restored)["events"] == databaseContents(source.data)["events"])

        // A ledger's own directory (it has a lock file: it may be in use) is copied through LMDB, not as a file.
        let fromLedger = source.scratch.file("from-ledger")
        _ = try await storeLedgerSucceeds(["restore", source.data, "--data", fromLedger, "--config", source.config])
        #expect(try await storeLedgerSucceeds(["export", "--complete", "--data", fromLedger]) == exports.0)

        // What the commands refuse.
        let notEmpty = try await runStoreLedger(["backup", backup, "--data", source.data])
        #expect(notEmpty.status == 1)
        #expect(notEmpty.stderr.hasPrefix("error: destination_not_empty: "), "\(notEmpty.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: backup) == ["data.mdb"], "the backup is untouched")
        let overLedger = try await runStoreLedger(["restore", backup, "--data", source.data])
        #expect(overLedger.status == 1)
        #expect(overLedger.stderr.hasPrefix("error: ledger_not_empty: "), "\(overLedger.stderr)")
        let file = source.scratch.file("ledger.ndjson")
        try Data(exports.0.utf8).write(to: URL(fileURLWithPath: file))
        let anExport = try await runStoreLedger(["restore", file, "--data", source.scratch.file("other")])
        #expect(anExport.status == 1)
        #expect(anExport.stderr.contains("storeledger import"), "\(anExport.stderr)")
        #expect(!FileManager.default.fileExists(atPath: source.scratch.file("other")))
    }
}

// MARK: - A backup while the server appends

extension LiveProcesses {
    @Suite("backup while serve appends", .serialized, .timeLimit(.minutes(3)))
    struct BackupWhileServingTests {
        @Test func aBackupTakenDuringAppendsIsAVerifiedPrefixOfTheLog() async throws {
            try await withTaskExecutorPreference(TestExecutor.shared) { try await backupDuringAppends() }
        }

        private func backupDuringAppends() async throws {
            let scratch = try TemporaryDirectory(prefix: "sl-hot")
            defer { scratch.remove() }
            let data = scratch.file("ledger")
            let server = try ServerProcess(data: data)
            defer { server.killAndWait() }
            try await server.waitUntilAnswering()

            // Two writers append until told to stop: single events and NDJSON batches of 8.
            let stop = StopFlag()
            let socketPath = server.socketPath
            // On the test executor's threads: the cooperative pool may be held by long tests of other suites.
            let writers = (0..<2).map { writer in
                Task(executorPreference: TestExecutor.shared) { () -> Int in
                    let client = try AsyncLedgerClient(socketPath: socketPath, timeoutSeconds: 10)
                    var n = 0
                    while !(await stop.isSet) {
                        let batch = writer == 0 ? 1 : 8
                        let body = (0..<batch).map { transactionEnvelope("hot\(writer)-\(n + $0)", user: "u\(writer)") }
                        n += batch
                        let response = try await client.post(
                            "/v1/events", body: Array(body.joined(separator: "\n").utf8),
                            contentType: batch == 1 ? "application/json" : "application/x-ndjson")
                        #expect(response.status == 200)
                    }
                    return n
                }
            }
            let reader = try AsyncLedgerClient(socketPath: socketPath, timeoutSeconds: 10)
            func lastSeq() async throws -> Int {
                let health = try await reader.get("/v1/health")
                let object = try JSONSerialization.jsonObject(with: Data(health.body)) as? [String: Any]
                return object?["lastSeq"] as? Int ?? -1
            }
            while try await lastSeq() < 200 { try await Task.sleep(for: .milliseconds(20)) }

            // Backups while the writers run: at least two, and until one saw appends go on while it ran (bounded).
            var backups: [(path: String, before: Int, after: Int)] = []
            for i in 0..<6 where backups.count < 2 || !backups.contains(where: { $0.after > $0.before }) {
                let path = scratch.file("backup-\(i)")
                let before = try await lastSeq()
                let out = try await runStoreLedger(["backup", path, "--data", data, "--json"])
                #expect(out.status == 0, "backup \(i): \(out.stderr)")
                backups.append((path, before, try await lastSeq()))
            }
            await stop.set()
            var appended = 0
            for writer in writers { appended += try await writer.value }
            server.signal(SIGTERM)
            #expect(try await server.waitForExit() == 0)

            let full = try await storeLedgerSucceeds(["export", "--data", data]).split(separator: "\n")
            #expect(full.filter { $0.contains(#""kind":"transaction""#) }.count == appended, "every acknowledged input is there")
            #expect(backups.contains { $0.after > $0.before }, "appends went on while a backup ran")
            for backup in backups {
                let stats = try await ledgerStats(backup.path)
                let copied = try #require(stats["lastSeq"] as? Int)
                #expect(copied >= backup.before && copied <= backup.after, "\(copied) in \(backup.before)...\(backup.after)")
                #expect(try await storeLedgerSucceeds(["verify", "--data", backup.path]).hasPrefix("ok:"))
                // A prefix of the log: every event of the copy is the source's event at the same seq, byte for byte.
                let lines = try await storeLedgerSucceeds(["export", "--data", backup.path]).split(separator: "\n")
                #expect(lines.count == copied)
                #expect(lines.elementsEqual(full.prefix(copied)), "the backup's events are the log's first \(copied)")
            }
        }
    }
}

/// A flag the test sets once and the writers read.
actor StopFlag {
    private(set) var isSet = false
    func set() { isSet = true }
}
