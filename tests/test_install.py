#!/usr/bin/env python3
"""A new user's installation: `meson install` into a temporary root, then
the installed programs run from there in a clean environment (no
LD_LIBRARY_PATH, no WEFT_PLUGIN_PATH).  `weft` and the JNI library find
libweft through their $ORIGIN-relative RUNPATH, libweft finds the plugins
installed beside it, and the README's first example, compiled against the
installed headers and library, runs on the installed CPU plugin.  The SDK's
op template, copied out of the tree and built by its Makefile with
`pkg-config weft` alone, loads in the installed `weft ops` and passes the
installed `weft conformance`.

Usage: test_install.py BUILD_DIR PREFIX BINDIR LIBDIR INCLUDEDIR EXAMPLE CC...
(the directories as configured; EXAMPLE a C file; CC the C compiler command)
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from tap import Skip, Tap

build_dir, prefix, bindir, libdir, includedir, example = sys.argv[1:7]
cc = sys.argv[7:]
CLEAN_ENV = {'PATH': '/usr/bin:/bin'}

tap = Tap()
root = tempfile.mkdtemp(prefix='weft-install-test-')


def installed(directory):
    """Where a configured directory lands under the temporary root."""
    return os.path.join(root, os.path.join(prefix, directory).lstrip('/'))


def run_clean(*command):
    return subprocess.run(command, env=CLEAN_ENV, capture_output=True,
                          text=True, timeout=120)


@tap.case
def meson_install_into_a_temporary_root():
    run = subprocess.run(['meson', 'install', '-C', build_dir, '--no-rebuild',
                          '--destdir', root], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert os.access(os.path.join(installed(bindir), 'weft'), os.X_OK)


WEFT = os.path.join(installed(bindir), 'weft')


@tap.case
def installed_weft_version_starts():
    run = run_clean(WEFT, 'version')
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith('weft '), run.stdout


@tap.case
def installed_weft_finds_the_installed_cpu_plugin():
    run = run_clean(WEFT, 'devices', '--json')
    assert run.returncode == 0, run.stderr
    document = json.loads(run.stdout)
    names = [device['name'] for device in document['devices']]
    assert '/device:CPU:0' in names, run.stdout
    cpu = document['devices'][names.index('/device:CPU:0')]
    paths = {p['name']: p['path'] for p in document['plugins']}
    # From this installation, not from the build tree or another prefix.
    plugin_dir = os.path.join(installed(libdir), 'weft', 'plugins')
    assert os.path.realpath(os.path.dirname(paths[cpu['plugin']])) == \
        os.path.realpath(plugin_dir), (paths, plugin_dir)
    # Where the x86-64-v3 build is installed and the CPU runs it, the
    # installed plugin finds it beside itself.
    variant = os.path.join(plugin_dir, 'weft-cpu-isa', 'weft-cpu-x86-64-v3.so')
    flags = ''
    with open('/proc/cpuinfo') as info:
        for line in info:
            if line.startswith('flags'):
                flags = line.split()
                break
    if os.path.exists(variant) and all(f in flags for f in
                                       ('avx2', 'fma', 'bmi2', 'movbe')):
        versions = {p['name']: p['version'] for p in document['plugins']}
        assert '(x86-64-v3)' in versions[cpu['plugin']], versions


@tap.case
def example_built_against_the_installation_runs():
    program = os.path.join(root, 'relu_layer')
    library_dir = installed(libdir)
    compile_run = subprocess.run(
        [*cc, example, '-o', program, '-I' + installed(includedir),
         '-L' + library_dir, '-lweft', '-lm', '-Wl,-rpath,' + library_dir],
        capture_output=True, text=True, timeout=120)
    assert compile_run.returncode == 0, compile_run.stderr
    run = run_clean(program)
    assert run.returncode == 0, run.stdout + run.stderr
    assert 'agrees' in run.stdout, run.stdout


@tap.case
def installed_jni_library_loads():
    jni = os.path.join(installed(libdir), 'weft', 'java', 'libweft_jni.so')
    if not os.path.exists(jni):
        raise Skip('the Java binding is not built (feature java)')
    # dlopen resolves libweft.so.1 through the library's own RUNPATH only.
    run = run_clean(sys.executable, '-c',
                    f'import ctypes; ctypes.CDLL({jni!r})')
    assert run.returncode == 0, run.stderr


@tap.case
def op_template_builds_with_pkg_config_alone_and_passes_conformance():
    if shutil.which('make') is None or shutil.which('pkg-config') is None:
        raise Skip('make or pkg-config is not installed')
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                          'sdk', 'custom_op')
    copy = os.path.join(root, 'weft-acme-ops')
    shutil.copytree(source, copy)
    os.remove(os.path.join(copy, 'meson.build'))  # out of the tree: no Meson
    # The .pc file of this installation, moved under the temporary root.
    env = dict(os.environ,
               PKG_CONFIG_PATH=os.path.join(installed(libdir), 'pkgconfig'))
    prefix_here = os.path.join(root, prefix.lstrip('/'))
    build = subprocess.run(['make', '-C', copy,
                            'PKG_CONFIG=pkg-config --define-variable=prefix=' +
                            prefix_here,
                            'CC=' + ' '.join(cc)],
                           env=env, capture_output=True, text=True,
                           timeout=120)
    assert build.returncode == 0, build.stdout + build.stderr
    plugin = os.path.join(copy, 'weft-acme-gelu.so')
    run = run_clean(WEFT, 'ops', plugin, 'Acme>Gelu')
    assert run.returncode == 0, run.stdout + run.stderr
    assert 'defined by: plugin weft-acme-gelu' in run.stdout, run.stdout
    run = run_clean(WEFT, 'conformance', plugin)
    assert run.returncode == 0, run.stdout + run.stderr
    assert 'Acme>Gelu' in run.stdout and 'FAIL (' not in run.stdout, run.stdout


shutil.rmtree(root, ignore_errors=True)
sys.exit(tap.finish())
