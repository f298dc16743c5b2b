import LedgerCore
import LedgerStore
import LedgerErrors

// MARK: - Result (docs/socket-api.md: one per input)

/// `seq` only when something was written, `error` only when refused; an event's ids only when it has them.
extension AppendResult: JSONDocument {
    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("status"); o.string(status.rawValue)
            if let seq { o.key("seq"); o.number(seq) }
            o.key("events")
            o.array(events) { j, e in
                j.object { o in
                    o.key("seq"); o.number(e.seq)
                    o.key("kind"); o.string(e.kind.rawValue)
                    if let t = e.transactionId { o.key("transactionId"); o.string(t) }
                    if let t = e.originalTransactionId { o.key("originalTransactionId"); o.string(t) }
                    if let g = e.grantId { o.key("grantId"); o.string(g) }
                }
            }
            if let error {
                o.key("error")
                o.object { o in
                    o.key("code"); o.string(error.code.rawValue)
                    o.key("message"); o.string(error.message)
                }
            }
        }
    }
}

/// `{"results":[result…]}`: the answer of `POST /v1/events`, one result per input, in order.
public struct ResultsDocument: JSONDocument, Sendable {
    public var results: [AppendResult]

    public init(results: [AppendResult]) { self.results = results }

    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("results"); o.array(results) { $1.write(to: &$0) }
        }
    }
}

// MARK: - Errors (docs/socket-api.md, "Errors")

/// `{"error":{"code","message"}}`: the body of every error answer, and the CLI's `--json` failure.
public struct ErrorDocument: JSONDocument, Hashable, Sendable {
    public var error: CodedError

    public init(_ error: CodedError) { self.error = error }

    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("error")
            o.object { o in
                o.key("code"); o.string(error.code.rawValue)
                o.key("message"); o.string(error.message)
            }
        }
    }
}

// MARK: - Health (`GET /v1/health`)

/// `{"status":"ok","lastSeq":N}`.
public struct HealthDocument: JSONDocument, Hashable, Sendable {
    public var status: String
    public var lastSeq: UInt64

    public init(status: String = "ok", lastSeq: UInt64) {
        self.status = status
        self.lastSeq = lastSeq
    }

    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("status"); o.string(status)
            o.key("lastSeq"); o.number(lastSeq)
        }
    }
}
