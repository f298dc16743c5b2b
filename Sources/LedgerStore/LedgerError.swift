import LMDB

/// Why the store could not do what was asked. Compared on the code only.
public struct LedgerError: Error, Hashable, CustomStringConvertible, Sendable {
    public let code: String
    public let message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public static func == (a: LedgerError, b: LedgerError) -> Bool { a.code == b.code }
    public func hash(into h: inout Hasher) { h.combine(code) }
    public var description: String { "\(code): \(message)" }

    /// The writer queue is full: retry later (HTTP 503 with Retry-After).
    public static func overloaded(_ queued: Int) -> LedgerError {
        LedgerError(code: "overloaded", message: "the writer queue holds \(queued) inputs; retry shortly")
    }
    /// The ledger is closing and accepts no more writes.
    public static let shuttingDown = LedgerError(code: "shutting_down", message: "the ledger is closing")
    /// LMDB failed (disk full, map at its maximum, I/O error).
    public static func storage(_ error: any Error) -> LedgerError {
        LedgerError(code: "storage_error", message: "\(error)")
    }
    /// Stored bytes do not decode: the ledger is damaged.
    public static func corrupted(_ what: String) -> LedgerError {
        LedgerError(code: "corrupted", message: what)
    }
    /// The directory holds a ledger of another schema version.
    public static func schemaMismatch(found: UInt64) -> LedgerError {
        LedgerError(
            code: "schema_mismatch",
            message: "ledger schema \(found), this build reads \(StoreLayout.schemaVersion)"
                + (found < StoreLayout.schemaVersion ? "; open it once for writing (storeledger serve, or storeledger replay) to upgrade it" : ""))
    }
    public static let readOnly = LedgerError(code: "read_only", message: "the ledger was opened read-only")
}
