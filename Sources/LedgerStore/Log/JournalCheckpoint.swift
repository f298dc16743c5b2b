#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import Foundation
import LMDB
import LedgerErrors

/// `DIR/journal/checkpoint`: the last LMDB snapshot known to be on disk, and where the journal goes on from it.
///
/// - `meta`: the meta page of that snapshot (LMDB's own two meta pages may both be newer, naming pages that were
///   still only in the page cache when the machine stopped);
/// - `position`: the first journal record that may not be in that snapshot;
/// - `bootID`: the kernel's boot id when it was written. The page cache survives a process crash (kill -9), not an
///   OS crash or a power loss: a checkpoint from another boot, not `clean`, means LMDB's newest commits may be torn;
/// - `clean`: written at a clean close, after the last commit was synced: LMDB holds everything, the journal nothing;
/// - `dataInode`: the inode of the `data.mdb` it describes, so that a journal is never applied to another file.
///
/// Written to `checkpoint.tmp`, synced, renamed over `checkpoint`, and the directory synced: a crash leaves the old
/// one or the new one, whole. A SHA-256 over the rest ends it.
struct JournalCheckpoint: Equatable {
    var clean: Bool
    var bootID: String
    var dataInode: UInt64
    var position: Journal.Position
    var meta: MetaPage

    static let fileName = "checkpoint"
    static let magic = Array("SLCK0001".utf8)

    func encoded() -> [UInt8] {
        var b = Self.magic
        b.append(clean ? 1 : 0)
        let boot = Array(bootID.utf8.prefix(255))
        b.append(UInt8(boot.count))
        b.append(contentsOf: boot)
        BigEndian.append(dataInode, to: &b)
        BigEndian.append(position.segment, to: &b)
        BigEndian.append(UInt64(position.offset), to: &b)
        BigEndian.append(UInt64(meta.bytes.count), to: &b)
        b.append(contentsOf: meta.bytes)
        b.append(contentsOf: SHA256.hash(data: b))
        return b
    }

    init(clean: Bool, bootID: String, dataInode: UInt64, position: Journal.Position, meta: MetaPage) {
        self.clean = clean
        self.bootID = bootID
        self.dataInode = dataInode
        self.position = position
        self.meta = meta
    }

    /// Decodes `encoded()`; nil when the bytes are not a whole checkpoint.
    init?(_ bytes: [UInt8]) {
        guard bytes.count > Self.magic.count + 2 + 32 + 32, bytes.starts(with: Self.magic) else { return nil }
        let body = bytes.dropLast(32)
        guard Array(SHA256.hash(data: Array(body))) == Array(bytes.suffix(32)) else { return nil }
        var at = Self.magic.count
        clean = bytes[at] == 1
        let bootLength = Int(bytes[at + 1])
        at += 2
        guard at + bootLength + 32 <= body.count else { return nil }
        bootID = String(decoding: bytes[at..<(at + bootLength)], as: UTF8.self)
        at += bootLength
        // Measured above: four integers before the end of the body.
        let fields = bytes.withUnsafeBytes { raw in (0..<4).map { BigEndian.uint64(raw, at: at + 8 * $0) } }
        at += 32
        dataInode = fields[0]
        guard let offset = Int(exactly: fields[2]), let metaCount = Int(exactly: fields[3]),
            metaCount == body.count - at, let meta = MetaPage(Array(bytes[at..<body.count]))
        else { return nil }
        position = Journal.Position(segment: fields[1], offset: offset)
        self.meta = meta
    }

    /// The checkpoint in `journalDirectory`; nil when there is none. A damaged one is `corrupted`.
    static func read(_ journalDirectory: String) throws -> JournalCheckpoint? {
        let path = (journalDirectory as NSString).appendingPathComponent(fileName)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        // A file this user may not read is not a damaged one: say which it is.
        if access(path, R_OK) != 0, errno == EACCES || errno == EPERM {
            throw LedgerError(
                code: .permissionDenied,
                message: "cannot read \(path): permission denied (run as the ledger's owner or a member of its group)")
        }
        guard let data = FileManager.default.contents(atPath: path), let checkpoint = JournalCheckpoint([UInt8](data))
        else {
            throw LedgerError.corrupted("the journal's checkpoint \(path) is damaged")
        }
        return checkpoint
    }

    /// Replaces the checkpoint in `journalDirectory`, durably.
    func write(_ journalDirectory: String) throws {
        let path = (journalDirectory as NSString).appendingPathComponent(Self.fileName)
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
        guard fd >= 0 else { throw Journal.failure("create \(temporary)", errno) }
        let bytes = encoded()
        let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, bytes.count, 0) }
        let synced = written == bytes.count && fdatasync(fd) == 0
        let code = errno
        close(fd)
        guard synced else { throw Journal.failure("write \(temporary)", written < 0 || written == bytes.count ? code : ENOSPC) }
        guard rename(temporary, path) == 0 else { throw Journal.failure("rename \(temporary)", errno) }
        Journal.syncDirectory(journalDirectory)
    }

    /// The kernel's id of this boot (`/proc/sys/kernel/random/boot_id`); `override` stands in for it in tests of
    /// recovery after an OS crash.
    static func bootID(override: String?) -> String {
        if let override { return override }
        let id = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? ""
        return id.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
