#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LMDB
import LedgerErrors

/// Why the store could not do what was asked. Compared on the code only (`CodedErrorProtocol`).
public struct LedgerError: CodedErrorProtocol {
    public let code: ErrorCode
    public let message: String

    public init(code: ErrorCode, message: String) {
        self.code = code
        self.message = message
    }


    /// The writer queue is full: retry later (HTTP 503 with Retry-After).
    public static func overloaded(_ queued: Int) -> LedgerError {
        LedgerError(code: .overloaded, message: "the writer queue holds \(queued) inputs; retry shortly")
    }
    /// The ledger is closing and accepts no more writes.
    public static let shuttingDown = LedgerError(code: .shuttingDown, message: "the ledger is closing")
    /// LMDB failed: `storage_full` when there was no room (disk full, quota, map at its maximum), else
    /// `storage_error` (an I/O error, a damaged file).
    public static func storage(_ error: any Error) -> LedgerError {
        if let lmdb = error as? LMDBError, lmdb.isStorageFull { return storageFull(lmdb.reason) }
        return LedgerError(code: .storageError, message: "\(error)")
    }
    /// No room for the write (HTTP 503 with Retry-After): nothing of it was written, and the ledger works again once
    /// space is freed.
    public static func storageFull(_ detail: String) -> LedgerError {
        LedgerError(code: .storageFull, message: "disk full: the write was not stored (\(detail)); free space and retry")
    }
    /// Stored bytes do not decode: the ledger is damaged.
    public static func corrupted(_ what: String) -> LedgerError {
        LedgerError(code: .corrupted, message: what)
    }
    /// The directory holds a ledger of another schema version.
    public static func schemaMismatch(found: UInt64) -> LedgerError {
        LedgerError(
            code: .schemaMismatch,
            message: "ledger schema \(found), this build reads \(StoreLayout.schemaVersion)"
                + (found < StoreLayout.schemaVersion ? "; open it once for writing (storeledger serve, or storeledger replay) to upgrade it" : ""))
    }
    public static let readOnly = LedgerError(code: .readOnly, message: "the ledger was opened read-only")

    /// The ledger in `directory` cannot be opened: why, in a code an operator can act on.
    public static func cannotOpen(_ directory: String, _ error: any Error) -> LedgerError {
        let cause = from(error)
        return LedgerError(code: cause.code, message: "cannot open the ledger in \(directory): \(cause.message)")
    }

    /// Any error of the store in its code: a `LedgerError` as it is; an LMDB error as `storage_full`, `corrupted`,
    /// `permission_denied`, `invalid_path` or `storage_error`; anything else as `failed`.
    public static func from(_ error: any Error) -> LedgerError {
        if let ledger = error as? LedgerError { return ledger }
        guard let lmdb = error as? LMDBError else { return LedgerError(code: .failed, message: "\(error)") }
        if lmdb.isStorageFull { return storageFull(lmdb.reason) }
        if lmdb.isDamaged {
            return corrupted("the LMDB files are damaged or not LMDB: \(lmdb.reason)")
        }
        switch lmdb.code {
        case EACCES, EPERM, EROFS:
            return LedgerError(code: .permissionDenied, message: lmdb.reason)
        case ENOTDIR, EISDIR, ENOENT, ELOOP, ENAMETOOLONG:
            return LedgerError(code: .invalidPath, message: "a ledger file is missing or of the wrong kind: \(lmdb.reason)")
        default:
            return LedgerError(code: .storageError, message: lmdb.reason)
        }
    }
}
