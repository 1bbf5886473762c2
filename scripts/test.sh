#!/usr/bin/env bash
# Installs what is missing, builds, runs the whole test suite and ends with
# one line, `N passed, M failed`, counting test cases.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh

weft_install_packages
weft_build
weft_log "running the test suite"
# meson exits non-zero when a test fails; the tally below still has to run,
# and its status (not meson's) is this script's, since it counts cases
# where meson counts executables.
meson test -C "$WEFT_BUILD_DIR" --print-errorlogs --num-processes 2 || true
exec python3 tests/tally.py "$WEFT_BUILD_DIR"
