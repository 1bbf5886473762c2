#!/usr/bin/env python3
"""Checks that a built Weft plugin is a well-behaved guest.

Usage: check_plugin.py PLUGIN.so [PLUGIN.so ...]

A plugin must export exactly one symbol, weft_plugin_entry, and must not
depend on libweft, neither as a NEEDED library nor through an undefined
weft_* symbol: the host hands it everything through tables, and a plugin
tied to the host's internals breaks with the next host release.

This is `nm -D` and `readelf -d` with the verdict written out; run those by
hand to see the details.  Exits 1 when a check fails, 2 when the tools are
missing.
"""

import os
import shutil
import subprocess
import sys

ENTRY = 'weft_plugin_entry'


def run(tool, *args):
    return subprocess.run([tool, *args], check=True, capture_output=True,
                          text=True).stdout


def symbols(path, which):
    """Names from `nm -D --defined-only` or `--undefined-only`."""
    names = []
    for line in run('nm', '-D', which, path).splitlines():
        fields = line.split()
        # Type A with no address is a symbol-version node ("WEFT_1.0") that
        # a version script with a named version adds: no code, not an export.
        if not fields or (len(fields) >= 3 and fields[-2] == 'A'):
            continue
        names.append(fields[-1].split('@')[0])
    return names


def needed(path):
    libs = []
    for line in run('readelf', '-d', path).splitlines():
        if '(NEEDED)' in line and '[' in line:
            libs.append(line[line.index('[') + 1:line.rindex(']')])
    return libs


def check(path):
    if not os.path.isfile(path):
        return ['no such file']
    try:
        return check_symbols(path)
    except subprocess.CalledProcessError as error:
        return [f'{error.cmd[0]} cannot read it: {error.stderr.strip()}']


def check_symbols(path):
    problems = []
    exported = symbols(path, '--defined-only')
    extra = sorted(set(exported) - {ENTRY})
    if ENTRY not in exported:
        problems.append(f'does not export {ENTRY}')
    if extra:
        problems.append('exports more than the entry point: ' +
                        ', '.join(extra[:20]) +
                        (' ...' if len(extra) > 20 else ''))
    imported = [s for s in symbols(path, '--undefined-only')
                if s.startswith('weft_')]
    if imported:
        problems.append('imports from libweft: ' + ', '.join(imported))
    host_libs = [lib for lib in needed(path) if lib.startswith('libweft')]
    if host_libs:
        problems.append('links the host library: ' + ', '.join(host_libs))
    return problems


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for tool in ('nm', 'readelf'):
        if shutil.which(tool) is None:
            print(f'{tool} not found (install binutils)', file=sys.stderr)
            return 2
    failed = False
    for path in argv[1:]:
        problems = check(path)
        if problems:
            failed = True
            for problem in problems:
                print(f'{path}: {problem}')
        else:
            print(f'{path}: ok (exports only {ENTRY}, nothing of libweft)')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
