# Shared by setup.sh, test.sh and bench.sh; sourced, not run.  Each step
# does nothing when its work is already done, so the scripts can be re-run.

# Debian 12 packages the build needs.  The optional parts (OpenCL, oneDNN,
# Criterion tests) are Meson `auto` features: listing them here makes a
# fresh machine build everything that can run on it.
WEFT_PACKAGES=(
  meson ninja-build pkg-config g++ python3
  libeigen3-dev libdnnl-dev libdlpack-dev libcriterion-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libclblast1
  zlib1g-dev libffi-dev dataset-fashion-mnist
  libpng-dev libjpeg62-turbo-dev
  openjdk-17-jdk-headless junit5
  maven libmaven-install-plugin-java libmaven-resources-plugin-java
  libmaven-compiler-plugin-java libexec-maven-plugin-java
  abigail-tools
  doxygen groff-base
  libprotobuf-dev protobuf-compiler libonnx-dev python3-onnx
  openmpi-bin libopenmpi-dev
)

WEFT_BUILD_DIR=${WEFT_BUILD_DIR:-build}

weft_log() {
  printf '==> %s\n' "$*" >&2
}

weft_package_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

weft_install_packages() {
  local missing=() package
  for package in "${WEFT_PACKAGES[@]}"; do
    weft_package_installed "$package" || missing+=("$package")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  local as_root=()
  if [ "$(id -u)" -ne 0 ]; then
    as_root=(sudo)
  fi
  weft_log "installing ${missing[*]}"
  # Only when something is missing: apt-get update is slow and needs the
  # network, and a machine that already has everything should need neither.
  "${as_root[@]}" apt-get update
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y "${missing[@]}"
}

weft_build() {
  # Reconfiguring an existing build picks up packages installed since the
  # last setup (the optional features are `auto`); a fresh setup otherwise.
  if [ -f "$WEFT_BUILD_DIR/meson-private/coredata.dat" ]; then
    weft_log "reconfiguring $WEFT_BUILD_DIR"
    meson setup --reconfigure "$WEFT_BUILD_DIR"
  else
    weft_log "configuring $WEFT_BUILD_DIR"
    meson setup "$WEFT_BUILD_DIR"
  fi
  weft_log "building"
  # WEFT_JOBS caps parallel compiler processes on small or shared machines.
  meson compile -C "$WEFT_BUILD_DIR" ${WEFT_JOBS:+-j "$WEFT_JOBS"}
}

# Runs a command from the build directory with the developer environment
# (WEFT_PLUGIN_PATH pointing at the plugins just built, tools on PATH).
weft_in_build_env() {
  meson devenv -C "$WEFT_BUILD_DIR" "$@"
}

WEFT_SANITIZE_DIR=${WEFT_SANITIZE_DIR:-build-sanitize}

# A second build with ASan and UBSan, configured here and built by
# weft_test_sanitized for the tests it runs.  The CUDA plugin is left out
# (without a GPU the sanitizers would only see it report zero devices, at
# the cost of another nvcc build), and so are the benchmarks, which the
# tests never run, and the CPU plugin's x86-64-v3 build (the same sources
# as the baseline one, which the sanitized tests then use).  WEFT_SANITIZE_ONEDNN=disabled builds the CPU plugin
# with its Eigen kernels only.
#
# -O1 -g1 (line tables only) rather than -O2 -g: instrumented Eigen
# kernels are most of the build, and one of them (plugins/cpu/binary.cc)
# takes 29 s of CPU instead of 76 s this way; the reports keep file and
# line, and -O1 is what the sanitizers' documentation recommends.
weft_configure_sanitized() {
  local options=(-Dcuda=disabled -Dbenchmarks=disabled -Dcpu_isa_variants=false
                 -Donednn=${WEFT_SANITIZE_ONEDNN:-auto}
                 -Db_sanitize=address,undefined -Db_lundef=false
                 -Doptimization=1 -Ddebug=false -Dc_args=-g1 -Dcpp_args=-g1)
  if [ -f "$WEFT_SANITIZE_DIR/meson-private/coredata.dat" ]; then
    weft_log "reconfiguring $WEFT_SANITIZE_DIR"
    meson setup --reconfigure "${options[@]}" "$WEFT_SANITIZE_DIR"
  else
    weft_log "configuring $WEFT_SANITIZE_DIR (ASan + UBSan)"
    meson setup "${options[@]}" "$WEFT_SANITIZE_DIR"
  fi
}

# Builds what the chosen tests need in the sanitized build and runs them:
# `subset` runs the tests of the meson suite 'sanitize' (tests/meson.build
# lists them), `full` builds everything and runs the whole suite.  Like
# the plain run, a failing test does not stop the script: tally.py counts.
weft_test_sanitized() {
  local which=$1
  weft_configure_sanitized
  if [ "$which" = full ]; then
    weft_log "building $WEFT_SANITIZE_DIR"
    meson compile -C "$WEFT_SANITIZE_DIR" ${WEFT_JOBS:+-j "$WEFT_JOBS"}
    weft_log "running the whole test suite under ASan and UBSan"
    meson test -C "$WEFT_SANITIZE_DIR" --print-errorlogs --num-processes 2 ||
      true
  else
    # Only the targets these tests depend on, not the whole project.
    weft_log "building and running the suite 'sanitize' under ASan and UBSan"
    meson test -C "$WEFT_SANITIZE_DIR" --suite sanitize --print-errorlogs \
      --num-processes 2 || true
  fi
}
