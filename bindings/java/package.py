#!/usr/bin/env python3
"""Builds the Maven artifacts of the Java binding (run by meson.build):

  package.py jar --classes weft.jar --pom weft-V.pom --version V
      --platform linux-x86_64 --load LIB... --file DIR=LIB... --output OUT
  package.py sources --root SRC --output OUT FILE...
  package.py javadoc --javadoc JAVADOC --root SRC --version V --output OUT

`jar` copies the classes of the plain jar and adds, under
native/PLATFORM/, each --load library (named by its soname, loaded in the
order given) and each --file one (placed in DIR), with weft-natives.txt,
the index BundledNatives.java reads; the pom goes where Maven puts it
(META-INF/maven/...).  Every jar is written with sorted entries and one
fixed timestamp, so the same inputs give the same bytes.
"""

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile

GROUP_ID = 'org.weft'
ARTIFACT_ID = 'weft'
# 1980-01-01, the earliest time a zip entry can hold.
FIXED_TIME = (1980, 1, 1, 0, 0, 0)


def soname(path):
    """The DT_SONAME of a shared library, else its file name."""
    try:
        dynamic = subprocess.run(['readelf', '-d', path], capture_output=True,
                                 text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return os.path.basename(path)
    for line in dynamic.splitlines():
        if '(SONAME)' in line and '[' in line:
            return line[line.index('[') + 1:line.rindex(']')]
    return os.path.basename(path)


class Jar:
    """Entries gathered in memory, written sorted, the manifest first."""

    def __init__(self, manifest):
        self.manifest = manifest
        self.entries = {}

    def add(self, name, data):
        if name in self.entries:
            sys.exit(f'package.py: {name} twice')
        self.entries[name] = data

    def write(self, output):
        temporary = output + '.tmp'
        with zipfile.ZipFile(temporary, 'w', zipfile.ZIP_DEFLATED) as jar:
            def put(name, data):
                info = zipfile.ZipInfo(name, FIXED_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                jar.writestr(info, data)
            put('META-INF/MANIFEST.MF', self.manifest)
            for name in sorted(self.entries):
                put(name, self.entries[name])
        os.replace(temporary, output)


def manifest(version, extra=''):
    return ('Manifest-Version: 1.0\r\n'
            'Created-By: Weft bindings/java/package.py\r\n'
            f'Implementation-Title: {GROUP_ID}:{ARTIFACT_ID}\r\n'
            f'Implementation-Version: {version}\r\n'
            f'{extra}\r\n')


def build_jar(args):
    jar = Jar(manifest(args.version, 'Automatic-Module-Name: org.weft\r\n'))
    with zipfile.ZipFile(args.classes) as classes:
        for info in classes.infolist():
            if not info.is_dir() and info.filename != 'META-INF/MANIFEST.MF':
                jar.add(info.filename, classes.read(info))
    maven = f'META-INF/maven/{GROUP_ID}/{ARTIFACT_ID}/'
    with open(args.pom, 'rb') as pom:
        jar.add(maven + 'pom.xml', pom.read())
    jar.add(maven + 'pom.properties',
            f'groupId={GROUP_ID}\nartifactId={ARTIFACT_ID}\n'
            f'version={args.version}\n'.encode())

    natives = [('load', soname(path), path) for path in args.load]
    for spec in args.file:
        directory, _, path = spec.partition('=')
        natives.append(('file', directory + '/' + os.path.basename(path), path))
    index = [f'# Weft {args.version} for {args.platform}: "load" files are '
             'loaded in this order.  Read by org/weft/BundledNatives.java.']
    for kind, name, path in natives:
        with open(path, 'rb') as library:
            data = library.read()
        jar.add(f'native/{args.platform}/{name}', data)
        index.append(f'{kind} {hashlib.sha256(data).hexdigest()} {len(data)} {name}')
    jar.add(f'native/{args.platform}/weft-natives.txt',
            ('\n'.join(index) + '\n').encode())
    jar.write(args.output)


def add_tree(jar, root):
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            with open(path, 'rb') as f:
                jar.add(os.path.relpath(path, root).replace(os.sep, '/'), f.read())


def build_sources(args):
    jar = Jar(manifest(args.version))
    for path in args.files:
        with open(path, 'rb') as f:
            jar.add(os.path.relpath(path, args.root).replace(os.sep, '/'), f.read())
    jar.write(args.output)


def build_javadoc(args):
    with tempfile.TemporaryDirectory() as html:
        # Every doclint group: the test java_javadoc fails on what this
        # prints, so that the build itself never stops on a missing comment.
        run = subprocess.run(
            [args.javadoc, '-quiet', '-notimestamp', '--release', '17',
             '-Xdoclint:all', '-Xmaxwarns', '10000',
             '-doctitle', f'Weft {args.version} for Java',
             '-windowtitle', f'Weft {args.version}',
             '-sourcepath', args.root, '-d', html, 'org.weft'],
            capture_output=True, text=True)
        sys.stderr.write(run.stdout + run.stderr)
        if run.returncode != 0:
            sys.exit(f'package.py: javadoc failed ({run.returncode})')
        jar = Jar(manifest(args.version))
        add_tree(jar, html)
        jar.write(args.output)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest='command', required=True)
    jar = commands.add_parser('jar')
    jar.add_argument('--classes', required=True)
    jar.add_argument('--pom', required=True)
    jar.add_argument('--platform', required=True)
    jar.add_argument('--load', action='append', default=[])
    jar.add_argument('--file', action='append', default=[])
    sources = commands.add_parser('sources')
    sources.add_argument('--root', required=True)
    sources.add_argument('files', nargs='+')
    javadoc = commands.add_parser('javadoc')
    javadoc.add_argument('--javadoc', required=True)
    javadoc.add_argument('--root', required=True)
    for command in (jar, sources, javadoc):
        command.add_argument('--version', required=True)
        command.add_argument('--output', required=True)
    args = parser.parse_args()
    {'jar': build_jar, 'sources': build_sources,
     'javadoc': build_javadoc}[args.command](args)


if __name__ == '__main__':
    main()
