#!/usr/bin/env bash
# Workloads measured against their peers in one run: Weft against
# TensorFlow 1.x graph mode and JAX (tensorflow-cpu and jax[cpu] from PyPI,
# installed into a venv under the build folder by this script only: the
# benchmarks' needs, never Weft's) and LibTorch (Debian's libtorch-dev),
# interleaved, at 1 and 2 threads; plus the oneDNN floor of the workloads
# that have one (bench/onednn_floor.cc).  Prints every run, then a markdown
# table of medians (wall-clock and CPU time) and of ratios.
#
# Usage: scripts/bench_peers.sh [WORKLOAD...]  (default: all of them)
#   while_loop     a while loop's cost per iteration (trivial body, 100,000
#                  iterations; issue 11)
#   train_lstm     LSTM training steps/s (128 units, 28 steps; issue 11)
#   train_cnn      CNN training steps/s (two 5x5 convolutions with ReLU and
#                  max-pooling, dense to 10, batch 64, SGD; issue 12)
#   train_mlp      MLP training steps/s (784-256-10, batch 100, SGD)
#   train_mlp_adam the same MLP trained with Adam
#   infer_mlp_1    MLP inference steps/s (the logits), batch 1
#   infer_mlp_256  the same, batch 256
#   executor       cost per node of a 1,000-Add chain (JAX: its dispatch of
#                  a trivial jitted function per call instead, as XLA folds
#                  the chain)
#   pipeline_png   input pipeline records/s against tf.data: TFRecord of
#                  tf.train.Examples, parse, decode, cast, batch 128,
#                  prefetch; the 60,000 Fashion-MNIST images as 28x28 PNGs
#   pipeline_jpeg  the same on 10,000 64x64 RGB JPEGs (decoding dominates)
#                  (both files written once by bench/pipeline_data.py, with
#                  the TensorFlow peer, under the build folder's bench-data)
# Each workload runs bench/<prog> (Weft), bench/<prog>_tf.py,
# bench/<prog>_torch (or torch_eager_add) and, where it exists,
# bench/<prog>_jax.py, each as "<prog> THREADS STEPS [MODE...]", each
# printing one line "<System> [version] <what>, N thread(s): <value>
# <unit> (CPU <value> <unit>), ..." (bench_util.h's bench_steps and
# bench_print_per_unit, tf_timing.py's time_steps and time_per_unit).
# A workload whose program has no LibTorch or JAX twin runs without it.
#
# Environment: WEFT_BENCH_ROUNDS (3) rounds of interleaved runs;
# WEFT_BENCH_THREADS ("1 2") the thread counts; WEFT_BUILD_DIR as for
# setup.sh; WEFT_BUILD_LOCK, a file the build steps hold with flock(1)
# (for a build folder shared with others; unset: none).  OMP_WAIT_POLICY
# reaches every program: unset, Weft and the floor let OpenMP's idle
# workers sleep (passive) while LibTorch keeps libgomp's default spinning,
# which on a loaded machine costs it most of its 2-thread speed;
# OMP_WAIT_POLICY=passive gives every system the same.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh

rounds=${WEFT_BENCH_ROUNDS:-3}
read -r -a thread_counts <<<"${WEFT_BENCH_THREADS:-1 2}"
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(while_loop train_lstm train_cnn
  train_mlp train_mlp_adam infer_mlp_1 infer_mlp_256 executor)
# The program each workload runs, its step (or run) count, and the mode
# arguments after it.  The counts keep every run well under a minute on a
# 2-core machine (the CNN, the longest, about 15 s for the slowest peer).
declare -A prog=([while_loop]=while_loop [train_lstm]=train_lstm
  [train_cnn]=train_cnn [train_mlp]=train_mlp [train_mlp_adam]=train_mlp
  [infer_mlp_1]=train_mlp [infer_mlp_256]=train_mlp
  [executor]=executor_overhead [pipeline_png]=pipeline
  [pipeline_jpeg]=pipeline)
declare -A arg=([while_loop]=21 [train_lstm]=200 [train_cnn]=100
  [train_mlp]=700 [train_mlp_adam]=700 [infer_mlp_1]=20000
  [infer_mlp_256]=1000 [executor]=2000 [pipeline_png]=5 [pipeline_jpeg]=10)
png_records=$WEFT_BUILD_DIR/bench-data/fashion-mnist-png.tfrecord
jpeg_records=$WEFT_BUILD_DIR/bench-data/rgb64-jpeg.tfrecord
declare -A mode=([train_mlp]=sgd [train_mlp_adam]=adam
  [infer_mlp_1]="infer 1" [infer_mlp_256]="infer 256"
  [pipeline_png]="png $png_records" [pipeline_jpeg]="jpeg $jpeg_records")
declare -A torch_prog=([executor]=torch_eager_add)
floor=0
pipeline=0
for w in "${workloads[@]}"; do
  [ -n "${arg[$w]:-}" ] || { weft_log "unknown workload '$w'"; exit 2; }
  case $w in train_mlp* | infer_mlp_* | train_cnn) floor=1 ;; esac
  case $w in pipeline_*) pipeline=1 ;; esac
done
lock=()
[ -n "${WEFT_BUILD_LOCK:-}" ] && lock=(flock "$WEFT_BUILD_LOCK")

venv="$WEFT_BUILD_DIR/bench-venv"
tf_python=""
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import tensorflow' \
    2>/dev/null; then
  tf_python="$venv/bin/python"
elif python3 -m venv "$venv" >/dev/null 2>&1 &&
     "$venv/bin/pip" install -q tensorflow-cpu >/dev/null 2>&1; then
  tf_python="$venv/bin/python"
else
  weft_log "skipped: TensorFlow peer (tensorflow-cpu could not be" \
           "installed from PyPI into $venv)"
fi
jax_python=""
if [ -x "$venv/bin/python" ] && { "$venv/bin/python" -c 'import jax' \
    2>/dev/null || "$venv/bin/pip" install -q "jax[cpu]" >/dev/null 2>&1; }
then
  jax_python="$venv/bin/python"
else
  weft_log "skipped: JAX peer (jax[cpu] could not be installed from PyPI" \
           "into $venv)"
fi
install_peers() {
  # time: GNU time, for each program's peak resident memory.
  local WEFT_PACKAGES=(libtorch-dev libopenblas0-openmp time)
  weft_install_packages
}
install_peers || weft_log "could not install LibTorch; its peers are skipped"
# The pipelines' TFRecord files, written once with TensorFlow (its notices
# on standard error then).
if [ "$pipeline" = 1 ] && { [ ! -f "$png_records" ] ||
                            [ ! -f "$jpeg_records" ]; }; then
  if [ -z "$tf_python" ] || ! "$tf_python" bench/pipeline_data.py \
      "$(dirname "$png_records")" >&2; then
    weft_log "skipped: the input pipelines (their data needs TensorFlow)"
    readarray -t workloads < <(printf '%s\n' "${workloads[@]}" |
                                 grep -v '^pipeline_')
    [ ${#workloads[@]} -gt 0 ] || exit 1
  fi
fi
# Meson's and ninja's chatter only when the build fails: stdout is the
# figures.
build_log="$WEFT_BUILD_DIR/bench-build.log"
mkdir -p "$WEFT_BUILD_DIR"
# In a shell of its own, as flock runs a command.
"${lock[@]}" env WEFT_BUILD_DIR="$WEFT_BUILD_DIR" \
    bash -ec 'source scripts/common.sh && weft_build' \
    >"$build_log.tmp" 2>&1 || {
  cat "$build_log.tmp" >&2
  exit 1
}
mv "$build_log.tmp" "$build_log"
has_target() {
  # grep reads everything: with pipefail, grep -q leaving early would let
  # ninja die of SIGPIPE and the target look missing.
  ninja -C "$WEFT_BUILD_DIR" -t targets all 2>/dev/null |
    grep "^bench/$1:" >/dev/null
}
targets=()
for w in "${workloads[@]}"; do
  targets+=("bench/${prog[$w]}")
done
torch=0
if has_target train_mlp_torch; then
  for w in "${workloads[@]}"; do
    t=${torch_prog[$w]:-${prog[$w]}_torch}
    has_target "$t" && targets+=("bench/$t")
  done
  torch=1
else
  weft_log "skipped: LibTorch peers (LibTorch not found at configure time)"
fi
if [ "$floor" = 1 ]; then
  if has_target onednn_floor; then
    targets+=(bench/onednn_floor)
  else
    floor=0
    weft_log "skipped: the oneDNN floor (oneDNN or OpenMP not found)"
  fi
fi
# Built one by one: several peers share a program (train_mlp).
readarray -t targets < <(printf '%s\n' "${targets[@]}" | sort -u)
"${lock[@]}" meson compile -C "$WEFT_BUILD_DIR" ${WEFT_JOBS:+-j "$WEFT_JOBS"} \
  "${targets[@]}" >/dev/null

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  commit+=" plus uncommitted changes"
fi
machine="$(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) cores"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
echo "machine: $machine"
echo "load: $load_start"
echo "commit: $commit"
out=$(mktemp)
errors=$(mktemp)
rss=$(mktemp)
trap 'rm -f "$out" "$errors" "$rss"' EXIT
# Peak resident memory of each program, from GNU time (the largest of the
# processes it waited for: programs run directly, not under a wrapper such
# as `meson devenv`, whose own Python would count instead).
timed=()
if [ -x /usr/bin/time ]; then
  timed=(/usr/bin/time -f %M -o "$rss")
else
  weft_log "skipped: peak memory (GNU time is not installed)"
fi
# Weft's CPU benchmarks load the CPU plugin alone, as the peers' CPU
# builds carry no GPU runtime (another plugin on the path costs its own
# start-up: the OpenCL one runs its platform's discovery, see README).
weft_env=(env "WEFT_PLUGIN_PATH=$(cd "$WEFT_BUILD_DIR/plugins/cpu" && pwd)")
# Runs one program, prints its output and keeps it, each line tagged with
# the workload and thread count, for the summary, with a line
# "peak-rss <System> <KiB>" for its peak memory.  Its standard error (the
# peers' start-up notices) is shown only when it fails; a failing program
# is reported and skipped, not fatal.
run() {
  local key=$1 threads=$2 output system
  shift 2
  if ! output=$("${timed[@]}" "$@" 2>"$errors"); then
    weft_log "failed: $*"
    tail -n 5 "$errors" >&2
    return 0
  fi
  printf '%s\n' "$output"
  printf '%s\n' "$output" | sed "s/^/$key\t$threads\t/" >>"$out"
  system=$(printf '%s\n' "$output" | awk 'NR == 1 { print $1 }')
  if [ ${#timed[@]} -gt 0 ] && [ -s "$rss" ]; then
    printf '%s\t%s\tpeak-rss %s %s\n' "$key" "$threads" "$system" \
      "$(tail -n 1 "$rss")" >>"$out"
  fi
}
for round in $(seq "$rounds"); do
  for threads in "${thread_counts[@]}"; do
    echo "--- round $round, $threads thread(s), load $(cut -d' ' -f1 /proc/loadavg)"
    for w in "${workloads[@]}"; do
      p=${prog[$w]}
      # Word splitting wanted: a mode is one or two arguments.
      # shellcheck disable=SC2206
      args=("$threads" "${arg[$w]}" ${mode[$w]:-})
      run "$w" "$threads" "${weft_env[@]}" "$WEFT_BUILD_DIR/bench/$p" \
        "${args[@]}"
      [ -n "$tf_python" ] &&
        run "$w" "$threads" "$tf_python" "bench/${p}_tf.py" "${args[@]}"
      torch_exe=$WEFT_BUILD_DIR/bench/${torch_prog[$w]:-${p}_torch}
      [ "$torch" = 1 ] && [ -x "$torch_exe" ] &&
        run "$w" "$threads" "$torch_exe" "${args[@]}"
      [ -n "$jax_python" ] && [ -f "bench/${p}_jax.py" ] &&
        run "$w" "$threads" "$jax_python" "bench/${p}_jax.py" "${args[@]}"
    done
    # OpenMP's workers sleep between parallel regions, as in Weft (its CPU
    # plugin sets OMP_WAIT_POLICY=passive unless the program chose): with
    # libgomp's default spinning, two threads on a machine where another
    # process holds a core spend most of a small GEMM spinning.
    [ "$floor" = 1 ] &&
      run floor "$threads" env OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}" \
        "$WEFT_BUILD_DIR/bench/onednn_floor" "$threads"
  done
done
echo
python3 bench/peers_table.py "$out" --rounds "$rounds" --machine "$machine" \
  --load "$load_start" --load-end "$(cut -d' ' -f1-3 /proc/loadavg)" \
  --commit "$commit" --order "${workloads[@]}"
