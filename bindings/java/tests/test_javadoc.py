#!/usr/bin/env python3
"""The Java binding's javadoc is complete and well-formed: the JDK's
javadoc, with every doclint group on (HTML, references, syntax, and the
missing comments and @param/@return/@throws tags), reports no error and no
warning over bindings/java/src.  The build makes the javadoc jar the same
way (package.py) but only prints what javadoc says; this test is what fails.

Usage: test_javadoc.py JAVADOC SOURCE_DIR
"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', '..', 'tests'))
from tap import Tap  # noqa: E402

JAVADOC, SOURCES = sys.argv[1:3]
tap = Tap()


@tap.case
def javadoc_with_every_doclint_check_reports_nothing():
    with tempfile.TemporaryDirectory() as html:
        run = subprocess.run(
            [JAVADOC, '-quiet', '--release', '17', '-Xdoclint:all',
             '-Xmaxwarns', '10000', '-Xmaxerrs', '10000',
             '-sourcepath', SOURCES, '-d', html, 'org.weft'],
            capture_output=True, text=True, timeout=300)
    said = (run.stdout + run.stderr).strip()
    assert run.returncode == 0 and not said, said


sys.exit(tap.finish())
