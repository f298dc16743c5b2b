#!/usr/bin/env bash
# Builds the libFuzzer targets (every Swift module with -sanitize=fuzzer,address, C with ASan) and runs one.
#
#   tools/fuzz/run.sh build                      # builds every target
#   tools/fuzz/run.sh TARGET [SECONDS] [FLAGS…]  # seeds its corpus from the test fixtures, then fuzzes (default 60 s)
#   tools/fuzz/run.sh TARGET 0 CRASH-FILE        # reruns one input (a crash artifact) and exits
#
# Targets: FuzzReceipt FuzzNotificationV1 FuzzNotificationV2 FuzzJWS FuzzEnvelope FuzzFraming FuzzHTTP FuzzQuery
# FuzzDamagedLedger.
# Working files (grown corpus, crash artifacts, logs) go to tools/fuzz/.work/, which git ignores.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$here/.work"
targets=(FuzzReceipt FuzzNotificationV1 FuzzNotificationV2 FuzzJWS FuzzEnvelope FuzzFraming FuzzHTTP FuzzQuery FuzzDamagedLedger)
# One -sanitize flag for Swift: the driver keeps only the last of several, and SwiftPM's --sanitize=fuzzer
# --sanitize=address reaches swiftc as two (the modules would get ASan but no coverage counters).
build_flags=(--package-path "$here" -c release --sanitize=address -Xswiftc -sanitize=fuzzer,address)

if [[ $# -lt 1 ]]; then
    sed -n '2,10p' "$0"
    exit 2
fi
if [[ "$1" == build ]]; then
    exec swift build "${build_flags[@]}"
fi

target="$1"
seconds="${2:-60}"
shift $(( $# >= 2 ? 2 : 1 ))
if [[ ! " ${targets[*]} " == *" $target "* ]]; then
    echo "unknown target '$target'; one of: ${targets[*]}" >&2
    exit 2
fi
swift build "${build_flags[@]}" --product "$target" >&2
bin="$(swift build "${build_flags[@]}" --show-bin-path)/$target"

corpus="$work/corpus/$target"
mkdir -p "$corpus" "$work/artifacts" "$work/logs"
# Leak checks are off: the Swift runtime's caches (metadata, interned strings) live until exit by design.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
# The Swift runtime's backtracer reads the other threads' stacks when a trap stops the process, which ASan reports
# as a stack-buffer-underflow in its place; without it, the trap's message and libFuzzer's stack trace are the log.
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=no}"
# The seeds' JWS are signed by a test PKI made afresh in each process: write the seeds and their root together.
export FUZZ_TEST_ROOT="$work/test-root-$target.der"
FUZZ_WRITE_SEEDS="$corpus" "$bin" >&2

if [[ "$seconds" == 0 ]]; then
    exec "$bin" -detect_leaks=0 "$@"
fi
log="$work/logs/$target.log"
# A damaged ledger is a small file read through a small map: a read that grows past 2 GB (a damaged length taken
# at its word) is a finding, well before the machine's memory is.
rss_limit=4096
[[ "$target" == FuzzDamagedLedger ]] && rss_limit=2048
set +e
"$bin" -max_total_time="$seconds" -rss_limit_mb="$rss_limit" -timeout=30 -detect_leaks=0 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/$target-" "$@" "$corpus" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
echo "--- $target: exit $status; final lines:" >&2
grep -E '^(#[0-9]+[[:space:]]+(DONE|INITED)|stat::number_of_executed_units|stat::peak_rss_mb|Done [0-9]+ runs)' "$log" | tail -4 >&2 || true
grep -E 'ERROR: |SUMMARY: |Test unit written' "$log" >&2 || true
exit "$status"
