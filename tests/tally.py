#!/usr/bin/env python3
"""Counts the test cases of a Weft build and prints one closing line.

Usage: tally.py BUILD_DIR [BUILD_DIR...]  (several builds: cases count per build)

Every source of results yields one FileResult per test executable or file:
meson's log of the executables that report TAP (the Criterion tests), and
the JUnit XML reports of the tests meson runs in the suite 'junit' (the
Java binding's), which the launcher writes to
BUILD_DIR/junit-reports/<test name>/.  The
tally prints the failed cases of each file, then exactly one final line,
`N passed, M failed` (with `, K skipped` when K > 0), and exits non-zero
when a case failed or when nothing ran.

A skipped case is never counted as passed.  An executable that crashed or
timed out without reporting its cases counts as failed (at least one case),
so a dead test binary can never make the suite look green.

To add a source, write a class with `name` and
`collect(build_dir) -> list[FileResult]` and append it to SOURCES.
"""

import glob
import json
import os
import re
import sys
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from typing import Iterable, List, Optional


@dataclass
class FileResult:
    """The cases of one test file (one executable, one XML report...)."""
    name: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    # Names (or short descriptions) of the failed cases, for the report.
    failures: List[str] = field(default_factory=list)

    def fail(self, description: str) -> None:
        self.failed += 1
        self.failures.append(description)


# ---- TAP ------------------------------------------------------------------

_TAP_RESULT = re.compile(
    r'^(?P<status>not ok|ok)\b\s*(?P<number>\d+)?\s*(?:-\s*)?'
    r'(?P<description>[^#]*?)\s*(?:#\s*(?P<directive>\w+)\b\s*(?P<reason>.*))?$')
_TAP_PLAN = re.compile(r'^1\.\.(?P<count>\d+)\s*(?:#\s*(?P<reason>.*))?$')
_TAP_BAIL_OUT = re.compile(r'^Bail out!\s*(?P<reason>.*)$')


def parse_tap(name: str, text: str) -> Optional[FileResult]:
    """Counts the cases of a TAP stream; None when it holds no TAP at all.

    Indented lines (YAML diagnostics blocks, subtests) and comments are
    ignored; so is anything else that is not TAP, such as a stray print.
    """
    result = FileResult(name)
    planned: Optional[int] = None
    seen_tap = False
    seen_cases = 0
    for line in text.splitlines():
        if not line or line[0].isspace() or line.startswith('#'):
            continue
        match = _TAP_RESULT.match(line)
        if match:
            seen_tap = True
            seen_cases += 1
            ok = match.group('status') == 'ok'
            directive = (match.group('directive') or '').upper()
            description = match.group('description').strip() or \
                f'case {seen_cases}'
            # Criterion appends the duration, "(0.01s)": not part of a name.
            description = re.sub(r'\s*\(\d+(\.\d+)?s\)$', '', description)
            if directive.startswith('SKIP'):
                if ok:
                    result.skipped += 1
                else:
                    result.fail(f'{description} (not ok, marked SKIP)')
            elif directive == 'TODO':
                # An expected failure is neither a pass nor a failure.
                if ok:
                    result.passed += 1
                else:
                    result.skipped += 1
            elif ok:
                result.passed += 1
            else:
                result.fail(description)
            continue
        match = _TAP_PLAN.match(line)
        if match:
            seen_tap = True
            planned = int(match.group('count'))
            if planned == 0:
                # "1..0 # SKIP reason": the whole file was skipped.
                result.skipped += 1
            continue
        match = _TAP_BAIL_OUT.match(line)
        if match:
            seen_tap = True
            result.fail('bailed out: ' + (match.group('reason') or
                                          'no reason given'))
            continue
        if line.startswith('TAP version'):
            seen_tap = True
    if not seen_tap:
        return None
    if planned is not None and seen_cases < planned:
        missing = planned - seen_cases
        result.failed += missing
        result.failures.append(
            f'{missing} of {planned} planned cases never reported '
            '(the executable died part-way)')
    return result


# ---- sources ----------------------------------------------------------------

def read_test_log(build_dir: str) -> Iterable:
    """The entries of meson-logs/testlog.json, one dict per test run; a
    FileResult with one failure for a line that cannot be read."""
    path = os.path.join(build_dir, 'meson-logs', 'testlog.json')
    if not os.path.exists(path):
        return
    with open(path, encoding='utf-8', errors='replace') as log:
        for number, line in enumerate(log, 1):
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as error:
                broken = FileResult(f'{path}:{number}')
                broken.fail(f'unreadable log line: {error}')
                yield broken


def test_suite(entry: dict) -> str:
    """'criterion' from meson's test name 'weft:criterion / abi_layout'."""
    prefix = str(entry.get('name', '')).split(' / ', 1)[0]
    return prefix.split(':', 1)[1] if ':' in prefix else ''


def test_short_name(entry: dict) -> str:
    """'abi_layout' from 'weft:criterion / abi_layout'."""
    return str(entry.get('name', '?')).split(' / ', 1)[-1]

class MesonTestLog:
    """meson-logs/testlog.json: one JSON object per test executable run."""

    name = 'meson'

    # Results of a whole test (meson's TestResult values) that mean the
    # executable itself did not finish properly.
    _BROKEN = {'FAIL', 'ERROR', 'TIMEOUT', 'INTERRUPT', 'UNEXPECTEDPASS'}

    def collect(self, build_dir: str) -> List[FileResult]:
        results = []
        for entry in read_test_log(build_dir):
            if isinstance(entry, FileResult):
                results.append(entry)
            elif test_suite(entry) != JUnitReports.SUITE:
                results.append(self._entry_result(entry))
        return results

    def _entry_result(self, entry: dict) -> FileResult:
        name = entry.get('name', '?')
        outcome = str(entry.get('result', '')).upper()
        returncode = entry.get('returncode')
        tap = parse_tap(name, entry.get('stdout') or '')
        if tap is None:
            # No TAP: a plain exit-code test, or a TAP executable that died
            # before printing anything.  Either way it is one case.
            result = FileResult(name)
            if outcome == 'OK':
                result.passed += 1
            elif outcome == 'SKIP':
                result.skipped += 1
            else:
                result.fail(f'{outcome.lower() or "no result"} '
                            f'(exit status {returncode}) with no test '
                            'report')
            return result
        if tap.failed == 0 and (outcome in self._BROKEN or
                                (returncode not in (0, None) and
                                 outcome != 'SKIP')):
            # Every reported case passed, yet the executable failed: it
            # crashed after its report, timed out, or leaked at exit.
            tap.fail(f'executable ended {outcome.lower()} '
                     f'(exit status {returncode}) after its cases passed')
        if tap.passed + tap.failed + tap.skipped == 0:
            if outcome in ('OK', 'SKIP'):
                tap.skipped += 1
            else:
                tap.fail(f'{outcome.lower()} with no test cases')
        return tap


class JUnitReports:
    """JUnit XML reports of the tests meson runs in the suite 'junit'.

    Each such test writes its reports (the legacy XML format every JUnit
    launcher writes, one <testcase> per case, parameterized invocations
    included) to BUILD_DIR/junit-reports/<test name>/, emptied before each
    run.  Every <testcase> is a case: passed, failed (<failure> or
    <error>) or skipped (<skipped>).  A test that meson ran but that left no
    report, or that failed although every case in its report passed (the
    JVM died, timed out or exited non-zero after reporting), counts as a
    failure, as for TAP.
    """

    name = 'junit'
    SUITE = 'junit'

    def collect(self, build_dir: str) -> List[FileResult]:
        results = []
        for entry in read_test_log(build_dir):
            if isinstance(entry, FileResult) or test_suite(entry) != self.SUITE:
                continue
            results.append(self._entry_result(build_dir, entry))
        return results

    def _entry_result(self, build_dir: str, entry: dict) -> FileResult:
        name = str(entry.get('name', '?'))
        outcome = str(entry.get('result', '')).upper()
        returncode = entry.get('returncode')
        reports = sorted(glob.glob(os.path.join(
            build_dir, 'junit-reports', test_short_name(entry), '*.xml')))
        result = FileResult(name)
        for report in reports:
            self._count_report(report, result)
        if not reports:
            if outcome == 'SKIP':
                result.skipped += 1
            else:
                result.fail(f'{outcome.lower() or "no result"} (exit status '
                            f'{returncode}) and no JUnit report')
        elif result.failed == 0 and outcome != 'OK':
            result.fail(f'launcher ended {outcome.lower()} (exit status '
                        f'{returncode}) after its cases passed')
        elif result.passed + result.failed + result.skipped == 0:
            result.fail('the JUnit report holds no test cases')
        return result

    @staticmethod
    def _count_report(path: str, result: FileResult) -> None:
        try:
            root = ElementTree.parse(path).getroot()
        except (ElementTree.ParseError, OSError) as error:
            result.fail(f'{os.path.basename(path)}: unreadable report: {error}')
            return
        for case in root.iter('testcase'):
            label = f"{case.get('classname', '?')}.{case.get('name', '?')}"
            problem = case.find('failure')
            if problem is None:
                problem = case.find('error')
            if problem is not None:
                message = (problem.get('message') or problem.get('type') or
                           '').strip().splitlines()
                result.fail(label + (f': {message[0]}' if message else ''))
            elif case.find('skipped') is not None:
                result.skipped += 1
            else:
                result.passed += 1


SOURCES = [MesonTestLog(), JUnitReports()]


# ---- report -------------------------------------------------------------------

def tally(build_dirs: List[str], sources: Iterable = SOURCES) -> int:
    results: List[FileResult] = []
    for build_dir in build_dirs:
        for source in sources:
            found = source.collect(build_dir)
            # The same tests run in several builds (plain, sanitized) count
            # once per build, and say which build a failure came from.
            if len(build_dirs) > 1:
                label = os.path.basename(os.path.normpath(build_dir))
                for result in found:
                    result.name = f'{label}: {result.name}'
            results.extend(found)

    passed = sum(r.passed for r in results)
    failed = sum(r.failed for r in results)
    skipped = sum(r.skipped for r in results)

    for result in results:
        if result.failed:
            print(f'FAILED {result.name}: {result.failed} case(s)')
            for failure in result.failures:
                print(f'  - {failure}')
    if not results:
        print(f'no test results found under {", ".join(build_dirs)}',
              file=sys.stderr)

    summary = f'{passed} passed, {failed} failed'
    if skipped:
        summary += f', {skipped} skipped'
    print(summary)
    return 1 if failed or passed == 0 else 0


def main(argv: List[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    return tally(argv[1:])


if __name__ == '__main__':
    sys.exit(main(sys.argv))
