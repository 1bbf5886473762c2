#!/usr/bin/env bash
# Installs what is missing, builds Weft in ./build and runs the main job on
# the CPU plugin: `weft train fashion-mnist`, the softmax regression and the
# MLP for two epochs each, printing test accuracy (targets: 80% and 85%).
# Checkpoints go to build/ (the job runs there).  Then the first example,
# relu(W·x + b) through the C API.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh

weft_install_packages
weft_build
for model in softmax mlp; do
  weft_log "running the main job: weft train fashion-mnist --model $model"
  weft_in_build_env tools/weft train fashion-mnist --model "$model" \
    --epochs 2 --device CPU
done
weft_log "running examples/relu_layer"
weft_in_build_env examples/relu_layer
