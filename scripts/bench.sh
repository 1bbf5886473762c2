#!/usr/bin/env bash
# Builds and runs the benchmarks in bench/ and prints their figures, with
# the machine, its load and the commit they were measured on.
#
# Environment:
#   WEFT_BENCH_MAX_LOAD   wait, before each benchmark, until the 1-minute
#                         load average is at most this (e.g. 1.5 on a shared
#                         machine); unset: never wait
#   WEFT_BENCH_WAIT_MIN   give up waiting after this many minutes (30) and
#                         measure anyway, saying so
#   WEFT_BUILD_DIR, WEFT_JOBS as for setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh

# The peers the figures are compared with.  They are the benchmarks' needs,
# not Weft's, so they stay out of WEFT_PACKAGES: setup.sh and test.sh never
# install them.  OpenBLAS's OpenMP build because LibTorch's GEMM otherwise
# falls back to the reference BLAS, which would flatter every ratio.
bench_install_peers() {
  local WEFT_PACKAGES=(libtorch-dev libopenblas0-openmp)
  weft_install_packages
}

bench_load() {
  cut -d' ' -f1-3 /proc/loadavg
}

bench_wait_for_quiet() {
  [ -n "${WEFT_BENCH_MAX_LOAD:-}" ] || return 0
  local waited=0 limit=$((${WEFT_BENCH_WAIT_MIN:-30} * 60))
  # awk: bash has no floating-point comparison.
  while awk -v max="$WEFT_BENCH_MAX_LOAD" '{ exit !($1 > max) }' \
      /proc/loadavg; do
    if [ "$waited" -ge "$limit" ]; then
      weft_log "load still $(bench_load) after $((waited / 60)) min;" \
               "measuring anyway"
      return 0
    fi
    weft_log "load $(bench_load) above $WEFT_BENCH_MAX_LOAD; waiting"
    sleep 60
    waited=$((waited + 60))
  done
}

bench_has_target() {
  ninja -C "$WEFT_BUILD_DIR" -t targets all 2>/dev/null |
    grep -q "^bench/$1:"
}

# Runs one benchmark from the build tree, after waiting for a quiet
# machine, and prints the load it started under.
bench_run() {
  bench_wait_for_quiet
  echo "--- $* (load average at start: $(bench_load))"
  weft_in_build_env "bench/$@"
}

weft_install_packages
bench_install_peers ||
  weft_log "could not install the LibTorch peer; its benchmarks are skipped"
weft_build
if [ ! -x "$WEFT_BUILD_DIR/bench/executor_overhead" ]; then
  echo "bench.sh: benchmarks were not built (see 'benchmarks' in the" \
       "configure summary)" >&2
  exit 1
fi
# Not built by default (bench/meson.build says why).
optional=()
for target in conv_matmul torch_eager_add train_mlp_torch; do
  if bench_has_target "$target"; then
    optional+=("$target")
  else
    weft_log "bench/$target not configured (oneDNN or LibTorch missing)"
  fi
done
if [ ${#optional[@]} -gt 0 ]; then
  weft_log "building ${optional[*]}"
  meson compile -C "$WEFT_BUILD_DIR" ${WEFT_JOBS:+-j "$WEFT_JOBS"} \
    "${optional[@]/#/bench/}"
fi

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  commit+=" plus uncommitted changes"
fi
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -n1)"
echo "commit: $commit"

executor=$(bench_run executor_overhead)
printf '%s\n' "$executor"
if [ -x "$WEFT_BUILD_DIR/bench/torch_eager_add" ]; then
  eager=$(bench_run torch_eager_add)
  printf '%s\n' "$eager"
  # The two chains are the same computation, so their per-op costs compare
  # directly.
  weft_us=$(awk '/per node \(run\//{ print $4 }' <<<"$executor")
  torch_us=$(awk '/per op \(default mode\)/{ print $5 }' <<<"$eager")
  if [ -n "$weft_us" ] && [ -n "$torch_us" ]; then
    awk -v w="$weft_us" -v t="$torch_us" 'BEGIN {
      printf "per Add: Weft session %.3f µs, LibTorch eager %.3f µs " \
             "(LibTorch / Weft %.1f×)\n", w, t, t / w }'
  fi
fi
# steps/s from a train_mlp or train_mlp_torch line.
steps_per_second() {
  sed -n 's/.*threads\{0,1\}: \([0-9.]*\) steps\/s.*/\1/p' <<<"$1"
}
for threads in 1 2; do
  weft_line=$(bench_run train_mlp "$threads")
  printf '%s\n' "$weft_line"
  if [ -x "$WEFT_BUILD_DIR/bench/train_mlp_torch" ]; then
    torch_line=$(bench_run train_mlp_torch "$threads")
    printf '%s\n' "$torch_line"
    # Same model, batch, optimizer and threads: the steps/s compare directly.
    awk -v w="$(steps_per_second "$weft_line")" \
        -v t="$(steps_per_second "$torch_line")" -v n="$threads" 'BEGIN {
      if (t > 0) printf "MLP training, %d thread(s): Weft %.1f, LibTorch %.1f steps/s (Weft / LibTorch %.2f×)\n", n, w, t, w / t }'
  fi
done
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
