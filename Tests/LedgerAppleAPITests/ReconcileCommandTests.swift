import Foundation
import LedgerAppleAPI
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerTestSupport
import Testing

/// `storeledger reconcile`, the executable, against the local HTTPS Apple: the renewals-3-and-4 story end to end,
/// and no secret in any output or in the ledger's files.
@Suite(.blocking) struct ReconcileCommandTests {
    /// A ledger directory with a configuration naming the key, the test chain's root and the fake Apple.
    struct Setup {
        let dir: TemporaryDirectory
        let data: String
        let config: String
        let key: OperatorKey

        init(server: FakeAppStoreServer, dir: TemporaryDirectory, withAPI: Bool = true) throws {
            self.dir = dir
            data = dir.file("ledger")
            try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
            key = try OperatorKey(directory: dir)
            try Data(TestPKI.shared.rootDER).write(to: URL(fileURLWithPath: dir.file("root.cer")))
            var object: [String: Any] = [
                "bundleId": AppleFixtures.bundleId, "trustedRoots": ["root.cer"], "requireSignatures": true,
            ]
            if withAPI {
                object["appStoreServerAPI"] = [
                    "keyFile": (key.path as NSString).lastPathComponent, "keyId": OperatorKey.keyId,
                    "issuerId": OperatorKey.issuerId, "baseURL": server.baseURL,
                    "trustedCertificates": [server.caCertificatePath], "maxRetries": 2, "maxRetryWaitSeconds": 5,
                ] as [String: Any]
            }
            config = dir.file("config.json")
            try Data(AppleFixtures.json(object)).write(to: URL(fileURLWithPath: config))
        }

        /// Runs the executable and waits for it off the cooperative pool, which the other suites' in-process servers
        /// need (two cores: a pool thread blocked for seconds stalls them).
        func run(_ arguments: [String], debugLogs: Bool = false) async throws -> ProcessOutput {
            var variables = ProcessInfo.processInfo.environment
            if debugLogs { variables["STORELEDGER_LOG_LEVEL"] = "debug" }
            let environment = variables
            let arguments = arguments + ["--data", data, "--config", config]
            let executable = storeledgerExecutable()
            return try await withCheckedThrowingContinuation { continuation in
                DispatchQueue.global().async {
                    continuation.resume(
                        with: Result {
                            try runProcess(executable, arguments, environment: environment, deadline: 120)
                        })
                }
            }
        }
    }

    @Test func reconcileFillsTheGapsAndKeepsTheSecret() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-cli")
        defer { dir.remove() }
        let now = currentMillis()
        let story = RenewalStory(now: now)
        let server = try FakeAppStoreServer(directory: dir, respond: story.apple())
        defer { server.shutdown() }
        let setup = try Setup(server: server, dir: dir)
        var outputs: [ProcessOutput] = []

        let inputs = [story.binding] + Array(story.bodies[0..<3])
        for (i, body) in inputs.enumerated() {
            try Data(body).write(to: URL(fileURLWithPath: dir.file("input-\(i).json")))
        }
        let ingest = try await setup.run(["ingest", "--quiet"] + inputs.indices.map { dir.file("input-\($0).json") })
        #expect(ingest.status == 0, "\(ingest.stderr)")
        let seqBefore = try await lastSeq(setup)

        // A dry run: the gaps, and nothing written.
        let dry = try await setup.run(["reconcile", "--original", RenewalStory.otid, "--dry-run", "--json"], debugLogs: true)
        outputs.append(dry)
        #expect(dry.status == 0, "\(dry.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: dry.stdout.data(using: .utf8)!) as? [String: Any])
        #expect(report["dryRun"] as? Bool == true)
        #expect(report["complete"] as? Bool == false)
        let subscription = try #require((report["subscriptions"] as? [[String: Any]])?.first)
        #expect((subscription["transactionsAdded"] as? [[String: Any]])?.compactMap { $0["transactionId"] as? String }
            == ["2000000000000004", "2000000000000005"])
        #expect(subscription["notificationsUndelivered"] as? [String] == Array(story.uuids[3...]))
        #expect(try await lastSeq(setup) == seqBefore)

        // The real run: the gap report, the two notifications appended, the check recorded.
        let run = try await setup.run(["reconcile", "--original", RenewalStory.otid], debugLogs: true)
        outputs.append(run)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("\(RenewalStory.otid): incomplete"))
        #expect(run.stdout.contains("transaction 2000000000000004 added"))
        #expect(run.stdout.contains("notification \(story.uuids[4]) added: DID_RENEW"))
        #expect(run.stdout.contains("Apple never delivered: \(story.uuids[3]), \(story.uuids[4])"))
        #expect(try await lastSeq(setup) == seqBefore + 7)

        let timeline = try await setup.run(["timeline", RenewalStory.otid, "--json"])
        let document = try #require(try JSONSerialization.jsonObject(with: timeline.stdout.data(using: .utf8)!) as? [String: Any])
        #expect(document["status"] as? String == "active")
        let reconciliation = try #require(document["reconciliation"] as? [String: Any])
        #expect(reconciliation["transactionsAdded"] as? [String] == ["2000000000000004", "2000000000000005"])
        #expect(reconciliation["revision"] as? String == "rev-c")
        #expect(reconciliation["seq"] as? Int == Int(seqBefore) + 7)
        let table = try await setup.run(["timeline", RenewalStory.otid])
        #expect(table.stdout.contains("CHECKED AGAINST APPLE"))
        #expect(table.stdout.contains("5 transactions at Apple, 2 missing: 2000000000000004, 2000000000000005"))

        for command in [["replay", "--check"], ["verify"]] {
            let out = try await setup.run(command)
            #expect(out.status == 0, "\(command): \(out.stderr)")
            outputs.append(out)
        }

        // Nothing of the key or of a token in what was printed or stored: neither the key's PEM body nor a token
        // (its header is the same for every token of this key).
        let pem = try String(contentsOfFile: setup.key.path, encoding: .utf8)
        let keyBody = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let tokenHeader = TestPKI.base64URL(Array(#"{"alg":"ES256","kid":"2X9R4HXF34","typ":"JWT"}"#.utf8))
        let stored = try Data(contentsOf: URL(fileURLWithPath: setup.data + "/data.mdb"))
        for secret in [String(keyBody.prefix(40)), tokenHeader] {
            for out in outputs {
                #expect(!out.stdout.contains(secret) && !out.stderr.contains(secret))
            }
            #expect(stored.range(of: secret.data(using: .utf8)!) == nil)
        }
        #expect(outputs[1].stderr.contains("/inApps/v2/history/"), "debug logs name the requests")
        #expect(server.requests.allSatisfy { setup.key.problem(with: $0) == nil })
    }

    @Test func withoutTheKeyOrAScopeTheCommandSaysWhy() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-cli-config")
        defer { dir.remove() }
        let server = try FakeAppStoreServer(directory: dir) { _ in .json([:]) }
        defer { server.shutdown() }
        let noScope = try await Setup(server: server, dir: dir).run(["reconcile"])
        #expect(noScope.status == 2)
        #expect(noScope.stderr.contains("--original"))

        let noSection = try await Setup(server: server, dir: dir, withAPI: false).run(["reconcile", "--original", "1"])
        #expect(noSection.status == 1)
        #expect(noSection.stderr.contains("error: invalid_configuration:"))
        #expect(noSection.stderr.contains("appStoreServerAPI"))

        let setup = try Setup(server: server, dir: dir)
        try FileManager.default.removeItem(atPath: setup.key.path)
        let noKey = try await setup.run(["reconcile", "--original", "1"])
        #expect(noKey.status == 1)
        #expect(noKey.stderr.contains("error: invalid_configuration: cannot read the in-app purchase key file"))
        #expect(server.requests.isEmpty)
    }

    @Test func reconcileMissedFindsWhatNobodyPostedAndOrderFindsAnOrder() async throws {
        let dir = try TemporaryDirectory(prefix: "reconcile-cli-missed")
        defer { dir.remove() }
        let now = currentMillis()
        let others = ThreePurchases(now: now)
        let missed = MissedPurchase(now: now)
        let server = try FakeAppStoreServer(directory: dir, respond: missed.fakeApple(beside: others).respond)
        defer { server.shutdown() }
        let setup = try Setup(server: server, dir: dir)
        for (i, body) in others.ledgerInputs.enumerated() {
            try Data(body).write(to: URL(fileURLWithPath: dir.file("input-\(i).json")))
        }
        let ingest = try await setup.run(["ingest", "--quiet"] + others.ledgerInputs.indices.map { dir.file("input-\($0).json") })
        #expect(ingest.status == 0, "\(ingest.stderr)")

        // The whole app's undelivered notifications: the purchase nobody posted is found and appended.
        let pass = try await setup.run(["reconcile", "--missed", "--json"])
        #expect(pass.status == 0, "\(pass.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: pass.stdout.data(using: .utf8)!) as? [String: Any])
        #expect(report["mode"] as? String == "missed")
        #expect(report["requests"] as? Int == 1)
        let window = try #require(report["window"] as? [String: Any])
        #expect(window["onlyFailures"] as? Bool == true)
        let checks = try #require(report["subscriptions"] as? [[String: Any]])
        let check = try #require(checks.first { $0["originalTransactionId"] as? String == MissedPurchase.otid })
        #expect((check["notificationsAdded"] as? [[String: Any]])?.compactMap { $0["notificationUUID"] as? String } == [MissedPurchase.uuid])
        #expect(check["recordedAt"] is Int)

        let customer = try await setup.run(["customer", MissedPurchase.user, "--json"])
        let answer = try #require(try JSONSerialization.jsonObject(with: customer.stdout.data(using: .utf8)!) as? [String: Any])
        let entitlement = try #require((answer["entitlements"] as? [String: Any])?[AppleFixtures.yearly] as? [String: Any])
        #expect(entitlement["active"] as? Bool == true)
        let table = try await setup.run(["timeline", MissedPurchase.otid])
        #expect(table.stdout.contains("the whole app's notifications since"))

        // An order Apple does not know: the report, then apple_not_found.
        let unknown = try await setup.run(["reconcile", "--order", "ZZZZZZZZZZ"])
        #expect(unknown.status == 1)
        #expect(unknown.stdout.contains("order ZZZZZZZZZZ: Apple knows no such order for this app (status 1)"))
        #expect(unknown.stderr.contains("error: apple_not_found:"))
        // The order on the customer's emailed receipt: its purchase, which the ledger now holds, and nothing missing.
        let known = try await setup.run(["reconcile", "--order", "MLK3Q8V2PZ"])
        #expect(known.status == 0, "\(known.stderr)")
        #expect(known.stdout.contains("order MLK3Q8V2PZ: 1 transaction: \(MissedPurchase.otid)"))
        #expect(known.stdout.contains("\(MissedPurchase.otid): complete"))

        // --since and --all-notifications belong to --missed.
        for arguments in [["--original", "1", "--since", "2026-01-01T00:00:00Z"], ["--user", "u1", "--all-notifications"]] {
            let usage = try await setup.run(["reconcile"] + arguments)
            #expect(usage.status == 2, "\(arguments)")
        }
        #expect(server.requests.allSatisfy { setup.key.problem(with: $0) == nil })
    }

    private func lastSeq(_ setup: Setup) async throws -> UInt64 {
        let out = try await setup.run(["stats", "--json"])
        let stats = try #require(try JSONSerialization.jsonObject(with: out.stdout.data(using: .utf8)!) as? [String: Any])
        return UInt64(try #require(stats["lastSeq"] as? Int))
    }
}
