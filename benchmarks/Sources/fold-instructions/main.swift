import Foundation
import FoldWorkload
import LedgerCore
#if canImport(LedgerCodec)
import LedgerCodec
#endif

// Runs one of the Fold benchmark's operations `count` times, for `benchmarks/instructions.sh` to count the
// instructions under callgrind: the count does not depend on the machine's load or clock, so two builds compare on a
// shared VM where wall-clock figures move by tens of percent. Setup costs cancel out: the script runs each operation
// at two counts and divides the difference.
//
// usage: fold-instructions OPERATION COUNT
//   fold      Timeline.fold of one 100-event timeline (40 periods)
//   tail5     an incremental update at the tail of a stored 5-period timeline
//   tail100   the same, 100 periods
//   past      an update in the past of a 100-event timeline (refold)
//   decode    one stored event decoded
//   encode    one fact encoded

@inline(never) func consume<T>(_ value: T) { withExtendedLifetime(value) {} }

let arguments = CommandLine.arguments
guard arguments.count == 3, let count = Int(arguments[2]), count >= 0 else {
    print("usage: fold-instructions fold|tail5|tail100|past|decode|encode COUNT")
    exit(2)
}
switch arguments[1] {
case "fold":
    let timelines = (0..<100).map { history(otid: $0, periods: 40, events: 100) }
    for k in 0..<count { consume(fold(timelines[k % timelines.count])) }
case "tail5", "tail100":
    let periods = arguments[1] == "tail5" ? 5 : 100
    let events = history(otid: 7, periods: periods, events: periods)
    let stored = fold(events).encoded()
    let next = nextRenewal(after: events)
    for _ in 0..<count { consume(update(stored: stored, with: next, all: events)) }
case "past":
    let events = history(otid: 0, periods: 40, events: 100)
    let stored = fold(events).encoded()
    let refund = pastRefund(in: events)
    for _ in 0..<count { consume(update(stored: stored, with: refund, all: events)) }
case "decode":
    let encoded = (0..<10).flatMap { history(otid: $0, periods: 40, events: 100) }.map {
        ($0.seq, LedgerEvent.encode(fact: $0.fact, metadata: $0.metadata))
    }
    for k in 0..<count {
        let (seq, bytes) = encoded[k % encoded.count]
        consume(try! LedgerEvent(seq: seq, decoding: bytes))
    }
case "encode":
    let facts = (0..<10).flatMap { history(otid: $0, periods: 40, events: 100) }.map(\.fact)
    for k in 0..<count { consume(facts[k % facts.count].encoded()) }
default:
    print("fold-instructions: unknown operation \(arguments[1])")
    exit(2)
}
