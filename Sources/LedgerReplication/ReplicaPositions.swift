import Foundation
import NATSClient

/// A ledger replica's record in `<stream>_REPLICAS`.
public struct ReplicaPosition: Codable, Sendable, Equatable {
    public var node: String
    /// The last stream sequence the replica had appended when it last recorded (at its start, or an erasure).
    public var applied: UInt64
    /// The stream sequence of the last erasure the replica appended or learned of (0: none).
    public var erasure: UInt64
}

/// Where each ledger replica of the intake stands, kept in a small stream of its own (`<stream>_REPLICAS`, one
/// message per replica, the newest kept): the last stream sequence it appended, and the last erasure it knows of.
///
/// It is what lets the intake stream forget an erased person: once every replica recorded here has appended an
/// erasure, the messages before it (the inputs that named the person, as received) are needed by nobody, and the
/// stream is purged up to it. A replica records its place when it starts and whenever it appends an erasure, so the
/// last one to pass an erasure sees everyone past it. A replica that is gone for good keeps its record, and holds the
/// purge back, until its record is removed (docs/scaling.md).
struct ReplicaPositions: Sendable {
    typealias Position = ReplicaPosition

    let jetStream: JetStream
    let stream: String
    let subjectPrefix: String

    init(jetStream: JetStream, intakeStream: String, intakeSubjectPrefix: String) {
        self.jetStream = jetStream
        self.stream = intakeStream + "_REPLICAS"
        self.subjectPrefix = intakeSubjectPrefix + "-replicas"
    }

    /// Makes the stream when missing.
    func prepare(replicas: Int) async throws {
        try await jetStream.addStream(
            .init(name: stream, subjects: [subjectPrefix + ".*"], numReplicas: replicas, maxMsgsPerSubject: 1))
    }

    func record(_ position: Position) async throws {
        _ = try await jetStream.publish(
            subjectPrefix + "." + position.node, payload: Array(try JSONEncoder().encode(position)))
    }

    /// The last erasure any replica knows of, and the replicas that have not appended it yet; nil when none is
    /// known. The stream may be purged up to the erasure once `behind` is empty.
    static func lastErasure(of all: [Position]) -> (erasure: UInt64, behind: [Position])? {
        guard let erasure = all.map(\.erasure).max(), erasure > 0 else { return nil }
        return (erasure, all.filter { $0.applied < erasure })
    }

    /// Every replica's last record, in the order they were written.
    func all() async throws -> [Position] {
        var positions: [Position] = []
        var next: UInt64 = 1
        while let message = try await jetStream.message(stream: stream, from: next, subject: subjectPrefix + ".*") {
            if let position = try? JSONDecoder().decode(Position.self, from: Data(message.payload)) {
                positions.append(position)
            }
            next = message.seq + 1
        }
        return positions
    }
}
