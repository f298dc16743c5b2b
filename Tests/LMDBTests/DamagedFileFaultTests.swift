#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import LMDB
import Testing

/// `DamagedFileFaults`: a fault reading the data file (inside a call into LMDB, or SIGBUS) ends the process with the
/// damaged-file exit; any other fault still crashes with its signal. Each case faults in a forked child (glibc's fork
/// leaves malloc usable there), which installs the handler and faults at once; the parent reads how it ended.
/// Where the faulting reads go, so that no read is optimised away.
nonisolated(unsafe) var faultSink: UInt8 = 0

@Suite struct DamagedFileFaultTests {
    enum Ending: Equatable {
        case exited(Int32)
        case signalled(Int32)
    }

    /// Runs `fault` in a child process with the handler installed (exit status 86), without a core file.
    func ending(_ fault: @escaping () -> Void) -> Ending {
        let pid = fork()
        if pid == 0 {
            var none = rlimit(rlim_cur: 0, rlim_max: 0)
            setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &none)
            DamagedFileFaults.exit(status: 86, standardOutput: nil, standardError: nil)
            fault()
            _exit(0)
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signal = status & 0x7F
        return signal == 0 ? .exited((status >> 8) & 0xFF) : .signalled(signal)
    }

    @Test func aFaultInsideAnLMDBCallExitsAsDamage() {
        #expect(ending { faultSink = insideLMDB { UnsafePointer<UInt8>(bitPattern: 64)!.pointee } } == .exited(86))
    }

    /// Past the end of a mapped file: SIGBUS, as in the code that reads what LMDB handed back.
    @Test func readingPastTheEndOfTheFileExitsAsDamage() throws {
        let path = NSTemporaryDirectory() + "lmdb-fault-" + UUID().uuidString
        let fd = open(path, O_RDWR | O_CREAT, 0o600)
        try #require(fd >= 0)
        defer {
            close(fd)
            unlink(path)
        }
        _ = ftruncate(fd, 4096)
        let mapped = try #require(mmap(nil, 1 << 20, PROT_READ, MAP_SHARED, fd, 0))
        defer { munmap(mapped, 1 << 20) }
        #expect(ending { faultSink = mapped.load(fromByteOffset: 1 << 19, as: UInt8.self) } == .exited(86))
    }

    /// A fault elsewhere is a bug: it is not reported as a damaged file.
    @Test func anyOtherFaultStillCrashes() {
        #expect(ending { faultSink = UnsafePointer<UInt8>(bitPattern: 64)!.pointee } == .signalled(SIGSEGV))
    }

    @Test func callsAreMarkedOnlyWhileTheyRun() {
        #expect(!DamagedFileFaults.insideLMDBCall)
        #expect(insideLMDB { DamagedFileFaults.insideLMDBCall })
        #expect(!DamagedFileFaults.insideLMDBCall)
    }
}
