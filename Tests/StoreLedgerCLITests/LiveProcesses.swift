import LedgerTestSupport
import Testing

/// The suites that start processes of their own — `storeledger serve`, nginx, curl, bash — run
/// one after another, not side by side: on a two-core machine each extra live server slows the timing-bound process
/// tests (ServeProcessTests, PoisonInputProcessTests) that run in parallel with them.
@Suite(.serialized, .blocking) enum LiveProcesses {}
