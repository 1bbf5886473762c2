#!/usr/bin/env python3
"""Weft as a Maven dependency (issue 18): the versioned jar and its pom
are installed with `mvn install:install-file` into a local repository in a
temporary directory, and a Maven project generated there (outside the
source tree) that depends on org.weft:weft is built and run with `mvn -o`.
Its program builds 2 + 3 and a MatMul, runs them on the CPU plugin and
prints the results, in an environment without LD_LIBRARY_PATH or
WEFT_PLUGIN_PATH: libweft, the JNI glue and the plugin come out of the jar.

The same jar and pom laid out as `meson install` lays them out
(share/maven-repo) serve the project as a file:// repository too.

Maven's own plugins come from Debian's packages in /usr/share/maven-repo
(scripts/common.sh installs them), reached offline as a file:// mirror.

Usage: test_maven.py VERSION JAR POM SOURCES_JAR JAVADOC_JAR JAVA JNI
(JAVADOC_JAR is '' when the JDK has no javadoc; JNI is the build's
libweft_jni.so, the system library of the fallback case).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', '..', 'tests'))
from tap import Skip, Tap  # noqa: E402
import sanitized_env  # noqa: E402

VERSION, JAR, POM, SOURCES_JAR, JAVADOC_JAR, JAVA, JNI = sys.argv[1:8]
DEBIAN_REPO = '/usr/share/maven-repo'
# The plugins the tests run, by Maven coordinates (Debian's packages).
PLUGINS = {
    'install': ('org.apache.maven.plugins', 'maven-install-plugin'),
    'resources': ('org.apache.maven.plugins', 'maven-resources-plugin'),
    'compiler': ('org.apache.maven.plugins', 'maven-compiler-plugin'),
    'exec': ('org.codehaus.mojo', 'exec-maven-plugin'),
}
PACKAGES = ('maven libmaven-install-plugin-java libmaven-resources-plugin-java '
            'libmaven-compiler-plugin-java libexec-maven-plugin-java')

PROGRAM = r'''
package demo;

import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Map;
import org.weft.DataType;
import org.weft.Graph;
import org.weft.Model;
import org.weft.Output;
import org.weft.PluginInfo;
import org.weft.Session;
import org.weft.SessionOptions;
import org.weft.Shape;
import org.weft.Signature;
import org.weft.Tensor;
import org.weft.Weft;

public class Add {
  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("version")) {
      System.out.println("weft " + Weft.version());
      printMapped();
      return;
    }
    try (Graph g = new Graph();
         Tensor a = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2);
         Tensor b = Tensor.of(new float[] {5, 6, 7, 8}, 2, 2)) {
      Output sum = g.apply("Add", "sum", g.constant("two", 2.0f), g.constant("three", 3.0f));
      Output product = g.apply("MatMul", "product", g.constant("a", a), g.constant("b", b));
      try (Session s = new Session(g, new SessionOptions().devices("CPU"));
           Session.Result r = s.runner().fetch(sum).fetch(product).run()) {
        System.out.println("2 + 3 = " + r.get(0).toFloatArray()[0]);
        System.out.println("a x b = " + Arrays.toString(r.get(1).toFloatArray()));
      }
    }
    // An ONNX round trip: the jar's ONNX module (weft/weft-onnx.so beside
    // libweft) writes the model and reads it back.
    java.nio.file.Path dir = Files.createTempDirectory("weft-demo");
    String onnx = dir.resolve("relu.onnx").toString();
    try (Graph g = new Graph()) {
      Output x = g.placeholder("x", DataType.FLOAT32, Shape.of(3));
      Output y = g.apply("Relu", "y", x);
      try (Session s = new Session(g, new SessionOptions().devices("CPU"));
           Model m = Model.create(g, s, new Signature(Signature.DEFAULT).input("x", x)
               .output("y", y))) {
        m.exportOnnx(Signature.DEFAULT, onnx);
      }
    }
    try (Model m = Model.load(onnx);
         Tensor x = Tensor.of(new float[] {-1, 0, 2}, 3);
         Model.Result r = m.run(Map.of("x", x))) {
      System.out.println("onnx relu = " + Arrays.toString(r.get("y").toFloatArray()));
    }
    Files.delete(dir.resolve("relu.onnx"));
    Files.delete(dir);
    System.out.println("weft " + Weft.version());
    for (PluginInfo p : Weft.plugins()) {
      System.out.println("plugin " + p.name() + " " + p.path());
    }
    printMapped();
  }

  /** The shared libraries of Weft's the process mapped. */
  static void printMapped() throws Exception {
    Files.lines(Paths.get("/proc/self/maps"))
        .map(line -> line.replaceFirst("^.* ", ""))
        .filter(path -> path.contains("weft") && path.contains(".so"))
        .distinct()
        .forEach(path -> System.out.println("mapped " + path));
  }
}
'''

tap = Tap()
tmp = tempfile.mkdtemp(prefix='weft-maven-')
repo = os.path.join(tmp, 'repository')
cache = os.path.join(tmp, 'cache')
# A clean environment: the libraries must come from the jar.
ENV = {'PATH': os.environ.get('PATH', '/usr/bin:/bin'), 'HOME': tmp,
       'LANG': 'C.UTF-8', 'XDG_CACHE_HOME': cache, **sanitized_env.carried()}
state = {}


def plugin_version(group, artifact):
    """The newest version of a plugin Debian installed, or None."""
    directory = os.path.join(DEBIAN_REPO, *group.split('.'), artifact)
    versions = []
    if os.path.isdir(directory):
        for version in os.listdir(directory):
            if os.path.isfile(os.path.join(directory, version,
                                           f'{artifact}-{version}.jar')):
                numbers = re.findall(r'\d+', version)
                if numbers and version[0].isdigit():
                    versions.append(([int(n) for n in numbers], version))
    return max(versions)[1] if versions else None


def mvn(*args, cwd=tmp, settings='settings.xml'):
    # offline.protocols=file: -o would otherwise refuse the file:// mirror too.
    run = subprocess.run(
        ['mvn', '-o', '-B', '-Dstyle.color=never', '-s', os.path.join(tmp, settings),
         '-Daether.offline.protocols=file', *args],
        cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f'mvn {" ".join(args)} failed:\n{run.stdout}{run.stderr}'
    return re.sub(r'\x1b\[[0-9;]*m', '', run.stdout)  # Maven's colours


def write_settings(name, local_repository, weft_repository=None):
    """Maven settings: every repository is Debian's, reached as a file://
    mirror, except the repository 'weft' at weft_repository when given."""
    weft = ''
    if weft_repository:
        weft = f'''
  <profiles>
    <profile>
      <id>weft</id>
      <repositories>
        <repository><id>weft</id><url>file://{weft_repository}</url></repository>
      </repositories>
    </profile>
  </profiles>
  <activeProfiles><activeProfile>weft</activeProfile></activeProfiles>'''
    with open(os.path.join(tmp, name), 'w') as f:
        f.write(f'''<settings>
  <localRepository>{local_repository}</localRepository>
  <offline>true</offline>
  <mirrors>
    <mirror>
      <id>debian</id>
      <mirrorOf>*,!weft</mirrorOf>
      <url>file://{DEBIAN_REPO}</url>
    </mirror>
  </mirrors>{weft}
</settings>
''')


def needs_maven():
    if 'skip' in state:
        raise Skip(state['skip'])


@tap.case
def maven_and_its_plugins_are_available_offline():
    if shutil.which('mvn') is None:
        state['skip'] = f'mvn is not installed (Debian packages: {PACKAGES})'
        raise Skip(state['skip'])
    versions = {key: plugin_version(*coordinates)
                for key, coordinates in PLUGINS.items()}
    missing = [':'.join(PLUGINS[key]) for key, v in versions.items() if v is None]
    if missing:
        state['skip'] = (f'{", ".join(missing)} not in {DEBIAN_REPO} '
                         f'(Debian packages: {PACKAGES})')
        raise Skip(state['skip'])
    state['versions'] = versions
    write_settings('settings.xml', repo)


@tap.case
def the_jar_carries_its_pom_and_this_platforms_libraries():
    with zipfile.ZipFile(JAR) as jar:
        names = set(jar.namelist())
        manifest = jar.read('META-INF/MANIFEST.MF').decode()
        pom = jar.read('META-INF/maven/org.weft/weft/pom.xml').decode()
        index_name = next(n for n in names if n.endswith('/weft-natives.txt'))
        index = jar.read(index_name).decode()
    assert os.path.basename(JAR) == f'weft-{VERSION}.jar', JAR
    assert f'Implementation-Version: {VERSION}' in manifest, manifest
    assert f'<version>{VERSION}</version>' in pom, pom
    assert 'org/weft/Graph.class' in names
    platform_dir = os.path.dirname(index_name)
    loaded = [line.split()[-1] for line in index.splitlines()
              if line.startswith('load ')]
    assert loaded == ['libweft.so.1', 'libweft_jni.so'], index
    assert platform_dir + '/weft/plugins/weft-cpu.so' in names, sorted(names)
    assert platform_dir + '/weft/weft-onnx.so' in names, sorted(names)
    with zipfile.ZipFile(SOURCES_JAR) as sources:
        assert 'org/weft/Graph.java' in sources.namelist()
    if JAVADOC_JAR:
        with zipfile.ZipFile(JAVADOC_JAR) as javadoc:
            assert 'org/weft/Graph.html' in javadoc.namelist()


@tap.case
def install_file_puts_the_jar_and_pom_into_a_local_repository():
    needs_maven()
    version = state['versions']['install']
    extra = [f'-Dsources={SOURCES_JAR}'] + ([f'-Djavadoc={JAVADOC_JAR}']
                                           if JAVADOC_JAR else [])
    mvn(f'org.apache.maven.plugins:maven-install-plugin:{version}:install-file',
        f'-Dfile={JAR}', f'-DpomFile={POM}', *extra)
    installed = os.path.join(repo, 'org', 'weft', 'weft', VERSION)
    expected = [f'weft-{VERSION}.jar', f'weft-{VERSION}.pom',
                f'weft-{VERSION}-sources.jar']
    if JAVADOC_JAR:
        expected.append(f'weft-{VERSION}-javadoc.jar')
    for name in expected:
        assert os.path.isfile(os.path.join(installed, name)), (
            name, os.listdir(installed))
    state['installed'] = os.path.join(installed, f'weft-{VERSION}.jar')


@tap.case
def a_maven_project_outside_the_tree_runs_a_graph_on_the_cpu():
    needs_maven()
    assert 'installed' in state, 'the jar was not installed'
    versions = state['versions']
    project = os.path.join(tmp, 'demo')
    source_dir = os.path.join(project, 'src', 'main', 'java', 'demo')
    os.makedirs(source_dir)
    with open(os.path.join(source_dir, 'Add.java'), 'w') as f:
        f.write(PROGRAM)

    def plugin(key, configuration=''):
        group, artifact = PLUGINS[key]
        return (f'<plugin><groupId>{group}</groupId>'
                f'<artifactId>{artifact}</artifactId>'
                f'<version>{versions[key]}</version>{configuration}</plugin>')
    exec_configuration = '''<configuration>
        <executable>java</executable>
        <arguments>
          <argument>-classpath</argument><classpath/>
          <argument>demo.Add</argument>
        </arguments>
      </configuration>'''
    with open(os.path.join(project, 'pom.xml'), 'w') as f:
        f.write(f'''<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>demo</groupId>
  <artifactId>weft-demo</artifactId>
  <version>1</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>org.weft</groupId>
      <artifactId>weft</artifactId>
      <version>{VERSION}</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      {plugin('resources')}
      {plugin('compiler')}
      {plugin('exec', exec_configuration)}
    </plugins>
  </build>
</project>
''')
    out = mvn('-q', 'compile', 'exec:exec', cwd=project)
    print('# ' + out.strip().replace('\n', '\n# '), flush=True)
    assert '2 + 3 = 5.0' in out, out
    assert 'a x b = [19.0, 22.0, 43.0, 50.0]' in out, out
    assert 'onnx relu = [0.0, 0.0, 2.0]' in out, out
    # Everything of Weft's that the JVM mapped came from the private cache.
    mapped = re.findall(r'^mapped (.*)$', out, re.M)
    assert any(path.endswith('/libweft_jni.so') for path in mapped), out
    assert any(path.endswith('/weft/plugins/weft-cpu.so') for path in mapped), out
    assert any(path.endswith('/weft/weft-onnx.so') for path in mapped), out
    assert mapped and all(path.startswith(cache + '/') for path in mapped), out
    plugins = re.findall(r'^plugin (\S+) (.*)$', out, re.M)
    assert any(path.startswith(cache + '/') and path.endswith('/weft-cpu.so')
               for _, path in plugins), out
    state['classes'] = os.path.join(project, 'target', 'classes')


@tap.case
def a_file_repository_in_the_installed_layout_serves_the_jar():
    # meson install lays the artifacts out as share/maven-repo/org/weft/...
    needs_maven()
    assert 'classes' in state, 'the Maven project did not build'
    file_repo = os.path.join(tmp, 'maven-repo')
    artifacts = os.path.join(file_repo, 'org', 'weft', 'weft', VERSION)
    os.makedirs(artifacts)
    shutil.copy(JAR, artifacts)
    shutil.copy(POM, os.path.join(artifacts, f'weft-{VERSION}.pom'))
    second = os.path.join(tmp, 'repository-2')
    write_settings('settings-2.xml', second, weft_repository=file_repo)
    mvn('-q', 'compile', cwd=os.path.join(tmp, 'demo'), settings='settings-2.xml')
    assert os.path.isfile(os.path.join(second, 'org', 'weft', 'weft', VERSION,
                                       f'weft-{VERSION}.jar'))


def run_java(*options, args=()):
    return subprocess.run(
        [JAVA, *options, '-cp', state['installed'] + ':' + state['classes'],
         'demo.Add', *args], env=ENV, capture_output=True, text=True,
        timeout=120)


def mapped_dirs(stdout):
    return {os.path.dirname(path)
            for path in re.findall(r'^mapped (.*/libweft_jni.so)$', stdout, re.M)}


@tap.case
def a_second_program_reuses_the_extracted_libraries():
    needs_maven()
    assert 'classes' in state, 'the Maven project did not build'
    root = os.path.join(cache, 'weft', 'native')
    before = sorted(os.listdir(root))
    # One copy and its lock file; no staging directory left behind.
    assert len(before) == 2 and before[1] == before[0] + '.lock', before
    assert oct(os.stat(os.path.join(root, before[0])).st_mode & 0o777) == '0o700'
    run = run_java()
    assert run.returncode == 0, run.stderr
    assert '2 + 3 = 5.0' in run.stdout, run.stdout
    assert sorted(os.listdir(root)) == before


@tap.case
def programs_starting_at_once_share_one_copy():
    needs_maven()
    assert 'classes' in state, 'the Maven project did not build'
    fresh = os.path.join(tmp, 'cache-concurrent')
    runs = [subprocess.Popen(
        [JAVA, '-Dweft.native.cache=' + fresh, '-cp',
         state['installed'] + ':' + state['classes'], 'demo.Add'],
        env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(4)]
    outputs = [run.communicate(timeout=120) for run in runs]
    for run, (stdout, stderr) in zip(runs, outputs):
        assert run.returncode == 0, stderr
        assert '2 + 3 = 5.0' in stdout, stdout
        # Each found the plugins beside the libweft it loaded.
        assert re.search(r'^plugin weft-cpu ' + re.escape(fresh), stdout, re.M), stdout
    assert len(os.listdir(fresh)) == 2, os.listdir(fresh)


@tap.case
def a_damaged_copy_in_the_cache_is_extracted_again():
    needs_maven()
    assert 'classes' in state, 'the Maven project did not build'
    root = os.path.join(cache, 'weft', 'native')
    copies = sorted(os.listdir(root))
    library = os.path.join(root, copies[0], 'libweft.so.1')
    size = os.path.getsize(library)
    with open(library, 'ab') as f:
        f.write(b'damage')
    run = run_java()
    assert run.returncode == 0, run.stderr
    assert '2 + 3 = 5.0' in run.stdout, run.stdout
    assert sorted(os.listdir(root)) == copies, os.listdir(root)
    assert os.path.getsize(library) == size


@tap.case
def an_unwritable_cache_falls_back_to_a_temporary_directory():
    needs_maven()
    assert 'classes' in state, 'the Maven project did not build'
    java_tmp = os.path.join(tmp, 'java-tmp')
    os.mkdir(java_tmp)
    run = run_java('-Dweft.native.cache=/proc/weft-cannot-write-here',
                   '-Djava.io.tmpdir=' + java_tmp)
    assert run.returncode == 0, run.stderr
    assert '2 + 3 = 5.0' in run.stdout, run.stdout
    (used,) = mapped_dirs(run.stdout)
    assert used.startswith(java_tmp + '/weft-native-'), run.stdout
    assert os.listdir(java_tmp) == [], os.listdir(java_tmp)  # deleted on exit


@tap.case
def a_failed_extraction_falls_back_to_the_system_library():
    needs_maven()
    assert 'classes' in state, 'the Maven project did not build'
    run = run_java('-Dweft.native.cache=/proc/weft-cannot-write-here',
                   '-Djava.io.tmpdir=/proc/weft-cannot-write-here',
                   '-Djava.library.path=' + os.path.dirname(JNI),
                   args=['version'])
    assert run.returncode == 0, run.stderr
    assert f'weft {VERSION}' in run.stdout, run.stdout
    assert mapped_dirs(run.stdout) == {os.path.dirname(JNI)}, run.stdout


@tap.case
def without_the_bundled_libraries_the_error_says_what_to_do():
    needs_maven()
    assert 'classes' in state, 'the Maven project did not build'
    run = run_java('-Dweft.native.bundled=false')
    assert run.returncode != 0, run.stdout
    assert 'cannot find libweft_jni.so' in run.stderr, run.stderr
    assert '-Dweft.jni.library=' in run.stderr, run.stderr


code = tap.finish()
shutil.rmtree(tmp, ignore_errors=True)
sys.exit(code)
