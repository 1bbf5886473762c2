#!/usr/bin/env python3
"""The `weft` tool's command line as scripts use it: unknown options are
usage errors (exit status 2) in every command, and `weft devices --json`
prints one JSON document that Python's json module reads.  `weft inspect`,
`weft run` and `weft place` on a model bundle that tests/make_model.c
saves, with .npy files written and read here by hand (no NumPy needed) and
outputs checked against softmax computed here.

Usage: test_cli.py WEFT_TOOL [MAKE_MODEL] [OPS_PLUGIN] [--tools=DIR]
(WEFT_PLUGIN_PATH names the built plugins; OPS_PLUGIN is the SDK's op
template, weft-acme-gelu.so; MAKE_MODEL is tests/make_model; DIR is the
tool's source, whose flag literals the help must list)
"""

import ast
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile

import chrome_trace_check
from tap import Skip, Tap

WEFT = sys.argv[1]
OPS_PLUGIN = next((a for a in sys.argv[2:] if a.endswith('.so')), None)
TOOLS_DIR = next((a[len('--tools='):] for a in sys.argv[2:]
                  if a.startswith('--tools=')), None)
MAKE_MODEL = next((a for a in sys.argv[2:]
                   if not a.endswith('.so') and not a.startswith('--')), None)
tap = Tap()


def weft(*args):
    return subprocess.run([WEFT, *args], capture_output=True, text=True,
                          timeout=120)


@tap.case
def unknown_options_are_usage_errors():
    for command in (['version'], ['devices'], ['ops'], ['ops', 'Add'],
                    ['place'], ['train', 'fashion-mnist'], ['inspect'],
                    ['run']):
        run = weft(*command, '--no-such-option')
        assert run.returncode == 2, (command, run.returncode, run.stderr)
        assert "'--no-such-option'" in run.stderr, (command, run.stderr)
    # Not taken for a plugin file to load.
    run = weft('devices', '--jsn')
    assert run.returncode == 2, run
    assert 'no such file' not in run.stdout + run.stderr, run
    assert 'usage: weft devices' in run.stderr, run.stderr


@tap.case
def ops_says_where_each_op_comes_from():
    if OPS_PLUGIN is None:
        raise Skip('no op template plugin given')
    run = weft('ops', OPS_PLUGIN, 'Acme>Gelu', 'MatMul')
    assert run.returncode == 0, run
    gelu, matmul = run.stdout.split('\nMatMul(')
    assert gelu.startswith('Acme>Gelu(x: T) -> y: T\n'), gelu
    assert '    defined by: plugin weft-acme-gelu\n' in gelu, gelu
    assert 'attributes: T: {float32, float64}' in gelu, gelu
    assert 'kernel: CPU (weft-acme-gelu), T: float32, float64' in gelu, gelu
    assert 'defined by' not in matmul, matmul
    # Without the plugin the op does not exist.
    run = weft('ops', 'Acme>Gelu')
    assert run.returncode == 1, run
    assert "no op named 'Acme>Gelu'" in run.stderr, run.stderr
    # A plugin file that is not there is an error naming it.
    run = weft('ops', '/nonexistent/acme.so')
    assert run.returncode == 1 and '/nonexistent/acme.so' in run.stderr, run


@tap.case
def help_is_still_help():
    for command in ('version', 'devices', 'ops', 'place', 'train', 'inspect',
                    'run'):
        run = weft(command, '--help')
        assert run.returncode == 0, (command, run)
        assert run.stdout.startswith(f'usage: weft {command}'), run.stdout


# ---- help ----------------------------------------------------------------

# Where each command's parser lives: a file, or (file, function) where one
# file parses for several commands.  tools/model_open.c's options are taken
# by every command that reads a model file.
COMMAND_SOURCES = {
    'version': [('weft.c', 'command_version')],
    'devices': [('weft.c', 'command_devices')],
    'ops': [('weft.c', 'command_ops')],
    'export': ['export.c', 'model_open.c'],
    'inspect': ['inspect.c', 'model_open.c'],
    'run': ['run.c', 'model_open.c'],
    'place': ['place.c', 'model_open.c'],
    'train': ['train.c'],
    'tfrecord': [('train_input.c', 'weft_command_tfrecord')],
    'conformance': ['conformance.c'],
}
# model_open.c's --signature, which `weft inspect` refuses (it shows every
# signature), so its help does not offer it.
REFUSED = {'inspect': {'--signature'}}


def parser_flags(command):
    """The "--flag" literals the command's parser compares arguments with."""
    flags = set()
    for source in COMMAND_SOURCES[command]:
        name, function = source if isinstance(source, tuple) else (source,
                                                                   None)
        with open(os.path.join(TOOLS_DIR, name)) as f:
            text = f.read()
        if function is not None:
            start = re.search(r'\bint ' + function + r'\([^)]*\) \{', text)
            assert start, (name, function)
            text = text[start.start():text.index('\n}\n', start.start())]
        flags |= set(re.findall(r'str(?:n)?cmp\([^;]*?"(--[a-z][a-z0-9-]*)"',
                                text))
    return flags - REFUSED.get(command, set())


def help_options(text):
    """{flag: its description and default} from a command's help."""
    options, current = {}, None
    section = text.split('\noptions:\n', 1)[1]
    for line in section.splitlines():
        match = re.match(r'  (?:-h, )?(--[a-z][a-z0-9-]*)', line)
        if match:
            current = match.group(1)
            options[current] = ''
        elif line.startswith('      ') and current is not None:
            options[current] += ' ' + line.strip()
        else:
            current = None
    return options


@tap.case
def help_lists_every_flag_with_its_default():
    listing = weft('help')
    assert listing.returncode == 0, listing
    listed = re.findall(r'^  ([a-z]+) ', listing.stdout.split('commands:')[1],
                        re.M)
    assert set(COMMAND_SOURCES) <= set(listed), listed
    for command in COMMAND_SOURCES:
        by_help, by_flag = weft('help', command), weft(command, '--help')
        assert by_help.returncode == 0 and by_flag.returncode == 0, (
            command, by_help, by_flag)
        assert by_help.stdout == by_flag.stdout, (command, by_help.stdout,
                                                  by_flag.stdout)
        text = by_help.stdout
        assert text.startswith(f'usage: weft {command}'), text
        assert '\noptions:\n' in text, text
        options = help_options(text)
        assert '--help' in options, (command, options)
        for flag, description in options.items():
            said = re.search(r'\((default: [^)]|no default\))', description)
            assert said, (command, flag, description)
            assert len(description[:said.start()].strip()) > 3, (
                command, flag, description)
        if TOOLS_DIR is None:
            continue
        missing = parser_flags(command) - set(options)
        assert not missing, (command, sorted(missing))
    # What the brief asked for by name: the flags of this season's train.
    options = help_options(weft('help', 'train').stdout)
    for flag in ('--logdir', '--validation', '--checkpoint-every', '--keep',
                 '--steps', '--trace'):
        assert flag in options, (flag, options)
    assert '(default: 0)' in options['--validation'], options
    for args in (['help', 'nope'], ['help', 'train', 'run']):
        run = weft(*args)
        assert run.returncode == 2, (args, run)
        assert 'usage: weft' in run.stderr, run.stderr
    if TOOLS_DIR is None:
        raise Skip('the tool source directory was not given')


@tap.case
def version_flag_is_the_version_command():
    flag, command = weft('--version'), weft('version')
    assert flag.returncode == 0 and command.returncode == 0, (flag, command)
    assert flag.stdout == command.stdout, (flag.stdout, command.stdout)
    assert flag.stdout.startswith('weft '), flag.stdout


@tap.case
def devices_json_lists_plugins_and_devices():
    run = weft('devices', '--json')
    assert run.returncode == 0, run
    document = json.loads(run.stdout)
    expected_path = [d for d in os.environ.get('WEFT_PLUGIN_PATH',
                                               '').split(':') if d]
    assert document['search_path'] == expected_path, document['search_path']
    names = [device['name'] for device in document['devices']]
    assert '/device:CPU:0' in names, names
    cpu = document['devices'][names.index('/device:CPU:0')]
    assert cpu['type'] == 'CPU' and cpu['index'] == 0, cpu
    assert cpu['host_memory'] is True, cpu
    assert isinstance(cpu['memory_bytes'], (int, float)), cpu
    plugins = {plugin['name']: plugin for plugin in document['plugins']}
    assert cpu['plugin'] in plugins, (cpu, plugins)
    assert plugins[cpu['plugin']]['path'].endswith('.so'), plugins
    assert plugins[cpu['plugin']]['device_count'] >= 1, plugins
    assert isinstance(document['refused'], list), document


@tap.case
def devices_json_escapes_what_it_prints():
    # A plugin file whose name needs escaping, and that is refused: the
    # refusal (path and reason) must come back intact through json.loads.
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, 'odd "name"\\ \t.so')
        with open(path, 'w') as plugin:
            plugin.write('not a shared object\n')
        run = weft('devices', '--json', path)
        assert run.returncode == 1, run  # the explicit load failed
        document = json.loads(run.stdout)
        refused = [r for r in document['refused'] if r['path'] == path]
        assert len(refused) == 1, document['refused']
        assert refused[0]['reason'], refused


@tap.case
def ops_json_lists_ops_and_their_kernels():
    run = weft('ops', '--json')
    assert run.returncode == 0, run
    ops = {op['name']: op for op in json.loads(run.stdout)['ops']}
    text = weft('ops')
    assert text.stdout.startswith(f'{len(ops)} ops\n'), text.stdout[:40]
    matmul = ops['MatMul']
    assert matmul['inputs'] == 'a, b' and matmul['outputs'] == 'output'
    assert 'transpose_a: bool = false' in matmul['attributes'], matmul
    assert matmul['summary'] and matmul['origin'] == 'runtime', matmul
    assert matmul['stateful'] is False, matmul
    assert matmul['runs_in_runtime'] is False, matmul
    cpu = [k for k in matmul['kernels'] if k['device_type'] == 'CPU']
    assert cpu and cpu[0]['plugin'] == 'weft-cpu', matmul['kernels']
    assert 'float32' in cpu[0]['dtypes']['T'], cpu
    # Cast constrains two attributes; Const needs no kernel.
    cast = [k for k in ops['Cast']['kernels'] if k['device_type'] == 'CPU']
    assert set(cast[0]['dtypes']) == {'SrcT', 'DstT'}, cast
    assert ops['Const']['runs_in_runtime'] is True, ops['Const']
    assert any(op['stateful'] for op in ops.values()), 'no stateful op'
    # Named ops only, and an unknown one is an error but still JSON.
    run = weft('ops', '--json', 'MatMul', 'NoSuchOp')
    assert run.returncode == 1 and 'NoSuchOp' in run.stderr, run
    assert [op['name'] for op in json.loads(run.stdout)['ops']] == [
        'MatMul'], run.stdout


@tap.case
def place_json_is_the_run_metadata():
    run = weft('place', '--json', '--train', '--devices', 'CPU',
               '--hidden', '16')
    assert run.returncode == 0, run
    document = json.loads(run.stdout)
    assert 'training step' in document['model'], document['model']
    nodes = {node['name']: node for node in document['nodes']}
    assert nodes and all(n['device'] == '/device:CPU:0'
                         for n in nodes.values()), nodes
    assert nodes['layer1/matmul']['op'] == 'MatMul', nodes['layer1/matmul']
    assert all(n['reason'] for n in nodes.values()), nodes
    assert all(n['frame'] == '' for n in nodes.values()), nodes
    assert {'update': 'train/update_w1', 'variable': 'w1'} in \
        document['in_place'], document['in_place']
    assert document['devices'][0]['name'] == '/device:CPU:0', document
    assert document['devices'][0]['peak_bytes'] > 0, document['devices']
    assert document['intra_op_threads'] >= 1, document
    for key in ('transfers', 'merged', 'fused', 'recomputed', 'frames'):
        assert isinstance(document[key], list), (key, document)
    # The text says the same placement.
    text = weft('place', '--train', '--devices', 'CPU', '--hidden', '16')
    assert f"placement ({len(nodes)} nodes)" in text.stdout, text.stdout


@tap.case
def a_device_type_without_devices_says_why():
    run = weft('place', '--devices', 'FPGA')
    assert run.returncode == 1, run
    assert "no device matches 'FPGA'" in run.stderr, run.stderr
    assert "no plugin loaded provides device type 'FPGA'" in run.stderr, run


@tap.case
def a_second_copy_of_a_plugin_is_shadowed_not_refused():
    # The build tree's weft-cpu.so first on the path, a copy (as an
    # installed one would be) after it.
    first = next((d for d in os.environ.get('WEFT_PLUGIN_PATH', '').split(':')
                  if os.path.exists(os.path.join(d, 'weft-cpu.so'))), None)
    if first is None:
        raise Skip('no weft-cpu.so on WEFT_PLUGIN_PATH')
    with tempfile.TemporaryDirectory() as directory:
        copy = os.path.join(directory, 'weft-cpu.so')
        with open(os.path.join(first, 'weft-cpu.so'), 'rb') as f, \
                open(copy, 'wb') as g:
            g.write(f.read())
        env = dict(os.environ, WEFT_PLUGIN_PATH=f'{first}:{directory}')
        run = subprocess.run([WEFT, 'devices', '--json'], env=env,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run
        document = json.loads(run.stdout)
        assert [r for r in document['refused'] if r['path'] == copy] == [], \
            document['refused']
        loaded = os.path.realpath(os.path.join(first, 'weft-cpu.so'))
        assert {'path': copy, 'shadowed_by': loaded} in \
            document['shadowed'], document['shadowed']
        run = subprocess.run([WEFT, 'devices'], env=env, capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, run
        shadowed = run.stdout.split('shadowed (1):\n', 1)[1]
        assert shadowed.startswith(f'  {copy}\n    by the same plugin '
                                   f'loaded first from {loaded}\n'), shadowed
        assert 'refused' not in run.stdout, run.stdout
    # Without a copy there is nothing shadowed.
    assert json.loads(weft('devices', '--json').stdout)['shadowed'] == []


# ---- model files and .npy ------------------------------------------------

def npy_bytes(descr, shape, payload, version=1, fortran=False,
              header=None):
    """A .npy file as NumPy writes it (format 1.0, 2.0 or 3.0); `header`
    replaces the dict literal when given."""
    if header is None:
        header = (f"{{'descr': '{descr}', 'fortran_order': {fortran}, "
                  f"'shape': {tuple(shape)!r}, }}")
    preamble = 10 if version == 1 else 12
    length = len(header) + 1
    length += -(preamble + length) % 64
    text = header.encode() + b' ' * (length - len(header) - 1) + b'\n'
    size = struct.pack('<H' if version == 1 else '<I', length)
    return b'\x93NUMPY' + bytes([version, 0]) + size + text + payload


def read_npy(path):
    """(descr, shape, raw data) of a .npy file, parsed independently of the
    tool: Python's own literal parser reads the header."""
    with open(path, 'rb') as f:
        data = f.read()
    assert data[:6] == b'\x93NUMPY', data[:16]
    if data[6] == 1:
        (length,), start = struct.unpack('<H', data[8:10]), 10
    else:
        (length,), start = struct.unpack('<I', data[8:12]), 12
    assert (start + length) % 64 == 0, (start, length)  # aligned data
    header = ast.literal_eval(data[start:start + length].decode('latin1'))
    assert set(header) == {'descr', 'fortran_order', 'shape'}, header
    assert header['fortran_order'] is False, header
    return header['descr'], header['shape'], data[start + length:]


# make_model.c's weights, from the same formulas.
W = [[0.1 * (3 * i + j + 1) - 0.6 for j in range(3)] for i in range(4)]
B = [0.1, -0.2, 0.3]


def logits(x):
    return [[sum(row[i] * W[i][j] for i in range(4)) + B[j]
             for j in range(3)] for row in x]


def softmax(rows):
    out = []
    for row in rows:
        top = max(row)
        e = [math.exp(v - top) for v in row]
        out.append([v / sum(e) for v in e])
    return out


X = [[0.5, -1.0, 2.0, 0.25], [-0.75, 0.125, 1.5, -2.0]]


def x_npy(rows=X, **kwargs):
    flat = [v for row in rows for v in row]
    return npy_bytes('<f4', (len(rows), 4), struct.pack(f'<{len(flat)}f',
                                                        *flat), **kwargs)


_bundle = None


def bundle():
    """A model bundle made once, in a directory removed at exit."""
    global _bundle
    if MAKE_MODEL is None:
        raise Skip('tests/make_model not given')
    if _bundle is None:
        directory = tempfile.TemporaryDirectory()
        path = os.path.join(directory.name, 'classifier')
        made = subprocess.run([MAKE_MODEL, path], capture_output=True,
                              text=True, timeout=120)
        assert made.returncode == 0, made
        _bundle = (directory, path)
    return _bundle[1]


def close(a, b, tolerance=1e-5):
    return all(abs(p - q) <= tolerance for p, q in zip(a, b, strict=True))


@tap.case
def inspect_lists_signatures_ops_and_parameters():
    model = bundle()
    run = weft('inspect', model)
    assert run.returncode == 0, run
    out = run.stdout
    assert 'format: weft bundle\n' in out, out
    assert "signature 'serving_default':" in out, out
    assert "signature 'logits':" in out, out
    lines = [line.split() for line in out.splitlines()]
    assert ['x', 'x:0', 'float32', '[-1,', '4]'] in lines, out
    assert ['y', 'probabilities:0', 'float32', '[-1,', '3]'] in lines, out
    assert ['logits', 'logits:0', 'float32', '[-1,', '3]'] in lines, out
    assert ['MatMul', '1'] in lines and ['Softmax', '1'] in lines, out
    # W is 4x3 (a Variable); b (3) is a Const; W's initial value is a
    # Const too, counted apart.
    assert '  variables: 12 elements in 1 Variable node\n' in out, out
    assert '  constants: 3 elements in 1 Const node ' in out, out
    run = weft('inspect', '--json', model)
    assert run.returncode == 0, run
    document = json.loads(run.stdout)
    assert document['format'] == 'weft bundle', document
    names = [s['name'] for s in document['signatures']]
    assert names == ['serving_default', 'logits'], names
    serving = document['signatures'][0]
    assert serving['inputs'] == [{'key': 'x', 'output': 'x:0',
                                  'dtype': 'float32', 'shape': [-1, 4]}]
    assert serving['outputs'][0]['key'] == 'y', serving
    assert document['parameters']['variables'] == 12, document
    assert document['parameters']['constants'] == 3, document
    assert document['nodes'] == sum(document['ops'].values()), document


@tap.case
def run_prints_what_python_computes():
    model = bundle()
    with tempfile.TemporaryDirectory() as directory:
        x = os.path.join(directory, 'x.npy')
        with open(x, 'wb') as f:
            f.write(x_npy())
        run = weft('run', model, '--feed', f'x={x}')
        assert run.returncode == 0, run
        head, values = run.stdout.split('\n', 1)
        assert head == 'y: float32 [2, 3]', run.stdout
        printed = [float(v) for v in values.split()]
        expected = [v for row in softmax(logits(X)) for v in row]
        assert close(printed, expected), (printed, expected)
        # Another signature, by name.
        run = weft('run', model, '--signature', 'logits', '--feed', f'x={x}')
        assert run.returncode == 0, run
        printed = [float(v) for v in run.stdout.split('\n', 1)[1].split()]
        expected = [v for row in logits(X) for v in row]
        assert close(printed, expected), (printed, expected)


@tap.case
def run_writes_npy_that_reads_back():
    model = bundle()
    with tempfile.TemporaryDirectory() as directory:
        out = os.path.join(directory, 'y.npy')
        # Format 2.0 and 3.0 files and Fortran order are read as well.
        cases = {
            'v1.npy': x_npy(),
            'v2.npy': x_npy(version=2),
            'v3.npy': x_npy(version=3),
            'fortran.npy': npy_bytes(
                '<f4', (2, 4), struct.pack(
                    '<8f', *[X[r][c] for c in range(4) for r in range(2)]),
                fortran=True),
        }
        expected = [v for row in softmax(logits(X)) for v in row]
        for name, data in cases.items():
            x = os.path.join(directory, name)
            with open(x, 'wb') as f:
                f.write(data)
            run = weft('run', model, '--feed', f'x={x}', '--fetch',
                       f'y={out}')
            assert run.returncode == 0, (name, run)
            assert run.stdout == f'y: float32 [2, 3] -> {out}\n', run.stdout
            descr, shape, raw = read_npy(out)
            assert descr == '<f4' and shape == (2, 3), (descr, shape)
            assert len(raw) == 6 * 4, len(raw)
            got = list(struct.unpack('<6f', raw))
            assert close(got, expected), (name, got, expected)
        # A batch of one row, fetched by key, written and fed back in.
        x = os.path.join(directory, 'one.npy')
        with open(x, 'wb') as f:
            f.write(x_npy([X[1]]))
        run = weft('run', model, '--signature', 'logits', '--feed', f'x={x}',
                   '--fetch', f'logits={out}')
        assert run.returncode == 0, run
        descr, shape, raw = read_npy(out)
        assert descr == '<f4' and shape == (1, 3), (descr, shape)
        assert close(struct.unpack('<3f', raw), logits([X[1]])[0])


@tap.case
def place_loads_a_model_and_names_devices():
    model = bundle()
    run = weft('place', model, '--batch', '5', '--devices', 'CPU')
    assert run.returncode == 0, run
    first = run.stdout.splitlines()[0]
    assert first == (f"model: {model} (weft bundle), signature "
                     "'serving_default', unknown dimensions 5"), first
    assert 'matmul (MatMul) -> /device:CPU:0' in run.stdout, run.stdout
    assert 'probabilities (Softmax) -> /device:CPU:0' in run.stdout, run
    run = weft('place', model, '--signature', 'logits')
    assert run.returncode == 0, run
    assert 'Softmax' not in run.stdout, run.stdout  # pruned away
    # The built-in model's options do not apply to a model file.
    run = weft('place', model, '--hidden', '8')
    assert run.returncode == 2, run


@tap.case
def place_shows_a_training_step():
    run = weft('place', '--train', '--devices', 'CPU', '--hidden', '16')
    assert run.returncode == 0, run
    assert 'its training step (cross-entropy, Adam)' in run.stdout, run
    for line in ("w1 (Variable) -> /device:CPU:0: state:",
                 "train/update_w1 (ApplyAdam) -> /device:CPU:0: state: with "
                 "its variable 'w1'"):
        assert line in run.stdout, run.stdout
    # A model file brings its own graph.
    run = weft('place', bundle(), '--train')
    assert run.returncode == 2, run
    assert '--train shape' in run.stderr, run


@tap.case
def run_errors_name_the_problem():
    model = bundle()
    with tempfile.TemporaryDirectory() as directory:
        def npy(name, data):
            path = os.path.join(directory, name)
            with open(path, 'wb') as f:
                f.write(data)
            return path

        good = npy('x.npy', x_npy())
        cases = [
            # (feed file, what stderr must say)
            (npy('short.npy', x_npy()[:-5]), 'truncated'),
            (npy('long.npy', x_npy() + b'\0'), '1 bytes after the data'),
            (npy('big.npy', npy_bytes('>f4', (2, 4), bytes(32))),
             'big-endian'),
            (npy('f8.npy', npy_bytes('<f8', (2, 4), bytes(64))),
             "holds float64, but input 'x' takes float32"),
            (npy('shape.npy', npy_bytes('<f4', (2, 5), bytes(40))),
             "has shape [2, 5], but input 'x' takes [-1, 4]"),
            (npy('object.npy', npy_bytes('|O', (2,), bytes(16))),
             'object arrays'),
            (npy('record.npy', npy_bytes('', (), b'', header=(
                "{'descr': [('a', '<f4')], 'fortran_order': False, "
                "'shape': (2,), }"))), 'structured arrays'),
            (npy('huge.npy', npy_bytes('<f4', (2**62, 2**62), b'')),
             'overflows'),
            (npy('nokey.npy', npy_bytes('', (), b'', header=(
                "{'descr': '<f4', 'fortran_order': False}"))),
             "no 'shape'"),
            (npy('header.npy', x_npy()[:8] + struct.pack('<H', 60000) +
                 x_npy()[10:]), 'runs past the end'),
            (npy('magic.npy', b'PK\3\4 not a numpy file'), 'not a .npy'),
            (os.path.join(directory, 'missing.npy'), 'No such file'),
        ]
        for path, message in cases:
            run = weft('run', model, '--feed', f'x={path}')
            assert run.returncode == 1, (path, run)
            assert run.stderr.startswith('weft run: '), (path, run.stderr)
            assert message in run.stderr, (path, message, run.stderr)
            if 'missing' not in path and 'shape' not in path:
                assert path in run.stderr, (path, run.stderr)
            assert run.stdout == '', (path, run.stdout)
        run = weft('run', model, '--feed', f'z={good}')
        assert run.returncode == 1, run
        assert "has no input 'z'; its inputs: x" in run.stderr, run.stderr
        run = weft('run', model, '--feed', f'x={good}', '--fetch', 'q')
        assert run.returncode == 1, run
        assert "has no output 'q'; its outputs: y" in run.stderr, run.stderr
        run = weft('run', model, '--signature', 'nope', '--feed', f'x={good}')
        assert run.returncode == 1 and "no signature 'nope'" in run.stderr
        # A FIFO, as model or as input, is refused without waiting for a
        # writer (weft() would time out).
        fifo = os.path.join(directory, 'fifo')
        os.mkfifo(fifo)
        run = weft('run', fifo, '--feed', f'x={good}')
        assert run.returncode == 1, run
        assert 'not a regular file' in run.stderr, run.stderr
        run = weft('run', model, '--feed', f'x={fifo}')
        assert run.returncode == 1, run
        assert 'not a regular file' in run.stderr, run.stderr
        # Misuse is exit status 2.
        for args in (['run'], ['run', model, '--feed', 'x'],
                     ['run', model, '--feed', f'x={good}', '--feed',
                      f'x={good}'],
                     ['run', model, '--format', 'tflite'],
                     ['inspect'], ['inspect', model, model]):
            run = weft(*args)
            assert run.returncode == 2, (args, run)


@tap.case
def train_trace_writes_its_first_step_as_chrome_json():
    data = '/usr/share/datasets/fashion-mnist'
    if not os.path.exists(os.path.join(data, 'train-images-idx3-ubyte.gz')):
        raise Skip('Fashion-MNIST is not installed (dataset-fashion-mnist)')
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, 'step.json')
        outputs = ('--save', os.path.join(d, 'model'),
                   '--checkpoint', os.path.join(d, 'ckpt'))
        run = weft('train', 'fashion-mnist', '--steps', '3', '--trace',
                   trace, *outputs)
        assert run.returncode == 0, run
        events = chrome_trace_check.check(trace)
        ops = [e['args']['op'] for e in events]
        # One step of softmax regression: its matmul, its input pipeline's
        # get_next, and each of the two variables updated once: the
        # weights by their gradient's product (the planner fuses the two,
        # runtime/session/fuse.cc), the bias by its own update.
        assert 'MatMul' in ops and 'IteratorGetNext' in ops, ops
        assert ops.count('MatMulApplyGradientDescent') == 1, ops
        assert ops.count('ApplyGradientDescent') == 1, ops
        # A trace that cannot be written stops the run before training.
        run = weft('train', 'fashion-mnist', '--steps', '1', '--trace',
                   os.path.join(d, 'no', 'step.json'), *outputs)
        assert run.returncode == 2, run
        assert '--trace' in run.stderr and 'cannot write in' in run.stderr, \
            run.stderr


sys.exit(tap.finish())
