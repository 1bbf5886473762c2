#!/usr/bin/env python3
"""The `weft` tool's command line as scripts use it: unknown options are
usage errors (exit status 2) in every command, and `weft devices --json`
prints one JSON document that Python's json module reads.

Usage: test_cli.py WEFT_TOOL [OPS_PLUGIN]  (WEFT_PLUGIN_PATH names the
built plugins; OPS_PLUGIN is the SDK's op template, weft-acme-gelu.so)
"""

import json
import os
import subprocess
import sys
import tempfile

from tap import Skip, Tap

WEFT = sys.argv[1]
OPS_PLUGIN = sys.argv[2] if len(sys.argv) > 2 else None
tap = Tap()


def weft(*args):
    return subprocess.run([WEFT, *args], capture_output=True, text=True,
                          timeout=120)


@tap.case
def unknown_options_are_usage_errors():
    for command in (['version'], ['devices'], ['ops'], ['ops', 'Add'],
                    ['place'], ['train', 'fashion-mnist']):
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
    for command in ('version', 'devices', 'ops', 'place', 'train'):
        run = weft(command, '--help')
        assert run.returncode == 0, (command, run)
        assert run.stdout.startswith(f'usage: weft {command}'), run.stdout


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


sys.exit(tap.finish())
