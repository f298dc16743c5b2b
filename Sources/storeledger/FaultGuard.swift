#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import LMDB

/// Turns a fault on a damaged data file, and LMDB's failed assertions, into the one-line error every other broken
/// ledger gets, instead of a crash dump.
///
/// LMDB reads the ledger through a memory map and trusts the page numbers, offsets and sizes it finds in it. A
/// damaged page can make it read outside the page or past the end of the file (SIGSEGV, SIGBUS) where no error can be
/// returned. `DamagedFileFaults` tells such a fault (inside a call into LMDB, or within the map) from a bug of ours,
/// which still crashes.
enum FaultGuard {
    /// Installs the handlers; the messages are made now, since a signal handler may not allocate.
    static func install(json: Bool) {
        let text =
            "error: corrupted: the ledger's data file is damaged (a read of it faulted); "
            + "restore it from a backup (storeledger restore BACKUP --data NEWDIR, or storeledger import EXPORT "
            + "--data NEWDIR)\n"
        stderrMessage = strdup(text)
        stderrLength = strlen(text)
        var document: String?
        if json {
            document =
                #"{"error":{"code":"corrupted","message":"the ledger's data file is damaged (a read of it faulted)"}}"#
                + "\n"
            stdoutMessage = strdup(document!)
            stdoutLength = strlen(document!)
        }
        DamagedFileFaults.exit(status: 1, standardOutput: document, standardError: text)
        // LMDB asserts on some damaged pages the wrapper's checks do not reach: the same line, and the same exit.
        lmdbAssertionHandler = { detail in
            if let message = stdoutMessage { _ = write(1, message, stdoutLength) }
            if let message = stderrMessage { _ = write(2, message, stderrLength) }
            if let detail { FileHandle.standardError.write(Data("  (LMDB: \(String(cString: detail)))\n".utf8)) }
            _exit(1)
        }
    }
}

// Set once by `install`, before any signal can arrive; read only by the handler.
nonisolated(unsafe) private var stderrMessage: UnsafeMutablePointer<CChar>?
nonisolated(unsafe) private var stderrLength = 0
nonisolated(unsafe) private var stdoutMessage: UnsafeMutablePointer<CChar>?
nonisolated(unsafe) private var stdoutLength = 0
