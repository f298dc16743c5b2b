#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import LMDB

/// Turns SIGBUS, and LMDB's failed assertions, into the one-line error every other broken ledger gets, instead of a
/// crash dump.
///
/// LMDB reads the ledger through a memory map and trusts the page numbers it finds in it. A damaged page that names
/// a page past the end of the file (a stray pointer, a file cut short while open) makes the read fault with SIGBUS
/// inside LMDB, where no error can be returned. In this process the only file mapping that can end early is the
/// ledger's data file, so SIGBUS means a damaged ledger. (SIGSEGV is left alone: it may be a bug of ours.)
enum FaultGuard {
    /// Installs the handler; the messages are made now, since a signal handler may not allocate.
    static func install(json: Bool) {
        let text =
            "error: corrupted: the ledger's data file names pages it does not hold (damaged or truncated); "
            + "restore it from a backup (storeledger restore BACKUP --data NEWDIR, or storeledger import EXPORT "
            + "--data NEWDIR)\n"
        stderrMessage = strdup(text)
        stderrLength = strlen(text)
        if json {
            let document =
                #"{"error":{"code":"corrupted","message":"the ledger's data file names pages it does not hold (damaged or truncated)"}}"#
                + "\n"
            stdoutMessage = strdup(document)
            stdoutLength = strlen(document)
        }
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in
            if let message = stdoutMessage { _ = write(1, message, stdoutLength) }
            if let message = stderrMessage { _ = write(2, message, stderrLength) }
            _exit(1)
        }
        sigemptyset(&action.sa_mask)
        sigaction(SIGBUS, &action, nil)
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
