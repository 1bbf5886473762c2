# Shared by setup.sh, test.sh and bench.sh; sourced, not run.  Each step
# does nothing when its work is already done, so the scripts can be re-run.

# Debian 12 packages the build needs.  The optional parts (OpenCL, oneDNN,
# Criterion tests) are Meson `auto` features: listing them here makes a
# fresh machine build everything that can run on it.
WEFT_PACKAGES=(
  meson ninja-build pkg-config g++ python3
  libeigen3-dev libdnnl-dev libdlpack-dev libcriterion-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd
  zlib1g-dev dataset-fashion-mnist
  openjdk-17-jdk-headless junit5
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

# A second build of everything the tests load, with ASan and UBSan.  The
# CUDA plugin is left out (without a GPU the sanitizers would only see it
# report zero devices, at the cost of another nvcc build), and so are the
# benchmarks, which the tests never run.
weft_build_sanitized() {
  local options=(-Dcuda=disabled -Dbenchmarks=disabled
                 -Db_sanitize=address,undefined -Db_lundef=false
                 -Dbuildtype=debugoptimized)
  if [ -f "$WEFT_SANITIZE_DIR/meson-private/coredata.dat" ]; then
    weft_log "reconfiguring $WEFT_SANITIZE_DIR"
    meson setup --reconfigure "${options[@]}" "$WEFT_SANITIZE_DIR"
  else
    weft_log "configuring $WEFT_SANITIZE_DIR (ASan + UBSan)"
    meson setup "${options[@]}" "$WEFT_SANITIZE_DIR"
  fi
  weft_log "building $WEFT_SANITIZE_DIR"
  meson compile -C "$WEFT_SANITIZE_DIR" ${WEFT_JOBS:+-j "$WEFT_JOBS"}
}
