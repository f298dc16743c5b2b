#!/usr/bin/env bash
# Acknowledged inputs per second through the replicated intake (serve --intake, a three-server JetStream cluster on
# loopback, R=3) against the local socket (serve alone), on this machine, in one run: the same loadgen (single
# inputs, N connections, closed loop) against each, one after the other. See benchmarks/README.md and
# docs/scaling.md.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: benchmarks/intake/run.sh [--duration SECONDS] [--connections N] [--bin DIR] [--replicas 1|2] [--keep]

  --duration S      seconds per row (default 15)
  --connections N   loadgen connections (default 32)
  --bin DIR         where storeledger and loadgen are (default: .build/release of this checkout)
  --replicas N      ledger replicas consuming the stream during the intake row (default 2; load goes to the first)
  --keep            keep the scratch folder (logs, ledgers, NATS stores)

Needs nats-server (apt-get install nats-server). Everything listens on loopback or Unix sockets in a scratch
folder under ${TMPDIR:-/tmp}; every process is stopped by pid at the end, on errors and on Ctrl-C.
USAGE
}

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DURATION=15
CONNECTIONS=32
BIN="$ROOT/.build/release"
REPLICAS=2
KEEP=0
while [ $# -gt 0 ]; do
    case "$1" in
        --duration) DURATION="$2"; shift 2 ;;
        --connections) CONNECTIONS="$2"; shift 2 ;;
        --bin) BIN="$2"; shift 2 ;;
        --replicas) REPLICAS="$2"; shift 2 ;;
        --keep) KEEP=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done
NATS="$(command -v nats-server || echo /usr/sbin/nats-server)"
[ -x "$NATS" ] || { echo "nats-server is not installed (apt-get install nats-server)" >&2; exit 1; }
for tool in storeledger loadgen; do
    [ -x "$BIN/$tool" ] || { echo "no $BIN/$tool (swift build -c release --product $tool, or --bin DIR)" >&2; exit 1; }
done

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/sl-intake-bench.XXXXXX")"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "$KEEP" = 1 ]; then echo "kept $SCRATCH" >&2; else rm -rf "$SCRATCH"; fi
}
trap cleanup EXIT INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_health() {  # socket
    for _ in $(seq 1 600); do
        if curl -sf --unix-socket "$1" http://localhost/v1/health >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    echo "no answer on $1" >&2; return 1
}

row() {  # name socket
    "$BIN/loadgen" --socket "$2" --mode single --connections "$CONNECTIONS" --duration "$DURATION" --json \
        > "$SCRATCH/$1.json"
    python3 - "$1" "$SCRATCH/$1.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))
print(f"{sys.argv[1]}\t{r['inputsPerSecond']:.0f}\t{r['p50Ns'] / 1e6:.1f}\t{r['p99Ns'] / 1e6:.1f}\t{r['statuses']}")
PY
}

# The local socket: storeledger serve alone.
mkdir -p "$SCRATCH/local"
"$BIN/storeledger" serve --data "$SCRATCH/local" 2> "$SCRATCH/local.log" & PIDS+=($!)
wait_health "$SCRATCH/local/ledger.sock"
LOCAL="$(row local "$SCRATCH/local/ledger.sock")"
kill -TERM "${PIDS[-1]}"; wait "${PIDS[-1]}" || true

# Three NATS servers with JetStream in a cluster on loopback.
PORTS=(); CPORTS=()
for i in 1 2 3; do PORTS+=("$(free_port)"); CPORTS+=("$(free_port)"); done
ROUTES="nats-route://127.0.0.1:${CPORTS[0]}, nats-route://127.0.0.1:${CPORTS[1]}, nats-route://127.0.0.1:${CPORTS[2]}"
for i in 0 1 2; do
    mkdir -p "$SCRATCH/n$i"
    cat > "$SCRATCH/n$i.conf" <<CONF
server_name: n$i
listen: 127.0.0.1:${PORTS[$i]}
jetstream { store_dir: "$SCRATCH/n$i" }
cluster { name: storeledger, listen: 127.0.0.1:${CPORTS[$i]}, routes: [$ROUTES] }
CONF
    "$NATS" -c "$SCRATCH/n$i.conf" 2> "$SCRATCH/n$i.log" & PIDS+=($!)
done
URL="nats://127.0.0.1:${PORTS[0]},nats://127.0.0.1:${PORTS[1]},nats://127.0.0.1:${PORTS[2]}"
for r in $(seq 1 "$REPLICAS"); do
    mkdir -p "$SCRATCH/r$r"
    "$BIN/storeledger" serve --data "$SCRATCH/r$r" --intake "$URL" --node "r$r" 2> "$SCRATCH/r$r.log" & PIDS+=($!)
done
for r in $(seq 1 "$REPLICAS"); do wait_health "$SCRATCH/r$r/ledger.sock"; done
INTAKE="$(row intake "$SCRATCH/r1/ledger.sock")"

# Every replica at the same last seq before the figures are printed (the others caught up).
sleep 2
SEQS="$(for r in $(seq 1 "$REPLICAS"); do curl -s --unix-socket "$SCRATCH/r$r/ledger.sock" http://localhost/v1/health; echo; done)"

python3 - "$LOCAL" "$INTAKE" "$CONNECTIONS" "$DURATION" "$SEQS" <<'PY'
import sys
local, intake = sys.argv[1].split("\t"), sys.argv[2].split("\t")
print(f"machine: {open('/proc/cpuinfo').read().count('processor')} cores; {sys.argv[3]} connections, {sys.argv[4]} s per row")
print("| path | acknowledged inputs/s | ratio | p50 ms | p99 ms | statuses |")
print("|---|---:|---:|---:|---:|---|")
print(f"| local socket (`serve`) | {local[1]} | 1 | {local[2]} | {local[3]} | {local[4]} |")
print(f"| JetStream intake (`serve --intake`, R=3, 3 NATS servers) | {intake[1]} | {float(intake[1]) / float(local[1]):.2f} | {intake[2]} | {intake[3]} | {intake[4]} |")
print("replicas after the run:", " ".join(s.strip() for s in sys.argv[5].splitlines() if s.strip()))
PY
