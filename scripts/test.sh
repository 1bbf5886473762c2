#!/usr/bin/env bash
# Installs what is missing, builds, runs the whole test suite and ends with
# one line, `N passed, M failed`, counting test cases.  WEFT_SANITIZE=1 also
# runs the suite in a build with AddressSanitizer and
# UndefinedBehaviorSanitizer (leak checks included) and counts both.  It is
# not the default: with the oneDNN and Eigen kernels instrumented, that
# build alone takes about ten minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh

weft_install_packages
weft_build
builds=("$WEFT_BUILD_DIR")
weft_log "running the test suite"
# meson exits non-zero when a test fails; the tally below still has to run,
# and its status (not meson's) is this script's, since it counts cases
# where meson counts executables.
meson test -C "$WEFT_BUILD_DIR" --print-errorlogs --num-processes 2 || true

if [ "${WEFT_SANITIZE:-0}" = 1 ]; then
  weft_build_sanitized
  builds+=("$WEFT_SANITIZE_DIR")
  weft_log "running the test suite under ASan and UBSan"
  meson test -C "$WEFT_SANITIZE_DIR" --print-errorlogs --num-processes 2 || true
fi
exec python3 tests/tally.py "${builds[@]}"
