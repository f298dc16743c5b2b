#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LedgerClient
import LedgerTestSupport
import Testing

/// Clients that hold connections, trickle bodies or never finish a request, against a real `storeledger serve`:
/// none of them keeps a normal client, or a writer, from being answered.
@Suite("Starvation", .serialized, .timeLimit(.minutes(4)), .blocking)
struct StarvationProcessTests {
    static let health = "GET /v1/health HTTP/1.1\r\nHost: ledger\r\n\r\n"

    /// Starts a server on a fresh ledger with `configuration` and runs `body`.
    func withServer(configuration: String? = nil, _ body: (ServerProcess, String) async throws -> Void) async throws {
        let dir = try TemporaryDirectory(prefix: "sl-starve")
        defer { dir.remove() }
        let data = dir.file("ledger")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        var arguments: [String] = []
        if let configuration {
            try configuration.write(toFile: dir.file("config.json"), atomically: true, encoding: .utf8)
            arguments = ["--config", dir.file("config.json")]
        }
        let server = try ServerProcess(data: data, arguments: arguments)
        defer { server.killAndWait() }
        try await server.waitUntilAnswering()
        try await body(server, dir.path)
    }

    /// Runs the Python `script` (written to `dir/name`) as `nobody` with `arguments`; its standard output is piped.
    static func asNobody(_ script: String, in dir: String, named name: String, _ arguments: [String]) throws
        -> (Process, Pipe)
    {
        try script.write(toFile: dir + "/" + name, atomically: true, encoding: .utf8)
        chmod(dir + "/" + name, 0o644)
        let attacker = Process()
        attacker.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        attacker.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", dir + "/" + name] + arguments
        let out = Pipe()
        attacker.standardOutput = out
        try launch(attacker)
        return (attacker, out)
    }

    /// `count` requests, each on a connection of its own, as a client that connects per request; the statuses.
    func normalClient(_ socket: String, count: Int) async -> [String] {
        await Task.detached {
            (0..<count).map { _ -> String in
                guard let c = try? RawConnection(socket) else { return "no connection" }
                c.send(Self.health)
                return c.readAnswer(seconds: 2).map { String($0.prefix(12)) } ?? "no answer"
            }
        }.value
    }

    /// 600 connections opened and left idle by one client, more than the server's 512 places: a normal client
    /// of the same user, connecting per request, is answered every time at once.
    @Test func idleConnectionsByTheHundredDoNotStarveANormalClient() async throws {
        try await withServer { server, _ in
            var idle: [RawConnection] = []
            for _ in 0..<600 { idle.append(try RawConnection(server.socketPath)) }
            try await Task.sleep(for: .milliseconds(300))
            let answers = await normalClient(server.socketPath, count: 128)
            #expect(answers.filter { $0.hasPrefix("HTTP/1.1 200") }.count == 128, "\(Dictionary(grouping: answers) { $0 }.mapValues(\.count))")
            idle.removeAll()
        }
    }

    /// A user who may not write (`nobody`) holds 520 connections, each trickling a request body a byte at a time:
    /// root's writes are all acknowledged, and a reader is answered.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") && getuid() == 0))
    func aPeerThatMayNotWriteCannotStopTheWriters() async throws {
        try await withServer(configuration: #"{"socket":{"mode":"0666","writers":{"uids":[0]}}}"#) { server, dir in
            // The test's directories on the way to the socket, open to nobody (the temporary directory is).
            chmod(dir, 0o755)
            chmod((server.socketPath as NSString).deletingLastPathComponent, 0o755)
            let script = """
                import socket, sys, time
                held = []
                for i in range(520):
                    s = socket.socket(socket.AF_UNIX)
                    try:
                        s.connect(sys.argv[1])
                        s.sendall(b"POST /v1/events HTTP/1.1\\r\\nHost: l\\r\\nContent-Type: application/json\\r\\nContent-Length: 1000\\r\\n\\r\\n{")
                        held.append(s)
                    except OSError:
                        pass
                print(len(held), flush=True)
                end = time.time() + 20
                while time.time() < end:
                    for s in held:
                        try: s.send(b" ")
                        except OSError: pass
                    time.sleep(2)
                """
            let (attacker, out) = try Self.asNobody(script, in: dir, named: "trickle.py", [server.socketPath])
            defer {
                attacker.terminate()
                attacker.waitUntilExit()
            }
            let opened = String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
            #expect((Int(opened.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 0, "nobody could not connect: \(opened)")
            try await Task.sleep(for: .seconds(1))

            let client = try AsyncLedgerClient(socketPath: server.socketPath, timeoutSeconds: 5)
            var statuses: [Int] = []
            for i in 0..<50 {
                let r = try await client.post("/v1/events", body: Array(transactionEnvelope("w\(i)", user: "root").utf8))
                statuses.append(r.status)
            }
            #expect(statuses.allSatisfy { $0 == 200 }, "root's writes: \(statuses)")
            let answers = await normalClient(server.socketPath, count: 20)
            #expect(answers.allSatisfy { $0.hasPrefix("HTTP/1.1 200") }, "\(answers)")
        }
    }

    /// A body trickled a byte at a time is not held forever: the whole request must arrive within the request
    /// timeout (here 2 s), then 408 and close. A declared size over the limit is 413 at once, whatever its size.
    @Test func aTrickledBodyTimesOutAndAnImpossibleSizeIsRefusedAtOnce() async throws {
        try await withServer(configuration: #"{"limits":{"requestTimeoutSeconds":2}}"#) { server, _ in
            let slow = try RawConnection(server.socketPath)
            slow.send("POST /v1/events HTTP/1.1\r\nHost: l\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
            let start = Date()
            let trickled: (String, Bool) = await Task.detached {
                for _ in 0..<8 {
                    usleep(500_000)
                    if !slow.send(" ") { break }
                }
                return slow.readUntilClosed(seconds: 5)
            }.value
            let elapsed = Date().timeIntervalSince(start)
            #expect(trickled.1 && trickled.0.hasPrefix("HTTP/1.1 408 "), "\(trickled.0.prefix(200))")
            #expect(trickled.0.contains(#""code":"request_timeout""#))
            #expect(elapsed < 6, "held \(elapsed) s")

            for declared in ["9223372036854775807", "18446744073709551616"] {
                let huge = try RawConnection(server.socketPath)
                huge.send("POST /v1/events HTTP/1.1\r\nHost: l\r\nContent-Type: application/json\r\nContent-Length: \(declared)\r\n\r\n")
                let t0 = Date()
                let answer = await Task.detached { huge.readUntilClosed(seconds: 10) }.value
                #expect(answer.0.hasPrefix("HTTP/1.1 413 ") || answer.0.hasPrefix("HTTP/1.1 400 "), "\(declared): \(answer.0.prefix(200))")
                // A server that waited for the body would answer 408 at the 2 s timeout: the status tells it; the
                // bound only says the answer came before the client gave up, with room for a loaded machine.
                #expect(answer.1 && Date().timeIntervalSince(t0) < 5, "\(declared): held \(Date().timeIntervalSince(t0)) s")
            }
            let answers = await normalClient(server.socketPath, count: 5)
            #expect(answers.allSatisfy { $0.hasPrefix("HTTP/1.1 200") }, "\(answers)")
        }
    }

    /// A chunk whose size no body could reach: 2^64 and more does not parse (400 at once); 2^63, which the decoder
    /// takes, then no byte of it, holds the connection only until the request timeout (here 2 s): 408, and the
    /// connection closes. Meanwhile a normal client is answered.
    @Test func aChunkOfAnImpossibleSizeIsRefusedOrTimesOut() async throws {
        try await withServer(configuration: #"{"limits":{"requestTimeoutSeconds":2}}"#) { server, _ in
            let head = "POST /v1/events HTTP/1.1\r\nHost: l\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            let overflowing = try RawConnection(server.socketPath)
            overflowing.send(head + "10000000000000000\r\n")
            let t0 = Date()
            let refused = await Task.detached { overflowing.readUntilClosed(seconds: 10) }.value
            #expect(refused.0.hasPrefix("HTTP/1.1 400 ") && refused.0.contains(#""code":"invalid_body""#), "\(refused.0.prefix(200))")
            // Waiting for the chunk would end in 408 at the 2 s timeout: the 400 above tells the two apart.
            #expect(refused.1 && Date().timeIntervalSince(t0) < 5, "held \(Date().timeIntervalSince(t0)) s")

            let huge = try RawConnection(server.socketPath)
            huge.send(head + "8000000000000000\r\n")
            let t1 = Date()
            async let held = Task.detached { huge.readUntilClosed(seconds: 10) }.value
            let answers = await normalClient(server.socketPath, count: 20)
            #expect(answers.allSatisfy { $0.hasPrefix("HTTP/1.1 200") }, "\(answers)")
            let timedOut = await held
            #expect(timedOut.0.hasPrefix("HTTP/1.1 408 "), "\(timedOut.0.prefix(200))")
            #expect(timedOut.1 && Date().timeIntervalSince(t1) < 6, "held \(Date().timeIntervalSince(t1)) s")
        }
    }

    /// An HTTP/1.0 request without keep-alive gets its answer, with `Connection: close`, and the connection ends.
    @Test func anHTTP10RequestIsAnsweredAndClosed() async throws {
        try await withServer { server, _ in
            let c = try RawConnection(server.socketPath)
            c.send("GET /v1/health HTTP/1.0\r\nHost: ledger\r\n\r\n")
            let (text, closed) = await Task.detached { c.readUntilClosed(seconds: 5) }.value
            #expect(text.hasPrefix("HTTP/1.1 200 "), "\(text.prefix(200))")
            #expect(text.lowercased().contains("connection: close"), "\(text.prefix(300))")
            #expect(closed, "the connection stayed open")
            // With keep-alive, it stays open for the next request.
            let kept = try RawConnection(server.socketPath)
            kept.send("GET /v1/health HTTP/1.0\r\nHost: ledger\r\nConnection: keep-alive\r\n\r\n")
            let first = await Task.detached { kept.readAnswer(seconds: 5) }.value
            #expect(first?.hasPrefix("HTTP/1.1 200 ") == true)
            kept.send(Self.health)
            let second = await Task.detached { kept.readAnswer(seconds: 5) }.value
            #expect(second?.hasPrefix("HTTP/1.1 200 ") == true, "the keep-alive connection was closed")
        }
    }

    /// A reader that may not write (`nobody`) opens 4,096 follow requests on both streams as fast as it can and
    /// closes each at a different step: at once, at once with a reset, after the first bytes of the answer, after them
    /// with a reset. Every follower's place is given back (the gauge is 0 again) and root's follower is answered 200.
    /// Sixteen times the server's 256 places: a place kept by one close in sixteen would leave none. The script opens
    /// every one of them however slow the machine is (a deadline would make the count depend on the load).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") && getuid() == 0))
    func followersClosedAtEveryStepGiveTheirPlacesBack() async throws {
        try await withServer(configuration: #"{"socket":{"mode":"0666","writers":{"uids":[0]}}}"#) { server, dir in
            chmod(dir, 0o755)
            chmod((server.socketPath as NSString).deletingLastPathComponent, 0o755)
            // Something to stream, so that an answer has begun when some of them close.
            let client = try AsyncLedgerClient(socketPath: server.socketPath, timeoutSeconds: 10)
            for i in 0..<3 {
                let r = try await client.post("/v1/events", body: Array(transactionEnvelope("f\(i)", user: "root").utf8))
                #expect(r.status == 200)
            }
            let script = """
                import socket, struct, sys
                path, count = sys.argv[1], int(sys.argv[2])
                routes = [b"/v1/events?after=0&follow=true", b"/v1/lifecycle?after=0&follow=true"]
                opened, began = 0, 0
                for i in range(count):
                    s = socket.socket(socket.AF_UNIX)
                    s.settimeout(5)
                    step = (i // 2) % 4
                    try:
                        s.connect(path)
                        opened += 1
                        s.sendall(b"GET " + routes[i % 2] + b" HTTP/1.1\\r\\nHost: l\\r\\n\\r\\n")
                        if step >= 2 and s.recv(64):
                            began += 1
                        if step % 2 == 1:
                            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    except OSError:
                        pass
                    finally:
                        s.close()
                print(opened, began, flush=True)
                """
            let (attacker, out) = try Self.asNobody(script, in: dir, named: "followers.py", [server.socketPath, "4096"])
            let printed = await Task.detached { () -> String in
                let data = out.fileHandleForReading.readDataToEndOfFile()
                attacker.waitUntilExit()
                return String(decoding: data, as: UTF8.self)
            }.value
            let figures = printed.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
            #expect(figures.count == 2 && figures[0] == 4_096, "nobody opened \(printed)")
            #expect(figures.count == 2 && figures[1] > 1_000, "answers had begun before the close: \(printed)")

            // Each place is given back once its connection's end is seen: wait for that, bounded.
            var followers = -1
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                let metrics = try await client.get("/metrics").text
                followers = metrics.split(separator: "\n").first { $0.hasPrefix("storeledger_event_followers ") }
                    .flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) } ?? -1
                if followers == 0 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(followers == 0, "followers still counted after every connection closed")
            let root = try await client.get("/v1/events?after=0&follow=true&timeout=0.5")
            #expect(root.status == 200, "\(root.text)")
            // The three inputs: each a transaction and its claim.
            #expect(root.text.split(separator: "\n").count == 6, "\(root.text)")
        }
    }
}
