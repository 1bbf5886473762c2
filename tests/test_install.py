#!/usr/bin/env python3
"""A new user's installation: `meson install` into a temporary root, then
the installed programs run from there in a clean environment (no
LD_LIBRARY_PATH, no WEFT_PLUGIN_PATH).  `weft` and the JNI library find
libweft through their $ORIGIN-relative RUNPATH, libweft finds the plugins
installed beside it, and the README's first example, compiled against the
installed headers and library, runs on the installed CPU plugin.  The SDK's
op template, copied out of the tree and built by its Makefile with
`pkg-config weft` alone, loads in the installed `weft ops` and passes the
installed `weft conformance`.  The documents (README, SDK, op contract, file
formats) and the manual page are under share/.

Then the whole prefix is moved elsewhere, and from the new place `weft`
lists devices and ops and trains a few steps, the first example and the
README's C quick start, built there with `pkg-config weft`, run, and so does
the README's Java quick start, compiled against each library jar the
installation holds: all find libweft and the plugins with nothing but PATH
set.

Usage: test_install.py BUILD_DIR PREFIX BINDIR LIBDIR INCLUDEDIR DATADIR
                       MANDIR EXAMPLE CC...
(the directories as configured; EXAMPLE a C file; CC the C compiler command)
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import sanitized_env
from tap import Skip, Tap

(build_dir, prefix, bindir, libdir, includedir, datadir, mandir,
 example) = sys.argv[1:9]
cc = sys.argv[9:]
CLEAN_ENV = {'PATH': '/usr/bin:/bin', **sanitized_env.carried()}

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


@tap.case
def documents_and_manual_page_are_under_share():
    docs = os.path.join(installed(datadir), 'doc', 'weft')
    for document in ('README.md', 'abi/CHANGELOG.md',
                     'sdk/README.md', 'sdk/template/plugin.c',
                     'sdk/custom_op/gelu.c', 'sdk/custom_op/Makefile',
                     'runtime/ops/CONVENTIONS.md',
                     'runtime/checkpoint/FORMAT.md',
                     'runtime/model/FORMAT.md'):
        path = os.path.join(docs, document)
        assert os.path.getsize(path) > 0, path
    manual = os.path.join(installed(mandir), 'man1', 'weft.1')
    with open(manual) as page:
        assert page.read().startswith('.\\"'), manual


# ---- The same installation, moved ----------------------------------------

# The prefix's whole tree goes here, and its old place is gone: nothing can
# still resolve through it.
moved_prefix = os.path.join(root, 'moved', 'weft-prefix')


def moved(directory):
    """Where a configured directory is once the prefix has moved."""
    return os.path.join(moved_prefix, directory)


MOVED_WEFT = moved(os.path.join(bindir, 'weft'))


def inside_prefix(directory):
    return not os.path.isabs(directory)


@tap.case
def move_the_installation():
    if not all(inside_prefix(d) for d in (bindir, libdir, includedir,
                                          datadir)):
        raise Skip('a directory is configured outside the prefix')
    os.makedirs(os.path.dirname(moved_prefix))
    os.rename(os.path.join(root, prefix.lstrip('/')), moved_prefix)
    assert os.access(MOVED_WEFT, os.X_OK)


def require_moved():
    if not os.path.exists(MOVED_WEFT):
        raise Skip('the installation was not moved')


@tap.case
def moved_weft_lists_its_own_plugins_and_devices():
    require_moved()
    run = run_clean(MOVED_WEFT, 'devices', '--json')
    assert run.returncode == 0, run.stderr
    document = json.loads(run.stdout)
    paths = {p['name']: p['path'] for p in document['plugins']}
    assert 'weft-cpu' in paths, run.stdout
    plugin_dir = moved(os.path.join(libdir, 'weft', 'plugins'))
    assert os.path.realpath(os.path.dirname(paths['weft-cpu'])) == \
        os.path.realpath(plugin_dir), (paths, plugin_dir)
    assert '/device:CPU:0' in [d['name'] for d in document['devices']]
    run = run_clean(MOVED_WEFT, 'ops', 'MatMul')
    assert run.returncode == 0, run.stdout + run.stderr
    assert 'kernel: CPU (weft-cpu)' in run.stdout, run.stdout


@tap.case
def moved_weft_trains_and_saves_a_model():
    require_moved()
    data = '/usr/share/datasets/fashion-mnist'
    if not os.path.isdir(data):
        raise Skip(data + ' is missing (Debian package dataset-fashion-mnist)')
    work = os.path.join(root, 'train')
    os.makedirs(work)
    run = subprocess.run(
        [MOVED_WEFT, 'train', 'fashion-mnist', '--model', 'softmax',
         '--epochs', '1', '--steps', '30', '--device', 'CPU',
         '--checkpoint', 'softmax.ckpt', '--save', 'softmax-model'],
        cwd=work, env=CLEAN_ENV, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert 'accuracy' in run.stdout, run.stdout
    run = run_clean(MOVED_WEFT, 'inspect', os.path.join(work, 'softmax-model'))
    assert run.returncode == 0, run.stdout + run.stderr
    assert 'serving_default' in run.stdout, run.stdout
    # ONNX goes through the installed module, <libdir>/weft/weft-onnx.so,
    # found beside the moved libweft.
    onnx = os.path.join(work, 'softmax.onnx')
    run = run_clean(MOVED_WEFT, 'export', os.path.join(work, 'softmax-model'),
                    onnx)
    assert run.returncode == 0, run.stdout + run.stderr
    run = run_clean(MOVED_WEFT, 'inspect', onnx)
    assert run.returncode == 0, run.stdout + run.stderr
    assert 'serving_default' in run.stdout, run.stdout
    assert os.path.isfile(moved(os.path.join(libdir, 'weft', 'weft-onnx.so')))


def readme_quick_start(language):
    """The README's quick start in `language` ('c', 'java'): the first
    fenced block of that language under '## Quick start'."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                        'README.md')
    with open(path) as f:
        text = f.read()
    section = text[text.index('\n## Quick start'):]
    section = section[:section.index('\n## ', 1)]
    return re.search(r'```%s\n(.*?)```' % language, section, re.S).group(1)


def moved_pkg_config(*args):
    """pkg-config weft ARGS for the moved prefix, as a user would ask."""
    env = dict(os.environ,
               PKG_CONFIG_PATH=moved(os.path.join(libdir, 'pkgconfig')))
    run = subprocess.run(
        ['pkg-config', '--define-variable=prefix=' + moved_prefix, *args,
         'weft'], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


@tap.case
def programs_built_with_pkg_config_run_from_the_moved_prefix():
    require_moved()
    if shutil.which('pkg-config') is None:
        raise Skip('pkg-config is not installed')
    flags = moved_pkg_config('--cflags', '--libs')
    assert '-I' + moved(includedir) in flags, flags
    hello = os.path.join(root, 'hello.c')
    with open(hello, 'w') as f:
        f.write(readme_quick_start('c'))
    # The README's first example and its C quick start.
    for source, expected in ((example, 'agrees'), (hello, '0 1 4 0\n')):
        program = os.path.join(root, os.path.basename(source) + '.moved')
        build = subprocess.run(
            [*cc, source, '-o', program, *flags, '-lm',
             '-Wl,-rpath,' + moved(libdir)],
            capture_output=True, text=True, timeout=120)
        assert build.returncode == 0, build.stderr
        run = run_clean(program)
        assert run.returncode == 0, run.stdout + run.stderr
        assert expected in run.stdout, (source, run.stdout)


@tap.case
def readme_java_quick_start_runs_from_the_moved_prefix():
    require_moved()
    # The library's jars (weft.jar beside the JNI library, a versioned one
    # with the native libraries inside), not sources or Javadoc.
    jars = sorted(path for path in glob.glob(
        os.path.join(moved_prefix, '**', '*.jar'), recursive=True)
        if re.fullmatch(r'weft(-[0-9][-.\w]*)?\.jar', os.path.basename(path))
        and not re.search(r'-(sources|javadoc)\.jar$', path))
    if not jars:
        raise Skip('the Java binding is not built (feature java): '
                   'no weft*.jar installed')
    javac, java = shutil.which('javac'), shutil.which('java')
    if javac is None or java is None:
        raise Skip('javac or java is not installed')
    env = dict(CLEAN_ENV, PATH=os.path.dirname(os.path.realpath(java)) +
               ':' + CLEAN_ENV['PATH'])
    for number, jar in enumerate(jars):
        print('# ' + os.path.relpath(jar, moved_prefix), flush=True)
        classes = os.path.join(root, 'java-%d' % number)
        os.makedirs(classes)
        source = os.path.join(classes, 'Hello.java')
        with open(source, 'w') as f:
            f.write(readme_quick_start('java'))
        build = subprocess.run([javac, '--release', '17', '-cp', jar,
                                '-d', classes, source],
                               capture_output=True, text=True, timeout=300)
        assert build.returncode == 0, build.stdout + build.stderr
        run = subprocess.run([java, '-cp', jar + os.pathsep + classes,
                              'Hello'],
                             env=env, capture_output=True, text=True,
                             timeout=300)
        assert run.returncode == 0, (jar, run.stdout + run.stderr)
        assert run.stdout == '[0.0, 1.0, 4.0, 0.0]\n', (jar, run.stdout)


shutil.rmtree(root, ignore_errors=True)
sys.exit(tap.finish())
