#!/usr/bin/env bash
# Control-flow benchmarks (issue 11): a while loop's per-iteration cost and
# LSTM training steps per second, Weft against TensorFlow 1.x graph mode
# (tensorflow-cpu from PyPI, installed into a venv under the build folder
# by this script only) and LibTorch (Debian's libtorch-dev), interleaved,
# at 1 and 2 threads; prints every run, then medians and ratios.
#
# Environment: WEFT_BENCH_ROUNDS (3) rounds of interleaved runs;
# WEFT_BUILD_DIR as for setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh

rounds=${WEFT_BENCH_ROUNDS:-3}
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
install_peers() {
  local WEFT_PACKAGES=(libtorch-dev libopenblas0-openmp)
  weft_install_packages
}
install_peers || weft_log "could not install LibTorch; its peers are skipped"
weft_build
meson compile -C "$WEFT_BUILD_DIR" bench/while_loop bench/train_lstm \
  >/dev/null
torch=0
if ninja -C "$WEFT_BUILD_DIR" -t targets all 2>/dev/null |
    grep -q '^bench/train_lstm_torch:'; then
  meson compile -C "$WEFT_BUILD_DIR" bench/while_loop_torch \
    bench/train_lstm_torch >/dev/null
  torch=1
else
  weft_log "skipped: LibTorch peers (LibTorch not found at configure time)"
fi

echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -n1)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for round in $(seq "$rounds"); do
  for threads in 1 2; do
    weft_in_build_env bench/while_loop "$threads" 21 | tee -a "$out"
    [ -n "$tf_python" ] && "$tf_python" bench/while_loop_tf.py "$threads" 21 |
      tee -a "$out"
    [ "$torch" = 1 ] && "$WEFT_BUILD_DIR/bench/while_loop_torch" "$threads" 21 |
      tee -a "$out"
    weft_in_build_env bench/train_lstm "$threads" 200 | tee -a "$out"
    [ -n "$tf_python" ] && "$tf_python" bench/train_lstm_tf.py "$threads" 200 |
      tee -a "$out"
    [ "$torch" = 1 ] && "$WEFT_BUILD_DIR/bench/train_lstm_torch" "$threads" 200 |
      tee -a "$out"
  done
done
echo "--- medians over $rounds rounds"
python3 - "$out" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r"(Weft|TensorFlow|LibTorch)\S* .*?(while_loop|loop|LSTM training), (\d) thread", line)
    if not m:
        continue
    who, what, threads = m.group(1), m.group(2), int(m.group(3))
    kind = "lstm" if what == "LSTM training" else "loop"
    value = float(re.search(r"([\d.]+) (us/iteration|steps/s)", line).group(1))
    runs.setdefault((kind, threads, who), []).append(value)
for threads in (1, 2):
    loop = {w: statistics.median(v) for (k, t, w), v in runs.items() if k == "loop" and t == threads}
    lstm = {w: statistics.median(v) for (k, t, w), v in runs.items() if k == "lstm" and t == threads}
    line = "%d thread(s): while loop " % threads + ", ".join("%s %.3f us/iter" % kv for kv in sorted(loop.items()))
    for peer in ("TensorFlow", "LibTorch"):
        if peer in loop and "Weft" in loop:
            line += "; Weft/%s %.2fx the time" % (peer, loop["Weft"] / loop[peer])
    print(line)
    line = "%d thread(s): LSTM training " % threads + ", ".join("%s %.1f steps/s" % kv for kv in sorted(lstm.items()))
    peers = [lstm[p] for p in ("TensorFlow", "LibTorch") if p in lstm]
    if peers and "Weft" in lstm:
        line += "; Weft / faster peer %.2fx" % (lstm["Weft"] / max(peers))
    print(line)
PY
