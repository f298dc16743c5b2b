import Foundation
import LedgerTestSupport
import Testing

/// The `.blocking` trait keeps a test's waits off Swift's cooperative pool: every test of such a suite, synchronous
/// or not, runs on a thread of its own.
@Suite(.blocking) struct BlockingTestsTraitTests {
    /// The test case the caller's thread was made for (nil: a thread of the cooperative pool, or GCD's).
    static func threadName() -> String? { ThreadExecutor.currentTest }

    @Test func aSynchronousTestRunsOnAThreadOfItsOwn() {
        #expect(Self.threadName() == "aSynchronousTestRunsOnAThreadOfItsOwn()")
    }

    @Test func anAsynchronousTestComesBackToItsThreadAfterAnAwait() async throws {
        let before = Self.threadName()
        try await Task.sleep(for: .milliseconds(10))
        #expect(before == "anAsynchronousTestComesBackToItsThreadAfterAnAwait()")
        #expect(Self.threadName() == before)
    }

    /// The cases of a parameterized test run on its thread, one after another.
    @Test(arguments: [0, 1])
    func theCasesOfATestRunOnItsThread(_ index: Int) {
        #expect(Self.threadName() == "theCasesOfATestRunOnItsThread(_:)", "case \(index)")
    }
}
