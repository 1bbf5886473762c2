#!/usr/bin/env python3
"""Weft's TensorBoard files read by TensorBoard's own reader (issue 18).

    test_tensorboard.py BUILD_DIR SUMMARY_DEMO WEFT DATA_DIR

`tests/summary_demo.c` writes known scalars, histograms, images, text and
a graph through the C API and the summary ops; `weft train --logdir` a
short training run.  TensorBoard's EventAccumulator (the `tensorboard`
wheel, with Pillow to decode the PNGs, from PyPI into
BUILD_DIR/tensorboard-venv, made on the first run; skipped with the reason
without PyPI) reads the directories back, and every value is compared with
what this file computes from the same formulas, the loss log and the
program's output.  The reader runs as this file in the venv (`--dump
LOGDIR`), printing what it read as JSON.
"""

import bisect
import gzip
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

# ---- The reader: run in the venv ---------------------------------------------


def dump(logdir):
    import io
    from PIL import Image
    from tensorboard.backend.event_processing import event_accumulator as ea
    guidance = {ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.IMAGES: 0,
                ea.TENSORS: 0, ea.COMPRESSED_HISTOGRAMS: 0}
    acc = ea.EventAccumulator(logdir, size_guidance=guidance)
    acc.Reload()
    tags = acc.Tags()
    out = {'scalars': {}, 'histograms': {}, 'images': {}, 'tensors': {},
           'graph': None}
    for t in tags['scalars']:
        out['scalars'][t] = [[e.step, e.value] for e in acc.Scalars(t)]
    for t in tags['histograms']:
        out['histograms'][t] = [
            [e.step, {k: getattr(e.histogram_value, k) for k in
                      ('min', 'max', 'num', 'sum', 'sum_squares')},
             list(e.histogram_value.bucket_limit),
             list(e.histogram_value.bucket)] for e in acc.Histograms(t)]
    for t in tags['images']:
        rows = []
        for e in acc.Images(t):
            img = Image.open(io.BytesIO(e.encoded_image_string))
            rows.append([e.step, e.width, e.height, img.mode,
                         [list(p) if isinstance(p, tuple) else [p]
                          for p in img.getdata()]])
        out['images'][t] = rows
    for t in tags['tensors']:
        out['tensors'][t] = [
            [e.step, e.tensor_proto.dtype,
             [s.decode('utf-8') for s in e.tensor_proto.string_val]]
            for e in acc.Tensors(t)]
        meta = acc.SummaryMetadata(t)
        out['tensors'][t].append(meta.plugin_data.plugin_name)
    if tags['graph']:
        out['graph'] = [[n.name, n.op, list(n.input), n.device]
                        for n in acc.Graph().node]
    print(json.dumps(out))


if len(sys.argv) == 3 and sys.argv[1] == '--dump':
    dump(sys.argv[2])
    sys.exit(0)

# ---- The test ------------------------------------------------------------------

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interop_venv import ensure_venv, venv_python  # noqa: E402
from tap import Skip, Tap  # noqa: E402

build_dir, demo, weft, data_dir = sys.argv[1:5]
venv = Path(build_dir) / 'tensorboard-venv'
tap = Tap()
DBL_MAX = sys.float_info.max


def f32(x):
    return struct.unpack('<f', struct.pack('<f', x))[0]


def read_back(logdir):
    why = ensure_venv(venv, ['tensorboard', 'pillow'],
                      'import tensorboard, PIL')
    if why:
        raise Skip(why)
    r = subprocess.run([str(venv_python(venv)), __file__, '--dump',
                        str(logdir)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def check_histogram(h, values):
    """TensorBoard's histogram of `values`: the statistics, and each value
    in the bucket [limit[i-1], limit[i]) the limits say."""
    step, stats, limits, counts = h
    assert stats['num'] == len(values), stats
    assert stats['min'] == min(values) and stats['max'] == max(values), stats
    assert math.isclose(stats['sum'], math.fsum(values), rel_tol=1e-12,
                        abs_tol=1e-300), stats
    assert math.isclose(stats['sum_squares'],
                        math.fsum(v * v for v in values), rel_tol=1e-12), stats
    assert len(limits) == len(counts) and limits[-1] == DBL_MAX
    assert all(a < b for a, b in zip(limits, limits[1:])), limits
    want = [0] * len(limits)
    for v in values:
        want[bisect.bisect_right(limits, v)] += 1
    assert counts == want, (counts, want)
    # The edges are the documented ones: 0, +-1e-12 * 1.1^k, DBL_MAX.
    for limit in limits[:-1]:
        if limit == 0:
            continue
        k = math.log(abs(limit) / 1e-12) / math.log(1.1)
        assert abs(k - round(k)) < 1e-6 and 1e-12 <= abs(limit) < 1e20, limit
    return step


def image_pixels(h, w, c, value):
    return [[value(y, x, k) for k in range(c)] for y in range(h)
            for x in range(w)]


@tap.case
def the_c_api_and_the_summary_ops_read_back_exactly():
    with tempfile.TemporaryDirectory() as tmp:
        logdir = Path(tmp) / 'demo'
        r = subprocess.run([demo, str(logdir)], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        got = read_back(logdir)
    want_scalar = [[s, f32(0.5 * s - 1.25)] for s in range(10)]
    assert got['scalars']['direct/scalar'] == want_scalar, got['scalars']
    assert got['scalars']['op/scalar'] == [[7, 3.5]]
    hist = [-1e-13, 0.0, 1e-3, 5.0, 5.0, 1e6, -2.5]
    assert check_histogram(got['histograms']['direct/hist'][0], hist) == 3
    assert check_histogram(got['histograms']['op/hist'][0],
                           [float(i - 3) for i in range(12)]) == 7
    # [H=3, W=2, C=1] float32, pixel (r, c) = (r * 2 + c) * 0.25 - 0.25,
    # scaled by 255, rounded, clamped.
    step, width, height, mode, pixels = got['images']['direct/image'][0]
    assert (step, width, height, mode) == (4, 2, 3, 'L')
    assert pixels == image_pixels(
        3, 2, 1, lambda y, x, k: min(255, max(0, math.floor(
            ((y * 2 + x) * 0.25 - 0.25) * 255 + 0.5)))), pixels
    # Two of the three uint8 RGB images (max_images 2), as they were.
    assert sorted(t for t in got['images'] if t.startswith('op/')) == \
        ['op/image/0', 'op/image/1']
    for n in (0, 1):
        step, width, height, mode, pixels = got['images'][f'op/image/{n}'][0]
        assert (step, width, height, mode) == (7, 5, 4, 'RGB')
        assert pixels == image_pixels(
            4, 5, 3, lambda y, x, k: (n * 60 + y * 5 + x * 3 + k * 7) % 256)
    # Text: string tensors for the text plugin.
    DT_STRING = 7
    assert got['tensors']['direct/text'] == [[5, DT_STRING,
                                              ['plain text \u2713']], 'text']
    assert got['tensors']['op/text'] == [[7, DT_STRING, ['**hello** weft']],
                                         'text']
    # The graph: every node, its inputs and where the run placed it.
    nodes = {n[0]: n for n in got['graph']}
    assert nodes['merged'][1] == 'MergeSummary'
    assert nodes['merged'][2] == ['op/scalar', 'op/hist', 'op/image',
                                  'op/text'], nodes['merged']
    assert nodes['op/hist'][1] == 'HistogramSummary'
    assert nodes['op/hist'][2] == ['ints']
    for name in ('merged', 'op/hist', 'ints'):
        assert nodes[name][3].endswith('CPU:0'), nodes[name]


def idx_images(path, count):
    with gzip.open(path, 'rb') as f:
        magic, n, rows, cols = struct.unpack('>IIII', f.read(16))
        assert magic == 0x803
        return [list(f.read(rows * cols)) for _ in range(count)]


@tap.case
def weft_train_logdir_reads_back_with_the_run_s_own_numbers():
    images = Path(data_dir) / 't10k-images-idx3-ubyte.gz'
    if not images.exists():
        raise Skip(f'no Fashion-MNIST at {data_dir} (Debian\'s '
                   'dataset-fashion-mnist)')
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        command = [weft, 'train', 'fashion-mnist', '--model', 'softmax',
                   '--batch', '600', '--epochs', '2', '--validation', '6000',
                   '--threads', '1', '--data', data_dir,
                   '--logdir', str(tmp / 'logs'),
                   '--loss-log', str(tmp / 'loss.log'),
                   '--checkpoint', str(tmp / 'ckpt'),
                   '--save', str(tmp / 'model')]
        r = subprocess.run(command, capture_output=True, text=True,
                           timeout=600, cwd=tmp)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        losses = {}
        for line in (tmp / 'loss.log').read_text().split('\n'):
            if line:
                step, value = line.split()
                losses[int(step)] = float.fromhex(value)
        got = read_back(tmp / 'logs')
    out = r.stdout
    # 54000 training images (6000 held out) in batches of 600: 90 a epoch.
    per_epoch, total = 90, 180
    assert sorted(losses) == list(range(total))
    assert got['scalars']['loss'] == [[s, f32(losses[s])]
                                      for s in range(total)]
    tests = [float(x) for x in
             re.findall(r'epoch 1/2: ([0-9.]+)% test accuracy', out) +
             re.findall(r'test accuracy: ([0-9.]+)%', out)]
    validations = [float(x) for x in
                   re.findall(r'([0-9.]+)% validation accuracy', out) +
                   re.findall(r'^validation accuracy: ([0-9.]+)%', out,
                              re.MULTILINE)]
    assert len(tests) == 2 and len(validations) == 2, out
    for tag, printed in (('accuracy/test', tests),
                         ('accuracy/validation', validations)):
        events = got['scalars'][tag]
        assert [e[0] for e in events] == [per_epoch, total], events
        for (step, value), shown in zip(events, printed):
            assert abs(100 * value - shown) <= 0.005 + 1e-6, (tag, value,
                                                              shown)
    assert got['scalars']['learning_rate'] == [[per_epoch, 0.5],
                                               [total, 0.5]]
    # The weights' histograms after each epoch: every weight counted.
    sizes = {}
    for tag, events in got['histograms'].items():
        assert tag.startswith('weights/'), tag
        assert [e[0] for e in events] == [per_epoch, total]
        for step, stats, limits, counts in events:
            assert sum(counts) == stats['num'] and stats['min'] <= \
                stats['max'], stats
        sizes[tag] = events[0][1]['num']
    assert sorted(sizes.values()) == [10, 7840], sizes
    # The first three test images, as the file has them.
    want = idx_images(images, 3)
    assert sorted(got['images']) == ['test_images/0', 'test_images/1',
                                     'test_images/2']
    for i in range(3):
        step, width, height, mode, pixels = got['images'][f'test_images/{i}'][0]
        assert (step, width, height, mode) == (0, 28, 28, 'L')
        assert [p[0] for p in pixels] == want[i]
    text = got['tensors']['run']
    assert text[-1] == 'text' and '--model softmax' in text[0][2][0], text
    # The graph with the devices of the first step.
    ops = {n[1] for n in got['graph']}
    assert {'MatMul', 'HistogramSummary', 'MergeSummary'} <= ops, ops
    placed = [n for n in got['graph'] if n[3].endswith('CPU:0')]
    assert len(placed) > 10, got['graph'][:5]


sys.exit(tap.finish())
