#!/usr/bin/env bash
# Rewrites examples/ from Tests/StoreLedgerCLITests/ExampleFiles.swift (keeping examples/pki, so the root that
# examples/config.json trusts stays the same; delete examples/pki to mint a new test chain).
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --build-tests
STORELEDGER_WRITE_EXAMPLES=1 swift test --skip-build --filter 'LiveProcesses/ExamplesTests/writeExamples'
# The committed files must match the generator again (signatures aside).
swift test --skip-build --filter 'LiveProcesses/ExamplesTests'
git status --short examples/
