#!/usr/bin/env bash
# Builds and runs the benchmarks in bench/ in one go and prints their
# figures with the machine, its load and the commit they were measured on.
#
# First the comparison with the peers (scripts/bench_peers.sh, which
# installs them: LibTorch from Debian, tensorflow-cpu and jax[cpu] into a
# venv under the build folder, for the benchmarks only): MLP training with
# SGD and with Adam, the CNN training step, MLP inference at batch 1 and
# 256, the executor's cost per node, and the input pipeline's records/s
# against tf.data (PNG and JPEG records), in WEFT_BENCH_ROUNDS interleaved
# rounds at 1 and 2 threads, with the oneDNN floor of each workload; one
# markdown table of medians (wall-clock and CPU time), ratios and fractions
# of the floor.  Then 2 threads against 1 on the MLP and CNN steps, paired
# in one process, idle and with a busy loop on one core.  Then Weft's own
# micro-benchmarks (run() of one scalar Add from C and from Java, a
# session's MatMul against Eigen, Conv2D and MatMul against oneDNN and
# LibTorch); WEFT_BENCH_PEERS_ONLY=1 leaves them out (the peers and the
# paired threads only).
#
# Environment:
#   WEFT_BENCH_ROUNDS     rounds of interleaved runs (3)
#   WEFT_BENCH_MAX_LOAD   wait, before the peers' rounds and before each
#                         micro-benchmark, until the 1-minute load average
#                         is at most this (e.g. 1.5 on a shared machine);
#                         unset: never wait
#   WEFT_BENCH_WAIT_MIN   give up waiting after this many minutes (30) and
#                         measure anyway, saying so (and no later
#                         benchmark waits again)
#   WEFT_BUILD_DIR, WEFT_JOBS as for setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh

bench_load() {
  cut -d' ' -f1-3 /proc/loadavg
}

# Set once a wait has run out: the later benchmarks then start at once
# rather than each waiting as long again.
bench_gave_up=0

bench_wait_for_quiet() {
  [ -n "${WEFT_BENCH_MAX_LOAD:-}" ] && [ "$bench_gave_up" = 0 ] || return 0
  local waited=0 limit=$((${WEFT_BENCH_WAIT_MIN:-30} * 60))
  # awk: bash has no floating-point comparison.
  while awk -v max="$WEFT_BENCH_MAX_LOAD" '{ exit !($1 > max) }' \
      /proc/loadavg; do
    if [ "$waited" -ge "$limit" ]; then
      weft_log "load still $(bench_load) after $((waited / 60)) min;" \
               "measuring anyway, and not waiting again"
      bench_gave_up=1
      return 0
    fi
    weft_log "load $(bench_load) above $WEFT_BENCH_MAX_LOAD; waiting"
    sleep 60
    waited=$((waited + 60))
  done
}

bench_has_target() {
  # grep reads everything: with pipefail, grep -q leaving early would let
  # ninja die of SIGPIPE and the target look missing.
  ninja -C "$WEFT_BUILD_DIR" -t targets all 2>/dev/null |
    grep "^bench/$1:" >/dev/null
}

# Runs one benchmark from the build tree, after waiting for a quiet
# machine, and prints the load it started under.
bench_run() {
  bench_wait_for_quiet
  echo "--- $* (load average at start: $(bench_load))"
  local name=$1
  shift
  weft_in_build_env "bench/$name" "$@"
}

weft_install_packages
# The peers' table; bench_peers.sh installs the peers and builds.
bench_wait_for_quiet
scripts/bench_peers.sh train_mlp train_mlp_adam train_cnn infer_mlp_1 \
  infer_mlp_256 executor pipeline_png pipeline_jpeg

# Two intra-op threads against one, paired in one process (bench_paired
# in bench/bench_util.h), idle and with another process busy on one core:
# issue 12's "never slower than one thread, under load or idle".  Threads
# 1 against 1 is the method's A/A control: its spread is the resolution.
# Idle, the machine's own ceiling follows: register-only arithmetic on 2
# threads against 1 (bench/cpu_ceiling).
echo
echo "--- 2 intra-op threads against 1, paired (1 against 1: the control)"
busy_pid=
trap '[ -z "$busy_pid" ] || kill "$busy_pid" 2>/dev/null || true' EXIT
for load in idle busy; do
  if [ "$load" = busy ]; then
    (while :; do :; done) &
    busy_pid=$!
  else
    bench_wait_for_quiet
  fi
  for threads in 2 1; do
    for run in "train_mlp $threads 700:100" "train_cnn $threads 100:60"; do
      line=$(WEFT_BENCH_PAIRED=${run#*:} weft_in_build_env \
        bench/${run%%:*} | grep paired)
      echo "$load (load average $(bench_load)): $line"
    done
  done
  # What two threads can gain here at best (bench/cpu_ceiling.c): on a
  # virtual machine whose host shares its cores, less than 2x.
  if [ "$load" = idle ]; then
    echo "$load (load average $(bench_load)):" \
         "$(weft_in_build_env bench/cpu_ceiling)"
  fi
  if [ -n "$busy_pid" ]; then
    kill "$busy_pid"
    wait "$busy_pid" 2>/dev/null || true
    busy_pid=
  fi
done
[ "${WEFT_BENCH_PEERS_ONLY:-0}" = 1 ] && exit 0

echo
echo "--- Weft's micro-benchmarks"
# Not built by default (bench/meson.build says why).
if bench_has_target conv_matmul; then
  meson compile -C "$WEFT_BUILD_DIR" ${WEFT_JOBS:+-j "$WEFT_JOBS"} \
    bench/conv_matmul >/dev/null
fi
bench_run matmul_overhead
# The Java binding against C: run() of one scalar Add, and a 100 MB feed.
c_tiny=$(bench_run tiny_run)
printf '%s\n' "$c_tiny"
if [ -f "$WEFT_BUILD_DIR/bench/java_binding_bench.jar" ]; then
  bench_wait_for_quiet
  echo "--- JavaBindingBench (load average at start: $(bench_load))"
  java_line=$(weft_in_build_env java \
    -cp bindings/java/src/weft.jar:bench/java_binding_bench.jar JavaBindingBench)
  printf '%s\n' "$java_line"
  awk -v c="$(sed -n 's/.*Add: \([0-9.]*\) us.*/\1/p' <<<"$c_tiny")" \
      -v j="$(sed -n 's/^Java run.*Add: \([0-9.]*\) us.*/\1/p' <<<"$java_line")" 'BEGIN {
    if (c > 0 && j > 0) printf "run() of one scalar Add: Java %.2f us, C %.2f us (Java adds %.2f us)\n", j, c, j - c }'
fi
if [ -x "$WEFT_BUILD_DIR/bench/conv_matmul" ]; then
  bench_run conv_matmul
fi
echo "load average at the end: $(bench_load)"
