#!/usr/bin/env bash
# OpenCL (PoCL here) against the CPU plugin, in one run on one machine
# (issue 17, item 6): MatMul 1024^3 float32 with the plugin's kernel, with
# CLBlast (when libclblast1 is installed) and on the CPU; then the CNN
# training step (bench/train_cnn.c: two 5x5 conv + pool layers, batch 64,
# SGD) on OpenCL and on the CPU.  Interleaved in WEFT_BENCH_ROUNDS rounds
# (3); each line is one run's median.  Run after a build (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${WEFT_BUILD_DIR:-build}
export WEFT_PLUGIN_PATH="$PWD/$build/plugins/cpu:$PWD/$build/plugins/opencl"
rounds=${WEFT_BENCH_ROUNDS:-3}
threads=${WEFT_BENCH_THREADS:-2}
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
     "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg);" \
     "commit $(git rev-parse --short HEAD)"
for r in $(seq "$rounds"); do
  echo "round $r"
  WEFT_OPENCL_GEMM=builtin "$build/bench/opencl_matmul" OPENCL 1024 20
  if ldconfig -p | grep -q libclblast.so.1; then
    WEFT_OPENCL_GEMM=clblast "$build/bench/opencl_matmul" OPENCL 1024 20
  else
    echo "MatMul on CLBlast: skipped (libclblast1 is not installed)"
  fi
  "$build/bench/opencl_matmul" CPU 1024 20
  WEFT_BENCH_DEVICE=OPENCL "$build/bench/train_cnn" "$threads" 50 |
    sed 's/^Weft CNN training/Weft CNN training on OpenCL/' | head -1
  "$build/bench/train_cnn" "$threads" 200 |
    sed 's/^Weft CNN training/Weft CNN training on the CPU/' | head -1
done
