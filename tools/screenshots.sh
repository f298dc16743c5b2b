#!/bin/sh
# Renders, in headless Chromium, the timeline pictures of the seeds' restore storm and of the refund + transfer story,
# and the web console's pages on the demo's ledger, and writes their screenshots to docs/pictures/ (shown in
# docs/debugging-a-subscription.md and the README). Runs the browser tests that also check them: no console error,
# nothing loaded from elsewhere, one bar per period, every console link answering.
# Needs the distribution's Chromium: apt-get install -y chromium (without it the tests say so).
set -eu
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
    echo "chromium is not installed: apt-get install -y chromium" >&2
    exit 1
fi
STORELEDGER_SCREENSHOT_DIR="$PWD/docs/pictures" swift test --filter "TimelinePictureTests|ConsoleTests" "$@"
ls -l docs/pictures/*.png
