#if canImport(Glibc)
import Glibc
#endif
import Foundation
import FuzzSupport
import LedgerAPI
import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerErrors
import Logging
import TestFixtures

// MARK: - Damaged ledgers

/// Opens randomly damaged copies of one small real ledger and reads them as every command does.
///
/// Once per process a ledger is built with the store's own API (transactions and renewals of several subscriptions,
/// bindings, a refund, a Sandbox subscription, one input large enough for overflow pages, refused inputs, a rules
/// change, a grant and a revoke) and its `data.mdb` kept in memory. Each input is damage to that file
/// (`LedgerDamage`: patches, and a cut); the damaged file is written into an empty directory, opened read-only and
/// read as each command reads it: `stats`, `verify`, `events` (every page, by key, by subscription, one by seq, with
/// raw inputs), `timeline` (with its pictures), `customer`, `why`, `grants`, `revenue`, `lifecycle`, `rules`,
/// `replay --check`, `replay --what-if`, `export --complete`, `rejected`, `webhook` (dead letters, position),
/// `reconcile`'s list of subscriptions and `backup`'s compacting copy.
///
/// Opening the damaged ledger walks its data file (`Ledger.checkDataFile`), as every command's open does, so a file
/// the walk refuses is refused by every command before LMDB reads it. On a file the walk passes every command runs,
/// with none of the command line's guards (`FaultGuard`, `lmdbAssertionHandler`): any crash (SIGSEGV, SIGBUS, LMDB's
/// assertion, an ASan report, a Swift trap) or hang is damage the walk missed, and ends the run with an artifact.
/// Every refusal must be thrown as a coded error: a `LedgerError`, or the LMDB wrapper's error (which
/// `LedgerError.from` codes; the commands print either as `error: <code>: …`). Anything else is a finding.
final class Pristine: @unchecked Sendable {
    let file: [UInt8]
    let work: String
    let logger: Logger
    /// The ids the ledger holds, and a few it does not.
    let subscriptions: [(OriginalTransactionID, AppStoreEnvironment)]
    let users: [AppUserID]
    let keys: [String]
    /// Outcomes so far, printed when the process ends.
    var tally: [String: Int] = [:]

    static let at: UnixMillis = AppleFixtures.epoch + 10 * AppleFixtures.day

    init() {
        var logger = Logger(label: "fuzz.damaged")
        logger.logLevel = .critical
        self.logger = logger
        let base = NSTemporaryDirectory() + "storeledger-fuzz-damaged-\(getpid())"
        try? FileManager.default.removeItem(atPath: base)
        work = base + "/ledger"
        let source = base + "/source"
        do {
            var options = Ledger.Options()
            options.unsafeNoSync = true
            options.initialMapSize = 1 << 20
            options.maxMapSize = 64 << 20
            let ledger = try! Ledger(directory: source, options: options, logger: logger)
            try! Self.populate(ledger)
            ledger.close()
        }
        // The ledger closed (and its map unmapped) as it went out of scope: the file is complete.
        file = Array(FileManager.default.contents(atPath: source + "/data.mdb")!)
        finding(
            file.count % LedgerDamage.pageSize == 0 && file.count >= 8 * LedgerDamage.pageSize,
            "the pristine data file is \(file.count) bytes")
        let reopened = try! Self.openReadOnly(source, logger: logger)
        let report = try! reopened.verify()
        finding(report.fault == nil, "the pristine ledger does not verify: \(report.fault!)")
        var subscriptions: [(OriginalTransactionID, AppStoreEnvironment)] = [("0", .production)]
        var users: [AppUserID] = ["nobody"]
        var keys: [String] = ["0"]
        for stored in try! reopened.events(after: 0, limit: 10_000) {
            let fact = stored.event.fact
            if let otid = fact.originalTransactionId, !subscriptions.contains(where: { $0.0 == otid }) {
                subscriptions.append((otid, fact.environment))
            }
            if !keys.contains(fact.eventKey) { keys.append(fact.eventKey) }
            switch fact {
            case .binding(let claim) where !users.contains(claim.appUserId): users.append(claim.appUserId)
            case .grant(let grant) where !users.contains(grant.appUserId): users.append(grant.appUserId)
            default: break
            }
        }
        self.subscriptions = subscriptions
        self.users = users
        self.keys = keys
        print(
            "pristine ledger: \(file.count) bytes, \(file.count / LedgerDamage.pageSize) pages, "
                + "\(try! reopened.lastSeq()) events, \(subscriptions.count - 1) subscriptions, \(users.count - 1) users")
    }

    static func openReadOnly(_ directory: String, logger: Logger) throws -> Ledger {
        var options = Ledger.Options()
        options.readOnly = true
        // A small map: a damaged meta page may name a larger one, which LMDB then maps (and the wrapper checks).
        options.initialMapSize = 1 << 20
        options.maxMapSize = 64 << 20
        return try Ledger(directory: directory, options: options, logger: logger)
    }

    /// A few dozen inputs in several commits, as the server would decode them, and a rules change between them.
    static func populate(_ ledger: Ledger) throws {
        typealias F = AppleFixtures
        let pipeline = IngestPipeline(ledger: ledger, configuration: AppStoreConfiguration(maxInputBytes: 1 << 20))
        func input(_ bytes: [UInt8], user: String? = nil, type: InputType? = nil, at: Int64) -> LedgerInput {
            pipeline.prepare(
                bytes,
                options: .init(forcedType: type, appUserId: user.map { AppUserID($0) }, receivedAt: at), now: at)
        }
        var first: [LedgerInput] = []
        for s in 0..<4 {
            let otid = "20000000000000\(10 + s)"
            for month in 0..<3 {
                let purchase = F.epoch + Int64(month) * 30 * F.day + Int64(s) * F.day
                first.append(
                    input(
                        F.json(
                            F.v2Transaction(
                                transactionId: "\(otid)\(month)", originalTransactionId: otid, purchaseDate: purchase,
                                originalPurchaseDate: F.epoch + Int64(s) * F.day, expiresDate: purchase + 30 * F.day,
                                signedDate: purchase, webOrderLineItemId: "30000000000000\(10 + s)\(month)")),
                        user: month == 0 ? "user\(s)" : nil, at: purchase))
            }
            first.append(input(F.binding(appUserId: "user\(s % 2)", originalTransactionId: otid), at: F.epoch + 5 * F.day))
        }
        first.append(
            input(F.json(F.v2Renewal(originalTransactionId: "2000000000000010", autoRenewStatus: 0)), at: F.epoch + F.day))
        first.append(input(Array("{not json".utf8), at: F.epoch))
        first.append(input(Array("{\"signedPayload\":\"x.y.z\"}".utf8), at: F.epoch))
        _ = try ledger.appendAndWait(first)

        _ = try ledger.applyRules(
            FoldRules(
                catalog: Catalog(products: [
                    F.monthly: ProductConfiguration(type: .autoRenewable, entitlements: ["premium"], group: "g1"),
                    "com.example.gems60": ProductConfiguration(type: .consumable, credits: ["gems": 60]),
                ])),
            raw: Array(#"{"products":{}}"#.utf8), at: F.epoch + 20 * F.day)

        var second: [LedgerInput] = []
        // A refund, a Sandbox subscription, a consumable, a receipt and a V1 notification.
        second.append(
            input(
                F.json(
                    F.v2Transaction(
                        transactionId: "20000000000000110", originalTransactionId: "2000000000000011",
                        signedDate: F.epoch + 40 * F.day, revocationDate: F.epoch + 40 * F.day, revocationReason: 1,
                        revocationType: "REFUND_FULL")),
                at: F.epoch + 40 * F.day))
        second.append(
            input(
                F.json(
                    F.v2Transaction(
                        transactionId: "2000000000000090", originalTransactionId: "2000000000000090",
                        environment: "Sandbox")),
                user: "sandboxer", at: F.epoch))
        second.append(
            input(
                F.json(F.v2Transaction(productId: "com.example.gems60", type: "Consumable", quantity: 3)), user: "user2",
                at: F.epoch))
        second.append(input(F.receiptIOS7(inApp: [F.v1Transaction()]), user: "user3", at: F.epoch))
        second.append(input(F.v1Notification(type: "DID_RENEW", latest: [F.v1Transaction()]), at: F.epoch + F.day))
        // Large enough for overflow pages: its raw input spans several pages.
        second.append(
            input(
                F.json(
                    F.v2Transaction(
                        transactionId: "2000000000000095", originalTransactionId: "2000000000000095",
                        extra: ["padding": String(repeating: "p", count: 12_000)])),
                user: "user4", at: F.epoch))
        // An operator's grant and revoke.
        second.append(
            input(Array(#"{"entitlement":"premium","duration":"P7D","grantId":"g1"}"#.utf8), user: "user5", type: .grant, at: F.epoch))
        second.append(
            input(Array(#"{"revoke":true,"grantId":"g1"}"#.utf8), user: "user5", type: .grant, at: F.epoch + 2 * F.day))
        second.append(input(Array("garbage".utf8), at: F.epoch))
        _ = try ledger.appendAndWait(second)
    }

    // MARK: - One damaged ledger

    /// Writes `bytes` as the data file of an empty ledger directory, and reads it as the commands do.
    func exercise(_ bytes: [UInt8]) {
        try? FileManager.default.removeItem(atPath: work)
        try! FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: work + "/data.mdb", contents: Data(bytes)) else {
            fatalError("cannot write \(work)/data.mdb")
        }
        let ledger: Ledger
        do {
            ledger = try Self.openReadOnly(work, logger: logger)
        } catch {
            record("open", error)
            return
        }
        count("opened")
        runCommands(ledger)
        verifyAndBackup(ledger)
    }

    /// `verify` and `backup`, which walk the file before they read it.
    func verifyAndBackup(_ ledger: Ledger) {
        read("verify") {
            let report = try ledger.verify()
            _ = try JSONWriter.bytes(encoding: report)
        }
        read("backup") {
            let copy = work + "/backup"
            try? FileManager.default.removeItem(atPath: copy)
            try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
            try ledger.copy(to: copy, compact: true)
        }
    }

    /// Every other command's reads.
    func runCommands(_ ledger: Ledger) {
        read("stats") { _ = try ledger.statistics() }
        var seen: [StoredEvent] = []
        read("events") {
            var after: UInt64 = 0
            for _ in 0..<64 {
                let page = try ledger.events(after: after, limit: 100)
                guard let last = page.last else { break }
                for stored in page { _ = try JSONWriter.bytes(encoding: EventDocument(stored)) }
                seen += page
                // A damaged log may hand back a seq that does not move on: the command would ask again from it.
                guard last.event.seq > after else { break }
                after = last.event.seq
            }
        }
        read("events by key") {
            for key in keys + seen.prefix(8).map(\.event.fact.eventKey) {
                for stored in try ledger.events(key: key) { _ = try ledger.raw(of: stored) }
            }
        }
        read("events by seq") {
            for seq: UInt64 in [0, 1, 2, UInt64(seen.count), seen.last?.event.seq ?? 3, .max] { _ = try ledger.event(seq: seq) }
        }
        for (otid, environment) in subscriptions {
            read("events by subscription") {
                for seq in try ledger.events(original: otid, environment: environment).map(\.seq) {
                    _ = try ledger.event(seq: seq)
                }
            }
            read("timeline") {
                for at in [Self.at, AppleFixtures.epoch - 1, Self.at * 2] {
                    for asOf in [nil, 3] as [UInt64?] {
                        guard let view = try ledger.timeline(otid, environment: environment, at: at, asOf: asOf) else {
                            continue
                        }
                        _ = JSONWriter.bytes(of: view)
                        let picture = TimelinePicture(view)
                        _ = picture.svg
                        _ = picture.html
                    }
                }
            }
        }
        for user in users {
            for environment in [AppStoreEnvironment.production, .sandbox] {
                read("customer") {
                    for asOf in [nil, 3] as [UInt64?] {
                        _ = JSONWriter.bytes(of: try ledger.customer(user, environment: environment, at: Self.at, asOf: asOf))
                    }
                }
                read("why") {
                    _ = JSONWriter.bytes(
                        of: try ledger.explain(user, entitlement: "premium", environment: environment, at: Self.at))
                }
                read("grants") {
                    let last = try ledger.lastSeq()
                    let grants = try ledger.grants(user, environment: environment, asOf: last)
                    _ = JSONWriter.bytes(
                        of: GrantsDocument(
                            appUserId: user.rawValue, environment: environment.rawValue, at: Self.at, asOf: last,
                            grants: grants.map { GrantState(record: $0, active: $0.grants(at: Self.at)) }))
                }
                read("revenue") {
                    _ = JSONWriter.bytes(
                        of: RevenueDocument(
                            try ledger.revenue(user: user, environment: environment), rates: nil, withEntries: true))
                }
            }
        }
        read("revenue") {
            _ = JSONWriter.bytes(of: RevenueDocument(try ledger.revenue(), rates: nil, withEntries: false))
            _ = try ledger.revenue(product: AppleFixtures.monthly, from: AppleFixtures.epoch, to: Self.at, asOf: 5)
        }
        read("lifecycle") {
            var after: UInt64 = 0
            for _ in 0..<64 {
                let page = try ledger.lifecycleEvents(after: after, limit: 100)
                for event in page.events { _ = JSONWriter.bytes(of: event) }
                guard !page.events.isEmpty, page.next > after else { break }
                after = page.next
            }
        }
        read("rules") {
            _ = try ledger.rulesChanges()
            _ = try ledger.recordedRules()
            _ = try ledger.rules(asOf: 3)
        }
        read("replay --check") { _ = try ledger.replay(check: true) }
        read("replay --what-if") { _ = try ledger.whatIf(FoldRules(), at: Self.at) }
        read("export") {
            let null = Glibc.open("/dev/null", O_WRONLY | O_CLOEXEC)
            defer { close(null) }
            _ = try EventExport.write(ledger, after: 0, to: null)
            var after: UInt64 = 0
            for _ in 0..<64 {
                let page = try ledger.exportedEvents(after: after, limit: 100)
                for exported in page {
                    _ = try JSONWriter.bytes(encoding: EventDocument(exported), sortedKeys: true)
                }
                guard let last = page.last, last.stored.event.seq > after else { break }
                after = last.stored.event.seq
            }
            var refusals: UInt64 = 0
            for _ in 0..<64 {
                let page = try ledger.exportedRefusals(after: refusals, limit: 100)
                for exported in page { _ = try JSONWriter.bytes(encoding: ExportRefusalLine(exported), sortedKeys: true) }
                guard let last = page.last, last.input.number > refusals else { break }
                refusals = last.input.number
            }
        }
        read("rejected") {
            for refused in try ledger.rejectedInputs(after: 0, limit: 100) {
                _ = try JSONWriter.bytes(encoding: RejectedDocument(refused))
            }
        }
        read("webhook") {
            _ = try ledger.deadLetters()
            _ = try ledger.webhookPosition()
            _ = try ledger.lifecycleEntries(after: nil, limit: 100)
        }
        read("reconcile") {
            for environment in [AppStoreEnvironment.production, .sandbox] {
                _ = try ledger.subscriptions(environment: environment, activeSince: AppleFixtures.epoch)
            }
        }
    }

    /// Runs one command's reads; a refusal must be coded.
    func read(_ command: String, _ body: () throws -> Void) {
        do {
            try body()
            count("\(command): ok")
        } catch {
            record(command, error)
        }
    }

    /// A refusal: a `LedgerError` with a code other than `failed` (which only stands for an error the store did
    /// not code), or the LMDB wrapper's error.
    func record(_ command: String, _ error: any Error) {
        let coded = LedgerError.from(error)
        let kind = error is LedgerError ? "LedgerError" : String(describing: type(of: error))
        finding(
            coded.code != .failed && !coded.message.isEmpty,
            "\(command) threw an uncoded \(type(of: error)): \(error)")
        finding(kind == "LedgerError" || kind == "LMDBError", "\(command) threw \(kind): \(error)")
        count("\(command): \(kind) \(coded.code.rawValue)")
    }

    func count(_ outcome: String) { tally[outcome, default: 0] += 1 }
}

let pristine = Pristine()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let damage = LedgerDamage(Array(UnsafeBufferPointer(start: data, count: size)), fileSize: pristine.file.count)
    pristine.exercise(damage.apply(to: pristine.file))
    return 0
}

/// The entry point SwiftPM links `main` to; prints the outcomes when the process ends (`FUZZ_TALLY=1`).
@_cdecl("FuzzDamagedLedger_main")
public func fuzzDamagedLedgerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    if ProcessInfo.processInfo.environment["FUZZ_TALLY"] != nil {
        atexit {
            for (outcome, count) in pristine.tally.sorted(by: { $0.key < $1.key }) { print("\(count)\t\(outcome)") }
        }
    }
    return runFuzzer(argc, argv, fuzzOne)
}
