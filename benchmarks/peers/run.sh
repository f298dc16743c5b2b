#!/usr/bin/env bash
# The peers harness: StoreLedger against what users pick instead, on this machine, in one run.
#
# PostgreSQL (the usual "transactions + current expiry" tables, pgbench) and Redis (a stream, XADD,
# redis-benchmark) are installed from the distribution's packages when missing, started on Unix sockets in a scratch
# folder with durable commits (fsync on), measured at the ledger's connection counts one after the other, and stopped
# by pid; the ledger (`storeledger serve`, release build) is measured with tools/loadgen, and its reads also with
# benchmarks/peers/readgen.c (loadgen's read mode in C, as lean a client as pgbench). The machine's raw limits
# (a Unix-socket echo round trip, fdatasync latency) are measured in the same run. One markdown table at the end,
# each figure with its ratio ledger ÷ peer. See benchmarks/README.md, "Peers".
set -euo pipefail

usage() {
    cat <<'EOF'
usage: benchmarks/peers/run.sh [--quick] [--duration SECONDS] [--only LIST] [--reads] [--out FILE] [--keep] [--bin DIR] [--build]

  --quick           3 s per row (a smoke test); the default is 20 s per row
  --duration S      seconds per row (overrides both)
  --only LIST       a subset, comma-separated: ledger, postgres, redis, limits (default: all four)
  --reads           only the read rows of the ledger and PostgreSQL (no writes; Redis has no read row)
  --out FILE        also write the table (markdown) to FILE
  --keep            keep the scratch folder (servers' logs, data, pgbench logs, results.jsonl)
  --bin DIR         where storeledger and loadgen are (default: .build/release of this checkout)
  --build           build them first (swift build -c release, one product at a time) even if present

Installs postgresql and redis-server/redis-tools with apt-get when missing (root, or sudo without a password).
Every server listens on a Unix socket only, in a scratch folder under ${TMPDIR:-/tmp}, and is stopped by pid at the
end, on errors and on Ctrl-C.
EOF
}

# MARK: - Options

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DURATION=20
QUICK=0
ONLY="ledger,postgres,redis,limits"
OUT=""
KEEP=0
BIN="$ROOT/.build/release"
BUILD=0
READS_ONLY=0
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1; DURATION=3 ;;
        --duration) DURATION="${2:?--duration needs seconds}"; shift ;;
        --only) ONLY="${2:?--only needs a list}"; shift ;;
        --reads) READS_ONLY=1 ;;
        --out) OUT="${2:?--out needs a file}"; shift ;;
        --keep) KEEP=1 ;;
        --bin) BIN="${2:?--bin needs a folder}"; shift ;;
        --build) BUILD=1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "error: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
if ! [[ "$DURATION" =~ ^[0-9]+$ ]] || [ "$DURATION" -lt 1 ] || [ "$DURATION" -gt 600 ]; then
    echo "error: --duration must be a whole number of seconds, 1…600" >&2; exit 2
fi
for part in ${ONLY//,/ }; do
    case "$part" in ledger|postgres|redis|limits) ;; *) echo "error: --only takes ledger, postgres, redis, limits" >&2; exit 2 ;; esac
done
wants() { [[ ",$ONLY," == *",$1,"* ]]; }
writes() { [ "$READS_ONLY" = 0 ]; }
if [ -n "$OUT" ]; then OUT="$(cd "$(dirname "$OUT")" && pwd)/$(basename "$OUT")"; fi

# The ledger's loadgen modes and the peers' equivalents use the same figures:
SINGLE_CLIENTS=32      # single-event durable writes
BATCH_CLIENTS=8        # batches of BATCH_SIZE events
BATCH_SIZE=100
READ_CLIENTS="2 8"     # entitlement reads by app user
READ_USERS=4000        # users filled before the reads (loadgen: 8 connections x its default 500 users)
USERS_PER_CONNECTION=500   # loadgen's default: the subscriptions its single and batch modes write to
NPROC="$(nproc)"

# Messages go to the script's own stderr (fd 3), also from traps that fire while a step's output is redirected.
exec 3>&2
log() { printf '%s peers: %s\n' "$(date -u +%H:%M:%S)" "$*" >&3; }
die() { printf 'error: %s\n' "$*" >&3; exit 1; }

command -v python3 >/dev/null || die "python3 is needed (to make the table): apt-get install -y python3"
command -v timeout >/dev/null || die "timeout (coreutils) is needed"

# MARK: - Scratch folder, and stopping everything by pid

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/peers.XXXXXX")"
chmod 755 "$SCRATCH"   # PostgreSQL runs as its own user and needs to reach its folder in here
RESULTS="$SCRATCH/results.jsonl"
: > "$RESULTS"
# "name pid signal" of every process started, stopped in reverse order.
STARTED=()

stop_pid() {  # name pid signal [seconds]
    local name="$1" pid="$2" sig="$3" limit="${4:-60}" waited=0
    kill -0 "$pid" 2>/dev/null || return 0
    log "stopping $name (pid $pid, SIG$sig)"
    kill -s "$sig" "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$waited" -ge $((limit * 10)) ]; then
            log "$name (pid $pid) still running after ${limit}s: SIGKILL"
            kill -s KILL "$pid" 2>/dev/null || true
            break
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    wait "$pid" 2>/dev/null || true
}

forget_pid() {  # pid
    local kept=() entry pid
    for entry in "${STARTED[@]}"; do
        read -r _ pid _ <<< "$entry"
        [ "$pid" = "$1" ] || kept+=("$entry")
    done
    STARTED=("${kept[@]+"${kept[@]}"}")
}

cleanup() {
    local status=$? i
    trap - EXIT INT TERM
    for ((i = ${#STARTED[@]} - 1; i >= 0; i--)); do
        # shellcheck disable=SC2086
        stop_pid ${STARTED[$i]}
    done
    if [ "$KEEP" = 1 ]; then
        log "kept $SCRATCH"
    else
        rm -rf "$SCRATCH"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM

# Runs a client bounded in time, in the background so that Ctrl-C and errors reach the trap at once.
bounded() {  # seconds name command…
    local limit="$1" name="$2" pid status=0
    shift 2
    timeout --kill-after=10 "$limit" "$@" 3>&- &
    pid=$!
    STARTED+=("$name $pid TERM 15")
    wait "$pid" || status=$?
    forget_pid "$pid"
    if [ "$status" = 124 ] || [ "$status" = 137 ]; then die "$name did not finish within ${limit}s"; fi
    return "$status"
}

record() { python3 -c 'import json,sys; print(json.dumps(dict(a.split("=",1) for a in sys.argv[1:])))' "$@" >> "$RESULTS"; }

# MARK: - Packages

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo -n "$@"
    else die "installing packages needs root (or sudo without a password): install them yourself: $*"; fi
}

APT_UPDATED=0
install_packages() {  # packages…
    command -v apt-get >/dev/null || die "missing $*, and there is no apt-get here: install them with your package manager"
    log "installing $* from the distribution's packages"
    if [ "$APT_UPDATED" = 0 ]; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q > "$SCRATCH/apt.log" 2>&1 \
            || { tail -20 "$SCRATCH/apt.log" >&2; die "apt-get update failed (log above)"; }
        APT_UPDATED=1
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >> "$SCRATCH/apt.log" 2>&1 \
        || { tail -20 "$SCRATCH/apt.log" >&2; die "could not install $* (apt-get's log above)"; }
}

pg_bin() { find /usr/lib/postgresql -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -1; }

if wants postgres; then
    if [ -z "$(pg_bin)" ] || [ ! -x "$(pg_bin)/pgbench" ] || [ ! -x "$(pg_bin)/initdb" ]; then
        install_packages postgresql
    fi
    PGBIN="$(pg_bin)"
    [ -n "$PGBIN" ] && [ -x "$PGBIN/postgres" ] && [ -x "$PGBIN/pgbench" ] && [ -x "$PGBIN/psql" ] \
        || die "PostgreSQL's binaries are not under /usr/lib/postgresql/*/bin after installing"
fi
if wants redis && writes; then
    if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null || ! command -v redis-cli >/dev/null; then
        install_packages redis-server redis-tools
    fi
fi
if wants limits || wants ledger; then
    command -v cc >/dev/null || install_packages gcc libc6-dev
fi

# MARK: - Machine

machine_json() {
    python3 - "$SCRATCH" "$DURATION" <<'EOF'
import json, os, platform, subprocess, sys, time
scratch, duration = sys.argv[1], int(sys.argv[2])
def first(path, key):
    try:
        for line in open(path):
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"
fs = subprocess.run(["df", "--output=fstype,source", scratch], capture_output=True, text=True).stdout.split("\n")[1:2]
mem_kb = first("/proc/meminfo", "MemTotal").split()[0]
print(json.dumps({
    "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    "nproc": os.cpu_count(), "memory_gib": round(int(mem_kb) / 1048576, 1),
    "kernel": platform.release(), "cpu": first("/proc/cpuinfo", "model name"),
    "filesystem": " ".join(fs[0].split()) if fs else "?", "scratch": scratch,
    "seconds_per_row": duration,
}))
EOF
}
echo "{\"machine\": $(machine_json)}" > "$SCRATCH/machine.json"
record kind=load "when=at the start" "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
log "scratch folder $SCRATCH, ${DURATION}s per row, parts: $ONLY"

# MARK: - Raw limits

if wants limits; then
    log "raw limits: Unix-socket echo round trip, fdatasync of 4 KiB"
    cc -O2 -o "$SCRATCH/limits" "$HERE/limits.c" || die "could not compile benchmarks/peers/limits.c with cc"
    mkdir -p "$SCRATCH/limits.d"
    echo_seconds=$((DURATION < 5 ? DURATION : 5))
    fsyncs=$([ "$QUICK" = 1 ] && echo 300 || echo 1000)
    bounded $((echo_seconds + 30)) "echo" "$SCRATCH/limits" echo "$SCRATCH/limits.d" "$echo_seconds" > "$SCRATCH/limits.out" \
        || die "the echo round trip failed"
    bounded 300 "fdatasync" "$SCRATCH/limits" fsync "$SCRATCH/limits.d" "$fsyncs" >> "$SCRATCH/limits.out" \
        || die "the fdatasync series failed"
    sed 's/^{/{"kind":"limit","when":"start",/' "$SCRATCH/limits.out" >> "$RESULTS"
    record kind=load "when=after the limits" "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
fi

# MARK: - The ledger

if wants ledger; then
    if [ "$BUILD" = 1 ] || [ ! -x "$BIN/storeledger" ] || [ ! -x "$BIN/loadgen" ]; then
        [ "$BIN" = "$ROOT/.build/release" ] || die "no storeledger and loadgen in $BIN"
        command -v swift >/dev/null || die "no release build in $BIN and no swift to build one"
        log "building storeledger and loadgen (release; the first build takes many minutes)"
        (cd "$ROOT" && swift build -c release --product storeledger && swift build -c release --product loadgen) \
            > "$SCRATCH/build.log" 2>&1 || { tail -30 "$SCRATCH/build.log" >&2; die "the release build failed (log above)"; }
    fi
    [[ "$("$BIN/loadgen" --help 2>&1)" == *--json* ]] || die "$BIN/loadgen has no --json: rebuild it (--build)"

    # The read rows' second client: loadgen's read mode in C (benchmarks/peers/readgen.c).
    cc -O2 -pthread -o "$SCRATCH/readgen" "$HERE/readgen.c" || die "could not compile benchmarks/peers/readgen.c with cc"

    # One fresh ledger per row: serve, measure, stop by pid. With `--client readgen` (read rows only), loadgen fills
    # the ledger with the users' purchases and readgen reads them.
    ledger_row() {  # row-name [--client readgen] loadgen-args…
        local row="$1" dir="$SCRATCH/ledger-$1" pid waited=0 client=loadgen
        shift
        if [ "$1" = --client ]; then client="$2"; shift 2; fi
        mkdir -p "$dir"
        STORELEDGER_LOG_LEVEL=warning "$BIN/storeledger" serve --data "$dir" --socket "$dir/ledger.sock" \
            > "$dir/serve.log" 2>&1 3>&- &
        pid=$!
        STARTED+=("storeledger $pid TERM 60")
        until curl -sf --unix-socket "$dir/ledger.sock" http://localhost/v1/health > /dev/null 2>&1; do
            kill -0 "$pid" 2>/dev/null || { tail -20 "$dir/serve.log" >&2; die "storeledger serve exited at start (log above)"; }
            [ "$waited" -lt 600 ] || die "storeledger serve did not answer on $dir/ledger.sock within 60 s"
            sleep 0.1
            waited=$((waited + 1))
        done
        sync
        log "ledger: $row ($client $*)"
        if [ "$client" = readgen ]; then
            # loadgen-args are --mode read --connections C --users U.
            bounded 600 "loadgen" "$BIN/loadgen" --socket "$dir/ledger.sock" --json --fill-only "$@" \
                > "$dir/fill.log" || die "loadgen could not fill the ledger for the $row row"
            bounded $((DURATION + 60)) "readgen" "$SCRATCH/readgen" "$dir/ledger.sock" "$4" "$6" "$DURATION" \
                > "$dir/loadgen.json" || die "readgen failed on the ledger's $row row"
        else
            bounded $((DURATION + 180)) "loadgen" "$BIN/loadgen" --socket "$dir/ledger.sock" --duration "$DURATION" --json "$@" \
                > "$dir/loadgen.json" || die "loadgen failed on the ledger's $row row"
        fi
        stop_pid storeledger "$pid" TERM 60
        forget_pid "$pid"
        python3 - "$row" "$dir/loadgen.json" >> "$RESULTS" <<'EOF'
import json, sys
row, path = sys.argv[1], sys.argv[2]
r = json.load(open(path))
per_second = r["inputsPerSecond"] if r["batchSize"] > 1 else r["acceptedPerSecond"]
print(json.dumps({"kind": "run", "system": "ledger", "row": row, "clients": r["connections"], "per_second": per_second,
                  "requests_per_second": r["acceptedPerSecond"], "p50_us": r["p50Ns"] / 1e3, "p99_us": r["p99Ns"] / 1e3,
                  "errors": r["errors"], "batch": r["batchSize"]}))
EOF
        [ "$KEEP" = 1 ] || rm -rf "$dir/data.mdb"
    }
    command -v curl >/dev/null || install_packages curl
    if writes; then
        ledger_row single --mode single --connections "$SINGLE_CLIENTS"
        ledger_row batch --mode batch --connections "$BATCH_CLIENTS" --batch-size "$BATCH_SIZE"
    fi
    for clients in $READ_CLIENTS; do
        ledger_row "read$clients" --mode read --connections "$clients" --users $((READ_USERS / clients))
        ledger_row "read${clients}c" --client readgen --mode read --connections "$clients" --users $((READ_USERS / clients))
    done
    record kind=load "when=after the ledger" "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
fi

# MARK: - PostgreSQL

if wants postgres; then
    PG="$SCRATCH/postgres"
    mkdir -p "$PG"
    [ ${#PG} -lt 90 ] || die "the scratch folder's path is too long for a Unix socket: set TMPDIR to a shorter folder"
    if [ "$(id -u)" = 0 ]; then
        # initdb refuses root: PostgreSQL runs as the package's own user.
        id postgres >/dev/null 2>&1 || useradd --system --user-group --no-create-home --shell /usr/sbin/nologin postgres \
            || die "could not create the postgres user"
        chown postgres: "$PG"
        AS_PG=(runuser -u postgres --)
        "${AS_PG[@]}" test -w "$PG" || die "the postgres user cannot write to $PG (is ${TMPDIR:-/tmp} reachable by others?)"
    else
        AS_PG=()
    fi
    "${AS_PG[@]}" "$PGBIN/initdb" -D "$PG/data" --auth=trust -U postgres -E UTF8 --no-instructions > "$PG/initdb.log" 2>&1 \
        || { cat "$PG/initdb.log" >&2; die "initdb failed (log above)"; }
    "${AS_PG[@]}" "$PGBIN/postgres" -D "$PG/data" -c listen_addresses='' -c unix_socket_directories="$PG" \
        -c fsync=on -c synchronous_commit=on -c full_page_writes=on > "$PG/server.log" 2>&1 3>&- &
    PG_WRAPPER=$!
    STARTED+=("postgres-launcher $PG_WRAPPER TERM 30")
    waited=0
    until "$PGBIN/pg_isready" -q -h "$PG" -U postgres; do
        kill -0 "$PG_WRAPPER" 2>/dev/null || { tail -20 "$PG/server.log" >&2; die "postgres exited at start (log above)"; }
        [ "$waited" -lt 600 ] || die "postgres did not accept connections within 60 s"
        sleep 0.1
        waited=$((waited + 1))
    done
    PG_PID="$(head -1 "$PG/data/postmaster.pid")"
    STARTED+=("postgres $PG_PID INT 60")   # SIGINT: fast shutdown
    PSQL=("$PGBIN/psql" -h "$PG" -U postgres -X -q -v ON_ERROR_STOP=1 -d postgres)
    "${PSQL[@]}" -f "$HERE/pg_schema.sql" > "$PG/schema.log" 2>&1 || { cat "$PG/schema.log" >&2; die "the schema failed"; }
    PG_VERSION="$("${PSQL[@]}" -tAc 'SHOW server_version')"
    [ "$("${PSQL[@]}" -tAc 'SHOW fsync')" = on ] && [ "$("${PSQL[@]}" -tAc 'SHOW synchronous_commit')" = on ] \
        || die "PostgreSQL is not running with fsync=on and synchronous_commit=on"
    record kind=version system=postgres "version=PostgreSQL $PG_VERSION"

    pg_row() {  # row clients script per-transaction-events -D…
        local row="$1" clients="$2" script="$3" events="$4" threads
        shift 4
        threads=$((clients < NPROC ? clients : NPROC))
        "${PSQL[@]}" -c 'CHECKPOINT' > /dev/null || die "CHECKPOINT failed"
        sync
        mkdir -p "$PG/log-$row"
        log "postgres: $row ($clients clients, $script)"
        bounded $((DURATION + 120)) "pgbench" "$PGBIN/pgbench" -h "$PG" -U postgres -n -M prepared \
            -c "$clients" -j "$threads" -T "$DURATION" --log --log-prefix="$PG/log-$row/tx" -f "$HERE/$script" "$@" postgres \
            > "$PG/pgbench-$row.out" 2>&1 || { tail -20 "$PG/pgbench-$row.out" >&2; die "pgbench failed on the $row row (output above)"; }
        python3 - "$row" "$clients" "$events" "$PG/pgbench-$row.out" "$PG/log-$row" >> "$RESULTS" <<'EOF'
import glob, json, math, re, sys
row, clients, events, out, logs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), open(sys.argv[4]).read(), sys.argv[5]
tps = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", out)
if not tps:
    sys.exit("no tps in pgbench's output")
failed = re.search(r"number of failed transactions: (\d+)", out)
latencies = []
for path in glob.glob(logs + "/tx.*"):
    for line in open(path):
        fields = line.split()
        if len(fields) >= 3 and fields[2].isdigit():   # client, transaction, latency µs, …; failures log "failed"
            latencies.append(int(fields[2]))
latencies.sort()
def pct(p):
    if not latencies:
        return 0
    return latencies[min(len(latencies) - 1, max(0, math.ceil(len(latencies) * p) - 1))]  # nearest rank, as loadgen
print(json.dumps({"kind": "run", "system": "postgres", "row": row, "clients": clients,
                  "per_second": float(tps.group(1)) * events, "requests_per_second": float(tps.group(1)),
                  "p50_us": pct(0.5), "p99_us": pct(0.99), "errors": int(failed.group(1)) if failed else 0,
                  "batch": events, "transactions": len(latencies)}))
EOF
        [ "$KEEP" = 1 ] || rm -rf "$PG/log-$row"
    }
    if writes; then
        pg_row single "$SINGLE_CLIENTS" pg_single.sql 1 -D subscriptions=$((SINGLE_CLIENTS * USERS_PER_CONNECTION))
        "${PSQL[@]}" -c 'TRUNCATE transactions, subscriptions' -c 'VACUUM' > /dev/null || die "TRUNCATE failed"
        pg_row batch "$BATCH_CLIENTS" pg_batch.sql "$BATCH_SIZE" -D subscriptions=$((BATCH_CLIENTS * USERS_PER_CONNECTION)) -D batch="$BATCH_SIZE"
    fi
    "${PSQL[@]}" -v users="$READ_USERS" -f "$HERE/pg_fill.sql" > "$PG/fill.log" 2>&1 || { cat "$PG/fill.log" >&2; die "filling the read table failed"; }
    for clients in $READ_CLIENTS; do
        pg_row "read$clients" "$clients" pg_read.sql 1 -D users="$READ_USERS"
    done
    stop_pid postgres "$PG_PID" INT 60
    stop_pid postgres-launcher "$PG_WRAPPER" TERM 30
    forget_pid "$PG_PID"
    forget_pid "$PG_WRAPPER"
    record kind=load "when=after PostgreSQL" "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
fi

# MARK: - Redis

if wants redis && writes; then
    RD="$SCRATCH/redis"
    mkdir -p "$RD"
    [ ${#RD} -lt 90 ] || die "the scratch folder's path is too long for a Unix socket: set TMPDIR to a shorter folder"
    redis-server --port 0 --unixsocket "$RD/redis.sock" --unixsocketperm 700 --dir "$RD" --appendonly yes \
        --appendfsync always --save '' --daemonize no --logfile "$RD/redis.log" 3>&- &
    RD_PID=$!
    STARTED+=("redis-server $RD_PID TERM 60")
    RCLI=(redis-cli -s "$RD/redis.sock")
    waited=0
    until [ "$("${RCLI[@]}" ping 2>/dev/null)" = PONG ]; do
        kill -0 "$RD_PID" 2>/dev/null || { tail -20 "$RD/redis.log" >&2; die "redis-server exited at start (log above)"; }
        [ "$waited" -lt 600 ] || die "redis-server did not answer within 60 s"
        sleep 0.1
        waited=$((waited + 1))
    done
    [ "$("${RCLI[@]}" config get appendfsync | tail -1)" = always ] && [ "$("${RCLI[@]}" config get appendonly | tail -1)" = yes ] \
        || die "Redis is not running with appendonly yes and appendfsync always"
    record kind=version system=redis "version=Redis $("${RCLI[@]}" info server | sed -n 's/^redis_version:\([^[:space:]]*\).*/\1/p')"
    # A ~320-byte event: its ids and user, and the decoded transaction as JSON.
    RAW='{"transactionId":"2000000123456789","originalTransactionId":"2000000012345678","productId":"com.example.premium.monthly","purchaseDate":1700000000000,"expiresDate":1702592000000,"type":"Auto-Renewable Subscription","environment":"Production","bundleId":"com.example.app"}'
    XADD=(XADD events '*' tid __rand_int__ otid __rand_int__ user u__rand_int__ raw "$RAW")

    redis_bench() {  # requests clients pipeline: the command line
        BENCH=(redis-benchmark -s "$RD/redis.sock" -c "$2" -n "$1" -P "$3" -r $((SINGLE_CLIENTS * USERS_PER_CONNECTION)) --csv "${XADD[@]}")
    }
    redis_row() {  # row clients pipeline
        local row="$1" clients="$2" pipeline="$3" probe rate requests
        "${RCLI[@]}" flushall > /dev/null || die "FLUSHALL failed"
        sync
        # redis-benchmark counts requests, not seconds: a short probe sets the count for DURATION seconds.
        probe=$((pipeline > 1 ? 20000 : 3000))
        redis_bench "$probe" "$clients" "$pipeline"
        bounded 120 "redis-benchmark" "${BENCH[@]}" > "$RD/probe-$row.csv" 2>&1 \
            || { tail -5 "$RD/probe-$row.csv" >&2; die "redis-benchmark failed (output above)"; }
        rate="$(tail -1 "$RD/probe-$row.csv" | python3 -c 'import sys; print(int(float(sys.stdin.read().rsplit(",", 7)[1].strip("\""))))')"
        requests=$(( rate * DURATION ))
        [ "$requests" -ge 1000 ] || requests=1000
        "${RCLI[@]}" flushall > /dev/null || die "FLUSHALL failed"
        sync
        log "redis: $row ($clients clients, pipeline $pipeline, $requests XADDs)"
        redis_bench "$requests" "$clients" "$pipeline"
        bounded $((DURATION * 4 + 120)) "redis-benchmark" "${BENCH[@]}" > "$RD/bench-$row.csv" 2>&1 \
            || { tail -5 "$RD/bench-$row.csv" >&2; die "redis-benchmark failed (output above)"; }
        python3 - "$row" "$clients" "$pipeline" "$RD/bench-$row.csv" "$requests" >> "$RESULTS" <<'EOF'
import json, sys
row, clients, pipeline, path, requests = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
# The test's name holds the command (quotes and all): the figures are the last seven fields.
rps, avg, low, p50, p95, p99, high = (float(f.strip().strip('"')) for f in open(path).read().strip().splitlines()[-1].rsplit(",", 7)[1:])
print(json.dumps({"kind": "run", "system": "redis", "row": row, "clients": clients, "pipeline": pipeline,
                  "per_second": rps, "requests_per_second": rps, "p50_us": p50 * 1e3, "p99_us": p99 * 1e3,
                  "errors": 0, "requests": requests}))
EOF
    }
    redis_row xadd "$SINGLE_CLIENTS" 1
    redis_row xadd_pipelined "$SINGLE_CLIENTS" 16
    stop_pid redis-server "$RD_PID" TERM 60
    forget_pid "$RD_PID"
fi

# MARK: - The table

if wants limits; then
    # The disk's flush latency drifts with what else the machine does: measured again after the peers.
    log "raw limits again: fdatasync of 4 KiB"
    bounded 300 "fdatasync" "$SCRATCH/limits" fsync "$SCRATCH/limits.d" "$fsyncs" > "$SCRATCH/limits-end.out" \
        || die "the fdatasync series failed"
    sed 's/^{/{"kind":"limit","when":"end",/' "$SCRATCH/limits-end.out" >> "$RESULTS"
fi
record kind=load "when=at the end" "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
if wants ledger; then
    commit="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)" || commit="(commit unknown)"
    changes=0
    git -C "$ROOT" diff --quiet HEAD -- 2>/dev/null || changes=$?
    [ "$changes" = 1 ] && commit="$commit with uncommitted changes"
    record kind=version system=ledger "version=StoreLedger $commit"
fi
python3 "$HERE/table.py" "$SCRATCH/machine.json" "$RESULTS" > "$SCRATCH/table.md" || die "making the table failed"
cat "$SCRATCH/table.md"
if [ -n "$OUT" ]; then cp "$SCRATCH/table.md" "$OUT" && log "table written to $OUT"; fi
