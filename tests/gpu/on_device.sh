#!/usr/bin/env bash
# tests/gpu/on_device.sh ARCHIVE [OUTDIR] — on a GPU machine, unpacks what
# tests/gpu/pack.sh packed, runs tests/gpu/run.sh over it, then times the
# CNN and MLP training steps on CUDA and on the CPU plugin, and the JAX twins
# (bench/train_*_jax.py) on the same GPU when JAX is installed there.
# Everything it prints goes to OUTDIR/summary.txt too, and every check's
# output is archived in OUTDIR/logs.tar.gz (OUTDIR defaults to $OUT, else
# /tmp/weft-gpu-out).  CUDA's own libraries (cuBLAS, cuDNN, NCCL) are taken
# from the machine: the toolkit's directories or NVIDIA's Python wheels.
set -u
archive=${1:?usage: tests/gpu/on_device.sh ARCHIVE [OUTDIR]}
out=${2:-${OUT:-/tmp/weft-gpu-out}}
repo=$(cd "$(dirname "$0")/../.." && pwd)
root=/tmp/weft-gpu
logs=$out/logs
rm -rf "$root" && mkdir -p "$root" "$logs" || exit 2
tar -C "$root" -xJf "$archive" || exit 2
exec > >(tee "$out/summary.txt") 2>&1

dirs=$(find /usr/local /opt /usr/lib \( -name 'libcublas.so.1[0-9]' \
         -o -name 'libcudnn.so.9' -o -name 'libnccl.so.2' \) 2>/dev/null |
       xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="$root/lib:$dirs${LD_LIBRARY_PATH:-}"
export WEFT_BUILD_DIR=$root/build FASHION_MNIST_DIR=$root/data
export WEFT_PLUGIN_PATH=$root/build/plugins/cpu:$root/build/plugins/cuda
echo "CUDA libraries from: ${dirs:-nowhere}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nproc
"$root/build/tools/weft" devices 2>&1 | tee "$logs/devices.txt"

echo "== tests/gpu/run.sh"
WEFT_GPU_LOG_DIR=$logs/checks timeout 240 "$repo/tests/gpu/run.sh"
rc=$?
echo "run.sh exit $rc"

bench() {  # bench NAME TIMEOUT COMMAND... : one line of output per run
  echo "== $1"
  shift
  local limit=$1
  shift
  timeout "$limit" "$@" >"$logs/one.txt" 2>&1
  local rc=$?
  cat "$logs/one.txt" >>"$logs/bench.txt"
  grep -E 'steps/s|rror|peak|fault|bort|FAIL' "$logs/one.txt" | head -n 6
  [ "$rc" -eq 0 ] || echo "(exit $rc) $(tail -n 2 "$logs/one.txt" | tr '\n' ' ')"
}
b=$root/build/bench
if [ "$rc" -eq 124 ]; then
  echo "skipped: the CUDA benchmarks (run.sh ran out of time: something hangs)"
else
  WEFT_BENCH_DEVICE=CUDA bench "CNN on CUDA" 45 "$b/train_cnn" 1 300
  WEFT_BENCH_DEVICE=CUDA bench "MLP SGD on CUDA" 45 "$b/train_mlp" 1 2000 sgd
  WEFT_BENCH_DEVICE=CUDA bench "MLP Adam on CUDA" 45 "$b/train_mlp" 1 2000 adam
  WEFT_BENCH_DEVICE=CUDA bench "MLP inference (batch 256) on CUDA" 45 "$b/train_mlp" 1 2000 infer 256
fi
bench "CNN on the CPU plugin, $(nproc) threads" 45 "$b/train_cnn" "$(nproc)" 100
bench "MLP SGD on the CPU plugin, $(nproc) threads" 45 "$b/train_mlp" "$(nproc)" 2000 sgd
if python3 -c 'import jax' 2>/dev/null; then
  (cd "$repo/bench" &&
   bench "JAX CNN (same GPU)" 90 python3 train_cnn_jax.py "$(nproc)" 300
   bench "JAX MLP SGD (same GPU)" 90 python3 train_mlp_jax.py "$(nproc)" 2000)
else
  echo "skipped: JAX peers (no jax here)"
fi
tar -C "$out" -czf "$out/logs.tar.gz" logs && rm -rf "$logs"
