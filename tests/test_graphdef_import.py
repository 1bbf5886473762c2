#!/usr/bin/env python3
"""TensorFlow GraphDef import (issue 14): frozen graphs that TensorFlow
itself builds load through weft_model_load and compute what TensorFlow
computes; what Weft cannot run is refused with the node, its op and why;
damaged files end in an error naming the file, never a crash.

    test_graphdef_import.py BUILD_DIR LIBWEFT

TensorFlow comes from a virtual environment BUILD_DIR/interop-venv, made
(and `pip install tensorflow-cpu`-ed) on the first run; where PyPI cannot
be reached every case is skipped with the reason.  The models are built
in that environment by this file run as `--generate DIR`, and Weft is
driven through ctypes by this file run as `--weft SPEC` (in the same
environment, for NumPy), in a child process so that a crash fails the case
instead of the run.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# ---- Generator: runs in the venv, with TensorFlow ---------------------------


def generate(out: Path) -> None:
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    tf1.disable_resource_variables()  # VariableV2, TF 1.x's variables
    freeze = tf1.graph_util.convert_variables_to_constants
    rng = np.random.default_rng(14)

    def weights(*shape, scale=0.1):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def save(name, graph_def, feeds, fetches, session):
        (out / f'{name}.pb').write_bytes(graph_def.SerializeToString())
        results = session.run(fetches, feeds) if fetches else []
        for placeholder, value in feeds.items():
            np.save(out / f'{name}.in.{placeholder.op.name}.npy', value)
        for tensor, value in zip(fetches, results):
            np.save(out / f'{name}.out.{tensor.op.name}.npy', value)

    # A 784-64-10 MLP: MatMul, BiasAdd, Relu, MatMul, Add, Softmax.
    g = tf.Graph()
    with g.as_default():
        x = tf1.placeholder(tf.float32, [None, 784], name='x')
        w1 = tf1.Variable(weights(784, 64), name='w1')
        b1 = tf1.Variable(weights(64), name='b1')
        w2 = tf1.Variable(weights(64, 10), name='w2')
        b2 = tf1.Variable(weights(10), name='b2')
        hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1),
                            name='hidden')
        logits = tf.add(tf.matmul(hidden, w2), b2, name='logits')
        probs = tf.nn.softmax(logits, name='probs')
        with tf1.Session(graph=g) as s:
            s.run(tf1.global_variables_initializer())
            (out / 'mlp_unfrozen.pb').write_bytes(
                g.as_graph_def().SerializeToString())
            frozen = freeze(s, g.as_graph_def(), ['probs'])
            save('mlp', frozen, {x: rng.standard_normal((5, 784))
                                 .astype(np.float32)}, [probs], s)

    # A small CNN: Conv2D SAME, BiasAdd, Relu, MaxPool, Reshape, MatMul,
    # BiasAdd, Softmax.
    g = tf.Graph()
    with g.as_default():
        image = tf1.placeholder(tf.float32, [None, 28, 28, 1], name='image')
        k = tf1.Variable(weights(3, 3, 1, 8, scale=0.3), name='k')
        kb = tf1.Variable(weights(8), name='kb')
        w = tf1.Variable(weights(14 * 14 * 8, 10, scale=0.05), name='w')
        b = tf1.Variable(weights(10), name='b')
        conv = tf.nn.conv2d(image, k, strides=[1, 1, 1, 1], padding='SAME')
        act = tf.nn.relu(tf.nn.bias_add(conv, kb))
        pool = tf.nn.max_pool2d(act, ksize=[1, 2, 2, 1],
                                strides=[1, 2, 2, 1], padding='SAME')
        flat = tf.reshape(pool, [-1, 14 * 14 * 8])
        probs = tf.nn.softmax(tf.nn.bias_add(tf.matmul(flat, w), b),
                              name='probs')
        with tf1.Session(graph=g) as s:
            s.run(tf1.global_variables_initializer())
            frozen = freeze(s, g.as_graph_def(), ['probs'])
            save('cnn', frozen, {image: rng.standard_normal((3, 28, 28, 1))
                                 .astype(np.float32)}, [probs], s)

    # More of the mapped ops, folded attributes and decompositions.
    g = tf.Graph()
    with g.as_default():
        img = tf1.placeholder(tf.float32, [None, 8, 8, 3], name='img')
        k = tf1.Variable(weights(3, 3, 3, 4, scale=0.3), name='k')
        conv = tf.nn.conv2d(img, k, strides=[1, 2, 2, 1], padding='VALID')
        bn, _, _ = tf1.nn.fused_batch_norm(
            conv, scale=weights(4) + 1, offset=weights(4),
            mean=weights(4), variance=np.abs(weights(4)) + 0.5,
            epsilon=1e-3, is_training=False)
        r6 = tf.nn.relu6(bn * 4.0)
        pooled = tf.nn.avg_pool2d(tf.pad(r6, [[0, 0], [1, 1], [1, 1], [0, 0]]),
                                  ksize=2, strides=1, padding='VALID')
        mean = tf.reduce_mean(pooled, axis=[1, 2])            # [N, 4]
        mixed = tf.concat([mean, tf.nn.leaky_relu(mean, 0.1),
                           tf.sigmoid(mean), tf.tanh(mean)], axis=1)  # [N, 16]
        t = tf.transpose(tf.expand_dims(mixed, 2), [0, 2, 1])  # [N, 1, 16]
        s_ = tf.squeeze(tf.slice(tf.tile(t, [1, 2, 1]), [0, 0, 0], [-1, 1, -1]),
                        axis=[1])
        sl = tf.slice(s_, [0, 2], [-1, 8])
        stacked = tf.stack([sl, tf.math.squared_difference(sl, 0.5)], axis=1)
        total = tf.add_n([tf.reduce_sum(stacked, axis=1), sl,
                          tf.math.reciprocal(tf.abs(sl) + 1.0)])
        gathered = tf.gather(total, [3, 1, 0], axis=1)
        tf.identity(tf.cast(gathered * 100.0, tf.int32), name='mix_int')
        tf.identity(tf.nn.log_softmax(total), name='mix')
        with tf1.Session(graph=g) as s:
            s.run(tf1.global_variables_initializer())
            frozen = freeze(s, g.as_graph_def(), ['mix', 'mix_int'])
            save('mix', frozen, {img: rng.standard_normal((2, 8, 8, 3))
                                 .astype(np.float32)},
                 [g.get_tensor_by_name('mix:0'),
                  g.get_tensor_by_name('mix_int:0')], s)

    # An op Weft does not have.
    g = tf.Graph()
    with g.as_default():
        v = tf1.placeholder(tf.float32, [None, 4], name='v')
        tf.identity(tf.cumsum(v, axis=1, name='running_total'), name='out')
        (out / 'cumsum.pb').write_bytes(g.as_graph_def().SerializeToString())

    # Channels first, which Weft's Conv2D does not take.
    g = tf.Graph()
    with g.as_default():
        v = tf1.placeholder(tf.float32, [None, 3, 8, 8], name='v')
        tf.nn.conv2d(v, weights(3, 3, 3, 4), strides=[1, 1, 1, 1],
                     padding='SAME', data_format='NCHW', name='conv_nchw')
        (out / 'nchw.pb').write_bytes(g.as_graph_def().SerializeToString())


# ---- Weft through ctypes: runs in the venv, for NumPy --------------------------


def weft_child(spec_path: str) -> None:
    """Loads (and runs) each item of the spec, printing one JSON line per
    item as soon as it is done, so that a parent seeing a crash knows which
    item it was."""
    import ctypes as C

    import numpy as np

    spec = json.loads(Path(spec_path).read_text())
    lib = C.CDLL(spec['lib'])
    p = C.c_void_p
    lib.weft_status_code.restype = C.c_int
    lib.weft_status_code.argtypes = [p]
    lib.weft_status_message.restype = C.c_char_p
    lib.weft_status_message.argtypes = [p]
    lib.weft_status_destroy.argtypes = [p]

    class LoadOptions(C.Structure):
        _fields_ = [('struct_size', C.c_size_t), ('format', C.c_char_p),
                    ('session_options', p),
                    ('graphdef_outputs', C.POINTER(C.c_char_p)),
                    ('num_graphdef_outputs', C.c_int32)]

    class Output(C.Structure):
        _fields_ = [('node', p), ('index', C.c_int32)]

    lib.weft_model_load_options_init.argtypes = [C.POINTER(LoadOptions)]
    lib.weft_model_load.restype = p
    lib.weft_model_load.argtypes = [C.c_char_p, C.POINTER(LoadOptions),
                                    C.POINTER(p)]
    lib.weft_model_destroy.argtypes = [p]
    lib.weft_model_signature_size.restype = C.c_int32
    lib.weft_model_signature_size.argtypes = [p, C.c_char_p, C.c_int32]
    lib.weft_model_signature_entry.restype = p
    lib.weft_model_signature_entry.argtypes = [
        p, C.c_char_p, C.c_int32, C.c_int32, C.POINTER(C.c_char_p),
        C.POINTER(Output)]
    lib.weft_model_run.restype = p
    lib.weft_model_run.argtypes = [p, C.c_char_p, C.POINTER(C.c_char_p),
                                   C.POINTER(p), C.c_int32,
                                   C.POINTER(C.c_char_p), C.POINTER(p),
                                   C.c_int32]
    lib.weft_tensor_create_copy.restype = p
    lib.weft_tensor_create_copy.argtypes = [
        C.c_int, C.POINTER(C.c_int64), C.c_int32, p, C.c_size_t,
        C.POINTER(p)]
    lib.weft_tensor_destroy.argtypes = [p]
    lib.weft_tensor_dtype.restype = C.c_int
    lib.weft_tensor_dtype.argtypes = [p]
    lib.weft_tensor_rank.restype = C.c_int32
    lib.weft_tensor_rank.argtypes = [p]
    lib.weft_tensor_dim.restype = C.c_int64
    lib.weft_tensor_dim.argtypes = [p, C.c_int32]
    lib.weft_tensor_byte_size.restype = C.c_size_t
    lib.weft_tensor_byte_size.argtypes = [p]
    lib.weft_tensor_data.restype = p
    lib.weft_tensor_data.argtypes = [p]
    to_weft = {np.dtype('float32'): 1, np.dtype('float64'): 2,
               np.dtype('int32'): 3, np.dtype('int64'): 4}
    from_weft = {v: k for k, v in to_weft.items()}

    def status(s):
        if not s:
            return 0, ''
        code = lib.weft_status_code(s)
        message = lib.weft_status_message(s).decode(errors='replace')
        lib.weft_status_destroy(s)
        return code, message

    def keys(model, is_output):
        found = []
        for i in range(max(lib.weft_model_signature_size(model, None,
                                                         is_output), 0)):
            key = C.c_char_p()
            out = Output()
            code, _ = status(lib.weft_model_signature_entry(
                model, None, is_output, i, C.byref(key), C.byref(out)))
            if code == 0:
                found.append(key.value.decode())
        return found

    for item in spec['items']:
        result = {}
        opts = LoadOptions()
        lib.weft_model_load_options_init(C.byref(opts))
        names = item.get('outputs')
        if names is not None:
            arr = (C.c_char_p * max(len(names), 1))(
                *[n.encode() for n in names])
            opts.graphdef_outputs = arr
            opts.num_graphdef_outputs = len(names)
        model = p()
        code, message = status(lib.weft_model_load(
            item['pb'].encode(), C.byref(opts), C.byref(model)))
        result.update(load_code=code, load_message=message)
        if code == 0:
            result['input_keys'] = keys(model, 0)
            result['output_keys'] = keys(model, 1)
            feeds = {k: np.ascontiguousarray(np.load(v))
                     for k, v in item.get('inputs', {}).items()}
            held = []
            for value in feeds.values():
                t = p()
                dims = (C.c_int64 * max(value.ndim, 1))(*value.shape)
                code, message = status(lib.weft_tensor_create_copy(
                    to_weft[value.dtype], dims, value.ndim,
                    value.ctypes.data, value.nbytes, C.byref(t)))
                assert code == 0, message
                held.append(t)
            wanted = list(item.get('expected', {}))
            outs = (p * max(len(wanted), 1))()
            if feeds or wanted:
                in_keys = (C.c_char_p * max(len(feeds), 1))(
                    *[k.encode() for k in feeds])
                out_keys = (C.c_char_p * max(len(wanted), 1))(
                    *[k.encode() for k in wanted])
                code, message = status(lib.weft_model_run(
                    model, None, in_keys, (p * max(len(held), 1))(*held),
                    len(held), out_keys, outs, len(wanted)))
                result.update(run_code=code, run_message=message)
                errors = {}
                for i, key in enumerate(wanted):
                    if code != 0 or not outs[i]:
                        continue
                    t = outs[i]
                    shape = [lib.weft_tensor_dim(t, a)
                             for a in range(lib.weft_tensor_rank(t))]
                    dtype = from_weft.get(lib.weft_tensor_dtype(t))
                    if dtype is None:
                        errors[key] = 'dtype %d' % lib.weft_tensor_dtype(t)
                    else:
                        got = np.frombuffer(C.string_at(
                            lib.weft_tensor_data(t),
                            lib.weft_tensor_byte_size(t)),
                            dtype=dtype).reshape(shape)
                        want = np.load(item['expected'][key])
                        if got.shape != want.shape:
                            errors[key] = f'shape {got.shape} != {want.shape}'
                        elif dtype.kind == 'f':
                            errors[key] = float(np.max(
                                np.abs(got - want) /
                                (np.abs(want) * item['rtol'] + item['atol'])))
                        else:
                            errors[key] = int(np.max(np.abs(
                                got.astype(np.int64) - want))) if got.size else 0
                    lib.weft_tensor_destroy(t)
                result['errors'] = errors
            for t in held:
                lib.weft_tensor_destroy(t)
            lib.weft_model_destroy(model)
        print(json.dumps(result), flush=True)


# ---- The test: runs under meson's python ----------------------------------------

if __name__ == '__main__' and len(sys.argv) == 3 and sys.argv[1] == '--generate':
    generate(Path(sys.argv[2]))
    sys.exit(0)
if __name__ == '__main__' and len(sys.argv) == 3 and sys.argv[1] == '--weft':
    weft_child(sys.argv[2])
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_venv import ensure_venv, venv_python  # noqa: E402
from tap import Skip, Tap  # noqa: E402

BUILD_DIR = Path(sys.argv[1]).resolve()
LIBWEFT = str(Path(sys.argv[2]).resolve())
VENV = BUILD_DIR / 'interop-venv'
PYTHON = venv_python(VENV)
THIS = os.path.abspath(__file__)
WORK = Path(tempfile.mkdtemp(prefix='weft-graphdef-'))
state = {}


def ensure_tensorflow():
    """The venv's python with TensorFlow, or the reason there is none."""
    return ensure_venv(VENV, ['tensorflow-cpu'], 'import tensorflow, numpy',
                       timeout=1500)


def need_models():
    if 'skip' in state:
        raise Skip(state['skip'])


def run_weft(items, rtol=1e-4, atol=1e-5):
    """Runs the items in children; a crash is recorded as that item's
    result ({'crash': returncode}) and the rest go on in a new child."""
    results = []
    pending = [dict(item, rtol=rtol, atol=atol) for item in items]
    while pending:
        spec = WORK / 'spec.json'
        spec.write_text(json.dumps({'lib': LIBWEFT, 'items': pending}))
        r = subprocess.run([str(PYTHON), THIS, '--weft', str(spec)],
                           capture_output=True, text=True, timeout=600)
        lines = [json.loads(l) for l in r.stdout.splitlines()
                 if l.startswith('{')]
        results += lines
        pending = pending[len(lines):]
        if r.returncode != 0 and pending:
            if 'ASan runtime' in r.stderr or 'cannot open shared' in r.stderr:
                raise Skip('libweft cannot be loaded into Python here: ' +
                           r.stderr.strip().splitlines()[-1][-200:])
            results.append({'crash': r.returncode, 'stderr': r.stderr[-2000:]})
            pending = pending[1:]
    return results


def model(name, outputs, expected):
    item = {'pb': str(WORK / f'{name}.pb'), 'outputs': outputs,
            'inputs': {}, 'expected': {}}
    for f in sorted(WORK.glob(f'{name}.in.*.npy')):
        item['inputs'][f.name.split('.')[2]] = str(f)
    for key in expected:
        item['expected'][key] = str(WORK / f'{name}.out.{key}.npy')
    return item


def check_matches(result, keys):
    assert 'crash' not in result, result
    assert result['load_code'] == 0, result['load_message']
    assert result.get('run_code') == 0, result.get('run_message')
    for key in keys:
        err = result['errors'].get(key)
        assert isinstance(err, (int, float)) and err <= 1, (key, result)


tap = Tap()


@tap.case
def venv_has_tensorflow():
    why = ensure_tensorflow()
    if why:
        state['skip'] = why
        raise Skip(why)


@tap.case
def tensorflow_builds_and_freezes_the_models():
    need_models()
    r = subprocess.run([str(PYTHON), THIS, '--generate', str(WORK)],
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
                                CUDA_VISIBLE_DEVICES=''))
    if r.returncode != 0:
        state['skip'] = 'the generator failed (see the first failed case)'
        raise AssertionError(r.stderr[-3000:])


@tap.case
def mlp_matches_tensorflow():
    need_models()
    [r] = run_weft([model('mlp', ['probs'], ['probs'])])
    check_matches(r, ['probs'])
    assert r['input_keys'] == ['x'] and r['output_keys'] == ['probs'], r


@tap.case
def mlp_without_named_outputs_fetches_the_unread_nodes():
    need_models()
    item = model('mlp', None, ['probs'])
    [r] = run_weft([item])
    check_matches(r, ['probs'])
    assert r['output_keys'] == ['probs'], r


@tap.case
def cnn_matches_tensorflow():
    need_models()
    [r] = run_weft([model('cnn', ['probs:0'], [])])
    assert r['load_code'] == 0, r['load_message']
    assert r['output_keys'] == ['probs_0'], r
    [r] = run_weft([model('cnn', ['probs'], ['probs'])])
    check_matches(r, ['probs'])


@tap.case
def more_ops_match_tensorflow():
    need_models()
    [r] = run_weft([model('mix', ['mix', 'mix_int'], ['mix', 'mix_int'])],
                   rtol=1e-4, atol=1e-4)
    # mix_int is float * 100 truncated: one unit off where TensorFlow's
    # and Weft's floats round across an integer.
    assert 'crash' not in r and r['load_code'] == 0, r
    assert r.get('run_code') == 0, r
    assert isinstance(r['errors'].get('mix'), float) and r['errors']['mix'] <= 1, r
    assert r['errors'].get('mix_int', 99) <= 1, r


@tap.case
def unsupported_op_is_refused_naming_node_and_op():
    need_models()
    [r] = run_weft([{'pb': str(WORK / 'cumsum.pb'), 'outputs': ['out']}])
    assert r['load_code'] == 12, r  # UNIMPLEMENTED
    m = r['load_message']
    assert 'running_total' in m and 'Cumsum' in m and 'cumsum.pb' in m, m


@tap.case
def channels_first_conv_is_refused():
    need_models()
    [r] = run_weft([{'pb': str(WORK / 'nchw.pb'), 'outputs': None}])
    assert r['load_code'] == 12, r
    m = r['load_message']
    assert 'conv_nchw' in m and 'NCHW' in m, m


@tap.case
def unfrozen_graph_says_freeze_first():
    need_models()
    [r] = run_weft([{'pb': str(WORK / 'mlp_unfrozen.pb'),
                     'outputs': ['probs']}])
    assert r['load_code'] == 12, r
    m = r['load_message']
    assert 'freeze the graph first' in m and 'VariableV2' in m, m


def damaged_copies(kind):
    data = (WORK / 'cnn.pb').read_bytes()
    import random
    rng = random.Random(14)
    copies = []
    if kind == 'truncated':
        cuts = sorted({0, 1, 2, 7, 40, 100, len(data) // 3, len(data) // 2,
                       len(data) - 1000, len(data) - 41, len(data) - 2,
                       len(data) - 1} | {rng.randrange(len(data))
                                         for _ in range(12)})
        for cut in cuts:
            copies.append(data[:cut])
    else:
        # The structure is in the first and last bytes (the weights lie in
        # between): flip bytes there most, and some anywhere.
        for i in range(48):
            b = bytearray(data)
            for _ in range(1 + i % 3):
                if i % 4 == 3:
                    at = rng.randrange(len(b))
                elif i % 2:
                    at = rng.randrange(min(400, len(b)))
                else:
                    at = len(b) - 1 - rng.randrange(min(1500, len(b)))
                b[at] ^= rng.randrange(1, 256)
            copies.append(bytes(b))
    items = []
    for i, blob in enumerate(copies):
        path = WORK / f'{kind}_{i}.pb'
        path.write_bytes(blob)
        item = model('cnn', ['probs'], [])
        item['pb'] = str(path)
        items.append(item)
    return items


def check_damaged(kind):
    items = damaged_copies(kind)
    results = run_weft(items)
    crashes = [(i, r) for i, r in enumerate(results) if 'crash' in r]
    assert not crashes, crashes[:3]
    loaded = 0
    for item, r in zip(items, results):
        if r['load_code'] == 0:
            loaded += 1
            continue
        m = r['load_message']
        assert m and Path(item['pb']).name in m, (item['pb'], r)
    print(f'# {kind}: {len(items)} copies, {loaded} loaded, '
          f'{len(items) - loaded} refused', flush=True)


@tap.case
def truncated_copies_are_refused_naming_the_file():
    need_models()
    check_damaged('truncated')


@tap.case
def flipped_copies_load_or_are_refused_never_crash():
    need_models()
    check_damaged('flipped')


code = tap.finish()
shutil.rmtree(WORK, ignore_errors=True)
sys.exit(code)
