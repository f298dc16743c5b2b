#!/usr/bin/env bash
# What the durable write path costs the disk, per commit and per input, over the socket. See benchmarks/README.md,
# "The write path".
#
#   benchmarks/write-profile.sh [--bin DIR] [--config FILE] [--serve-flag F]… [--duration S] [--strace] [--keep DIR]
#                               [-- loadgen flags…]
#       e.g. -- --mode single --connections 32      (the default)
#            -- --mode batch --batch-size 100 --connections 8
#
# Starts the release `storeledger serve` (.build/release, or --bin) on a fresh ledger, runs loadgen against it and
# prints, for the run: inputs per group commit and commits/s (the server's storeledger_commit_batch_inputs histogram),
# LMDB pages allocated (me_last_pgno) and transactions, the process's write_bytes and wchar per input
# (/proc/PID/io), the disk's blocks out (vmstat bo), and the load average. With --strace the server runs under
# `strace --seccomp-bpf` (only its writes to data.mdb and its syncs stop it) and, half-way through the run, is
# stopped (SIGSTOP) for benchmarks/lmdb-pages.py to name the database and kind of every page the last complete commit
# wrote; the strace slows the writer, so its figures are for the breakdown, not for throughput.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BIN="$ROOT/.build/release"
DURATION=8
STRACE=0
KEEP=""
SERVE_ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) BIN="${2:?}"; shift ;;
        --duration) DURATION="${2:?}"; shift ;;
        --config) SERVE_ARGS+=(--config "${2:?}"); shift ;;
        --serve-flag) SERVE_ARGS+=("${2:?}"); shift ;;   # e.g. --serve-flag --no-journal
        --strace) STRACE=1 ;;
        --keep) KEEP="${2:?}"; shift ;;
        --) shift; break ;;
        -h|--help) sed -n 2,19p "$0"; exit 0 ;;
        *) echo "error: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
LOADGEN_ARGS=("$@")
[ ${#LOADGEN_ARGS[@]} -gt 0 ] || LOADGEN_ARGS=(--mode single --connections 32)
for tool in curl python3 mdb_stat vmstat; do
    command -v "$tool" >/dev/null || { echo "error: $tool is needed (mdb_stat: apt-get install lmdb-utils)" >&2; exit 1; }
done
[ "$STRACE" = 0 ] || command -v strace >/dev/null || { echo "error: strace is needed for --strace" >&2; exit 1; }
[ -x "$BIN/storeledger" ] && [ -x "$BIN/loadgen" ] || {
    echo "error: build first: swift build -c release --product storeledger && swift build -c release --product loadgen" >&2
    exit 1
}
WORK="${KEEP:-$(mktemp -d "${TMPDIR:-/tmp}/write-profile.XXXXXX")}"
mkdir -p "$WORK/data"
SERVER_PID=""
LAUNCHER_PID=""
VMSTAT_PID=""
cleanup() {
    [ -z "$VMSTAT_PID" ] || kill "$VMSTAT_PID" 2>/dev/null || true
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -CONT "$SERVER_PID" 2>/dev/null || true
        kill "$SERVER_PID" 2>/dev/null || true
    fi
    [ -z "$LAUNCHER_PID" ] || wait "$LAUNCHER_PID" 2>/dev/null || true
    [ -n "$KEEP" ] || rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

SOCKET="$WORK/data/ledger.sock"
if [ "$STRACE" = 1 ]; then
    STORELEDGER_LOG_LEVEL=warning strace -f -y -s 0 -qq --seccomp-bpf -o "$WORK/strace.txt" \
        -e trace=pwrite64,lseek,writev,fdatasync,fsync,msync \
        "$BIN/storeledger" serve --data "$WORK/data" --socket "$SOCKET" "${SERVE_ARGS[@]+"${SERVE_ARGS[@]}"}" > "$WORK/serve.log" 2>&1 &
    LAUNCHER_PID=$!
else
    STORELEDGER_LOG_LEVEL=warning "$BIN/storeledger" serve --data "$WORK/data" --socket "$SOCKET" "${SERVE_ARGS[@]+"${SERVE_ARGS[@]}"}" > "$WORK/serve.log" 2>&1 &
    LAUNCHER_PID=$!
fi
for _ in $(seq 600); do
    curl -sf --unix-socket "$SOCKET" http://localhost/v1/health > /dev/null 2>&1 && break
    sleep 0.1
done
curl -sf --unix-socket "$SOCKET" http://localhost/v1/health > /dev/null || { cat "$WORK/serve.log" >&2; exit 1; }
if [ "$STRACE" = 1 ]; then SERVER_PID="$(pgrep -P "$LAUNCHER_PID" | head -1)"; else SERVER_PID="$LAUNCHER_PID"; fi

snapshot() {  # the figures the run is the difference of, as shell assignments with prefix $1
    cat "/proc/$SERVER_PID/io" > "$WORK/$1.io"
    curl -sf --unix-socket "$SOCKET" http://localhost/metrics > "$WORK/$1.metrics"
    mdb_stat -e "$WORK/data" > "$WORK/$1.env"
    python3 - "$WORK/$1" "$1" <<'PY'
import re, sys
path, p = sys.argv[1], sys.argv[2]
io = dict(l.split(": ") for l in open(path + ".io").read().splitlines())
m = open(path + ".metrics").read()
def metric(name):
    found = re.search(r"^" + name + r"(?:\{[^}]*\})? ([0-9.e+]+)$", m, re.M)
    return float(found.group(1)) if found else 0.0
env = open(path + ".env").read()
pgno = re.search(r"Number of pages used: (\d+)", env).group(1)
txn = re.search(r"Last transaction ID: (\d+)", env).group(1)
print(f"{p}_write_bytes={io['write_bytes']} {p}_wchar={io['wchar']} {p}_syscw={io['syscw']}")
print(f"{p}_commits={metric('storeledger_commit_batch_inputs_count'):.0f} {p}_inputs={metric('storeledger_commit_batch_inputs_sum'):.0f}")
print(f"{p}_pgno={pgno} {p}_txn={txn}")
PY
}
sync
eval "$(snapshot before)"
vmstat -n 1 > "$WORK/vmstat.txt" &
VMSTAT_PID=$!
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
START=$(date +%s.%N)
"$BIN/loadgen" --socket "$SOCKET" --duration "$DURATION" --json "${LOADGEN_ARGS[@]}" > "$WORK/loadgen.json" &
LOADGEN_PID=$!
if [ "$STRACE" = 1 ]; then
    sleep "$(python3 -c "print($DURATION / 2)")"
    kill -STOP "$SERVER_PID"
    sleep 0.2
    cp "$WORK/strace.txt" "$WORK/strace-stopped.txt"
    python3 "$HERE/lmdb-pages.py" "$WORK/data/data.mdb" "$WORK/strace-stopped.txt" > "$WORK/pages.txt" || true
    kill -CONT "$SERVER_PID"
fi
wait "$LOADGEN_PID"
END=$(date +%s.%N)
kill "$VMSTAT_PID" 2>/dev/null || true
VMSTAT_PID=""
eval "$(snapshot after)"
LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$WORK/loadgen.json" "$WORK/vmstat.txt" <<EOF
import json, sys
r = json.load(open(sys.argv[1]))
seconds = $END - $START
inputs = $after_inputs - $before_inputs
commits = $after_commits - $before_commits
bo = [int(l.split()[9]) for l in open(sys.argv[2]).read().splitlines()[2:] if l.split() and l.split()[0].isdigit()]
print(f"loadgen: {r['acceptedPerSecond']:.0f} req/s, {r['inputsPerSecond']:.0f} inputs/s, p50 {r['p50Ns']/1e6:.2f} ms, "
      f"p99 {r['p99Ns']/1e6:.2f} ms, errors {r['errors']}")
print(f"commits: {commits} ({commits / seconds:.0f}/s), inputs per commit {inputs / max(1, commits):.1f} "
      f"(inputs committed {inputs})")
txns = $after_txn - $before_txn
pages = $after_pgno - $before_pgno
print(f"LMDB: {txns} transactions, {pages} pages allocated past the end ({pages * 4096 / max(1, inputs):.0f} B per input)")
wb = $after_write_bytes - $before_write_bytes
wc = $after_wchar - $before_wchar
print(f"process: write_bytes {wb / max(1, inputs):.0f} B per input, wchar {wc / max(1, inputs):.0f} B per input "
      f"(sockets included), write syscalls {($after_syscw - $before_syscw) / max(1, commits):.1f} per commit")
if bo:
    print(f"vmstat bo: mean {sum(bo) / len(bo) / 1024:.1f} MB/s over {len(bo)} s = {sum(bo) * 1024 / max(1, inputs):.0f} B per input")
print("load average: $LOAD_BEFORE before, $LOAD_AFTER after")
EOF
if [ "$STRACE" = 1 ]; then
    echo
    cat "$WORK/pages.txt"
fi
