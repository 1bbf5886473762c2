#!/usr/bin/env bash
# Installs what is missing, builds Weft in ./build and runs the example:
# relu(W·x + b) through the C API on the CPU plugin.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh

weft_install_packages
weft_build
weft_log "running examples/relu_layer"
weft_in_build_env examples/relu_layer
