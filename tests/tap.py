"""A minimal TAP producer for the Python tests (meson's protocol 'tap',
counted case by case by tally.py).

    tap = Tap()

    @tap.case
    def devices_json_is_valid():
        ...            # assert, or raise Skip('why')

    sys.exit(tap.finish())

A case passes when its function returns, fails on any exception (the
traceback goes to stderr, which meson shows with --print-errorlogs) and is
reported as skipped, never passed, when it raises Skip.
"""

import sys
import traceback


class Skip(Exception):
    """Raised by a case that cannot run here; the message says why."""


class Tap:
    def __init__(self):
        self.count = 0
        self.failed = 0
        print('TAP version 13', flush=True)

    def case(self, function):
        self.count += 1
        name = function.__name__
        try:
            function()
        except Skip as skip:
            print(f'ok {self.count} - {name} # SKIP {skip}', flush=True)
        except Exception:  # every failure is the case's, not the run's
            self.failed += 1
            print(f'# {name} failed:', file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            print(f'not ok {self.count} - {name}', flush=True)
        else:
            print(f'ok {self.count} - {name}', flush=True)
        return function

    def finish(self) -> int:
        print(f'1..{self.count}', flush=True)
        return 1 if self.failed else 0
