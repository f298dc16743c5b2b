import Foundation
import NATSClient

/// What an operator sees of the replicas of an intake stream, and how one that is gone for good is let go
/// (`storeledger replicas`): each replica's record in `STORELEDGER_REPLICAS`, which an erasure's purge of the stream
/// waits on (`ReplicaPositions`).
public enum IntakeReplicas {
    public struct Overview: Codable, Sendable {
        /// The stream's first and last sequence (first > last: empty).
        public var firstSeq: UInt64
        public var lastSeq: UInt64
        public var replicas: [ReplicaPosition]
        /// The erasure whose purge waits for the replicas still behind it (`behind`), if any.
        public var purgeWaitsFor: UInt64?
        public var behind: [String]
    }

    /// The stream's bounds and every replica's record.
    public static func overview(servers: [NATSServer], stream: String = "STORELEDGER", subjectPrefix: String = "storeledger.intake")
        async throws -> Overview
    {
        try await withJetStream(servers) { jetStream in
            guard let info = try await jetStream.streamInfo(stream) else {
                throw NATSError.jetStream(code: 404, errorCode: 10059, description: "there is no stream \(stream)")
            }
            let positions = ReplicaPositions(jetStream: jetStream, intakeStream: stream, intakeSubjectPrefix: subjectPrefix)
            let replicas = try await positions.all()
            let last = ReplicaPositions.lastErasure(of: replicas)
            let waiting = last.flatMap { !$0.behind.isEmpty && info.state.firstSeq <= $0.erasure ? $0 : nil }
            return Overview(
                firstSeq: info.state.firstSeq, lastSeq: info.state.lastSeq, replicas: replicas,
                purgeWaitsFor: waiting?.erasure, behind: waiting?.behind.map(\.node) ?? [])
        }
    }

    /// Lets a replica that is gone for good go: its record (which an erasure's purge waits on) and its durable
    /// consumer are removed. False when it had neither.
    public static func remove(
        _ node: String, servers: [NATSServer], stream: String = "STORELEDGER", subjectPrefix: String = "storeledger.intake"
    ) async throws -> Bool {
        try await withJetStream(servers) { jetStream in
            let positions = ReplicaPositions(jetStream: jetStream, intakeStream: stream, intakeSubjectPrefix: subjectPrefix)
            let purged = try await jetStream.purge(stream: positions.stream, subject: positions.subjectPrefix + "." + node)
            let consumer = try await jetStream.deleteConsumer(stream: stream, name: "ledger-" + node)
            return purged > 0 || consumer
        }
    }

    private static func withJetStream<T: Sendable>(_ servers: [NATSServer], _ body: (JetStream) async throws -> T)
        async throws -> T
    {
        let connection = try await NATSConnection.connect(to: servers, name: "storeledger-replicas")
        do {
            let result = try await body(JetStream(connection))
            await connection.close()
            return result
        } catch {
            await connection.close()
            throw error
        }
    }
}
