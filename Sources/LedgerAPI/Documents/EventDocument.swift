import Foundation
import LedgerCore
import LedgerStore
import LedgerErrors

// MARK: - Events (`storeledger events --json`, `export`, `GET /v1/events`, `GET /v1/transactions/{id}`)

/// The JSON form of one stored event: its `Codable` form (written with `JSONWriter.encodable`), the fact under its
/// kind's own fields.
public struct EventDocument: Encodable, Sendable {
    public var seq: UInt64
    public var kind: Fact.Kind
    /// The key the event is stored under (transaction id or synthetic key).
    public var key: String
    public var transactionId: String?
    public var originalTransactionId: String?
    public var environment: AppStoreEnvironment
    public var source: FactSource
    public var signature: SignatureStatus
    public var receivedAt: UnixMillis
    public var observedAt: UnixMillis
    public var appUserId: String?
    /// Hex SHA-256 of the raw input.
    public var rawDigest: String
    /// Hex hash-chain link after this event.
    public var chainHash: String
    public var fact: FactBody
    /// The raw input, base64 (export only).
    public var raw: String?
    /// The stored event, base64: the exact bytes the hash chain covers, which `import` writes back (export only).
    public var stored: String?
    /// The seq of the first event of the input this event came from, under which its raw input is stored once
    /// (export only).
    public var rawKey: UInt64?

    /// The fact's own fields, under its kind's shape.
    public enum FactBody: Encodable, Sendable {
        case transaction(TransactionFact)
        case renewal(RenewalInfoFact)
        case notification(NotificationFact)
        case binding(BindingClaim)
        case reconciliation(ReconciliationFact)
        case rules(RulesChange)
        case grant(OperatorGrant)
        case erasure(Erasure)

        public func encode(to encoder: any Encoder) throws {
            switch self {
            case .transaction(let f): try f.encode(to: encoder)
            case .renewal(let f): try f.encode(to: encoder)
            case .notification(let f): try f.encode(to: encoder)
            case .binding(let f): try f.encode(to: encoder)
            case .reconciliation(let f): try f.encode(to: encoder)
            case .grant(let f): try f.encode(to: encoder)
            case .erasure(let f): try f.encode(to: encoder)
            case .rules(let f):
                // The configuration file's own keys (`products`, `bindingPolicy`) and when they were applied.
                var c = encoder.container(keyedBy: RulesKeys.self)
                try c.encode(f.appliedAt, forKey: .appliedAt)
                try c.encode(f.rules.bindingPolicy, forKey: .bindingPolicy)
                try c.encode(f.rules.catalog, forKey: .products)
            }
        }

        private enum RulesKeys: String, CodingKey { case appliedAt, bindingPolicy, products }
    }

    public init(_ stored: StoredEvent, raw: [UInt8]? = nil) {
        let e = stored.event
        seq = e.seq
        kind = e.fact.kind
        key = e.fact.eventKey
        transactionId = e.fact.transactionId?.rawValue
        originalTransactionId = e.fact.originalTransactionId?.rawValue
        environment = e.fact.environment
        source = e.metadata.source
        signature = e.metadata.signature
        receivedAt = e.metadata.receivedAt
        observedAt = e.metadata.observedAt
        appUserId = e.metadata.appUserId?.rawValue
        rawDigest = lowercaseHex(e.metadata.rawDigest)
        chainHash = lowercaseHex(stored.chainHash)
        switch e.fact {
        case .transaction(let f): fact = .transaction(f)
        case .renewal(let f): fact = .renewal(f)
        case .notification(let f): fact = .notification(f)
        case .binding(let f): fact = .binding(f)
        case .reconciliation(let f): fact = .reconciliation(f)
        case .rules(let f): fact = .rules(f)
        case .grant(let f): fact = .grant(f)
        case .erasure(let f): fact = .erasure(f)
        }
        self.raw = raw.map { Data($0).base64EncodedString() }
    }

    /// A line of `storeledger export`: the event with its raw input, its stored bytes and its raw key.
    public init(_ exported: ExportedEvent) {
        self.init(exported.stored, raw: exported.raw)
        stored = Data(exported.bytes).base64EncodedString()
        rawKey = exported.stored.rawKey
    }
}

/// `GET /v1/transactions/{id}`: every revision recorded for one transaction id, oldest first.
public struct TransactionDocument: Encodable, Sendable {
    public var transactionId: String
    public var events: [EventDocument]

    public init(transactionId: String, events: [EventDocument]) {
        self.transactionId = transactionId
        self.events = events
    }
}

// MARK: - Refused inputs (`storeledger rejected --json`)

/// The JSON form of one refused input.
public struct RejectedDocument: Encodable, Sendable {
    public var number: UInt64
    public var receivedAt: UnixMillis
    public var code: String
    public var message: String
    public var size: Int
    /// The kept bytes, base64.
    public var raw: String
    /// A request refused as a whole: its method and target, and the size of its header fields.
    public var request: String?
    public var headerBytes: Int?
    /// The record as the `rejected` store keeps it, base64: what `import` writes back (export only).
    public var record: String?
    /// true: the refusal named a person the ledger forgot, and its message, bytes and request are gone
    /// (docs/privacy.md); absent otherwise.
    public var erased: Bool?

    public init(_ r: RejectedInput) {
        number = r.number
        receivedAt = r.receivedAt
        code = r.code.rawValue
        message = r.message
        size = r.size
        raw = Data(r.raw).base64EncodedString()
        request = r.request
        headerBytes = r.headerBytes
        erased = r.erased ? true : nil
    }
}

// MARK: - The export's lines

extension EventDocument {
    /// Writes the export's line of an event (without its newline): the bytes
    /// `json.encodable(EventDocument(ExportedEvent(stored:bytes:raw:)))` writes with sorted keys (a test compares
    /// them), written member by member in key order from the bytes where they lie, so that no document, hex or base64
    /// string is made and no member is moved. The fact is written through its `Codable` form, as there. `raw` writes
    /// the raw input's base64 string (an export encodes each input once for all its events). `json` must sort keys.
    public static func writeExportLine(
        _ stored: StoredEvent, bytes: UnsafeRawBufferPointer, people: [String: String?] = [:], to json: inout JSONWriter,
        raw: (inout JSONWriter) -> Void
    ) throws {
        precondition(json.sortedKeys, "the export's documents have sorted keys")
        let e = stored.event
        json.beginObject()
        if let user = e.metadata.appUserId {
            json.key("appUserId")
            json.string(user.rawValue)
        }
        json.key("chainHash")
        json.string(hexOf: stored.chainHash)
        json.key("environment")
        json.string(e.fact.environment.rawValue)
        json.key("fact")
        switch e.fact {
        case .transaction(let f): try json.encodable(f)
        case .renewal(let f): try json.encodable(f)
        case .notification(let f): try json.encodable(f)
        case .binding(let f): try json.encodable(f)
        case .reconciliation(let f): try json.encodable(f)
        case .rules(let f): try json.encodable(FactBody.rules(f))
        case .grant(let f): try json.encodable(f)
        case .erasure(let f): try json.encodable(f)
        }
        json.key("key")
        json.string(e.fact.eventKey)
        json.key("kind")
        json.string(e.fact.kind.rawValue)
        json.key("observedAt")
        json.number(e.metadata.observedAt)
        if let otid = e.fact.originalTransactionId {
            json.key("originalTransactionId")
            json.string(otid.rawValue)
        }
        // A ledger with pseudonyms: the people the input names, pseudonym → value (null: forgotten, and its raw
        // bytes with them), so that an import seals it as the ledger did.
        if !people.isEmpty {
            json.key("people")
            json.beginObject()
            for (pseudonym, value) in people.sorted(by: { $0.key < $1.key }) {
                json.key(pseudonym)
                json.string(value)
            }
            json.endObject()
        }
        json.key("raw")
        raw(&json)
        json.key("rawDigest")
        json.string(hexOf: e.metadata.rawDigest)
        json.key("rawKey")
        json.number(stored.rawKey)
        json.key("receivedAt")
        json.number(e.metadata.receivedAt)
        json.key("seq")
        json.number(e.seq)
        json.key("signature")
        json.string(e.metadata.signature.rawValue)
        json.key("source")
        json.string(e.metadata.source.rawValue)
        json.key("stored")
        json.string(base64Of: bytes)
        if let tid = e.fact.transactionId {
            json.key("transactionId")
            json.string(tid.rawValue)
        }
        json.endObject()
    }
}
