#!/usr/bin/env bash
# Instructions the server spends per input of NDJSON batches, counted by valgrind (callgrind), so that the figure does
# not move with the machine's load as times do. See benchmarks/README.md, "The write path".
#
#   benchmarks/batch-profile.sh [--bin DIR] [--batches N] [--batch-size B] [--keep DIR] [-- serve flags…]
#
# Starts the release `storeledger serve` (.build/release, or --bin) under callgrind with instrumentation off, sends
# 5 batches with loadgen to warm up, zeroes the counters, then sends N (default 20) batches of B (default 100) inputs
# on one connection (loadgen --mode batch) and dumps. Prints instructions per input and the top functions (self and
# inclusive). The server runs with SWIFT_DETERMINISTIC_HASHING=1, so that its dictionaries and sets do not cost
# more or less from one run to the next with the process's hash seed. The same two workarounds for this VM's
# valgrind 3.19 as read-profile.sh: the DWARF 5 debug information is stripped from a copy of the binary, and
# sigsuspend is replaced by sleep through an LD_PRELOAD shim.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BIN="$ROOT/.build/release"
BATCHES=20
SIZE=100
KEEP=""
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) BIN="${2:?}"; shift ;;
        --batches) BATCHES="${2:?}"; shift ;;
        --batch-size) SIZE="${2:?}"; shift ;;
        --keep) KEEP="${2:?}"; shift ;;
        --) shift; break ;;
        -h|--help) sed -n 2,11p "$0"; exit 0 ;;
        *) echo "error: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
for tool in valgrind callgrind_control callgrind_annotate objcopy cc; do
    command -v "$tool" >/dev/null || { echo "error: $tool is needed" >&2; exit 1; }
done
[ -x "$BIN/storeledger" ] && [ -x "$BIN/loadgen" ] || {
    echo "error: build first: swift build -c release --product storeledger && swift build -c release --product loadgen" >&2
    exit 1
}
WORK="${KEEP:-$(mktemp -d "${TMPDIR:-/tmp}/batch-profile.XXXXXX")}"
mkdir -p "$WORK"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then kill "$SERVER_PID"; wait "$SERVER_PID" || true; fi
    [ -n "$KEEP" ] || rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

objcopy --strip-debug "$BIN/storeledger" "$WORK/storeledger"
cat > "$WORK/nosigsuspend.c" <<'C'
#include <signal.h>
#include <unistd.h>
int sigsuspend(const sigset_t *mask) { (void)mask; for (;;) sleep(3600); return -1; }
C
cc -shared -fPIC -O2 -o "$WORK/nosigsuspend.so" "$WORK/nosigsuspend.c"

SWIFT_DETERMINISTIC_HASHING=1 STORELEDGER_LOG_LEVEL=warning LD_PRELOAD="$WORK/nosigsuspend.so" valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$WORK/callgrind.out" "$WORK/storeledger" serve --data "$WORK/data" "$@" > "$WORK/serve.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 900); do [ -S "$WORK/data/ledger.sock" ] && break; sleep 0.2; done
[ -S "$WORK/data/ledger.sock" ] || { echo "error: the server did not start (see $WORK/serve.log)" >&2; exit 1; }
callgrind_control -i on "$SERVER_PID" > /dev/null 2>&1
"$BIN/loadgen" --socket "$WORK/data/ledger.sock" --mode batch --batch-size "$SIZE" --connections 1 --requests 5 \
    --duration 600 --seed 7 --quiet > /dev/null
callgrind_control -z "$SERVER_PID" > /dev/null 2>&1
"$BIN/loadgen" --socket "$WORK/data/ledger.sock" --mode batch --batch-size "$SIZE" --connections 1 \
    --requests "$BATCHES" --duration 600 --json > "$WORK/loadgen.json"
callgrind_control -d "$SERVER_PID" > /dev/null 2>&1
DUMP="$(ls "$WORK"/callgrind.out.* | head -1)"
TOTAL="$(sed -n 's/^summary: //p' "$DUMP")"
INPUTS=$((BATCHES * SIZE))
echo "instructions: $TOTAL for $INPUTS inputs in $BATCHES batches = $((TOTAL / INPUTS)) per input (serve $*)"
echo
echo "top functions, self:"
callgrind_annotate "$DUMP" 2>/dev/null | sed -n '/^Ir *file:function/,$p' | sed -n 3,32p | cut -c1-170
echo
echo "top functions, inclusive:"
callgrind_annotate --inclusive=yes "$DUMP" 2>/dev/null | sed -n '/^Ir *file:function/,$p' | sed -n 3,52p | cut -c1-170
