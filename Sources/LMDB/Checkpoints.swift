internal import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a write-ahead journal in front of an environment opened with `unsafeNoSync` needs from LMDB to survive an
/// OS crash or a power loss: a snapshot whose pages no later commit may overwrite, and that snapshot's meta page, to
/// be written back over the newer ones when the newer ones may name pages that never reached the disk.
///
/// LMDB 0.9 (this distribution's 0.9.24) has no `MDB_PREVSNAPSHOT`, and without fsync on commit the kernel may write
/// a newer meta page before the pages it names. A commit only ever writes pages that are free in every live snapshot
/// (copy on write), and a page freed by transaction T is reused only once every reader is past T. So while a read
/// transaction opened on snapshot K stays open, every page of K stays as it was on disk once K was synced; writing
/// K's meta page into both meta slots then brings back exactly snapshot K.
extension Environment {
    /// Holds a read transaction on the newest snapshot, so that no later commit reuses its pages, until `release()`.
    ///
    /// Call it with no write transaction in flight (under `pausingWrites`) to pin the snapshot of the last commit.
    /// The pin reads nothing: it only keeps a reader slot at that snapshot's transaction id.
    public func pinSnapshot() throws -> PinnedSnapshot {
        var txn: OpaquePointer?
        try check(insideLMDB { mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn) }, "mdb_txn_begin(pin)")
        return PinnedSnapshot(handle: txn!, transactionID: Int(mdb_txn_id(txn!)))
    }

    /// Runs `body` while no write transaction runs (holding the writer's lock): what `body` sees of the environment is
    /// the last commit, and no commit starts until it returns.
    public func pausingWrites<R>(_ body: () throws -> R) rethrows -> R {
        writerLock.lock()
        defer { writerLock.unlock() }
        return try body()
    }

    /// The meta page of the newest commit, as LMDB wrote it into the data file (from the page cache: it may not be
    /// on disk yet). Call it with no write transaction in flight (under `pausingWrites`).
    public func currentMetaPage() throws -> MetaPage {
        let txnid = info.lastTransactionID
        let pageSize = info.pageSize
        var fd: Int32 = -1
        try check(mdb_env_get_fd(handle, &fd), "mdb_env_get_fd")
        var bytes = [UInt8](repeating: 0, count: pageSize)
        let slot = txnid % 2
        let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, pageSize, off_t(slot * pageSize)) }
        guard read == pageSize else {
            throw LMDBError(code: read < 0 ? errno : EIO, operation: "pread(meta page \(slot))")
        }
        guard let page = MetaPage(bytes), page.transactionID == txnid else {
            throw LMDBError(code: MDB_CORRUPTED, operation: "meta page \(slot) does not hold transaction \(txnid)")
        }
        return page
    }

    /// `fdatasync` of the data file: every commit so far, and the meta page of the newest, are on disk when it
    /// returns. Safe while another thread commits (what that thread writes meanwhile may or may not be included).
    public func syncDataFile() throws {
        try sync(force: true)
    }
}

/// A read transaction held open to keep one snapshot's pages from being reused (`Environment.pinSnapshot`).
public final class PinnedSnapshot: @unchecked Sendable {
    private let handle: OpaquePointer
    private let lock = Mutex()
    private var released = false
    /// The transaction id of the pinned snapshot.
    public let transactionID: Int

    init(handle: OpaquePointer, transactionID: Int) {
        self.handle = handle
        self.transactionID = transactionID
    }

    /// Ends the read transaction: later commits may reuse the snapshot's pages. Idempotent.
    public func release() {
        lock.lock()
        defer { lock.unlock() }
        guard !released else { return }
        released = true
        mdb_txn_abort(handle)
    }

    deinit { release() }
}

/// An LMDB 0.9 meta page (page 0 or 1 of the data file): the page header (16 bytes), then `MDB_meta` — magic,
/// version, map address and size, the free and main databases' records (48 bytes each), the last page number and
/// the transaction id.
public struct MetaPage: Sendable, Equatable {
    /// The whole page, as read from the data file.
    public let bytes: [UInt8]

    static let headerSize = 16
    static let magic: UInt32 = 0xBEEF_C0DE
    static let dataVersion: UInt32 = 1
    static let metaFlag: UInt16 = 0x08
    static let lastPageOffset = headerSize + 4 + 4 + 8 + 8 + 2 * 48
    static let transactionIDOffset = lastPageOffset + 8

    /// The page, when it is an LMDB 0.9 meta page of this machine's byte order.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= Self.transactionIDOffset + 8 else { return nil }
        self.bytes = bytes
        guard load(UInt32.self, at: Self.headerSize) == Self.magic,
            load(UInt32.self, at: Self.headerSize + 4) == Self.dataVersion,
            load(UInt16.self, at: 10) & Self.metaFlag != 0
        else { return nil }
    }

    /// The transaction that wrote it.
    public var transactionID: Int { Int(load(UInt64.self, at: Self.transactionIDOffset)) }
    /// The last page the snapshot uses: the data file must hold `(lastPage + 1) × page size` bytes.
    public var lastPage: Int { Int(load(UInt64.self, at: Self.lastPageOffset)) }

    private func load<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        bytes.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
    }

    /// Writes this page into both meta slots of the data file open as `fd` (page 0 and page 1, each with its own page
    /// number), then `fdatasync`: LMDB opens the file at this snapshot. Only for a file no process has open.
    public func restore(into fd: Int32) throws {
        for slot in 0..<2 {
            var page = bytes
            withUnsafeBytes(of: UInt64(slot).littleEndian) { page.replaceSubrange(0..<8, with: $0) }
            let written = page.withUnsafeBytes { pwrite(fd, $0.baseAddress, page.count, off_t(slot * page.count)) }
            guard written == page.count else {
                throw LMDBError(code: written < 0 ? errno : EIO, operation: "pwrite(meta page \(slot))")
            }
        }
        guard fdatasync(fd) == 0 else { throw LMDBError(code: errno, operation: "fdatasync(meta pages)") }
    }

    /// The meta pages of the data file open as `fd`, page size `pageSize` (nil for a slot that is not one).
    public static func read(from fd: Int32, pageSize: Int) -> [MetaPage?] {
        (0..<2).map { slot in
            var bytes = [UInt8](repeating: 0, count: pageSize)
            let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, pageSize, off_t(slot * pageSize)) }
            return read == pageSize ? MetaPage(bytes) : nil
        }
    }
}
