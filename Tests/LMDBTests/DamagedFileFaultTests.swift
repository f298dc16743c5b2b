#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import LMDB
import Testing

/// `DamagedFileFaults`: a fault reading the data file (inside a call into LMDB, or within its map) ends the process
/// with the damaged-file exit; any other fault still crashes with its signal. Each case runs in a process of its own.
@Suite struct DamagedFileFaultTests {
    @Test func aFaultInsideAnLMDBCallExitsAsDamage() async {
        await #expect(processExitsWith: .exitCode(86)) {
            DamagedFileFaults.exit(status: 86, standardOutput: nil, standardError: "damaged\n")
            let wild = UnsafePointer<UInt8>(bitPattern: 64)!
            let byte = insideLMDB { wild.pointee }
            print(byte)
        }
    }

    /// Past the end of the file but within LMDB's map: SIGBUS, in the code that reads what LMDB handed back.
    @Test func readingPastTheEndOfTheFileExitsAsDamage() async {
        await #expect(processExitsWith: .exitCode(86)) {
            DamagedFileFaults.exit(status: 86, standardOutput: nil, standardError: "damaged\n")
            let path = NSTemporaryDirectory() + "lmdb-fault-" + UUID().uuidString
            let fd = open(path, O_RDWR | O_CREAT, 0o600)
            _ = ftruncate(fd, 4096)
            let mapped = mmap(nil, 1 << 20, PROT_READ, MAP_SHARED, fd, 0)!
            unlink(path)
            print(mapped.load(fromByteOffset: 1 << 19, as: UInt8.self))
        }
    }

    /// A fault elsewhere is a bug: it is not reported as a damaged file.
    @Test func anyOtherFaultStillCrashes() async {
        await #expect(processExitsWith: .signal(SIGSEGV)) {
            DamagedFileFaults.exit(status: 86, standardOutput: nil, standardError: "damaged\n")
            let wild = UnsafePointer<UInt8>(bitPattern: 64)!
            print(wild.pointee)
        }
    }

    @Test func callsAreMarkedOnlyWhileTheyRun() {
        #expect(!DamagedFileFaults.insideLMDBCall)
        #expect(insideLMDB { DamagedFileFaults.insideLMDBCall })
        #expect(!DamagedFileFaults.insideLMDBCall)
    }
}
