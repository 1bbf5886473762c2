#!/usr/bin/env python3
"""The C API reference: Doxygen over abi/weft/*.h with the project's
Doxyfile (docs/Doxyfile.in) must finish without a warning, so every public
function, type, macro and struct field carries a /** */ comment and no
comment is malformed.  The HTML goes to a temporary directory; `meson
compile -C build docs` writes it to build/docs/api/html.

Usage: test_api_docs.py DOXYFILE
"""

import os
import shutil
import subprocess
import sys
import tempfile

from tap import Skip, Tap

doxyfile = sys.argv[1]
tap = Tap()


@tap.case
def doxygen_finds_every_public_declaration_documented():
    doxygen = shutil.which('doxygen')
    if doxygen is None:
        raise Skip('doxygen is not installed (Debian package doxygen)')
    with open(doxyfile) as f:
        config = f.read()
    with tempfile.TemporaryDirectory(prefix='weft-api-docs-') as out:
        # A later assignment wins: the same configuration, another output.
        config += '\nOUTPUT_DIRECTORY = "%s"\n' % out
        run = subprocess.run([doxygen, '-'], input=config, text=True,
                             capture_output=True, timeout=300)
        warnings = [line for line in run.stderr.splitlines() if line.strip()]
        assert run.returncode == 0 and not warnings, \
            '%d warning(s), doxygen exit %d:\n%s' % (
                len(warnings), run.returncode, '\n'.join(warnings))
        index = os.path.join(out, 'html', 'index.html')
        assert os.path.exists(index), os.listdir(out)
        # The reference has a page per header, and functions on it.
        with open(os.path.join(out, 'html', 'session_8h.html')) as page:
            assert 'weft_session_run' in page.read()


sys.exit(tap.finish())
