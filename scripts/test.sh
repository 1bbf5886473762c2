#!/usr/bin/env bash
# Installs what is missing, builds, runs the whole test suite and ends with
# one line, `N passed, M failed`, counting test cases.
#
# It also builds the runtime, the CPU plugin and the tests in a second
# directory with AddressSanitizer and UndefinedBehaviorSanitizer and runs
# the API, graph, session, plugin-loader, checkpoint, gradient and
# concurrency tests there (the meson suite 'sanitize'), where any report,
# leaks included, fails the case; both runs are counted.
#
# Environment:
#   WEFT_SANITIZE   subset (default): the suite 'sanitize' as above;
#                   full (or 1): every test, in a build of everything (slow:
#                   the op tests instrument all the Eigen and oneDNN kernels);
#                   0: no sanitized run
#   WEFT_SANITIZE_DIR  the sanitized build (build-sanitize)
#   WEFT_BUILD_DIR, WEFT_JOBS as for setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh

sanitize=${WEFT_SANITIZE:-subset}
case $sanitize in
  1) sanitize=full ;;
  0 | subset | full) ;;
  *) echo "test.sh: WEFT_SANITIZE is subset, full or 0, not '$sanitize'" >&2
     exit 2 ;;
esac

weft_install_packages
weft_build
builds=("$WEFT_BUILD_DIR")
weft_log "running the test suite"
# meson exits non-zero when a test fails; the tally below still has to run,
# and its status (not meson's) is this script's, since it counts cases
# where meson counts executables.
meson test -C "$WEFT_BUILD_DIR" --print-errorlogs --num-processes 2 || true

if [ "$sanitize" != 0 ]; then
  weft_test_sanitized "$sanitize"
  builds+=("$WEFT_SANITIZE_DIR")
fi
exec python3 tests/tally.py "${builds[@]}"
