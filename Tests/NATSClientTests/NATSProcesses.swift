#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LedgerTestSupport
import NATSClient
import Testing

/// `nats-server` where the distribution installs it (`apt-get install nats-server`; .ci/run does), else nil: the
/// tests that need it are skipped with that message.
let natsServerPath: String? = ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"]
    .first { FileManager.default.isExecutableFile(atPath: $0) }
let natsMissing: Comment = "nats-server is not installed (apt-get install nats-server; .ci/run does)"

/// A TCP port nobody listens on right now (the kernel's choice for port 0).
func freePort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// NATS servers with JetStream on loopback, each a real `nats-server` process with its own store directory: one
/// alone, or three in a cluster. Killed (SIGKILL) and restarted by the tests; `stopAll()` at the end.
final class NATSCluster: @unchecked Sendable {
    struct Node {
        var name: String
        var port: Int
        var clusterPort: Int
        var config: String
        var process: ChildProcess?
    }

    let scratch: String
    private(set) var nodes: [Node]

    /// `size` 1: a single server (no cluster block); 3: a cluster named `storeledger`.
    init(size: Int, scratch: String) throws {
        self.scratch = scratch
        var nodes: [Node] = []
        for index in 1...size {
            nodes.append(Node(name: "n\(index)", port: freePort(), clusterPort: freePort(), config: "", process: nil))
        }
        let routes = nodes.map { "nats-route://127.0.0.1:\($0.clusterPort)" }.joined(separator: ", ")
        for index in nodes.indices {
            let node = nodes[index]
            let store = scratch + "/" + node.name
            try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
            var config = """
                server_name: \(node.name)
                listen: 127.0.0.1:\(node.port)
                jetstream { store_dir: "\(store)" }

                """
            if size > 1 {
                config += """
                    cluster {
                      name: storeledger
                      listen: 127.0.0.1:\(node.clusterPort)
                      routes: [\(routes)]
                    }

                    """
            }
            let path = scratch + "/" + node.name + ".conf"
            try config.write(toFile: path, atomically: true, encoding: .utf8)
            nodes[index].config = path
        }
        self.nodes = nodes
        for index in nodes.indices { try start(index) }
    }

    var servers: [NATSServer] { nodes.map { NATSServer(host: "127.0.0.1", port: $0.port) } }
    var url: String { servers.map(\.description).joined(separator: ",") }

    func start(_ index: Int) throws {
        // Its log appended to across restarts.
        let log = scratch + "/" + nodes[index].name + ".log"
        nodes[index].process = try ChildProcess(natsServerPath!, ["-c", nodes[index].config], stderr: log)
    }

    /// kill -9, and waits for the process to be gone.
    func kill9(_ index: Int) {
        guard let process = nodes[index].process else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        nodes[index].process = nil
    }

    /// A cluster of `size` servers, started and answering with JetStream ready.
    static func started(size: Int, scratch: String) async throws -> NATSCluster {
        let cluster = try NATSCluster(size: size, scratch: scratch)
        do {
            let probe = try await NATSConnection.connect(to: cluster.servers, timeout: .seconds(30))
            try await waitForJetStream(probe)
            await probe.close()
        } catch {
            cluster.stopAll()  // never leave servers behind a failed start
            throw error
        }
        return cluster
    }

    func stopAll() {
        for index in nodes.indices { kill9(index) }
    }

    /// Waits until JetStream answers its account info through `connection` (a cluster elects its meta leader first).
    static func waitForJetStream(_ connection: NATSConnection, seconds: Int = 60) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        var last = ""
        while ContinuousClock.now < deadline {
            if let answer = try? await connection.request("$JS.API.INFO", payload: [], timeout: .seconds(2)) {
                let text = String(decoding: answer.payload, as: UTF8.self)
                if !text.contains("\"error\"") { return }
                last = text
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw NATSError.server("JetStream did not become ready: \(last)")
    }
}
