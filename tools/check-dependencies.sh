#!/usr/bin/env bash
# Compares the versions SwiftPM resolved (Package.resolved, which is not committed: the package mirror's commit ids
# are not GitHub's) with dependencies.txt, the list of every package and version this repository builds with, its
# dependencies' own dependencies included. Package.swift pins the direct ones exactly; the others resolve within the
# ranges those versions state, and could move to a newer release the day one appears: this check says so instead of
# building other code without a word.
#
#   tools/check-dependencies.sh            # after a build (or `swift package resolve`): exit 1 when they differ
#   tools/check-dependencies.sh --write    # rewrite dependencies.txt from Package.resolved (after an upgrade)
set -euo pipefail
cd "$(dirname "$0")/.."

[ -f Package.resolved ] || swift package resolve >/dev/null
resolved=$(python3 - <<'PY'
import json
pins = json.load(open("Package.resolved"))["pins"]
for pin in sorted(pins, key=lambda p: p["location"].lower()):
    name = pin["location"].split("github.com/")[-1].removesuffix(".git")
    print(name, pin["state"].get("version") or "revision " + pin["state"]["revision"])
PY
)

if [ "${1:-}" = "--write" ]; then
    printf '%s\n' "$resolved" > dependencies.txt
    echo "dependencies.txt: $(wc -l < dependencies.txt) packages"
    exit 0
fi
if ! difference=$(diff <(printf '%s\n' "$resolved") dependencies.txt); then
    echo "check-dependencies: Package.resolved differs from dependencies.txt (< resolved, > listed):" >&2
    printf '%s\n' "$difference" >&2
    echo "An upgrade is made on purpose: change Package.swift, then tools/check-dependencies.sh --write." >&2
    exit 1
fi
echo "check-dependencies: the $(wc -l < dependencies.txt) packages resolved are the ones dependencies.txt lists"
