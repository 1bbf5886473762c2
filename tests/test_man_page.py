#!/usr/bin/env python3
"""The weft(1) manual page: it renders without a warning, names every
command `weft help` lists with a section of its own, and every option
each command's help (`weft COMMAND --help`) lists, but those the help
marks internal.

Usage: test_man_page.py MAN_PAGE WEFT
"""

import os
import re
import shutil
import subprocess
import sys

from tap import Skip, Tap

man_page, weft = sys.argv[1:3]
tap = Tap()

with open(man_page) as f:
    source = f.read()
# Options as the page spells them (\- is roff's hyphen-minus).
text = source.replace('\\-', '-')


def weft_output(*args):
    run = subprocess.run([weft, *args], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout


def commands():
    """The commands `weft help` lists: the lines after 'commands:'."""
    listed, names = False, []
    for line in weft_output('help').splitlines():
        if line.startswith('commands:'):
            listed = True
        elif listed and not line.strip():
            break
        elif listed:
            names.append(line.split()[0])
    assert names, 'weft help listed no commands'
    return names


@tap.case
def renders_without_warnings():
    env = dict(os.environ, LC_ALL='C.UTF-8', MANWIDTH='80')
    if shutil.which('man'):
        command = ['man', '--warnings', '-l', man_page]
    elif shutil.which('groff'):
        command = ['groff', '-man', '-Tutf8', '-ww', '-z', man_page]
    else:
        raise Skip('neither man nor groff is installed')
    run = subprocess.run(command, capture_output=True, text=True, env=env,
                         timeout=60)
    assert run.returncode == 0 and not run.stderr.strip(), run.stderr
    if command[0] == 'man':
        assert 'weft train fashion-mnist' in run.stdout.replace('\u2010', '-')


@tap.case
def has_a_section_for_each_command():
    missing = [name for name in commands()
               if not re.search(r'^\.SS "weft %s\b' % re.escape(name), text,
                                re.MULTILINE)]
    assert not missing, 'no .SS section for: ' + ', '.join(missing)


def options(name):
    """The options `weft NAME --help` lists ('  --flag ARG' lines, each
    followed by its indented description), less --help and internal ones."""
    lines = weft_output(name, '--help').splitlines()
    found = []
    for i, line in enumerate(lines):
        match = re.match(r'  (?:-h, )?(--[a-z][a-z0-9-]*)', line)
        if not match or match.group(1) == '--help':
            continue
        description = lines[i + 1].strip() if i + 1 < len(lines) else ''
        if not description.startswith('internal'):
            found.append(match.group(1))
    return found


def mentions(option, where):
    return re.search(r'(?<![a-z-])%s(?![a-z-])' % re.escape(option), where)


@tap.case
def names_every_option_of_every_command():
    """In the command's own section; the options every command that reads
    a MODEL takes may instead be in the DESCRIPTION, which lists them."""
    common = text[text.index('\n.SH DESCRIPTION'):text.index('\n.SH COMMANDS')]
    missing, count = [], 0
    for name in commands():
        start = re.search(r'^\.SS "weft %s\b' % re.escape(name), text,
                          re.MULTILINE)
        if start is None:
            continue  # has_a_section_for_each_command reports it
        section = text[start.start():]
        end = re.search(r'^\.S[SH] ', section[1:], re.MULTILINE)
        section = section[:end.start() + 1] if end else section
        for option in options(name):
            count += 1
            if not (mentions(option, section) or
                    ('MODEL' in section and mentions(option, common))):
                missing.append('weft %s %s' % (name, option))
    assert count > 30, 'only %d options found in the help' % count
    assert not missing, 'not in the manual page: ' + ', '.join(missing)


sys.exit(tap.finish())
