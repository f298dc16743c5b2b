internal import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An error returned by LMDB, or by this wrapper around it.
///
/// Compared on the code only (as swift-certificates does), so tests can match `LMDBError.mapFull` whatever the message.
public struct LMDBError: Error, Hashable, CustomStringConvertible, Sendable {
    /// The MDB (or errno) return code.
    public let code: Int32
    /// What LMDB says about it (`mdb_strerror`) plus the operation that failed.
    public let reason: String

    public init(code: Int32, operation: String) {
        self.code = code
        self.reason = "\(operation): \(String(cString: mdb_strerror(code)))"
    }

    public static func == (lhs: LMDBError, rhs: LMDBError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public var description: String { "LMDBError(\(code)): \(reason)" }

    /// The write found no room: the filesystem is full (`ENOSPC`, or `EIO` on commit with the filesystem full, which
    /// `Environment.write` reports as `ENOSPC`), a quota is exhausted (`EDQUOT`), or the map is at its configured
    /// maximum (`MDB_MAP_FULL` after growing failed). Nothing of the failed transaction was written; freeing space
    /// makes later writes succeed.
    public var isStorageFull: Bool { code == ENOSPC || code == EDQUOT || code == MDB_MAP_FULL }

    /// The file's contents are not a usable LMDB environment: not LMDB at all or both meta pages damaged
    /// (`MDB_INVALID`), another format version, damaged pages (`MDB_CORRUPTED`, `MDB_PAGE_NOTFOUND`), or an earlier
    /// fatal error in this process (`MDB_PANIC`), or a transaction LMDB marked failed after it found a page number
    /// past the end of the data (`MDB_BAD_TXN`: the wrapper ends a transaction at its first error, so a later call
    /// on a failed one only happens when LMDB failed it inside a single call).
    public var isDamaged: Bool {
        code == MDB_INVALID || code == MDB_VERSION_MISMATCH || code == MDB_CORRUPTED || code == MDB_PAGE_NOTFOUND
            || code == MDB_PANIC || code == MDB_INCOMPATIBLE || code == MDB_BAD_TXN
    }

    public static let notFound = LMDBError(code: MDB_NOTFOUND, operation: "lookup")
    public static let keyExists = LMDBError(code: MDB_KEYEXIST, operation: "put")
    public static let mapFull = LMDBError(code: MDB_MAP_FULL, operation: "put")
    public static let mapResized = LMDBError(code: MDB_MAP_RESIZED, operation: "begin")
    public static let readersFull = LMDBError(code: MDB_READERS_FULL, operation: "begin")
    public static let corrupted = LMDBError(code: MDB_CORRUPTED, operation: "read")
    public static let badValueSize = LMDBError(code: MDB_BAD_VALSIZE, operation: "put")
}

@inline(__always)
func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws(LMDBError) {
    if rc != 0 { throw LMDBError(code: rc, operation: operation()) }
}
