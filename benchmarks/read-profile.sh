#!/usr/bin/env bash
# Instructions the server spends per entitlement read, counted by valgrind (callgrind), so that the figure does not
# move with the machine's load as times do. See benchmarks/README.md, "Over the socket".
#
#   benchmarks/read-profile.sh [--reads N] [--keep DIR] [--bin DIR] [-- serve flags…]     e.g. -- --no-fast-path
#
# Starts the release `storeledger serve` (.build/release, or --bin DIR) under callgrind with instrumentation off,
# fills 1000 users with loadgen, warms up by reading each user once on one keep-alive connection (so that, with the
# answer cache, every counted read is a kept answer; `-- --no-answer-cache` counts answers made anew), zeroes the
# counters, then sends N (default 2000) `GET /v1/customers/{user}` one after the other and dumps. Prints instructions per read and the top functions
# (self and inclusive). Two trips of this VM's valgrind 3.19 are worked around: Swift's DWARF 5 debug information is
# stripped from a copy of the binary (symbols stay), and libdispatch's parking of the exited main thread in
# sigsuspend (which crashes valgrind) is replaced by sleep through an LD_PRELOAD shim.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
READS=2000
KEEP=""
BIN="$ROOT/.build/release"
while [ $# -gt 0 ]; do
    case "$1" in
        --reads) READS="${2:?}"; shift ;;
        --keep) KEEP="${2:?}"; shift ;;
        --bin) BIN="${2:?}"; shift ;;
        --) shift; break ;;
        -h|--help) sed -n 2,13p "$0"; exit 0 ;;
        *) echo "error: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
for tool in valgrind callgrind_control callgrind_annotate objcopy cc python3; do
    command -v "$tool" >/dev/null || { echo "error: $tool is needed" >&2; exit 1; }
done
[ -x "$BIN/storeledger" ] && [ -x "$BIN/loadgen" ] || {
    echo "error: build first: swift build -c release --product storeledger && swift build -c release --product loadgen" >&2
    exit 1
}
WORK="${KEEP:-$(mktemp -d "${TMPDIR:-/tmp}/read-profile.XXXXXX")}"
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
cat > "$WORK/client.py" <<'PY'
import os, socket, sys, time
path, warm, n, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(path)
buf, statuses = b"", {}
def get(target):
    global buf
    s.sendall(b"GET " + target.encode() + b" HTTP/1.1\r\nHost: localhost\r\n\r\n")
    while True:
        i = buf.find(b"\r\n\r\n")
        if i >= 0:
            head = buf[:i].decode()
            length = next((int(l.split(":", 1)[1]) for l in head.split("\r\n")[1:] if l.lower().startswith("content-length:")), 0)
            if len(buf) >= i + 4 + length:
                buf = buf[i + 4 + length:]
                return int(head.split(" ")[1])
        chunk = s.recv(65536)
        if not chunk: sys.exit("closed")
        buf += chunk
def read(i):
    status = get("/v1/customers/lg0-u%d" % ((i * 2654435761) % 1000))
    statuses[status] = statuses.get(status, 0) + 1
for i in range(warm): read(i)
open(go + ".ready", "w").close()
while not os.path.exists(go): time.sleep(0.05)
statuses.clear()
for i in range(n): read(i)
print(" ".join("%d: %d" % kv for kv in sorted(statuses.items())))
PY

LD_PRELOAD="$WORK/nosigsuspend.so" valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$WORK/callgrind.out" \
    "$WORK/storeledger" serve --data "$WORK/data" "$@" > "$WORK/serve.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 900); do [ -S "$WORK/data/ledger.sock" ] && break; sleep 0.2; done
[ -S "$WORK/data/ledger.sock" ] || { echo "error: the server did not start (see $WORK/serve.log)" >&2; exit 1; }
"$BIN/loadgen" --socket "$WORK/data/ledger.sock" --mode read --connections 1 --users 1000 --requests 1 --quiet > /dev/null
python3 "$WORK/client.py" "$WORK/data/ledger.sock" 1000 "$READS" "$WORK/go" > "$WORK/client.log" &
CLIENT_PID=$!
while [ ! -e "$WORK/go.ready" ]; do sleep 0.2; done
callgrind_control -i on "$SERVER_PID" > /dev/null 2>&1
sleep 1
callgrind_control -z "$SERVER_PID" > /dev/null 2>&1
touch "$WORK/go"
wait "$CLIENT_PID"
callgrind_control -d "$SERVER_PID" > /dev/null 2>&1
DUMP="$(ls "$WORK"/callgrind.out.* | head -1)"
TOTAL="$(sed -n 's/^summary: //p' "$DUMP")"
echo "statuses: $(cat "$WORK/client.log")"
echo "instructions: $TOTAL for $READS reads = $((TOTAL / READS)) per read (serve $*)"
echo
echo "top functions, self:"
callgrind_annotate "$DUMP" 2>/dev/null | sed -n '/^Ir *file:function/,$p' | sed -n 3,22p | cut -c1-160
echo
echo "top functions, inclusive:"
callgrind_annotate --inclusive=yes "$DUMP" 2>/dev/null | sed -n '/^Ir *file:function/,$p' | sed -n 3,42p | cut -c1-160
