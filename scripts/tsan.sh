#!/usr/bin/env bash
# Builds the runtime, the CPU plugin and the thread tests with
# ThreadSanitizer in build-tsan/ and runs them (the meson suite 'tsan':
# sessions run from many threads, concurrent graph building, the async
# device's streams, with and without slowed-down workers); any report fails
# the case.  Opt-in, not part of test.sh: another instrumented build of the
# Eigen kernels.  Ends with the `N passed, M failed` line of tally.py.
#
# oneDNN is left out: its prebuilt library (and the OpenMP runtime it runs
# on) is not instrumented, so TSan would report races inside it that it
# cannot see the synchronization of.
#
# Environment: WEFT_TSAN_DIR (build-tsan), WEFT_JOBS as for setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh

dir=${WEFT_TSAN_DIR:-build-tsan}
options=(-Db_sanitize=thread -Db_lundef=false
         -Doptimization=1 -Ddebug=false -Dc_args=-g1 -Dcpp_args=-g1
         -Dcuda=disabled -Dopencl=disabled -Donednn=disabled -Djava=disabled
         -Dbenchmarks=disabled)
weft_install_packages
if [ -f "$dir/meson-private/coredata.dat" ]; then
  meson setup --reconfigure "${options[@]}" "$dir"
else
  weft_log "configuring $dir (ThreadSanitizer)"
  meson setup "${options[@]}" "$dir"
fi
weft_log "building and running the suite 'tsan' under ThreadSanitizer"
meson test -C "$dir" --suite tsan --print-errorlogs --num-processes 2 || true
exec python3 tests/tally.py "$dir"
