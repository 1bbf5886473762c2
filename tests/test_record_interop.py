#!/usr/bin/env python3
"""TFRecord and tf.train.Example files from TensorFlow itself (issue 15),
decoded by Weft as TensorFlow decodes them, bit for bit.

    test_record_interop.py BUILD_DIR LIBWEFT

TensorFlow writes TFRecord files (uncompressed, GZIP and ZLIB) of
tf.train.Example records holding PNG images (tf.io.encode_png: 1 to 4
channels, 8 and 16 bits), JPEG images (tf.io.encode_jpeg: gray and RGB),
float and int64 lists and bytes.  The records TensorFlow's own
tf.data.TFRecordDataset yields go through Weft's ParseExampleFeature,
DecodePng and DecodeJpeg (by ctypes on libweft) and must equal what
tf.io.parse_single_example, tf.io.decode_png and tf.io.decode_jpeg give:
exactly, JPEG included (both decoders are libjpeg-turbo with the same
inverse DCT: INTEGER_ACCURATE, libjpeg's islow, and INTEGER_FAST,
TensorFlow's default).  Weft's record readers have no public entry point
yet; `write_fixtures` is for the test that reads these files through them.

TensorFlow comes from BUILD_DIR/interop-venv (tests/interop_venv.py), made
on the first run; without PyPI every case is skipped with the reason.  The
fixtures are made by this file run in that venv as `--generate DIR`, and
Weft is driven by it run as `--weft SPEC`, in a child process so that a
crash fails a case instead of the run.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The files write_fixtures makes, and the compression TensorFlow gave each.
FIXTURE_FILES = {'examples.tfrecord': '',
                 'examples.gzip.tfrecord': 'GZIP',
                 'examples.zlib.tfrecord': 'ZLIB'}
NUM_EXAMPLES = 12

# ---- Fixtures: run in the venv, with TensorFlow -----------------------------


def make_examples(tf, np):
    """The Example protos (and the arrays encoded into them), seeded."""
    rng = np.random.default_rng(15)
    examples = []
    for i in range(NUM_EXAMPLES):
        h, w = int(rng.integers(1, 24)), int(rng.integers(1, 24))
        channels = (1, 2, 3, 4)[i % 4]
        if i % 3 == 2:
            image = rng.integers(0, 65536, (h, w, channels), dtype=np.uint16)
        else:
            image = rng.integers(0, 256, (h, w, channels), dtype=np.uint8)
        png = tf.io.encode_png(image).numpy()
        # A smooth picture with noise: JPEG's blocks then hold real detail.
        jh, jw = int(rng.integers(8, 40)), int(rng.integers(8, 40))
        jc = (1, 3)[i % 2]
        yy, xx = np.mgrid[0:jh, 0:jw]
        base = (yy * 5 + xx * 3)[..., None] + np.arange(jc) * 40
        noisy = base + rng.integers(0, 30, (jh, jw, jc))
        jpeg_image = np.clip(noisy, 0, 255).astype(np.uint8)
        jpeg = tf.io.encode_jpeg(jpeg_image, quality=int(60 + 3 * i)).numpy()
        feature = {
            'png': tf.train.Feature(bytes_list=tf.train.BytesList(value=[png])),
            'jpeg': tf.train.Feature(
                bytes_list=tf.train.BytesList(value=[jpeg])),
            'floats': tf.train.Feature(float_list=tf.train.FloatList(
                value=rng.standard_normal(3).astype(np.float32))),
            # A length of its own per example, 0 included.
            'weights': tf.train.Feature(float_list=tf.train.FloatList(
                value=rng.standard_normal(i % 5).astype(np.float32))),
            'ints': tf.train.Feature(int64_list=tf.train.Int64List(
                value=[-2**63 + i, 2**63 - 1 - i])),
            'label': tf.train.Feature(
                int64_list=tf.train.Int64List(value=[i * 1000 - 5000])),
            'name': tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[b'example-%d' % i, b'second'])),
        }
        examples.append(tf.train.Example(
            features=tf.train.Features(feature=feature)))
    return examples


def write_fixtures(directory: Path) -> dict:
    """Writes FIXTURE_FILES into `directory` with tf.io.TFRecordWriter (each
    holds the same NUM_EXAMPLES Examples) and returns
    {file name: compression}.  Needs TensorFlow; for any test of TFRecord
    reading."""
    import numpy as np
    import tensorflow as tf

    examples = make_examples(tf, np)
    for name, compression in FIXTURE_FILES.items():
        options = tf.io.TFRecordOptions(compression_type=compression)
        with tf.io.TFRecordWriter(str(directory / name), options) as writer:
            for example in examples:
                writer.write(example.SerializeToString())
    return dict(FIXTURE_FILES)


# What Weft computes from each record, by output name: the op and its
# attributes.  Shared by the expectations and the Weft child.
# (TensorFlow's DecodePng has no channels = 2, which Weft's takes.)
PNG_VARIANTS = [('png_c%d_%s' % (c, t), c, t)
                for c in (0, 1, 3, 4) for t in ('uint8', 'uint16')]
JPEG_VARIANTS = [('jpeg_accurate', 0, 'INTEGER_ACCURATE'),
                 ('jpeg_fast', 0, 'INTEGER_FAST'),
                 ('jpeg_gray', 1, 'INTEGER_ACCURATE'),
                 ('jpeg_rgb', 3, 'INTEGER_ACCURATE')]
# (output, key, dtype, shape or None for 1-D, default_value or None)
FEATURES = [('floats', 'floats', 'float32', [3], None),
            ('weights', 'weights', 'float32', None, None),
            ('ints', 'ints', 'int64', [2], None),
            ('label', 'label', 'int64', [], None),
            ('name', 'name', 'uint8', None, None),
            ('missing', 'missing', 'float32', [2], [0.5])]


def expectations(tf, np, record: bytes) -> dict:
    """TensorFlow's decoding of one serialized Example."""
    spec = {
        'png': tf.io.FixedLenFeature([], tf.string),
        'jpeg': tf.io.FixedLenFeature([], tf.string),
        'floats': tf.io.FixedLenFeature([3], tf.float32),
        'weights': tf.io.VarLenFeature(tf.float32),
        'ints': tf.io.FixedLenFeature([2], tf.int64),
        'label': tf.io.FixedLenFeature([], tf.int64),
        'name': tf.io.VarLenFeature(tf.string),
        'missing': tf.io.FixedLenFeature([2], tf.float32,
                                         default_value=[0.5, 0.5]),
    }
    parsed = tf.io.parse_single_example(record, spec)
    out = {}
    for name, channels, dtype in PNG_VARIANTS:
        out[name] = tf.io.decode_png(parsed['png'], channels=channels,
                                     dtype=getattr(tf, dtype)).numpy()
    for name, channels, method in JPEG_VARIANTS:
        # TensorFlow's "" is INTEGER_FAST; asking by name is the same.
        out[name] = tf.io.decode_jpeg(parsed['jpeg'], channels=channels,
                                      dct_method=method).numpy()
    out['floats'] = parsed['floats'].numpy()
    out['weights'] = tf.sparse.to_dense(parsed['weights']).numpy()
    out['ints'] = parsed['ints'].numpy()
    out['label'] = parsed['label'].numpy()
    out['name'] = np.frombuffer(parsed['name'].values[0].numpy(), np.uint8)
    out['missing'] = parsed['missing'].numpy()
    return out


def generate(out: Path) -> None:
    """The fixtures, the records TFRecordDataset yields from each file, and
    TensorFlow's decoding of each record."""
    import numpy as np
    import tensorflow as tf

    files = write_fixtures(out)
    manifest = {'files': {}}
    for name, compression in files.items():
        dataset = tf.data.TFRecordDataset(str(out / name),
                                          compression_type=compression)
        paths = []
        for i, record in enumerate(dataset):
            raw = record.numpy()
            stem = str(out / f'{name}.{i}')
            Path(stem + '.bin').write_bytes(raw)
            np.savez(stem + '.npz', **expectations(tf, np, raw))
            paths.append(stem)
        manifest['files'][name] = {'compression': compression,
                                   'records': paths}
    (out / 'manifest.json').write_text(json.dumps(manifest))


# ---- Weft through ctypes: runs in the venv, for NumPy -----------------------


def load_weft(path):
    """libweft by ctypes, with the prototypes both children call; returns
    (lib, Output, check)."""
    import ctypes as C

    lib = C.CDLL(path)
    p = C.c_void_p

    class Output(C.Structure):
        _fields_ = [('node', p), ('index', C.c_int32)]

    for fn, res, args in [
            ('weft_status_code', C.c_int, [p]),
            ('weft_status_message', C.c_char_p, [p]),
            ('weft_status_destroy', None, [p]),
            ('weft_graph_create', p, [C.POINTER(p)]),
            ('weft_graph_destroy', None, [p]),
            ('weft_graph_placeholder', p, [p, C.c_char_p, C.c_int,
                                           C.POINTER(C.c_int64), C.c_int32,
                                           C.POINTER(Output)]),
            ('weft_op_begin', p, [p, C.c_char_p, C.c_char_p]),
            ('weft_op_add_input', None, [p, Output]),
            ('weft_op_set_attr_int', None, [p, C.c_char_p, C.c_int64]),
            ('weft_op_set_attr_dtype', None, [p, C.c_char_p, C.c_int]),
            ('weft_op_set_attr_string', None, [p, C.c_char_p, C.c_char_p]),
            ('weft_op_set_attr_int_list', None, [p, C.c_char_p,
                                                 C.POINTER(C.c_int64),
                                                 C.c_int32]),
            ('weft_op_set_attr_float_list', None, [p, C.c_char_p,
                                                   C.POINTER(C.c_double),
                                                   C.c_int32]),
            ('weft_op_finish', p, [p, C.POINTER(p)]),
            ('weft_session_create', p, [p, p, C.POINTER(p)]),
            ('weft_session_destroy', None, [p]),
            ('weft_session_run', p, [p, C.POINTER(Output), C.POINTER(p),
                                     C.c_int32, C.POINTER(Output), C.c_int32,
                                     p, C.c_int32, C.POINTER(p)]),
            ('weft_tensor_create_copy', p, [C.c_int, C.POINTER(C.c_int64),
                                            C.c_int32, p, C.c_size_t,
                                            C.POINTER(p)]),
            ('weft_tensor_destroy', None, [p]),
            ('weft_tensor_dtype', C.c_int, [p]),
            ('weft_tensor_rank', C.c_int32, [p]),
            ('weft_tensor_dim', C.c_int64, [p, C.c_int32]),
            ('weft_tensor_byte_size', C.c_size_t, [p]),
            ('weft_tensor_data', p, [p]),
            ('weft_dataset_tfrecord', p, [C.POINTER(C.c_char_p), C.c_int32,
                                          C.c_char_p, C.POINTER(p)]),
            ('weft_dataset_destroy', None, [p]),
            ('weft_dataset_iterator', p, [p, C.c_char_p, p,
                                          C.POINTER(Output), C.POINTER(p)]),
            ('weft_tfrecord_write', p, [C.c_char_p, C.c_char_p,
                                        C.POINTER(p), C.c_int32])]:
        getattr(lib, fn).restype = res
        getattr(lib, fn).argtypes = args

    def check(status):
        if status:
            message = lib.weft_status_message(status).decode(errors='replace')
            lib.weft_status_destroy(status)
            raise RuntimeError(message)

    return lib, Output, check


def weft_child(spec_path: str) -> None:
    """Decodes each record of the spec with one Weft graph, printing a JSON
    line per record as soon as it is done."""
    import ctypes as C

    import numpy as np

    spec = json.loads(Path(spec_path).read_text())
    lib, Output, check = load_weft(spec['lib'])
    p = C.c_void_p
    dtypes = {'float32': 1, 'int64': 4, 'uint8': 5, 'uint16': 11}
    numpy_of = {1: np.float32, 4: np.int64, 5: np.uint8, 11: np.uint16}

    graph = p()
    check(lib.weft_graph_create(C.byref(graph)))
    serialized = Output()
    check(lib.weft_graph_placeholder(graph, b'serialized', dtypes['uint8'],
                                     (C.c_int64 * 1)(-1), 1,
                                     C.byref(serialized)))
    outputs = {}

    def op(op_type, name, source, **attrs):
        b = lib.weft_op_begin(graph, op_type.encode(), name.encode())
        lib.weft_op_add_input(b, source)
        for key, value in attrs.items():
            if isinstance(value, str):
                lib.weft_op_set_attr_string(b, key.encode(), value.encode())
            elif isinstance(value, tuple):  # a dtype
                lib.weft_op_set_attr_dtype(b, key.encode(), value[0])
            elif isinstance(value, list) and key == 'shape':
                lib.weft_op_set_attr_int_list(
                    b, key.encode(), (C.c_int64 * max(len(value), 1))(*value),
                    len(value))
            elif isinstance(value, list):
                lib.weft_op_set_attr_float_list(
                    b, key.encode(), (C.c_double * len(value))(*value),
                    len(value))
            else:
                lib.weft_op_set_attr_int(b, key.encode(), value)
        node = p()
        check(lib.weft_op_finish(b, C.byref(node)))
        return Output(node, 0)

    png = op('ParseExampleFeature', 'png_bytes', serialized, key='png',
             T=(dtypes['uint8'],))
    jpeg = op('ParseExampleFeature', 'jpeg_bytes', serialized, key='jpeg',
              T=(dtypes['uint8'],))
    for name, channels, dtype in PNG_VARIANTS:
        outputs[name] = op('DecodePng', name, png, channels=channels,
                           dtype=(dtypes[dtype],))
    for name, channels, method in JPEG_VARIANTS:
        outputs[name] = op('DecodeJpeg', name, jpeg, channels=channels,
                           dct_method=method)
    for name, key, dtype, shape, default in FEATURES:
        attrs = {'key': key, 'T': (dtypes[dtype],)}
        if shape is not None:
            attrs['shape'] = shape
        if default is not None:
            attrs['default_value'] = default
        outputs[name] = op('ParseExampleFeature', name, serialized, **attrs)

    session = p()
    check(lib.weft_session_create(graph, None, C.byref(session)))
    names = list(outputs)
    fetches = (Output * len(names))(*[outputs[n] for n in names])
    for item in spec['items']:
        raw = Path(item + '.bin').read_bytes()
        want = np.load(item + '.npz')
        buffer = np.frombuffer(raw, np.uint8).copy()
        value = p()
        check(lib.weft_tensor_create_copy(
            dtypes['uint8'], (C.c_int64 * 1)(len(raw)), 1,
            buffer.ctypes.data if len(raw) else None, len(raw),
            C.byref(value)))
        results = (p * len(names))()
        result = {'record': item, 'mismatches': {}}
        status = lib.weft_session_run(
            session, C.byref(serialized), C.byref(value), 1, fetches,
            len(names), None, 0, results)
        if status:
            result['error'] = lib.weft_status_message(status).decode(
                errors='replace')
            lib.weft_status_destroy(status)
        else:
            for i, name in enumerate(names):
                t = results[i]
                shape = tuple(lib.weft_tensor_dim(t, a)
                              for a in range(lib.weft_tensor_rank(t)))
                dtype = numpy_of[lib.weft_tensor_dtype(t)]
                got = np.frombuffer(C.string_at(
                    lib.weft_tensor_data(t), lib.weft_tensor_byte_size(t)),
                    dtype=dtype).reshape(shape)
                lib.weft_tensor_destroy(t)
                expected = want[name]
                if got.dtype != expected.dtype or got.shape != expected.shape:
                    result['mismatches'][name] = (
                        f'{got.dtype}{list(got.shape)} vs '
                        f'{expected.dtype}{list(expected.shape)}')
                elif not np.array_equal(got, expected, equal_nan=True):
                    diff = np.abs(got.astype(np.float64) -
                                  expected.astype(np.float64))
                    result['mismatches'][name] = (
                        f'{int(np.count_nonzero(diff))} of {diff.size} '
                        f'differ, by up to {float(diff.max())}')
        lib.weft_tensor_destroy(value)
        print(json.dumps(result), flush=True)
    lib.weft_session_destroy(session)
    lib.weft_graph_destroy(graph)


def weft_records_child(spec_path: str) -> None:
    """Reads each fixture file through a Weft TFRecord dataset and writes
    the records again with weft_tfrecord_write; prints one JSON line per
    file."""
    import ctypes as C

    spec = json.loads(Path(spec_path).read_text())
    lib, Output, check = load_weft(spec['lib'])
    p = C.c_void_p

    for name, entry in spec['files'].items():
        want = [Path(r + '.bin').read_bytes() for r in entry['records']]
        paths = (C.c_char_p * 1)(str(Path(spec['dir']) / name).encode())
        ds, graph, session = p(), p(), p()
        check(lib.weft_dataset_tfrecord(paths, 1,
                                        entry['compression'].encode(),
                                        C.byref(ds)))
        check(lib.weft_graph_create(C.byref(graph)))
        out = Output()
        check(lib.weft_dataset_iterator(graph, b'records', ds, C.byref(out),
                                        None))
        check(lib.weft_session_create(graph, None, C.byref(session)))
        got, tensors, end = [], [], ''
        while True:
            t = p()
            st = lib.weft_session_run(session, None, None, 0, C.byref(out), 1,
                                      None, 0, C.byref(t))
            if st:
                code = lib.weft_status_code(st)
                end = lib.weft_status_message(st).decode(errors='replace')
                lib.weft_status_destroy(st)
                if code != 11:  # OUT_OF_RANGE ends the data
                    raise RuntimeError(end)
                break
            n = lib.weft_tensor_byte_size(t)
            got.append(C.string_at(lib.weft_tensor_data(t), n) if n else b'')
            tensors.append(t)
        written = str(Path(spec['out']) / (name + '.weft'))
        check(lib.weft_tfrecord_write(written.encode(),
                                      entry['compression'].encode(),
                                      (p * len(tensors))(*tensors),
                                      len(tensors)))
        for t in tensors:
            lib.weft_tensor_destroy(t)
        lib.weft_session_destroy(session)
        lib.weft_graph_destroy(graph)
        lib.weft_dataset_destroy(ds)
        print(json.dumps({'file': name, 'same': got == want,
                          'count': len(got), 'end': end,
                          'written': written}), flush=True)


def tf_reads_weft_files(spec_path: str) -> None:
    """TensorFlow reads the files Weft wrote; prints whether each holds the
    fixture's records."""
    import tensorflow as tf

    spec = json.loads(Path(spec_path).read_text())
    for name, entry in spec['files'].items():
        want = [Path(r + '.bin').read_bytes() for r in entry['records']]
        written = str(Path(spec['out']) / (name + '.weft'))
        got = [r.numpy() for r in tf.data.TFRecordDataset(
            written, compression_type=entry['compression'])]
        print(json.dumps({'file': name, 'same': got == want}), flush=True)


# ---- The test: runs under meson's python --------------------------------------

if __name__ == '__main__' and len(sys.argv) == 3 and sys.argv[1] == '--generate':
    generate(Path(sys.argv[2]))
    sys.exit(0)
if __name__ == '__main__' and len(sys.argv) == 3 and sys.argv[1] == '--weft':
    weft_child(sys.argv[2])
    sys.exit(0)
if __name__ == '__main__' and len(sys.argv) == 3 and sys.argv[1] == '--weft-records':
    weft_records_child(sys.argv[2])
    sys.exit(0)
if __name__ == '__main__' and len(sys.argv) == 3 and sys.argv[1] == '--tf-read':
    tf_reads_weft_files(sys.argv[2])
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_venv import ensure_venv, venv_python  # noqa: E402
from tap import Skip, Tap  # noqa: E402

BUILD_DIR = Path(sys.argv[1]).resolve()
LIBWEFT = str(Path(sys.argv[2]).resolve())
VENV = BUILD_DIR / 'interop-venv'
PYTHON = venv_python(VENV)
THIS = os.path.abspath(__file__)
WORK = Path(tempfile.mkdtemp(prefix='weft-records-'))
state = {}


def need_fixtures():
    if 'skip' in state:
        raise Skip(state['skip'])


def run_weft(items):
    """Decodes the records in children; a crash is that record's result
    ({'crash': returncode}) and the rest go on in a new child."""
    results = []
    pending = list(items)
    while pending:
        spec = WORK / 'spec.json'
        spec.write_text(json.dumps({'lib': LIBWEFT, 'items': pending}))
        r = subprocess.run([str(PYTHON), THIS, '--weft', str(spec)],
                           capture_output=True, text=True, timeout=600)
        lines = [json.loads(line) for line in r.stdout.splitlines()
                 if line.startswith('{')]
        results += lines
        pending = pending[len(lines):]
        if r.returncode != 0 and pending:
            if 'ASan runtime' in r.stderr or 'cannot open shared' in r.stderr:
                raise Skip('libweft cannot be loaded into Python here: ' +
                           r.stderr.strip().splitlines()[-1][-200:])
            results.append({'record': pending[0], 'crash': r.returncode,
                            'stderr': r.stderr[-2000:]})
            pending = pending[1:]
    return results


def check_file(name):
    need_fixtures()
    records = state['manifest']['files'][name]['records']
    assert len(records) == NUM_EXAMPLES, records
    bad = [r for r in run_weft(records)
           if 'crash' in r or 'error' in r or r['mismatches']]
    assert not bad, json.dumps(bad, indent=1)[:6000]


tap = Tap()


@tap.case
def venv_has_tensorflow():
    why = ensure_venv(VENV, ['tensorflow-cpu'], 'import tensorflow, numpy',
                      timeout=1500)
    if why:
        state['skip'] = why
        raise Skip(why)


@tap.case
def tensorflow_writes_the_record_files():
    need_fixtures()
    r = subprocess.run([str(PYTHON), THIS, '--generate', str(WORK)],
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
                                CUDA_VISIBLE_DEVICES=''))
    if r.returncode != 0:
        state['skip'] = 'the generator failed (see the first failed case)'
        raise AssertionError(r.stderr[-3000:])
    state['manifest'] = json.loads((WORK / 'manifest.json').read_text())
    # The three files yield the same records.
    files = state['manifest']['files']
    contents = {name: [Path(r + '.bin').read_bytes() for r in f['records']]
                for name, f in files.items()}
    first = next(iter(contents.values()))
    assert all(c == first for c in contents.values())


@tap.case
def uncompressed_records_decode_as_in_tensorflow():
    check_file('examples.tfrecord')


@tap.case
def gzip_records_decode_as_in_tensorflow():
    check_file('examples.gzip.tfrecord')


@tap.case
def zlib_records_decode_as_in_tensorflow():
    check_file('examples.zlib.tfrecord')


def records_spec():
    need_fixtures()
    spec = WORK / 'records.json'
    out = WORK / 'weft-written'
    out.mkdir(exist_ok=True)
    spec.write_text(json.dumps({'lib': LIBWEFT, 'dir': str(WORK),
                                'out': str(out),
                                'files': state['manifest']['files']}))
    return spec


def child_lines(mode, spec):
    r = subprocess.run([str(PYTHON), THIS, mode, str(spec)],
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
                                CUDA_VISIBLE_DEVICES=''))
    assert r.returncode == 0, r.stderr[-3000:]
    return [json.loads(line) for line in r.stdout.splitlines()
            if line.startswith('{')]


@tap.case
def weft_dataset_reads_tensorflows_files_and_writes_them_again():
    lines = child_lines('--weft-records', records_spec())
    assert len(lines) == 3, lines
    for line in lines:
        assert line['same'] and line['count'] == NUM_EXAMPLES, line
        assert 'end of dataset' in line['end'], line
    state['written'] = True


@tap.case
def tensorflow_reads_the_files_weft_wrote():
    need_fixtures()
    if not state.get('written'):
        raise AssertionError('Weft wrote no files (see the case before)')
    lines = child_lines('--tf-read', WORK / 'records.json')
    assert len(lines) == 3 and all(line['same'] for line in lines), lines


code = tap.finish()
shutil.rmtree(WORK, ignore_errors=True)
sys.exit(code)
