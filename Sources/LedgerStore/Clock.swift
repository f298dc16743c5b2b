#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LedgerCore

/// The ledger's one clock: the wall time in milliseconds since 1970, in the log's unit. It stamps what the ledger
/// records about now (an input without a stated `receivedAt`, a refusal, rules adopted, a webhook's attempts) and
/// the server's `Date` field, so every part of the ledger reads the same time the same way.
public func currentMillis() -> UnixMillis {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return UnixMillis(ts.tv_sec) * 1000 + UnixMillis(ts.tv_nsec) / 1_000_000
}
