#!/usr/bin/env bash
# Builds and runs the benchmarks in bench/ and prints their figures, with
# the machine they ran on.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh

weft_install_packages
weft_build
if [ ! -x "$WEFT_BUILD_DIR/bench/executor_overhead" ]; then
  echo "bench.sh: benchmarks were not built (see 'benchmarks' in the" \
       "configure summary)" >&2
  exit 1
fi
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -n1)"
weft_in_build_env bench/executor_overhead
weft_in_build_env bench/matmul_overhead
