import AuditWorkload
import Foundation

// Prints the directory of the cached audit ledger (made first when there is none: about two minutes for a million
// events on two cores), so that `storeledger verify` and `export` can be timed by hand on the ledger the Audit
// benchmark measures:
//
//   storeledger verify --data "$(swift run -c release audit-ledger)"
//
// usage: audit-ledger [EVENTS]   (default 1000000; the cache is $STORELEDGER_BENCH_CACHE or /tmp/storeledger-bench)

let arguments = CommandLine.arguments
guard arguments.count <= 2, let events = arguments.count == 2 ? Int(arguments[1]) : 1_000_000, events > 0 else {
    FileHandle.standardError.write(Data("usage: audit-ledger [EVENTS]\n".utf8))
    exit(2)
}
do {
    let dir = try AuditLedger.directory(events: events) { FileHandle.standardError.write(Data("\($0)\n".utf8)) }
    print(dir)
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}
