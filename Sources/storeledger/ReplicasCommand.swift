import ArgumentParser
import Foundation
import LedgerErrors
import LedgerReplication
import NATSClient

/// `storeledger replicas --intake URL [--remove NAME]`: the ledger replicas of an intake stream (docs/scaling.md).
struct ReplicasCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replicas",
        abstract: "The ledger replicas of an intake stream: where each stands, and whether an erasure's purge waits.",
        discussion: """
            Each replica (serve --intake … --node NAME) records the last stream sequence it appended and the last \
            erasure it knows of, when it starts and whenever it appends an erasure. Once every replica recorded has appended an erasure, the stream is purged up to it, \
            so that the inputs that named the person are not kept there (docs/privacy.md). A replica that is gone \
            for good holds that purge back: --remove NAME lets it go (its record and its durable consumer). Remove \
            only a replica that will not come back; one started again under its name records itself anew.
            """)

    @Option(name: .long, help: "The NATS servers of the intake, as serve --intake takes them (nats://host:port,…).")
    var intake: String
    @Option(name: .long, help: "Let this replica go: remove its record and its durable consumer.") var remove: String?
    @Flag(name: .long, help: "One JSON document on stdout.") var json = false

    func run() async throws {
        let servers: [NATSServer]
        do { servers = try NATSServer.parseList(intake) } catch { throw ValidationError("--intake: \(error)") }
        if let remove {
            let removed: Bool
            do { removed = try await IntakeReplicas.remove(remove, servers: servers) } catch {
                throw CommandFailure(code: .intakeUnavailable, message: "cannot reach the intake on \(intake): \(error)", json: json)
            }
            guard removed else {
                throw CommandFailure(code: .notFound, message: "the intake has no replica named \(remove)", json: json)
            }
        }
        let overview: IntakeReplicas.Overview
        do { overview = try await IntakeReplicas.overview(servers: servers) } catch {
            throw CommandFailure(code: .intakeUnavailable, message: "cannot read the intake on \(intake): \(error)", json: json)
        }
        if json {
            try printJSON(encoding: overview)
            return
        }
        if let remove { print("removed       \(remove)") }
        print("stream        " + (overview.firstSeq > overview.lastSeq
            ? "empty, next seq \(overview.firstSeq)" : "seq \(overview.firstSeq)…\(overview.lastSeq)"))
        for replica in overview.replicas {
            let erasure = replica.erasure == 0 ? "none" : "\(replica.erasure)"
            print("replica       \(replica.node): had appended seq \(replica.applied) when it last recorded, last erasure \(erasure)")
        }
        if let erasure = overview.purgeWaitsFor {
            print("purge         waits: erasure \(erasure) not yet appended by \(overview.behind.joined(separator: ", "))")
        } else {
            print("purge         none waiting")
        }
    }
}
