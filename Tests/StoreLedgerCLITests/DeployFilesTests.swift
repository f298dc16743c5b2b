import Foundation
import LedgerClient
import LedgerTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension LiveProcesses {
    /// deploy/storeledger.service: its ExecStart is a command line the real CLI runs, and systemd accepts the unit.
    @Suite("deploy/storeledger.service", .serialized, .timeLimit(.minutes(1)))
    struct DeployFilesTests {
        static let unitPath = ExampleFiles.repositoryRoot + "/deploy/storeledger.service"

        /// The unit's `ExecStart=` words.
        static func execStart() throws -> [String] {
            let unit = try String(contentsOfFile: unitPath, encoding: .utf8)
            let line = try #require(
                unit.split(separator: "\n").first { $0.hasPrefix("ExecStart=") },
                "no ExecStart= line"
            )
            return line.dropFirst("ExecStart=".count).split(separator: " ").map(String.init)
        }

        @Test func execStartServesWithTheFlagsTheCLIHasAndStopsCleanlyOnSIGTERM() async throws {
            try await withTaskExecutorPreference(TestExecutor.shared) { try await execStartServes() }
        }

        private func execStartServes() async throws {
            let scratch = try TemporaryDirectory(prefix: "sl-unit")
            defer { scratch.remove() }
            try FileManager.default.createDirectory(atPath: scratch.file("run"), withIntermediateDirectories: true)
            try Data("{}".utf8).write(to: URL(fileURLWithPath: scratch.file("config.json")))
            // What systemd would make: StateDirectory, RuntimeDirectory; the binary where `swift build` put it.
            let replacements = [
                "/usr/local/bin/storeledger": storeledgerExecutable(), "/var/lib/storeledger": scratch.file("state"),
                "/etc/storeledger/config.json": scratch.file("config.json"),
                "/run/storeledger/ledger.sock": scratch.file("run/ledger.sock"),
            ]
            let words = try Self.execStart()
            #expect(words.first == "/usr/local/bin/storeledger")
            #expect(words.dropFirst().first == "serve")
            for path in replacements.keys { #expect(words.contains(path), "ExecStart no longer names \(path)") }
            let command = words.map { replacements[$0] ?? $0 }

            let process = try ChildProcess(
                command[0], Array(command.dropFirst()), environment: ["STORELEDGER_LOG_LEVEL": "warning"],
                stderr: scratch.file("serve.log"))
            defer {
                if process.isRunning {
                    kill(process.processIdentifier, SIGKILL)
                    process.waitUntilExit()
                }
            }
            let socket = scratch.file("run/ledger.sock")
            var answered = false
            let deadline = ContinuousClock.now + .seconds(30)
            while !answered, ContinuousClock.now < deadline, process.isRunning {
                if let client = try? AsyncLedgerClient(socketPath: socket, timeoutSeconds: 2) {
                    answered = (try? await client.get("/v1/health"))?.status == 200
                }
                if !answered { try await Task.sleep(for: .milliseconds(25)) }
            }
            let log = (try? String(contentsOfFile: scratch.file("serve.log"), encoding: .utf8)) ?? ""
            try #require(answered, "the unit's ExecStart \(command) did not serve on \(socket): \(log)")
            #expect(
                FileManager.default.fileExists(atPath: scratch.file("state/data.mdb")),
                "the ledger is in StateDirectory"
            )

            // KillSignal=SIGTERM: drain, remove the socket, exit 0 (systemd's Restart=on-failure then stays quiet).
            kill(process.processIdentifier, SIGTERM)
            let stopBy = ContinuousClock.now + .seconds(15)
            while process.isRunning, ContinuousClock.now < stopBy { try await Task.sleep(for: .milliseconds(20)) }
            #expect(!process.isRunning)
            if !process.isRunning { #expect(process.terminationStatus == 0) }
            #expect(!FileManager.default.fileExists(atPath: socket))
        }

        @Test(
            .enabled(
                if: installedTool("systemd-analyze") != nil,
                "systemd-analyze is not installed (Debian's systemd package has it)"
            )
        )
        func systemdAnalyzeVerifyAcceptsTheUnit() throws {
            let scratch = try TemporaryDirectory(prefix: "sl-unit")
            defer { scratch.remove() }
            // The only complaint `verify` may have on a build machine is the binary's absence: point it at the build's.
            let unit = try String(contentsOfFile: Self.unitPath, encoding: .utf8)
                .replacingOccurrences(
                    of: "ExecStart=/usr/local/bin/storeledger",
                    with: "ExecStart=" + storeledgerExecutable()
                )
            try Data(unit.utf8).write(to: URL(fileURLWithPath: scratch.file("storeledger.service")))
            let verify = try runProcess(
                installedTool("systemd-analyze")!,
                ["verify", scratch.file("storeledger.service")],
                deadline: 60
            )
            #expect(verify.status == 0, "systemd-analyze verify: \(verify.stdout)\(verify.stderr)")
            #expect(
                verify.stderr.isEmpty && verify.stdout.isEmpty,
                "systemd-analyze verify: \(verify.stdout)\(verify.stderr)"
            )
        }
    }
}
