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
#      on the CPU, and the losses agree with the CPU's, the first 10 steps
#      within 1e-5 relative and all 100 within 3%.  Skipped when
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

work=$(mktemp -d /tmp/weft-gpu-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
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

# 1. The plugin's host tests.
if command -v meson >/dev/null 2>&1; then
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

# 3. The CNN trains on CUDA as on the CPU.
data=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
train() {  # train DEVICE LOG -> output in $work/DEVICE.out
  "$weft_bin" train fashion-mnist --data "$data" --model cnn --steps 100 \
    --threads 1 --seed 1 --device "$1" --explain --loss-log "$2" \
    --checkpoint "$work/$1.ckpt" --save "$work/$1.model" \
    >"$work/$1.out" 2>&1
}
if [ ! -r "$data/train-images-idx3-ubyte.gz" ]; then
  report SKIP training "Fashion-MNIST is not installed in $data (Debian package dataset-fashion-mnist)"
else
  if ! train CPU "$work/CPU.log"; then
    report FAIL training "the CPU run failed: $(tail -n 3 "$work/CPU.out" | tr '\n' ' ')"
  elif ! train CUDA "$work/CUDA.log"; then
    report FAIL training "the CUDA run failed: $(tail -n 3 "$work/CUDA.out" | tr '\n' ' ')"
  else
    problems=""
    grep -q '(stopped by --steps)' "$work/CUDA.out" ||
      problems="$problems; the CUDA run did not stop after 100 steps"
    grep -q '(Conv2DBackpropFilter) -> /device:CUDA:0' "$work/CUDA.out" ||
      problems="$problems; Conv2DBackpropFilter did not run on CUDA"
    on_cpu=$(grep -c -- '-> /device:CPU:0' "$work/CUDA.out")
    [ "$on_cpu" -eq 0 ] ||
      problems="$problems; $on_cpu nodes were placed on the CPU"
    if ! comparison=$(python3 "$here/compare_losses.py" "$work/CPU.log" \
                        "$work/CUDA.log" --steps 100 --exact-steps 10 \
                        --exact 1e-5 --loose 0.03); then
      problems="$problems; losses differ"
    fi
    if [ -z "$problems" ]; then
      report PASS training "every node on CUDA; $(printf '%s\n' "$comparison" | tail -n 1)"
    else
      report FAIL training "${problems#; }"
      printf '%s\n' "$comparison" | head -n 20 | sed 's/^/      /'
      grep -- '-> /device:CPU:0' "$work/CUDA.out" | head -n 10 | sed 's/^/      /'
    fi
  fi
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

echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
