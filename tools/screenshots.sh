#!/bin/sh
# Renders the timeline pictures of the seeds' restore storm and of the refund + transfer story in headless Chromium
# and writes their screenshots to docs/pictures/ (shown in docs/debugging-a-subscription.md). Runs the browser test that also checks them:
# no console error, nothing loaded from elsewhere, one bar per period.
# Needs the distribution's Chromium: apt-get install -y chromium (without it the test is skipped, and says so).
set -eu
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
    echo "chromium is not installed: apt-get install -y chromium" >&2
    exit 1
fi
STORELEDGER_SCREENSHOT_DIR="$PWD/docs/pictures" swift test --filter TimelinePictureTests "$@"
ls -l docs/pictures/*.png
