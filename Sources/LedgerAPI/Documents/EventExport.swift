#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LedgerCore
import LedgerStore
import LedgerErrors

// MARK: - `storeledger export`

/// The events of an export: NDJSON, one line per event with its raw input and stored bytes (base64), the
/// `EventDocument` of an `ExportedEvent` with sorted keys, in log order — what `storeledger export` writes and
/// `storeledger import` reads back (a complete export adds its first, refusal and end lines around them).
public enum EventExport {
    /// What an export wrote.
    public struct Summary: Sendable, Hashable {
        public var events: UInt64
        public var bytes: UInt64
        /// The seq of the last event written (`after` when none was).
        public var lastSeq: UInt64
        /// The chain link after that event (nil when none was written).
        public var chainHead: [UInt8]?
    }

    /// Lines are gathered into a buffer of about this size and written with one `write(2)`.
    static let bufferBytes = 512 << 10

    /// Writes every event with seq > `after` to the file descriptor `fd`; `progress` is told the events written and
    /// how many there are to write, now and then. A write that fails is `storage_full` (no room) or `storage_error`;
    /// an event whose stored bytes or raw input are missing ends the export as `corrupted`.
    public static func write(
        _ ledger: Ledger, after: UInt64 = 0, to fd: Int32, progress: ProgressHandler? = nil
    ) throws -> Summary {
        try write(ledger, after: after, to: fd, progress: progress, batchSize: 4_096)
    }

    /// `write(_:after:to:progress:)`, reading `batchSize` events per read transaction.
    static func write(_ ledger: Ledger, after: UInt64 = 0, to fd: Int32, progress: ProgressHandler? = nil, batchSize: Int)
        throws -> Summary
    {
        var total = try ledger.lastSeq()
        var summary = Summary(events: 0, bytes: 0, lastSeq: after, chainHead: nil)
        var json = JSONWriter(capacity: bufferBytes + (64 << 10), sortedKeys: true)
        func flush() throws {
            try json.withBytes { try writeAll(fd, $0) }
            summary.bytes += UInt64(json.byteCount)
            json.removeAll()
        }
        // The events of one input are neighbours in the log and each carries its raw input: encoded once.
        var rawText = (key: UInt64?.none, text: Base64Text())
        try ledger.audit.forEachEvent(after: after, batchSize: batchSize) { stored, bytes, raw, people in
            if rawText.key != stored.rawKey { rawText = (stored.rawKey, Base64Text(of: raw)) }
            try EventDocument.writeExportLine(stored, bytes: bytes, people: people, to: &json) { $0.string(rawText.text) }
            json.endLine()
            summary.events += 1
            summary.lastSeq = stored.event.seq
            summary.chainHead = stored.chainHash
            if json.byteCount >= bufferBytes {
                try flush()
                if let progress {
                    // A server appending meanwhile may take the log past the seq read at the start.
                    total = max(total, stored.event.seq)
                    progress(summary.events, max(summary.events, total - min(after, total)))
                }
            }
        }
        try flush()
        progress?(summary.events, max(summary.events, total - min(after, total)))
        return summary
    }
}

/// Writes all of `bytes` to `fd`, however many calls it takes.
private func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws {
    var offset = 0
    while offset < bytes.count {
        let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
        if n < 0 {
            let code = errno
            if code == EINTR { continue }
            let reason = String(cString: strerror(code))
            throw code == ENOSPC || code == EDQUOT
                ? LedgerError(code: .storageFull, message: "disk full: the export could not be written (\(reason))")
                : LedgerError(code: .storageError, message: "the export could not be written: \(reason)")
        }
        offset += n
    }
}
