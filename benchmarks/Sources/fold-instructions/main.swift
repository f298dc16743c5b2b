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
//   metrics100  a 100-period timeline's metric changes after a renewal, all of them (Metrics.contributions)
//   restate100  the same, restated from where the renewal changed the timeline (what the metrics follower sums)
//   decode    one stored event decoded
//   encode    one fact encoded

@inline(never) func consume<T>(_ value: T) { withExtendedLifetime(value) {} }

let arguments = CommandLine.arguments
guard arguments.count == 3, let count = Int(arguments[2]), count >= 0 else {
    print("usage: fold-instructions fold|tail5|tail100|past|metrics100|restate100|decode|encode COUNT")
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
case "metrics100", "restate100":
    let events = history(otid: 7, periods: 100, events: 100)
    let before = fold(events)
    let after = fold(events + [nextRenewal(after: events)])
    let from = Metrics.firstChange(before, after) ?? .min
    let restating = arguments[1] == "restate100"
    var changes = 0
    for _ in 0..<count {
        if restating {
            Metrics.contributions(of: after, restatingFrom: from, roundedDown: { $0 / 86_400_000 * 86_400_000 }) { _, _, _, _ in changes += 1 }
        } else {
            Metrics.contributions(of: after) { _, _, _, _ in changes += 1 }
        }
    }
    consume(changes)
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
