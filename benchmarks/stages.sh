#!/usr/bin/env bash
# The server's instructions per input by stage, from a callgrind dump of batch-profile.sh (--keep DIR):
#
#   benchmarks/stages.sh DIR INPUTS
#
# Each stage is the inclusive count of the function that does it (synchronous functions, so callgrind's inclusive
# counts hold; the async frames around them recurse and do not):
#   decode             IngestPipeline.prepare: Apple's JSON parsed and checked, the facts made
#   write transaction  Writer.commit without the fold: the append batch, LMDB, the hash chain, the journal's fsync
#   fold               ProjectionEngine.apply: the timelines and entitlements the inputs touch, lifecycle events
#   reply              JSONBody.buffered: the results document written
#   metrics follower   MetricsFollower.catchUp: the marked subscriptions summed into metric_days, on its own thread
#   HTTP               everything else: NIO, the HTTP decoder and encoder, Hummingbird's router and tasks, the
#                      body collected, the middleware (metrics, errors), the hand-offs between threads
set -euo pipefail
DIR="${1:?usage: benchmarks/stages.sh DIR INPUTS}"
INPUTS="${2:?usage: benchmarks/stages.sh DIR INPUTS}"
DUMP="$(ls "$DIR"/callgrind.out.* | head -1)"
TOTAL="$(sed -n 's/^summary: //p' "$DUMP")"
ANNOTATED="$(callgrind_annotate --inclusive=yes "$DUMP" 2>/dev/null)"
# The largest inclusive count of a function whose symbol matches the pattern (the list is sorted, largest first).
count() { printf '%s\n' "$ANNOTATED" | grep -E "$1" | head -1 | awk '{gsub(",", "", $1); print $1}'; }
decode="$(count '12LedgerIngest0B8PipelineV7prepare')"
commit="$(count '11LedgerStore6WriterC6commit')"
fold="$(count '11LedgerStore16ProjectionEngineV5apply')"
reply="$(count '12LedgerServer8JSONBodyO8buffered')"
follower="$(count '11LedgerStore15MetricsFollowerC7catchUp')"
: "${decode:=0}" "${commit:=0}" "${fold:=0}" "${reply:=0}" "${follower:=0}"
http=$((TOTAL - decode - commit - reply - follower))
printf '| stage | instructions per input |\n|---|---:|\n'
printf '| HTTP | %d |\n' $((http / INPUTS))
printf '| decode | %d |\n' $((decode / INPUTS))
printf '| write transaction | %d |\n' $(((commit - fold) / INPUTS))
printf '| fold | %d |\n' $((fold / INPUTS))
printf '| reply | %d |\n' $((reply / INPUTS))
printf '| metrics follower | %d |\n' $((follower / INPUTS))
printf '| total | %d |\n' $((TOTAL / INPUTS))
