#!/usr/bin/env bash
# An attacker's run against a real `storeledger serve` (tools/adversary/adversary.py says what each phase does).
#
#   tools/adversary/run.sh                    # builds storeledger in release mode, then runs every phase
#   tools/adversary/run.sh --binary PATH      # runs against a binary already built
#   tools/adversary/run.sh --quick ...        # shorter phases, for a smoke run
#
# Ends with the figures (connections held, bad inputs tried, crashes, 5xx answers, acknowledged and lost) and a line
# "N passed, N failed"; exits 1 when a phase failed. Run as root to include the phase that trickles bodies as
# `nobody` (it needs setpriv); as another user that phase is skipped, saying so.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
args=("$@")
if [[ " ${args[*]-} " != *" --binary "* ]]; then
    echo "building storeledger (release)" >&2
    (cd "$root" && swift build -c release --product storeledger >&2)
    args+=(--binary "$root/.build/release/storeledger")
fi
exec python3 "$root/tools/adversary/adversary.py" "${args[@]}"
