#!/usr/bin/env bash
# Workloads measured against their peers in one run: Weft against
# TensorFlow 1.x graph mode and JAX (tensorflow-cpu and jax[cpu] from PyPI,
# installed into a venv under the build folder by this script only) and
# LibTorch (Debian's libtorch-dev), interleaved, at 1 and 2 threads; prints
# every run, then medians and ratios.
#
# Usage: scripts/bench_peers.sh [WORKLOAD...]  (default: all of them)
#   while_loop   a while loop's cost per iteration (trivial body, 100,000
#                iterations; issue 11)
#   train_lstm   LSTM training steps/s (128 units, 28 steps; issue 11)
#   train_cnn    CNN training steps/s (two 5x5 convolutions with ReLU and
#                max-pooling, dense to 10, batch 64; issue 12)
#   train_mlp    MLP training steps/s (784-256-10, batch 100, SGD)
# Each workload is bench/<name>.c, bench/<name>_tf.py, bench/<name>_torch.cc
# and, where it exists, bench/<name>_jax.py, printing one line "<who>
# <what>, N thread(s): <value> <unit> ..." (train_mlp and its LibTorch twin
# keep bench.sh's "weft mlp training: N threads: X steps/s" form).
#
# Environment: WEFT_BENCH_ROUNDS (3) rounds of interleaved runs;
# WEFT_BUILD_DIR as for setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh

rounds=${WEFT_BENCH_ROUNDS:-3}
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(while_loop train_lstm train_cnn train_mlp)
declare -A arg=([while_loop]=21 [train_lstm]=200 [train_cnn]=100 [train_mlp]=700)
for w in "${workloads[@]}"; do
  [ -n "${arg[$w]:-}" ] || { weft_log "unknown workload '$w'"; exit 2; }
done

venv="$WEFT_BUILD_DIR/bench-venv"
tf_python=""
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import tensorflow' \
    2>/dev/null; then
  tf_python="$venv/bin/python"
elif python3 -m venv "$venv" >/dev/null 2>&1 &&
     "$venv/bin/pip" install -q tensorflow-cpu >/dev/null 2>&1; then
  tf_python="$venv/bin/python"
else
  weft_log "skipped: TensorFlow peer (tensorflow-cpu could not be" \
           "installed from PyPI into $venv)"
fi
jax_python=""
if [ -x "$venv/bin/python" ] && { "$venv/bin/python" -c 'import jax' \
    2>/dev/null || "$venv/bin/pip" install -q "jax[cpu]" >/dev/null 2>&1; }
then
  jax_python="$venv/bin/python"
else
  weft_log "skipped: JAX peer (jax[cpu] could not be installed from PyPI" \
           "into $venv)"
fi
install_peers() {
  local WEFT_PACKAGES=(libtorch-dev libopenblas0-openmp)
  weft_install_packages
}
install_peers || weft_log "could not install LibTorch; its peers are skipped"
weft_build
for w in "${workloads[@]}"; do
  meson compile -C "$WEFT_BUILD_DIR" "bench/$w" >/dev/null
done
torch=0
if ninja -C "$WEFT_BUILD_DIR" -t targets all 2>/dev/null |
    grep -q '^bench/train_lstm_torch:'; then
  for w in "${workloads[@]}"; do
    meson compile -C "$WEFT_BUILD_DIR" "bench/${w}_torch" >/dev/null
  done
  torch=1
else
  weft_log "skipped: LibTorch peers (LibTorch not found at configure time)"
fi

echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -n1)"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for round in $(seq "$rounds"); do
  for threads in 1 2; do
    for w in "${workloads[@]}"; do
      weft_in_build_env "bench/$w" "$threads" "${arg[$w]}" | tee -a "$out"
      [ -n "$tf_python" ] &&
        "$tf_python" "bench/${w}_tf.py" "$threads" "${arg[$w]}" |
        tee -a "$out"
      [ "$torch" = 1 ] &&
        "$WEFT_BUILD_DIR/bench/${w}_torch" "$threads" "${arg[$w]}" |
        tee -a "$out"
      [ -n "$jax_python" ] && [ -f "bench/${w}_jax.py" ] &&
        "$jax_python" "bench/${w}_jax.py" "$threads" "${arg[$w]}" |
        tee -a "$out"
    done
  done
done
echo "--- medians over $rounds rounds"
python3 - "$out" <<'PY'
import re, statistics, sys
runs = {}
names = {"weft": "Weft", "libtorch": "LibTorch"}
for line in open(sys.argv[1]):
    m = re.match(r"(Weft|TensorFlow|LibTorch|JAX)\S*(?: [\d.]+)? (.*?), (\d) "
                 r"thread.*?: ([\d.]+) (us/iteration|steps/s)", line) or \
        re.match(r"(weft|libtorch) (mlp training): (\d) threads?: ([\d.]+) "
                 r"(steps/s)", line)
    if not m:
        continue
    who, what, threads = m.group(1), m.group(2), int(m.group(3))
    who = names.get(who, who)
    what = "MLP training" if what == "mlp training" else what
    what = "while loop" if what in ("while_loop", "loop") else what
    runs.setdefault((what, threads, m.group(5)), {}).setdefault(
        who, []).append(float(m.group(4)))
for (what, threads, unit), by in sorted(runs.items()):
    med = {w: statistics.median(v) for w, v in by.items()}
    fmt = "%s %.1f %s" if unit == "steps/s" else "%s %.3f %s"
    line = "%d thread(s): %s " % (threads, what) + ", ".join(
        fmt % (w, v, unit) for w, v in sorted(med.items()))
    if "Weft" in med:
        for peer in ("TensorFlow", "JAX", "LibTorch"):
            if peer in med:
                # Ratios say how many times faster Weft is.
                r = (med["Weft"] / med[peer] if unit == "steps/s"
                     else med[peer] / med["Weft"])
                line += "; Weft %.2fx %s" % (r, peer)
    print(line)
PY
