import Foundation
import LedgerAPI
import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerReplication
import LedgerStore
import LedgerTestSupport
import Logging
import Testing

/// Every way out of a ledger and back in restores it: on random histories (refused inputs, claims that name no
/// environment, both environments, grants, duplicates, changes of rules and, on a ledger with pseudonyms, erasures)
/// the ledger rebuilt by each way answers byte for byte as the one it came from, for every user in both environments
/// at several instants and for every subscription's timeline, and passes `verify`.
///
/// The source is written as a replica writes its ledger: from the intake stream's messages (an input's options and
/// raw bytes, decoded again; an erasure by the pseudonym the log knows), with the rules changed between them. The
/// ways: `backup` then `restore`, `export --complete` then `import`, `import --pseudonyms` of a ledger without them,
/// and a replica rebuilt from the same stream.
@Suite("Every way out of a ledger and back in (random histories)", .serialized, .timeLimit(.minutes(10)), .blocking)
struct WaysBackInPropertyTests {
    static let start: Int64 = 1_700_000_000_000
    static let day: Int64 = 86_400_000
    static let users = ["alice", "bob+1@example.com", "carol", "dave", "erin"]
    static let otids = ["5001", "5002", "5003", "5004"]
    static let instants = (0..<6).map { start + Int64($0) * 25 * day }

    /// What the stream and the operator did, in order.
    enum Step {
        case message(IntakeMessage, at: UnixMillis)
        case rules(FoldRules, at: UnixMillis)
        /// A user to forget; in the stream, the erasure names the pseudonym the source's log knows them by.
        case forget(String, at: UnixMillis)
    }

    static let catalogs: [Catalog] = [
        Catalog(products: [
            "com.example.premium.monthly": ProductConfiguration(type: .autoRenewable, entitlements: ["premium"], group: "g1"),
            "com.example.premium.yearly": ProductConfiguration(type: .autoRenewable, entitlements: ["premium"], group: "g1"),
        ]),
        Catalog(products: [
            "com.example.premium.monthly": ProductConfiguration(type: .autoRenewable, entitlements: ["premium"], group: "g1"),
            "com.example.premium.yearly": ProductConfiguration(type: .autoRenewable, entitlements: ["gold"], group: "g1"),
        ]),
    ]

    static func history(seed: UInt64, erasures: Bool) -> [Step] {
        var random = SplitMix64(seed: seed)
        var steps: [Step] = []
        var sent: [IntakeMessage] = []
        var clock = start
        var renewals: [String: Int] = [:]
        for n in 0..<(40 + random.below(30)) {
            clock += Int64(1 + random.below(4)) * day / 2
            let user = users[random.below(users.count)]
            let otid = otids[random.below(otids.count)]
            let environment = random.chance(30) ? "Sandbox" : "Production"
            var options = IngestPipeline.Options()
            var raw: String
            switch random.below(100) {
            case 0..<45:
                let period = renewals[environment + otid, default: 0]
                renewals[environment + otid] = period + 1
                let purchase = start + Int64(period) * 30 * day
                let product = random.chance(20) ? "com.example.premium.yearly" : "com.example.premium.monthly"
                let refund = random.chance(10) ? #","revocationDate":\#(purchase + 5 * day),"revocationReason":0"# : ""
                let claim = random.chance(40) ? #""appUserId":"\#(user)","# : ""
                raw = #"{"type":"transaction",\#(claim)"receivedAt":\#(clock),"payload":{"transactionId":"\#(otid)\#(environment.prefix(1))\#(period)","originalTransactionId":"\#(otid)","webOrderLineItemId":"w\#(otid)\#(period)","productId":"\#(product)","purchaseDate":\#(purchase),"originalPurchaseDate":\#(start),"expiresDate":\#(purchase + 30 * day),"signedDate":\#(clock)\#(refund),"type":"Auto-Renewable Subscription","environment":"\#(environment)"}}"#
            case 45..<60:
                let named = random.chance(50) ? #","environment":"\#(environment)""# : ""
                raw = #"{"type":"binding","appUserId":"\#(user)","originalTransactionId":"\#(otid)","receivedAt":\#(clock)\#(named)}"#
            case 60..<68:
                options.forcedType = .grant
                options.appUserId = AppUserID(user)
                options.receivedAt = clock
                raw = #"{"entitlement":"premium","duration":"P7D","from":\#(clock),"reason":"support \#(n)"}"#
            case 68..<76:
                raw = random.chance(50) ? "{not json \(n)" : #"{"type":"transaction","payload":{"transactionId":"x\#(n)"}}"#
            case 76..<84:
                let rules = FoldRules(
                    catalog: catalogs[random.below(catalogs.count)],
                    bindingPolicy: [BindingPolicy.transfer, .keep, .share][random.below(3)])
                steps.append(.rules(rules, at: clock))
                continue
            case 84..<90 where erasures:
                steps.append(.forget(user, at: clock))
                continue
            default:
                guard let again = sent.isEmpty ? nil : sent[random.below(sent.count)] else { continue }
                steps.append(.message(again, at: clock))  // the same input twice: a duplicate
                continue
            }
            let message = IntakeMessage(raw: Array(raw.utf8), options: options)
            sent.append(message)
            steps.append(.message(message, at: clock))
        }
        return steps
    }

    static func openLedger(_ directory: String, pseudonyms: Bool = false, readOnly: Bool = false) throws -> Ledger {
        var options = Ledger.Options()
        options.pseudonyms = pseudonyms
        options.readOnly = readOnly
        return try Ledger(directory: directory, options: options, logger: Logger(label: "test"))
    }

    /// Writes `steps` into `ledger` as a replica does: runs of messages appended together (where a run ends is
    /// drawn from `batching`), each decoded again with its options and the stream's time; an erasure names the
    /// pseudonym the source resolved (`erasures`, filled while writing the source, read when rebuilding a replica).
    /// Returns how many of each result and event kind came back.
    @discardableResult
    static func write(
        _ steps: [Step], into ledger: Ledger, erasures: inout [Int: String], batching: UInt64
    ) async throws -> [String: Int] {
        var random = SplitMix64(seed: batching)
        let pipeline = IngestPipeline(ledger: ledger, configuration: AppStoreConfiguration())
        var counts: [String: Int] = [:]
        var pending: [LedgerInput] = []
        func appendPending() async throws {
            guard !pending.isEmpty else { return }
            for result in try await ledger.append(pending) {
                counts[result.status.rawValue, default: 0] += 1
                for event in result.events { counts[event.kind.rawValue, default: 0] += 1 }
            }
            pending = []
        }
        for (index, step) in steps.enumerated() {
            switch step {
            case .message(let message, let at):
                let decoded = try #require(IntakeMessage(payload: message.payload))
                pending.append(pipeline.prepare(decoded.raw, options: decoded.options(streamMillis: at), now: at))
                if random.chance(50) { try await appendPending() }
            case .rules(let rules, let at):
                try await appendPending()
                if try ledger.rulesInLog.apply(rules, raw: try JSONWriter.bytes(encoding: rules, sortedKeys: true), at: at) != nil {
                    counts["rules", default: 0] += 1
                }
            case .forget(let user, let at):
                try await appendPending()
                if erasures[index] == nil {
                    erasures[index] = try? ledger.privacy.pseudonymToForget(AppUserID(user), requestedBy: "ops", reason: nil)
                }
                guard let pseudonym = erasures[index] else { continue }  // unknown, or forgotten already
                _ = try await ledger.privacy.forget(pseudonym: pseudonym, requestedBy: "ops", reason: nil, at: at)
                counts["erasure", default: 0] += 1
            }
        }
        try await appendPending()
        try ledger.catchUpMetrics()
        return counts
    }

    /// Every answer about every user (both environments, each instant) and every subscription's timeline, as the
    /// socket's JSON bytes.
    static func answers(_ directory: String) throws -> [String: String] {
        let ledger = try openLedger(directory, readOnly: true)
        defer { ledger.close() }
        var out: [String: String] = [:]
        for environment in [AppStoreEnvironment.production, .sandbox] {
            for at in instants {
                for user in users {
                    let view = try ledger.customer(AppUserID(user), environment: environment, at: at)
                    out["customer \(user) \(environment) \(at)"] = String(decoding: JSONWriter.bytes(of: view, sortedKeys: true), as: UTF8.self)
                }
                for otid in otids {
                    let view = try ledger.timeline(OriginalTransactionID(rawValue: otid), environment: environment, at: at)
                    out["timeline \(otid) \(environment) \(at)"] = view.map { String(decoding: JSONWriter.bytes(of: $0, sortedKeys: true), as: UTF8.self) } ?? "none"
                }
            }
        }
        return out
    }

    func expectSameAnswers(_ way: String, _ directory: String, as expected: [String: String], seed: UInt64) async throws {
        let verify = try await runStoreLedger(["verify", "--data", directory])
        #expect(verify.status == 0, "seed \(seed), \(way): verify: \(verify.stdout) \(verify.stderr)")
        let answers = try Self.answers(directory)
        let differing = expected.keys.sorted().filter { answers[$0] != expected[$0] }
        #expect(differing.isEmpty, "seed \(seed), \(way): \(differing.count) of \(expected.count) answers differ, first \(differing.first ?? ""): \(answers[differing.first ?? ""] ?? "nil") vs \(expected[differing.first ?? ""] ?? "nil")")
    }

    @Test(arguments: [(UInt64(1), true), (2, true), (3, false), (4, false)])
    func everyWayBackRestoresTheSameAnswers(seed: UInt64, pseudonyms: Bool) async throws {
        let dir = try TemporaryDirectory(prefix: "sl-ways-back")
        defer { dir.remove() }
        let steps = Self.history(seed: seed, erasures: pseudonyms)
        let source = dir.file("source")
        var erasures: [Int: String] = [:]
        let ledger = try Self.openLedger(source, pseudonyms: pseudonyms)
        let counts = try await Self.write(steps, into: ledger, erasures: &erasures, batching: seed)
        ledger.close()
        // The history holds what it is meant to.
        for kind in ["appended", "rejected", "duplicate", "transaction", "binding", "grant", "rules"] {
            #expect(counts[kind, default: 0] > 0, "seed \(seed): no \(kind) in \(counts)")
        }
        if pseudonyms { #expect(counts["erasure", default: 0] > 0, "seed \(seed): no erasure in \(counts)") }
        let expected = try Self.answers(source)

        // backup, then restore
        let backup = dir.file("backup")
        _ = try await storeLedgerSucceeds(["backup", backup, "--data", source])
        let restored = dir.file("restored")
        _ = try await storeLedgerSucceeds(["restore", backup, "--data", restored])
        try await expectSameAnswers("backup and restore", restored, as: expected, seed: seed)

        // export --complete, then import
        let export = dir.file("export.ndjson")
        try (try await storeLedgerSucceeds(["export", "--complete", "--data", source]))
            .write(toFile: export, atomically: true, encoding: .utf8)
        let imported = dir.file("imported")
        _ = try await storeLedgerSucceeds(["import", export, "--data", imported])
        try await expectSameAnswers("export and import", imported, as: expected, seed: seed)

        // import --pseudonyms: a ledger without them rewritten under them
        if !pseudonyms {
            let rewritten = dir.file("rewritten")
            _ = try await storeLedgerSucceeds(["import", "--pseudonyms", export, "--data", rewritten])
            try await expectSameAnswers("import --pseudonyms", rewritten, as: expected, seed: seed)
        }

        // a replica rebuilt from the stream
        let replica = dir.file("replica")
        let rebuilt = try Self.openLedger(replica, pseudonyms: pseudonyms)
        try await Self.write(steps, into: rebuilt, erasures: &erasures, batching: seed ^ 0x5eed)
        rebuilt.close()
        try await expectSameAnswers("a replica rebuilt from the stream", replica, as: expected, seed: seed)
    }
}
