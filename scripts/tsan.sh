#!/usr/bin/env bash
# Builds the runtime and the CPU plugin with ThreadSanitizer in build-tsan/
# and runs the meson suite 'tsan': tests/tsan/threads_stress.c (one session
# run from 8 threads, sessions created and destroyed concurrently, graphs
# built in parallel and grown while running, a variable read while
# AssignAdd runs from several threads and sessions, a branching graph on
# 4 inter-op threads, a while loop with a cond and a TensorArray inside
# and overlapping iterations run from 4 threads) and tests/test_work_pool.cc
# (the CPU plugin's work pool: competing and nested callers, exceptions, the
# load check).  Any TSan report fails it (TSAN_OPTIONS in
# tests/meson.build).  The Criterion programs are not run: Criterion
# aborts at start under TSan (Snaipe/Criterion#274).  Opt-in, not part of
# test.sh.  Ends with the `N passed, M failed` line of tally.py.
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
         -Dbenchmarks=disabled -Dcpu_isa_variants=false)
weft_install_packages
if [ -f "$dir/meson-private/coredata.dat" ]; then
  meson setup --reconfigure "${options[@]}" "$dir"
else
  weft_log "configuring $dir (ThreadSanitizer)"
  meson setup "${options[@]}" "$dir"
fi
weft_log "building and running the suite 'tsan' under ThreadSanitizer"
# Only what the suite needs, not every (Criterion) test program.
ninja -C "$dir" ${WEFT_JOBS:+-j "$WEFT_JOBS"} tests/threads_stress \
  tests/test_work_pool plugins/cpu/weft-cpu.so
meson test -C "$dir" --no-rebuild --suite tsan --print-errorlogs \
  --num-processes 2 || true
exec python3 tests/tally.py "$dir"
