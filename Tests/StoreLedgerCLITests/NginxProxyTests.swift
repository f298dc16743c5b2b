import Foundation
import LedgerClient
import LedgerTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Finding the tools

/// An executable on the usual paths, or nil.
func installedTool(_ name: String) -> String? {
    ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/sbin", "/bin"].map { $0 + "/" + name }
        .first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick for port 0).
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EMFILE) }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p -> Int32 in
            guard bind(fd, p, length) == 0 else { return -1 }
            return getsockname(fd, p, &length)
        }
    }
    guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
    return Int(UInt16(bigEndian: address.sin_port))
}

// MARK: - The recipe with its paths replaced

/// deploy/nginx/storeledger.conf made runnable in a scratch folder: every site-specific path and the port replaced,
/// wrapped in a main configuration of its own (no system file is read or written).
struct NginxRecipe {
    static let path = ExampleFiles.repositoryRoot + "/deploy/nginx/storeledger.conf"
    /// The console's recipe, beside it.
    static let consolePath = ExampleFiles.repositoryRoot + "/deploy/nginx/storeledger-console.conf"
    static let hostName = "ledger.example.com"

    struct RecipeChanged: Error, CustomStringConvertible {
        var description: String
    }

    /// The recipe with `replacements` applied; each must occur in it, so an edited recipe fails loudly here.
    static func instantiate(_ replacements: [(String, String)], recipe: String = path) throws -> String {
        var text = try String(contentsOfFile: recipe, encoding: .utf8)
        for (from, to) in replacements {
            guard text.contains(from) else {
                throw RecipeChanged(description: "\(recipe) no longer contains '\(from)'")
            }
            text = text.replacingOccurrences(of: from, with: to)
        }
        return text
    }
}

/// One nginx master process running a scratch configuration in the foreground.
final class NginxProcess {
    let process: ChildProcess
    let errorLog: String

    init(executable: String, prefix: String, configuration: String) throws {
        errorLog = prefix + "/error.log"
        // `-t` first, so a configuration nginx refuses fails with nginx's own words.
        let check = try runProcess(executable, ["-t", "-p", prefix, "-c", configuration, "-e", errorLog], deadline: 30)
        guard check.status == 0 else {
            throw NginxRecipe.RecipeChanged(description: "nginx -t refused the configuration: \(check.stderr)")
        }
        process = try ChildProcess(executable, ["-p", prefix, "-c", configuration, "-e", errorLog])
    }

    /// SIGTERM is nginx's fast shutdown; the workers exit with the master.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// What `curl` got: the HTTP status and the body.
struct CurlAnswer {
    var status: Int
    var body: String
    var exitStatus: Int32
    var stderr: String
}

// MARK: - Tests

extension LiveProcesses {
    /// Apple's webhook over HTTPS, through the documented nginx recipe, to a real `storeledger serve` on its Unix socket.
    @Suite("nginx in front of the socket", .serialized, .timeLimit(.minutes(2)))
    struct NginxProxyTests {
        static let nginx = installedTool("nginx")
        static let openssl = installedTool("openssl")
        static let curl = installedTool("curl")

        // Skipped, not failed, where nginx is not installed (a developer's machine); .ci/run installs it, so CI runs it.
        @Test(
            .enabled(
                if: nginx != nil && openssl != nil && curl != nil,
                "nginx, openssl or curl is not installed (apt-get install nginx openssl curl; .ci/run does)"
            )
        )
        func aSignedV2NotificationReachesTheLedgerThroughNginxAndNothingElseIsExposed() async throws {
            try await withTaskExecutorPreference(TestExecutor.shared) { try await throughNginx() }
        }

        private func throughNginx() async throws {
            let scratch = try TemporaryDirectory(prefix: "sl-nginx")
            defer { scratch.remove() }
            let pki = TestPKI.shared

            // The ledger: signatures required, trusting the test PKI's root.
            try Data(pki.rootDER).write(to: URL(fileURLWithPath: scratch.file("root.cer")))
            let config =
                #"{"bundleId": "\#(AppleFixtures.bundleId)", "trustedRoots": ["root.cer"], "requireSignatures": true}"#
            try Data(config.utf8).write(to: URL(fileURLWithPath: scratch.file("config.json")))
            let server = try ServerProcess(
                data: scratch.file("ledger"),
                arguments: ["--config", scratch.file("config.json")]
            )
            defer { server.killAndWait() }
            try await server.waitUntilAnswering()

            // A self-signed certificate for the recipe's host name.
            let openssl = try runProcess(
                Self.openssl!,
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                    "-subj", "/CN=\(NginxRecipe.hostName)", "-addext", "subjectAltName=DNS:\(NginxRecipe.hostName)",
                    "-keyout", scratch.file("key.pem"), "-out", scratch.file("cert.pem"),
                ],
                deadline: 60
            )
            #expect(openssl.status == 0, "openssl: \(openssl.stderr)")

            // The recipe, its paths and port replaced, in a main configuration of its own.
            let port = try freeLoopbackPort()
            let site = try NginxRecipe.instantiate([
                ("unix:/run/storeledger/ledger.sock;", "unix:\(server.socketPath);"),
                ("/etc/letsencrypt/live/\(NginxRecipe.hostName)/fullchain.pem", scratch.file("cert.pem")),
                ("/etc/letsencrypt/live/\(NginxRecipe.hostName)/privkey.pem", scratch.file("key.pem")),
                ("listen 443 ssl;", "listen 127.0.0.1:\(port) ssl;"),
                ("listen [::]:443 ssl;", ""),
                ("/var/log/nginx/", scratch.path + "/"),
            ])
            try Data(site.utf8).write(to: URL(fileURLWithPath: scratch.file("storeledger.conf")))
            // The console's recipe on a port of its own, with a password file of one person.
            let consolePort = try freeLoopbackPort()
            let hash = try runProcess(Self.openssl!, ["passwd", "-apr1", "s3cret-Pass"], deadline: 30)
            #expect(hash.status == 0, "openssl passwd: \(hash.stderr)")
            try Data("staff:\(hash.stdout.trimmingCharacters(in: .whitespacesAndNewlines))\n".utf8)
                .write(to: URL(fileURLWithPath: scratch.file("console.htpasswd")))
            let console = try NginxRecipe.instantiate(
                [
                    ("listen 10.0.0.5:8443 ssl;", "listen 127.0.0.1:\(consolePort) ssl;"),
                    ("/etc/ssl/certs/ledger-console.pem", scratch.file("cert.pem")),
                    ("/etc/ssl/private/ledger-console.key", scratch.file("key.pem")),
                    ("/etc/nginx/storeledger-console.htpasswd", scratch.file("console.htpasswd")),
                    ("/var/log/nginx/", scratch.path + "/"),
                ], recipe: NginxRecipe.consolePath)
            try Data(console.utf8).write(to: URL(fileURLWithPath: scratch.file("storeledger-console.conf")))
            let temp = scratch.file("tmp")
            try FileManager.default.createDirectory(atPath: temp, withIntermediateDirectories: true)
            let main = """
                # Workers run as root only because this test does (the socket is root's, mode 0660); in production they
                # run as www-data, a member of the socket's group (docs/deploy.md).
                \(geteuid() == 0 ? "user root root;" : "")
                daemon off;
                worker_processes 1;
                pid \(scratch.file("nginx.pid"));
                error_log \(scratch.file("error.log")) info;
                events { worker_connections 64; }
                http {
                    client_body_temp_path \(temp)/body;
                    proxy_temp_path \(temp)/proxy;
                    fastcgi_temp_path \(temp)/fastcgi;
                    uwsgi_temp_path \(temp)/uwsgi;
                    scgi_temp_path \(temp)/scgi;
                    include \(scratch.file("storeledger.conf"));
                    include \(scratch.file("storeledger-console.conf"));
                }
                """
            try Data(main.utf8).write(to: URL(fileURLWithPath: scratch.file("nginx.conf")))
            let nginx = try NginxProcess(
                executable: Self.nginx!,
                prefix: scratch.path,
                configuration: scratch.file("nginx.conf")
            )
            defer { nginx.stop() }

            func https(
                _ method: String, _ path: String, body: [UInt8]? = nil, port: Int = port, user: String? = nil
            ) throws -> CurlAnswer {
                var arguments = [
                    "-sS", "--max-time", "20", "--cacert", scratch.file("cert.pem"),
                    "--resolve", "\(NginxRecipe.hostName):\(port):127.0.0.1", "-X", method,
                    "-o", scratch.file("answer"), "-w", "%{http_code}",
                ]
                if let user { arguments += ["-u", user] }
                if let body {
                    try Data(body).write(to: URL(fileURLWithPath: scratch.file("body")))
                    arguments += ["-H", "Content-Type: application/json", "--data-binary", "@" + scratch.file("body")]
                }
                arguments.append("https://\(NginxRecipe.hostName):\(port)\(path)")
                let run = try runProcess(Self.curl!, arguments, deadline: 30)
                let answer = (try? String(contentsOfFile: scratch.file("answer"), encoding: .utf8)) ?? ""
                return CurlAnswer(
                    status: Int(run.stdout) ?? 0,
                    body: answer,
                    exitStatus: run.status,
                    stderr: run.stderr
                )
            }

            // Wait until nginx accepts TLS connections (bounded).
            var ready = false
            let deadline = Date().addingTimeInterval(20)
            while !ready, Date() < deadline, nginx.process.isRunning {
                ready = try https("GET", "/").status == 404
                if !ready { try await Task.sleep(for: .milliseconds(50)) }
            }
            let log = (try? String(contentsOfFile: nginx.errorLog, encoding: .utf8)) ?? ""
            try #require(ready, "nginx did not answer over TLS: \(log)")

            // Apple's V2 notification, as Apple POSTs it.
            let transactionId = "2000000000000077"
            let uuid = "5b0b5c4e-8f2a-4a7e-9d8c-000000000077"
            let notification = AppleFixtures.v2Notification(
                type: "DID_RENEW",
                subtype: nil,
                pki: pki,
                notificationUUID: uuid,
                transaction: AppleFixtures.v2Transaction(
                    transactionId: transactionId,
                    originalTransactionId: "2000000000000070"
                )
            )
            let first = try https("POST", "/v1/apple/notifications", body: notification)
            #expect(first.exitStatus == 0, "curl: \(first.stderr)")
            #expect(first.status == 200, "\(first.body)")
            let result = try #require(try JSONSerialization.jsonObject(with: Data(first.body.utf8)) as? [String: Any])
            #expect(result["status"] as? String == "appended", "\(first.body)")
            let kinds = (result["events"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String }
            #expect(kinds.sorted() == ["notification", "renewal", "transaction"], "\(first.body)")

            // nginx passes the ledger's answer through unchanged: the same body again, once over the socket and once
            // through nginx, gets byte-identical answers.
            let client = try AsyncLedgerClient(socketPath: server.socketPath, timeoutSeconds: 10)
            let direct = try await client.post("/v1/apple/notifications", body: notification)
            let proxied = try https("POST", "/v1/apple/notifications", body: notification)
            #expect(direct.status == 200)
            #expect(direct.text.contains(#""status":"duplicate""#), "\(direct.text)")
            #expect(proxied.status == direct.status)
            #expect(proxied.body == direct.text)

            // The event is in the ledger, its signature verified against the trusted root.
            let events = try await client.get("/v1/events?after=0")
            let stored = events.text.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            let keys = Set(stored.compactMap { $0["key"] as? String })
            #expect(keys.contains("notification:\(uuid)"), "\(events.text)")
            #expect(keys.contains(transactionId), "\(events.text)")
            #expect(stored.allSatisfy { $0["signature"] as? String == "verified" }, "\(events.text)")
            #expect(try await client.get("/v1/transactions/\(transactionId)").status == 200)

            // Nothing else is exposed: reads, other writes and metrics are 404 at nginx; a GET of the route is 405.
            for (method, path) in [
                ("GET", "/v1/customers/x"), ("GET", "/v1/health"), ("GET", "/v1/events"), ("POST", "/v1/events"),
                ("POST", "/v1/bindings"), ("GET", "/metrics"), ("GET", "/v1/subscriptions/2000000000000070"),
                ("POST", "/v1/apple/notificationsX"), ("POST", "/v1/apple/notifications/x"),
            ] {
                let answer = try https(method, path, body: method == "POST" ? Array("{}".utf8) : nil)
                #expect(answer.status == 404, "\(method) \(path): \(answer.status) \(answer.body)")
                #expect(answer.body.contains(#""code":"not_found""#), "\(method) \(path): \(answer.body)")
            }
            #expect(try https("GET", "/v1/apple/notifications").status == 405)

            // The console, through its own recipe: a password is needed, and then only GET of /console/ passes.
            #expect(try https("GET", "/console/", port: consolePort).status == 401, "no password")
            #expect(try https("GET", "/console/", port: consolePort, user: "staff:wrong").status == 401, "a wrong one")
            let page = try https("GET", "/console/", port: consolePort, user: "staff:s3cret-Pass")
            #expect(page.status == 200 && page.body.contains("<h1>Overview · Production</h1>"), "\(page.status)")
            let subscription = try https(
                "GET", "/console/subscriptions/2000000000000070", port: consolePort, user: "staff:s3cret-Pass")
            #expect(subscription.status == 200 && subscription.body.contains("<h2>Events (3)</h2>"), "\(subscription.body)")
            #expect(try https("GET", "/console", port: consolePort, user: "staff:s3cret-Pass").status == 301)
            #expect(
                try https("POST", "/console/", body: Array("{}".utf8), port: consolePort, user: "staff:s3cret-Pass").status
                    == 403, "read-only")
            for path in ["/v1/customers/x", "/v1/events", "/metrics", "/v1/health"] {
                #expect(try https("GET", path, port: consolePort, user: "staff:s3cret-Pass").status == 404, "\(path)")
            }
            // And the notification server does not serve the console.
            #expect(try https("GET", "/console/").status == 404)

            // nginx's body limit is the server's maxBodyBytes (16 MiB, LedgerConfiguration.Limits): a body of exactly
            // that size reaches the ledger (which refuses blank text as invalid_json), one byte more is refused by nginx
            // with the ledger's error shape.
            let atLimit = try https("POST", "/v1/apple/notifications", body: [UInt8](repeating: 0x20, count: 16 << 20))
            #expect(atLimit.status == 400, "\(atLimit.body)")
            #expect(atLimit.body.contains(#""code":"invalid_json""#), "\(atLimit.body)")
            let tooLarge = try https(
                "POST",
                "/v1/apple/notifications",
                body: [UInt8](repeating: 0x20, count: (16 << 20) + 1)
            )
            #expect(tooLarge.status == 413, "\(tooLarge.body)")
            #expect(tooLarge.body.contains(#""code":"too_large""#), "\(tooLarge.body)")

            // Only the notification's three events were written (the duplicates and the refused bodies wrote none).
            let health = try await client.get("/v1/health")
            #expect(health.text.contains(#""lastSeq":3"#), "\(health.text)")

            // With the server stopped nginx cannot open the socket: its own 502 has the ledger's error shape too
            // (docs/deploy.md, "When nginx cannot open the socket"), not nginx's HTML page.
            server.signal(SIGTERM)
            #expect(try await server.waitForExit() == 0)
            let unreachable = try https("POST", "/v1/apple/notifications", body: notification)
            #expect(unreachable.status == 502, "\(unreachable.body)")
            #expect(unreachable.body.contains(#""code":"connect""#), "\(unreachable.body)")
        }
    }
}
