#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import LedgerErrors

/// The write-ahead journal of a ledger opened by `serve`: `DIR/journal/`, segment files of group-commit records
/// written one after the other, one `fdatasync` per group. A group is acknowledged once its record is on disk; LMDB
/// then commits it without a sync of its own, and a `JournalCheckpointer` makes LMDB durable in the background, after
/// which the segments before it are recycled.
///
/// A segment is a file of `segmentBytes` zeros made in advance (or an older segment recycled), so that writing a
/// record overwrites allocated blocks and its `fdatasync` flushes only them: no file size or block allocation to
/// journal, as PostgreSQL does with its WAL. Each record is a header — magic, payload length, the segment's number,
/// a 64-bit checksum over those and the payload — and the payload (`JournalRecord`). A record that does not check
/// (zeros, a torn write, a record of the segment's earlier life under another number) ends the segment.
///
/// The writer thread alone calls `write`, `committed` and `discard`; `position` and the spare are shared with the
/// checkpointer under `lock`.
final class Journal: @unchecked Sendable {
    /// A place in the journal: a segment and a byte offset in it.
    struct Position: Comparable, Sendable {
        var segment: UInt64
        var offset: Int
        static func < (a: Position, b: Position) -> Bool { (a.segment, a.offset) < (b.segment, b.offset) }
    }

    static let headerSize = 24
    static let magic: UInt32 = 0x534C_4A31  // "SLJ1"

    let directory: String
    let segmentBytes: Int
    /// Test hook: the process exits (as if killed) right after this many records were made durable, before their
    /// transaction commits.
    private let exitAfterRecords: Int?
    private var recordsWritten = 0

    // Writer thread.
    private var fd: Int32 = -1
    private var segment: UInt64 = 0
    private var end = 0
    /// Where the record of the transaction in flight starts, until it commits or is discarded.
    private var pending: (segment: UInt64, offset: Int, end: Int)?
    /// An fdatasync failed: what reached the disk is unknown, so nothing more is acknowledged (PostgreSQL's rule).
    private var broken: String?

    // Shared with the checkpointer.
    private let lock = NSLock()
    private var committedPosition: Position
    private var spareReady = false

    /// A journal whose first record goes into a new segment numbered `startingSegment` (made of the spare when one is
    /// ready by then).
    init(directory: String, segmentBytes: Int, startingSegment: UInt64, exitAfterRecords: Int? = nil) throws {
        self.directory = directory
        self.segmentBytes = segmentBytes
        self.exitAfterRecords = exitAfterRecords
        committedPosition = Position(segment: startingSegment, offset: 0)
        segment = startingSegment
        spareReady = FileManager.default.fileExists(atPath: sparePath)
    }

    deinit { if fd >= 0 { close(fd) } }

    static func segmentName(_ number: UInt64) -> String { "segment-" + String(format: "%016llx", number) }

    func path(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }
    var sparePath: String { path("spare") }

    /// The end of the last committed record: recovery needs nothing before it once LMDB is synced past it.
    var position: Position {
        lock.lock()
        defer { lock.unlock() }
        return committedPosition
    }

    // MARK: - Writing (the writer thread)

    /// Writes `record` and makes it durable (one `fdatasync`), before its transaction commits.
    func write(_ record: JournalRecord) throws {
        if let broken { throw LedgerError(code: .storageError, message: "the journal cannot be written: \(broken)") }
        let payload = record.encoded()
        let total = Self.headerSize + payload.count
        if fd < 0 {
            try openSegment(segment, atLeast: total)
        } else if end + total > max(segmentBytes, fileSize) {
            try openSegment(segment + 1, atLeast: total)
        }
        var bytes = Self.header(payload: payload, segment: segment)
        bytes.append(contentsOf: payload)
        try pwriteAll(bytes, at: end, what: "a journal record")
        pending = (segment, end, end + total)
        guard fdatasync(fd) == 0 else {
            broken = "fdatasync of \(Self.segmentName(segment)): \(String(cString: strerror(errno)))"
            throw LedgerError(code: .storageError, message: broken!)
        }
        recordsWritten += 1
        if let exitAfterRecords, recordsWritten >= exitAfterRecords { _exit(137) }
    }

    /// The transaction of the last record committed: the record is part of the ledger.
    func committed() {
        guard let pending else { return }
        self.pending = nil
        end = pending.end
        lock.lock()
        committedPosition = Position(segment: pending.segment, offset: pending.end)
        lock.unlock()
    }

    /// The transaction of the last record failed: its header is zeroed, so recovery never applies it.
    func discard() {
        guard let pending else { return }
        self.pending = nil
        guard broken == nil else { return }
        let zeros = [UInt8](repeating: 0, count: Self.headerSize)
        do {
            try pwriteAll(zeros, at: pending.offset, what: "a discarded journal record")
            guard fdatasync(fd) == 0 else { throw LedgerError(code: .storageError, message: "fdatasync") }
        } catch {
            broken = "a failed group's record could not be erased (\(error))"
        }
    }

    private var fileSize: Int {
        var st = stat()
        return fstat(fd, &st) == 0 ? Int(st.st_size) : 0
    }

    private func pwriteAll(_ bytes: [UInt8], at offset: Int, what: String) throws {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, bytes.count - done, off_t(offset + done)) }
            if n < 0 {
                if errno == EINTR { continue }
                let code = errno
                let reason = "cannot write \(what) to \(Self.segmentName(segment)): \(String(cString: strerror(code)))"
                if code == ENOSPC || code == EDQUOT { throw LedgerError.storageFull(reason) }
                throw LedgerError(code: .storageError, message: reason)
            }
            done += n
        }
    }

    /// Switches to segment `number`: the spare made in advance when there is one (renamed, then the directory
    /// synced, so the name survives a crash), else a new file that grows as it is written (slower to sync). A record
    /// larger than a segment gets a segment of its own, as large as it.
    private func openSegment(_ number: UInt64, atLeast needed: Int = 0) throws {
        let target = path(Self.segmentName(number))
        lock.lock()
        let useSpare = spareReady && needed <= segmentBytes
        if useSpare { spareReady = false }
        lock.unlock()
        if useSpare {
            guard rename(sparePath, target) == 0 else { throw Self.failure("rename the spare journal segment", errno) }
        }
        let newFD = open(target, O_RDWR | O_CREAT | O_CLOEXEC, 0o640)
        guard newFD >= 0 else { throw Self.failure("open \(target)", errno) }
        Self.syncDirectory(directory)
        if fd >= 0 { close(fd) }
        fd = newFD
        segment = number
        end = 0
    }

    static func failure(_ what: String, _ code: Int32) -> LedgerError {
        let reason = "journal: cannot \(what): \(String(cString: strerror(code)))"
        if code == ENOSPC || code == EDQUOT { return LedgerError.storageFull(reason) }
        return LedgerError(code: .storageError, message: reason)
    }

    static func syncDirectory(_ path: String) {
        let dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { return }
        _ = fsync(dfd)
        close(dfd)
    }

    // MARK: - Segments (the checkpointer)

    /// Overwrites the segment being written with zeros, durably. Only with writes paused, after a checkpoint at the
    /// journal's position: every record in the segment is then before the checkpoint, and the next is written at
    /// the same offset.
    func zeroCurrentSegment() throws {
        guard fd >= 0 else { return }
        var size = stat()
        guard fstat(fd, &size) == 0 else { throw Self.failure("stat the journal segment", errno) }
        let chunk = [UInt8](repeating: 0, count: 1 << 20)
        var written = 0
        while written < Int(size.st_size) {
            let n = chunk.withUnsafeBytes {
                pwrite(fd, $0.baseAddress, min(chunk.count, Int(size.st_size) - written), off_t(written))
            }
            guard n > 0 else { throw Self.failure("zero the journal segment", errno) }
            written += n
        }
        guard fdatasync(fd) == 0 else { throw Self.failure("sync the journal segment", errno) }
    }

    /// Deletes the spare, which may be a recycled segment that still holds its old records.
    func discardSpare() throws {
        lock.lock()
        spareReady = false
        lock.unlock()
        if unlink(sparePath) != 0 && errno != ENOENT { throw Self.failure("delete the spare journal segment", errno) }
        Self.syncDirectory(directory)
    }

    /// Makes the next segment in advance: an obsolete segment renamed, or zeros written and synced. Returns at once
    /// when a spare is ready.
    func prepareSpare(recycling obsolete: String?) throws {
        lock.lock()
        let ready = spareReady
        lock.unlock()
        guard !ready else {
            if let obsolete { unlink(path(obsolete)) }
            return
        }
        if let obsolete, rename(path(obsolete), sparePath) == 0 {
            // Its old records carry their old segment number and never check under the new one.
        } else {
            let temporary = path("spare.tmp")
            let tfd = open(temporary, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
            guard tfd >= 0 else { throw Self.failure("create \(temporary)", errno) }
            defer { close(tfd) }
            let chunk = [UInt8](repeating: 0, count: 1 << 20)
            var written = 0
            while written < segmentBytes {
                let n = chunk.withUnsafeBytes { pwrite(tfd, $0.baseAddress, min(chunk.count, segmentBytes - written), off_t(written)) }
                guard n > 0 else { throw Self.failure("fill \(temporary)", errno) }
                written += n
            }
            guard fdatasync(tfd) == 0 else { throw Self.failure("sync \(temporary)", errno) }
            guard rename(temporary, sparePath) == 0 else { throw Self.failure("rename \(temporary)", errno) }
        }
        Self.syncDirectory(directory)
        lock.lock()
        spareReady = true
        lock.unlock()
    }

    /// The segment files in `directory`, by number.
    static func segments(in directory: String) -> [(number: UInt64, name: String)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.compactMap { name in
            guard name.hasPrefix("segment-"), let n = UInt64(name.dropFirst("segment-".count), radix: 16) else { return nil }
            return (n, name)
        }.sorted { $0.number < $1.number }
    }

    // MARK: - Records

    static func header(payload: [UInt8], segment: UInt64) -> [UInt8] {
        var h = [UInt8]()
        h.reserveCapacity(headerSize)
        withUnsafeBytes(of: magic.bigEndian) { h.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(payload.count).bigEndian) { h.append(contentsOf: $0) }
        withUnsafeBytes(of: segment.bigEndian) { h.append(contentsOf: $0) }
        let sum = payload.withUnsafeBytes { checksum(segment: segment, $0) }
        withUnsafeBytes(of: sum.bigEndian) { h.append(contentsOf: $0) }
        return h
    }

    /// A 64-bit multiply-xorshift hash of the segment number, the length and the payload, eight bytes at a time. It
    /// tells a whole record from zeros, a torn write or stale bytes; it is no defence against a forger (nothing that
    /// could forge a record is kept out by a hash), at a few instructions per eight bytes where SHA-256 takes ~100.
    static func checksum(segment: UInt64, _ payload: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ segment
        @inline(__always) func mix(_ word: UInt64) {
            h = (h ^ word) &* 0xBF58_476D_1CE4_E5B9
            h ^= h >> 31
        }
        mix(UInt64(payload.count))
        var at = 0
        while at + 8 <= payload.count {
            mix(UInt64(littleEndian: payload.loadUnaligned(fromByteOffset: at, as: UInt64.self)))
            at += 8
        }
        var tail: UInt64 = 0
        while at < payload.count {
            tail = tail << 8 | UInt64(payload[at])
            at += 1
        }
        mix(tail)
        h ^= h >> 32
        h &*= 0x94D0_49BB_1331_11EB
        return h ^ (h >> 29)
    }

    /// The records of segment file `name` from `offset`, in order, up to the first that does not check.
    static func records(in directory: String, segment: UInt64, name: String, from offset: Int) throws
        -> [(offset: Int, end: Int, payload: [UInt8])]
    {
        let path = (directory as NSString).appendingPathComponent(name)
        guard let data = FileManager.default.contents(atPath: path) else {
            throw LedgerError(code: .storageError, message: "journal: cannot read \(path)")
        }
        let bytes = [UInt8](data)
        var found: [(offset: Int, end: Int, payload: [UInt8])] = []
        var at = offset
        func number(_ from: Int, _ count: Int) -> UInt64 {
            bytes[from..<(from + count)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
        while at + headerSize <= bytes.count {
            let length = Int(number(at + 4, 4))
            guard number(at, 4) == UInt64(Self.magic), number(at + 8, 8) == segment,
                at + headerSize + length <= bytes.count
            else { break }
            let payload = Array(bytes[(at + headerSize)..<(at + headerSize + length)])
            guard payload.withUnsafeBytes({ checksum(segment: segment, $0) }) == number(at + 16, 8) else { break }
            found.append((offset: at, end: at + headerSize + length, payload: payload))
            at += headerSize + length
        }
        return found
    }
}
