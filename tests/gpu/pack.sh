#!/usr/bin/env bash
# tests/gpu/pack.sh — packs what tests/gpu/run.sh and the GPU benchmarks need
# into one archive for a GPU machine that has NVIDIA's driver and CUDA
# libraries but not Debian's (oneDNN, protobuf, ONNX, libffi, libpng,
# libjpeg): the weft tool, libweft, the CPU and CUDA plugins, the CUDA
# plugin's host tests, the benchmarks train_cnn and train_mlp, those Debian
# libraries, and a cut of Fashion-MNIST (the first 12,000 training and
# 2,000 test images: enough for run.sh's 100 steps, and a few MiB instead of
# 30).
#
#     tests/gpu/pack.sh OUT.tar.xz      # after the README's build
#
# tests/gpu/on_device.sh unpacks it on the GPU machine and runs the checks.
set -eu

build=${WEFT_BUILD_DIR:-build}
out=${1:?usage: tests/gpu/pack.sh OUT.tar.xz}
data=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}

stage=$(mktemp -d /tmp/weft-gpu-pack.XXXXXX)
trap 'rm -rf "$stage"' EXIT
b="$stage/build"
mkdir -p "$b/tools" "$b/runtime" "$b/plugins/cpu/weft-cpu-isa" \
         "$b/plugins/cuda" "$b/bench" "$b/tests" "$stage/lib" "$stage/data"

cp "$build/tools/weft" "$b/tools/"
cp -L "$build/runtime/libweft.so.1" "$b/runtime/"
cp "$build/runtime/weft-mpi.so" "$b/runtime/" 2>/dev/null || true
cp "$build/runtime/weft-onnx.so" "$b/runtime/"
cp "$build/plugins/cpu/weft-cpu.so" "$b/plugins/cpu/"
cp "$build"/plugins/cpu/weft-cpu-isa/*.so "$b/plugins/cpu/weft-cpu-isa/"
cp "$build/plugins/cuda/weft-cuda.so" "$build"/plugins/cuda/cuda-*-test \
   "$b/plugins/cuda/"
cp "$build/bench/train_cnn" "$build/bench/train_mlp" "$b/bench/"
cp "$build/tests/test_mpi_device_collectives" "$b/tests/" 2>/dev/null || true

# Every library the programs need that is not the C/C++ runtime or CUDA's.
for f in "$b"/tools/weft "$b"/runtime/*.so* "$b"/plugins/cpu/*.so \
         "$b"/plugins/cpu/weft-cpu-isa/*.so "$b"/bench/*; do
  ldd "$f" | awk '$3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libstdc++*|libgcc_s*|libpthread*|libdl.so*|librt.so*|\
    libweft*|libmpi*|libopen-*|libpmix*|libhwloc*|libevent*) ;;
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done

python3 - "$data" "$stage/data" <<'EOF'
import gzip, struct, sys
src, dst = sys.argv[1], sys.argv[2]
def cut(name, n, header):
    raw = gzip.open(f"{src}/{name}").read()
    fields = list(struct.unpack(">" + "I" * header, raw[:4 * header]))
    per = 1
    for d in fields[2:]:
        per *= d
    fields[1] = n
    body = raw[4 * header:4 * header + n * per]
    with gzip.open(f"{dst}/{name}", "wb") as f:
        f.write(struct.pack(">" + "I" * header, *fields) + body)
cut("train-images-idx3-ubyte.gz", 12000, 4)
cut("train-labels-idx1-ubyte.gz", 12000, 2)
cut("t10k-images-idx3-ubyte.gz", 2000, 4)
cut("t10k-labels-idx1-ubyte.gz", 2000, 2)
EOF

tar -C "$stage" -cJf "$out" build lib data
ls -la "$out"
