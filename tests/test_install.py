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
lists devices and ops and trains a few steps, a C program built there with
`pkg-config weft` runs, and a Java program compiled against the installed
jar runs: all find libweft and the plugins with nothing but PATH set.

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

from tap import Skip, Tap

(build_dir, prefix, bindir, libdir, includedir, datadir, mandir,
 example) = sys.argv[1:9]
cc = sys.argv[9:]
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


@tap.case
def program_built_with_pkg_config_runs_from_the_moved_prefix():
    require_moved()
    if shutil.which('pkg-config') is None:
        raise Skip('pkg-config is not installed')
    env = dict(os.environ,
               PKG_CONFIG_PATH=moved(os.path.join(libdir, 'pkgconfig')))
    flags = subprocess.run(
        ['pkg-config', '--define-variable=prefix=' + moved_prefix,
         '--cflags', '--libs', 'weft'],
        env=env, capture_output=True, text=True, timeout=60)
    assert flags.returncode == 0, flags.stderr
    assert moved_prefix in flags.stdout, flags.stdout
    program = os.path.join(root, 'relu_layer_moved')
    build = subprocess.run(
        [*cc, example, '-o', program, *flags.stdout.split(), '-lm',
         '-Wl,-rpath,' + moved(libdir)],
        capture_output=True, text=True, timeout=120)
    assert build.returncode == 0, build.stderr
    run = run_clean(program)
    assert run.returncode == 0, run.stdout + run.stderr
    assert 'agrees' in run.stdout, run.stdout


JAVA_PROGRAM = '''
import org.weft.*;

public class InstalledWeft {
  public static void main(String[] args) {
    boolean cpu = false;
    for (DeviceInfo d : Weft.devices()) cpu |= d.name().equals("/device:CPU:0");
    if (!cpu) throw new IllegalStateException("no /device:CPU:0");
    try (Graph g = new Graph()) {
      Output sum = g.apply("Add", "sum", g.constant("a", 2.0f),
                           g.constant("b", 3.5f));
      try (Session s = new Session(g, new SessionOptions().devices("CPU"));
           Session.Result r = s.runner().fetch(sum).run()) {
        System.out.println("weft " + Weft.version() + " sum "
                           + r.get(0).floatValue());
      }
    }
  }
}
'''


@tap.case
def java_program_runs_from_the_moved_prefix():
    require_moved()
    # The library's jar, not its sources or Javadoc.
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
    # A versioned jar (weft-X.Y.Z.jar) where one is installed, else weft.jar.
    jar = jars[0]
    print('# the jar: ' + os.path.relpath(jar, moved_prefix), flush=True)
    source_dir = os.path.join(root, 'java')
    os.makedirs(source_dir)
    source = os.path.join(source_dir, 'InstalledWeft.java')
    with open(source, 'w') as f:
        f.write(JAVA_PROGRAM)
    build = subprocess.run([javac, '--release', '17', '-cp', jar,
                            '-d', source_dir, source],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    env = dict(CLEAN_ENV, PATH=os.path.dirname(os.path.realpath(java)) +
               ':' + CLEAN_ENV['PATH'])
    run = subprocess.run([java, '-cp', jar + os.pathsep + source_dir,
                          'InstalledWeft'],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith('weft ') and 'sum 5.5' in run.stdout, \
        run.stdout


shutil.rmtree(root, ignore_errors=True)
sys.exit(tap.finish())
