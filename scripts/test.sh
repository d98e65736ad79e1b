#!/usr/bin/env bash
# The README's test command: installs what the tests need (Debian packages for the real
# servers, npm dependencies), then runs the whole suite. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-test-deps.sh
npm install --no-audit --no-fund
npm test
