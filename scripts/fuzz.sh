#!/usr/bin/env bash
# Builds the fuzz targets in tests/fuzz/ with clang's libFuzzer, AddressSanitizer
# and UndefinedBehaviorSanitizer, and runs each for WEFT_FUZZ_SECONDS
# (default 60), or for WEFT_FUZZ_RUNS inputs if that comes first, from a
# corpus in build-fuzz/corpus/<target> that grows from run to run.  Any
# crash, sanitizer report or leak stops the run and leaves the input in
# build-fuzz/.  Not part of the test suite: it needs clang and minutes of
# CPU.
#
#   ./scripts/fuzz.sh                 every target
#   ./scripts/fuzz.sh checkpoint_reader
#   ./scripts/fuzz.sh plugin_loader
#   ./scripts/fuzz.sh op_def
#   ./scripts/fuzz.sh npy_reader
#   ./scripts/fuzz.sh graphdef_loader
#   ./scripts/fuzz.sh onnx_loader
#   ./scripts/fuzz.sh graph_file
#   ./scripts/fuzz.sh record_reader
#   ./scripts/fuzz.sh decoders
#   ./scripts/fuzz.sh dataset
#   WEFT_FUZZ_SECONDS=3600 WEFT_FUZZ_RUNS=1000000 ./scripts/fuzz.sh c_api
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh

out=build-fuzz
seconds=${WEFT_FUZZ_SECONDS:-60}
runs=${WEFT_FUZZ_RUNS:-}  # stop after this many inputs instead, if sooner
# More libFuzzer flags, for instance "-fork=1 -ignore_crashes=1" to go on
# past a known finding (crashes are still written to build-fuzz/).
read -r -a extra <<< "${WEFT_FUZZ_ARGS:-}"
cxx=${CXX_FUZZ:-clang++-14}
cc=${CC_FUZZ:-clang-14}
flags=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
mkdir -p "$out"

# The reader and the C API target need the runtime's internals, which a
# shared libweft hides: the runtime's sources are compiled into an
# instrumented static archive.  An object is rebuilt when its source or any
# runtime header is newer, so a fix is fuzzed without a stale archive.  Its
# UB must stop the fuzzer too (-fno-sanitize-recover), not scroll past.
build_runtime_archive() {
  local objs=() src obj stale=0
  local newest_header
  # The model files' protobuf classes (runtime/model/*.proto), generated
  # where the runtime's sources and the targets find them.
  mkdir -p "$out/proto"
  protoc --proto_path=runtime/model --cpp_out="$out/proto" runtime/model/*.proto
  export CPATH=$PWD/$out/proto${CPATH:+:$CPATH}
  newest_header=$(find runtime abi -name '*.h' -printf '%T@ %p\n' |
                  sort -n | tail -1 | cut -d' ' -f2)
  mkdir -p "$out/obj"
  # Not the modules' boundaries (runtime/distributed/mpi_module.cc, a
  # separate shared object that links MPI; runtime/model/onnx_module.cc,
  # whose stand-ins for libweft's internals the archive has for real): the
  # ONNX sources are linked in and called directly (WEFT_ONNX_LINKED).
  for src in $(find runtime -name '*.cc' ! -name mpi_module.cc \
               ! -name onnx_module.cc | sort); do
    obj=$out/obj/$(echo "$src" | tr / _).o
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] ||
       [ "$newest_header" -nt "$obj" ]; then
      "$cxx" -std=c++17 -g -O1 -fsanitize=fuzzer-no-link,address,undefined \
        -fno-sanitize-recover=all -DONNX_NAMESPACE=onnx -DONNX_ML=1 \
        -DWEFT_ONNX_LINKED=1 -Iruntime -Iabi -c "$src" -o "$obj"
      stale=1
    fi
    objs+=("$obj")
  done
  if [ "$stale" = 1 ] || [ ! -f "$out/libweft_fuzz.a" ]; then
    rm -f "$out/libweft_fuzz.a"
    ar rcs "$out/libweft_fuzz.a" "${objs[@]}"
  fi
}

build_checkpoint_reader() {
  build_runtime_archive
  "$cxx" -std=c++17 "${flags[@]}" -Iruntime -Iabi \
    tests/fuzz/checkpoint_reader.cc "$out/libweft_fuzz.a" -ldl -pthread \
    -o "$out/checkpoint_reader"
}

build_idx_reader() {
  "$cc" "${flags[@]}" -I. tests/fuzz/idx_reader.c tools/idx.c -lz \
    -o "$out/idx_reader"
}

# The .npy reader of `weft run` needs no runtime: it is plain C.
build_npy_reader() {
  "$cc" "${flags[@]}" -I. -Iabi tests/fuzz/npy_reader.c tools/npy.c \
    -o "$out/npy_reader"
}

# The loader after dlsym, against a plugin made of the input, linked in.
build_plugin_loader() {
  build_runtime_archive
  "$cxx" -std=c++17 "${flags[@]}" -Iruntime -Iabi \
    tests/fuzz/plugin_loader.cc "$out/libweft_fuzz.a" -ldl -pthread \
    -o "$out/plugin_loader"
}

# The C API target links the instrumented runtime and loads the CPU plugin
# of the normal build (uninstrumented: Eigen and oneDNN under the sanitizers
# would take hours to build), so it needs build/ configured.
plugin_dir=$PWD/build/plugins/cpu
build_c_api() {
  build_runtime_archive
  [ -d build ] || meson setup build
  ninja -C build plugins/cpu/weft-cpu.so \
    $(ninja -C build -t targets all 2>/dev/null | grep -o "^plugins/cpu/weft-cpu-isa/[^:/]*\.so" | sort -u || true)
  "$cxx" -std=c++17 "${flags[@]}" -Iabi tests/fuzz/c_api.cc \
    "$out/libweft_fuzz.a" -ldl -pthread -o "$out/c_api"
}

# Defining ops: the schema parser and defined ops' inference (no plugin).
build_op_def() {
  build_runtime_archive
  "$cxx" -std=c++17 "${flags[@]}" -Iabi tests/fuzz/op_def.cc \
    "$out/libweft_fuzz.a" -ldl -pthread -o "$out/op_def"
}

# The TensorFlow GraphDef importer on arbitrary bytes; its protobuf classes
# are instrumented too, libprotobuf is the system's.
build_graphdef_loader() {
  build_runtime_archive
  "$cxx" -std=c++17 "${flags[@]}" -Iruntime -Iabi -I"$out/proto" \
    tests/fuzz/graphdef_loader.cc "$out/proto/tf_graph.pb.cc" \
    "$out/libweft_fuzz.a" -lprotobuf -ldl -pthread -o "$out/graphdef_loader"
}

# What a target reaching weft_model_load links: the runtime archive, the
# model files' protobuf classes (runtime/model/*.proto), and the libraries
# the loaders and the summaries a loaded graph may hold use (ONNX through
# the archive's own ONNX sources, WEFT_ONNX_LINKED).
model_files=("$out/proto/weft_graph.pb.cc" "$out/proto/tf_graph.pb.cc"
             "$out/proto/tf_summary.pb.cc" "$out/libweft_fuzz.a" -lonnx
             -lonnx_proto -lprotobuf -lpng -lz)

# The ONNX importer on arbitrary bytes, against Debian's libonnx (the
# checker) and libprotobuf, uninstrumented; constants it computes while
# importing run on the CPU plugin of the normal build.
build_onnx_loader() {
  # The runtime's ONNX sources need the defines meson gives libweft
  # (runtime/meson.build): the archive is compiled through a wrapper
  # adding them.
  printf '#!/bin/sh\nexec %s -DONNX_NAMESPACE=onnx -DONNX_ML=1 "$@"\n' \
    "$(command -v "$cxx")" > "$out/cxx-onnx"
  chmod +x "$out/cxx-onnx"
  cxx=$PWD/$out/cxx-onnx build_runtime_archive
  [ -f build/plugins/cpu/weft-cpu.so ] || ninja -C build plugins/cpu/weft-cpu.so
  "$cxx" -std=c++17 "${flags[@]}" -Iruntime -Iabi -I"$out/proto" \
    tests/fuzz/onnx_loader.cc "${model_files[@]}" -ldl -pthread \
    -o "$out/onnx_loader"
}

# The Weft graph file loader (model bundles' graph.weft).
build_graph_file() {
  build_runtime_archive
  "$cxx" -std=c++17 "${flags[@]}" -Iruntime -Iabi -I"$out/proto" \
    tests/fuzz/graph_file.cc "${model_files[@]}" -ldl -pthread \
    -o "$out/graph_file"
}
# The record readers of input pipelines (runtime/io/record_io.cc).
build_record_reader() {
  build_runtime_archive
  "$cxx" -std=c++17 "${flags[@]}" -Iruntime -Iabi \
    tests/fuzz/record_reader.cc "$out/libweft_fuzz.a" -lz -ldl -pthread \
    -o "$out/record_reader"
}

# Dataset construction and iteration through the C API (weft/dataset.h);
# map and filter functions run on the CPU plugin of the normal build, as
# for c_api (built there only when missing).
build_dataset() {
  build_runtime_archive
  [ -f build/plugins/cpu/weft-cpu.so ] || ninja -C build plugins/cpu/weft-cpu.so
  "$cxx" -std=c++17 "${flags[@]}" -Iabi tests/fuzz/dataset.cc \
    "$out/libweft_fuzz.a" -lz -ldl -pthread -o "$out/dataset"
}

# The CPU plugin's PNG, JPEG and Example decoders, compiled into the target
# with the sanitizers; libpng, libjpeg and libprotobuf are the system's.
build_decoders() {
  "$cxx" -std=c++17 "${flags[@]}" -Iplugins/cpu \
    $(pkg-config --cflags libpng libjpeg protobuf) tests/fuzz/decoders.cc \
    plugins/cpu/image_decode.cc plugins/cpu/example_parser.cc \
    $(pkg-config --libs libpng libjpeg protobuf) -pthread \
    -o "$out/decoders"
}

# Transfer headers between ranks and cluster specs (runtime/distributed).
build_cluster() {
  build_runtime_archive
  "$cxx" -std=c++17 "${flags[@]}" -Iruntime -Iabi tests/fuzz/cluster.cc \
    "$out/libweft_fuzz.a" -ldl -pthread -o "$out/cluster"
}

# Seeds for graph_file: the graph files of the test suite's two model
# bundles (built in build/), whole (first byte 0) and as payloads (1).
seed_graph_file() {
  local dir=$1 tmp name
  ninja -C build tests/make_model tests/make_cnn_model >/dev/null
  tmp=$(mktemp -d)
  for name in make_model make_cnn_model; do
    WEFT_PLUGIN_PATH=$plugin_dir "build/tests/$name" "$tmp/$name" >/dev/null
    { printf '\0'; cat "$tmp/$name/graph.weft"; } > "$dir/$name-file"
    { printf '\1'; tail -c +33 "$tmp/$name/graph.weft"; } > "$dir/$name-payload"
  done
  rm -rf "$tmp"
}
# A valid checkpoint and valid IDX files start the corpora, so the fuzzer
# begins past the headers.
seed_corpus() {
  local target=$1 dir=$out/corpus/$1
  mkdir -p "$dir"
  case $target in
    checkpoint_reader)
      python3 tests/fuzz/make_seeds.py checkpoint "$dir" ;;
    idx_reader)
      python3 tests/fuzz/make_seeds.py idx "$dir" ;;
    c_api)
      python3 tests/fuzz/make_seeds.py c_api "$dir" ;;
    npy_reader)
      python3 tests/fuzz/make_seeds.py npy "$dir" ;;
    graphdef_loader)
      python3 tests/fuzz/make_seeds.py graphdef "$dir" ;;
    onnx_loader)
      python3 tests/fuzz/make_seeds.py onnx "$dir" ;;
    graph_file)
      seed_graph_file "$dir" ;;
    record_reader)
      python3 tests/fuzz/make_seeds.py records "$dir" ;;
    decoders)
      python3 tests/fuzz/make_seeds.py decoders "$dir" ;;
    cluster)
      python3 tests/fuzz/make_seeds.py cluster "$dir" ;;
  esac
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(checkpoint_reader idx_reader plugin_loader c_api op_def)
[ $# -gt 0 ] || targets+=(npy_reader)
[ $# -gt 0 ] || targets+=(graphdef_loader)
[ $# -gt 0 ] || targets+=(onnx_loader)
[ $# -gt 0 ] || targets+=(graph_file)
[ $# -gt 0 ] || targets+=(record_reader decoders dataset cluster)
for target in "${targets[@]}"; do
  weft_log "building $target"
  "build_$target"
  seed_corpus "$target"
  weft_log "fuzzing $target for ${seconds}s"
  (cd "$out" && WEFT_PLUGIN_PATH=$plugin_dir "./$target" \
     -max_total_time="$seconds" ${runs:+-runs=$runs} -print_final_stats=1 \
     ${extra[@]+"${extra[@]}"} "corpus/$target")
done
