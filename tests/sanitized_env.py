"""The sanitizer variables a test passes on to the programs it runs in a
clean environment (the JVM, an installed `weft`), in a sanitized build.

In an AddressSanitizer build meson gives the tests that start the JVM or
CPython on Weft's libraries LD_PRELOAD (the ASan and UBSan runtimes, which
such a process must load first), the sanitizers' options and
WEFT_TEST_SANITIZED=1 (meson.build, foreign_runtime_env).  A test that
builds its children's environment from scratch, to stand for a user's
machine, adds `carried()` to it; elsewhere that is empty, so an
LD_PRELOAD of the caller's own never leaks into the clean environment.
"""

import os

NAMES = ('LD_PRELOAD', 'ASAN_OPTIONS', 'UBSAN_OPTIONS')


def carried():
    """The variables to add to a clean environment: empty unless meson
    marked the run as sanitized."""
    if os.environ.get('WEFT_TEST_SANITIZED') != '1':
        return {}
    return {name: os.environ[name] for name in NAMES if name in os.environ}
