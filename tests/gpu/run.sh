#!/usr/bin/env bash
# tests/gpu/run.sh — checks the CUDA plugin on a machine with an NVIDIA GPU.
# Run from the repository root after the README's build (build/ holds
# tools/weft, plugins/cpu and plugins/cuda):
#
#     tests/gpu/run.sh            # or: WEFT_BUILD_DIR=other-build tests/gpu/run.sh
#
# What it checks, in order, each reported PASS, FAIL or SKIP with the
# reason:
#   1. host tests: the CUDA plugin's own tests (meson suite cuda-plugin:
#      index math, the cuDNN mapping, the pooling code, the memory cache,
#      the cuBLAS and cuDNN loaders).
#   2. conformance: `weft conformance build/plugins/cuda/weft-cuda.so`
#      runs every op x dtype the plugin registers against the CPU plugin
#      (normal, empty, broadcast and large shapes) and the memory, stream
#      and event contract; it must exit 0 (all pass).
#   3. training: `weft train fashion-mnist --model cnn --steps 100` on
#      --device CPU and on --device CUDA (one thread, seed 1), as
#      tests/test_train_main.c's cnn_on_opencl_matches_the_cpu does for
#      OpenCL: the convolutions and their gradients run on CUDA, no node
#      on the CPU, and the losses agree with the CPU's: with plain SGD the
#      first 4 steps within 1e-5 relative and the means of each 10 steps
#      after them within 1%; with the model's Adam recipe the first 8
#      within 1e-5 and the means of each 20 after them within 3% (the
#      check says why, with what an H200 gave).  Skipped when
#      Fashion-MNIST is not installed (Debian's dataset-fashion-mnist;
#      FASHION_MNIST_DIR overrides its directory).
#   4. memory limit: with WEFT_CUDA_MEMORY_LIMIT=1M the same training
#      fails with RESOURCE_EXHAUSTED naming the device, the request and the
#      limit; with WEFT_CUDA_MEMORY_LIMIT=lots the device fails to open and
#      `weft devices` says why.
#   5. collectives: under a one-rank MPI job (two ranks would need two
#      GPUs), AllReduce (sums and means) and Broadcast on /device:CUDA:0
#      run on NCCL (plugin interface 1.7) and equal MPI's on the CPU byte
#      for byte, over 10 runs (build/tests/test_mpi_device_collectives
#      --device).  Skipped without mpirun, or when NCCL does not load (the
#      runtime then says the collectives went through MPI).
#   6. conv search: the convolutions' conformance rows again under
#      WEFT_CUDA_CONV_SEARCH=heuristic and =timed-nondeterministic, and an
#      unknown mode refused with a message naming it.
#
# Where there is no GPU (no nvidia-smi, nvidia-smi sees none, or `weft
# devices` lists no CUDA device) it prints "skipped: <reason>" and exits 0;
# so does a build without the CUDA plugin.  Otherwise it exits 0 when every
# check that ran passed, 1 when one failed; 2 for misuse (no build).
set -u

build=${WEFT_BUILD_DIR:-build}
weft_bin="$build/tools/weft"
cuda_plugin="$build/plugins/cuda/weft-cuda.so"
here=$(cd "$(dirname "$0")" && pwd)

if [ ! -x "$weft_bin" ]; then
  echo "tests/gpu/run.sh: no $weft_bin: build first (README: ./scripts/setup.sh)," \
       "from the repository root" >&2
  exit 2
fi
if [ ! -f "$cuda_plugin" ]; then
  echo "skipped: the CUDA plugin was not built ($cuda_plugin is missing: the" \
       "CUDA toolkit was not found when $build was configured)"
  exit 0
fi
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "skipped: no nvidia-smi on this machine (no NVIDIA driver)"
  exit 0
fi
if ! gpus=$(nvidia-smi -L 2>&1) || ! printf '%s\n' "$gpus" | grep -q '^GPU '; then
  echo "skipped: nvidia-smi lists no GPU: $(printf '%s' "$gpus" | head -n 1)"
  exit 0
fi

export WEFT_PLUGIN_PATH="$build/plugins/cpu:$build/plugins/cuda"
# Only the user's own settings may change the result: no placement or
# device overrides from the environment.
unset WEFT_DEVICES WEFT_PLACEMENT WEFT_DEVICE_GFLOPS WEFT_CUDA_MEMORY_LIMIT

devices=$("$weft_bin" devices 2>&1)
if ! printf '%s\n' "$devices" | grep -q '/device:CUDA:0'; then
  reason=$(printf '%s\n' "$devices" | grep 'weft-cuda' | head -n 1 |
           sed 's/^ *//')
  echo "skipped: weft devices lists no CUDA device (${reason:-the CUDA plugin was not loaded})"
  exit 0
fi

# WEFT_GPU_LOG_DIR keeps every check's output there (for a machine that is
# given back after the run); otherwise a temporary directory is removed.
if [ -n "${WEFT_GPU_LOG_DIR:-}" ]; then
  work=$WEFT_GPU_LOG_DIR
  mkdir -p "$work" || exit 2
else
  work=$(mktemp -d /tmp/weft-gpu-check.XXXXXX)
  trap 'rm -rf "$work"' EXIT
fi
passed=0 failed=0 skipped=0
report() {  # report PASS|FAIL|SKIP NAME DETAIL
  printf '%-4s  %-14s %s\n' "$1" "$2" "$3"
  case $1 in
    PASS) passed=$((passed + 1)) ;;
    FAIL) failed=$((failed + 1)) ;;
    *) skipped=$((skipped + 1)) ;;
  esac
}

echo "GPU: $(printf '%s\n' "$gpus" | head -n 1)"
echo "$devices" | grep -A3 '/device:CUDA:0' | sed 's/^/  /'
echo

# 1. The plugin's host tests (the test programs themselves where the build
# directory travelled without Meson's files: tests/gpu/pack.sh).
if [ ! -f "$build/build.ninja" ]; then
  host_failed=""
  host_count=0
  for t in "$build"/plugins/cuda/cuda-*-test; do
    [ -x "$t" ] || continue
    host_count=$((host_count + 1))
    # The loader tests take the plugin's path, as Meson passes it.
    "$t" "$cuda_plugin" >"$work/host-$(basename "$t").log" 2>&1 ||
      host_failed="$host_failed $(basename "$t")"
  done
  if [ "$host_count" -eq 0 ]; then
    report SKIP "host tests" "no cuda-*-test programs in $build/plugins/cuda"
  elif [ -z "$host_failed" ]; then
    report PASS "host tests" "$host_count test programs"
  else
    report FAIL "host tests" "failed:$host_failed (logs: $work/host-*.log)"
  fi
elif command -v meson >/dev/null 2>&1; then
  if meson test -C "$build" --no-rebuild --suite cuda-plugin \
       >"$work/host.log" 2>&1; then
    report PASS "host tests" "meson suite cuda-plugin: $(grep -c ' OK ' "$work/host.log") tests"
  else
    report FAIL "host tests" "meson suite cuda-plugin (log: $build/meson-logs/testlog.txt)"
    grep -E 'FAIL|not ok' "$work/host.log" | head -n 20 | sed 's/^/      /'
  fi
else
  report SKIP "host tests" "meson is not installed"
fi

# 2. Conformance against the CPU plugin.
"$weft_bin" conformance "$cuda_plugin" >"$work/conformance.log" 2>&1
rc=$?
summary=$(grep '^summary:' "$work/conformance.log" | tail -n 1)
if [ "$rc" -eq 0 ]; then
  report PASS conformance "${summary#summary: }"
else
  report FAIL conformance "weft conformance exited $rc: ${summary#summary: }"
  grep -E 'FAIL' "$work/conformance.log" | head -n 40 | sed 's/^/      /'
fi

# 3. The CNN trains on CUDA as on the CPU, with plain SGD and with the
# model's own recipe (Adam).  cuDNN sums the convolutions' gradients in
# another order than oneDNN (the first layer's filter gradient adds 50,176
# products per element, with cancellation), so the runs part by rounding
# alone; each op's result is checked against the CPU's by the conformance
# run above, and this check is about the whole step: placement, every
# update, and losses that stay together.  Seen on an H200 (cuDNN 9.19,
# deterministic algorithms, the same losses bit for bit run after run):
# SGD at 0.05 agrees to 3e-7 for 4 steps, then 1e-5..7e-5, and per step
# up to 0.8% by step 100, means of 10 steps within 0.18%; Adam, whose
# first updates are the gradients' signs, agrees to 6e-7 for 8 steps, then
# amplifies the differences of small gradients: up to 3.4% per step, means
# of 20 steps within 0.64%.  The bounds below are those with a margin.
data=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
train() {  # train DEVICE RECIPE -> $work/DEVICE-RECIPE.out and .log
  local recipe=()
  [ "$2" = sgd ] && recipe=(--optimizer sgd --learning-rate 0.05)
  "$weft_bin" train fashion-mnist --data "$data" --model cnn --steps 100 \
    --threads 1 --seed 1 --device "$1" --explain "${recipe[@]}" \
    --loss-log "$work/$1-$2.log" --checkpoint "$work/$1-$2.ckpt" \
    --save "$work/$1-$2.model" >"$work/$1-$2.out" 2>&1
}
check_training() {  # check_training RECIPE COMPARE-OPTIONS...
  local recipe=$1
  shift
  if ! train CPU "$recipe"; then
    report FAIL "training $recipe" "the CPU run failed: $(tail -n 3 "$work/CPU-$recipe.out" | tr '\n' ' ')"
    return
  fi
  if ! train CUDA "$recipe"; then
    report FAIL "training $recipe" "the CUDA run failed: $(tail -n 3 "$work/CUDA-$recipe.out" | tr '\n' ' ')"
    return
  fi
  local out="$work/CUDA-$recipe.out" problems="" comparison on_cpu
  grep -q '(stopped by --steps)' "$out" ||
    problems="$problems; the CUDA run did not stop after 100 steps"
  grep -q '(Conv2DBackpropFilter) -> /device:CUDA:0' "$out" ||
    problems="$problems; Conv2DBackpropFilter did not run on CUDA"
  on_cpu=$(grep -c -- '-> /device:CPU:0' "$out")
  [ "$on_cpu" -eq 0 ] ||
    problems="$problems; $on_cpu nodes were placed on the CPU"
  if ! comparison=$(python3 "$here/compare_losses.py" "$work/CPU-$recipe.log" \
                      "$work/CUDA-$recipe.log" --steps 100 "$@"); then
    problems="$problems; losses differ"
  fi
  if [ -z "$problems" ]; then
    report PASS "training $recipe" "every node on CUDA; $(printf '%s\n' "$comparison" | tail -n 1)"
  else
    report FAIL "training $recipe" "${problems#; }"
    printf '%s\n' "$comparison" | head -n 20 | sed 's/^/      /'
    grep -- '-> /device:CPU:0' "$out" | head -n 10 | sed 's/^/      /'
  fi
}
if [ ! -r "$data/train-images-idx3-ubyte.gz" ]; then
  report SKIP training "Fashion-MNIST is not installed in $data (Debian package dataset-fashion-mnist)"
else
  check_training sgd --exact-steps 4 --exact 1e-5 --loose 0.01 --mean-of 10
  check_training adam --exact-steps 8 --exact 1e-5 --loose 0.03 --mean-of 20
fi

# 4. WEFT_CUDA_MEMORY_LIMIT.
if [ -r "$data/train-images-idx3-ubyte.gz" ]; then
  WEFT_CUDA_MEMORY_LIMIT=1M "$weft_bin" train fashion-mnist --data "$data" \
    --model cnn --steps 2 --threads 1 --seed 1 --device CUDA \
    --checkpoint "$work/limit.ckpt" --save "$work/limit.model" \
    >"$work/limit.out" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ] &&
     grep -q 'pass the limit of 1048576 bytes (WEFT_CUDA_MEMORY_LIMIT' "$work/limit.out" &&
     grep -q 'CUDA device 0: allocating [0-9]* bytes' "$work/limit.out"; then
    report PASS "memory limit" "a 1 MiB limit refuses the CNN, naming the device, the request and the limit"
  else
    report FAIL "memory limit" "WEFT_CUDA_MEMORY_LIMIT=1M: exit $rc: $(grep -m 1 -i 'limit\|exhausted\|error' "$work/limit.out")"
  fi
else
  report SKIP "memory limit" "needs Fashion-MNIST (see training)"
fi
bad=$(WEFT_CUDA_MEMORY_LIMIT=lots "$weft_bin" devices 2>&1)
if printf '%s\n' "$bad" | grep -q "WEFT_CUDA_MEMORY_LIMIT: 'lots' is not a byte count" &&
   ! printf '%s\n' "$bad" | grep -q '/device:CUDA:0'; then
  report PASS "memory limit" "WEFT_CUDA_MEMORY_LIMIT=lots: the device does not open, and weft devices says why"
else
  report FAIL "memory limit" "WEFT_CUDA_MEMORY_LIMIT=lots: $(printf '%s\n' "$bad" | grep 'weft-cuda' | head -n 1)"
fi

# 5. AllReduce and Broadcast on NCCL.
coll="$build/tests/test_mpi_device_collectives"
if ! command -v mpirun >/dev/null 2>&1; then
  report SKIP collectives "mpirun is not installed (Open MPI)"
elif [ ! -x "$coll" ]; then
  report SKIP collectives "no $coll (built with the tests and Open MPI)"
else
  as_root=""
  [ "$(id -u)" -eq 0 ] && as_root="--allow-run-as-root"
  WEFT_LOG=info timeout 300 mpirun -np 1 $as_root -x WEFT_PLUGIN_PATH \
    -x WEFT_LOG "$coll" 1 --device /device:CUDA:0 >"$work/coll.out" 2>&1
  rc=$?
  if grep -q 'collectives on /device:CUDA:0 go through MPI' "$work/coll.out"; then
    report SKIP collectives "NCCL is not usable here: $(grep -m 1 'go through MPI' "$work/coll.out" | sed 's/.*in host memory: //')"
  elif [ "$rc" -eq 0 ] && grep -q '^ok 1 ' "$work/coll.out"; then
    report PASS collectives "AllReduce and Broadcast on NCCL equal MPI's on the CPU (one rank, 10 runs)"
  else
    report FAIL collectives "exit $rc: $(grep -m 1 -E 'not ok|#|rror' "$work/coll.out")"
    head -n 20 "$work/coll.out" | sed 's/^/      /'
  fi
fi

# 6. The convolutions under the other algorithm searches
# (WEFT_CUDA_CONV_SEARCH; check 2 ran the default, timed).
search_failed=""
for mode in heuristic timed-nondeterministic; do
  for op in Conv2D FusedConv2D Conv2DBackpropInput Conv2DBackpropFilter; do
    WEFT_CUDA_CONV_SEARCH=$mode "$weft_bin" conformance "$cuda_plugin" \
      --op "$op" >"$work/search-$mode-$op.log" 2>&1 ||
      search_failed="$search_failed $mode:$op"
  done
done
WEFT_CUDA_CONV_SEARCH=fastest "$weft_bin" conformance "$cuda_plugin" \
  --op Conv2D >"$work/search-bad.log" 2>&1
if ! grep -q "WEFT_CUDA_CONV_SEARCH is 'fastest': not timed, heuristic" \
     "$work/search-bad.log"; then
  search_failed="$search_failed fastest-not-refused"
fi
if [ -z "$search_failed" ]; then
  report PASS "conv search" "heuristic and timed-nondeterministic convolutions agree with the CPU; an unknown mode is refused"
else
  report FAIL "conv search" "failed:$search_failed (logs: $work/search-*.log)"
fi

echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
