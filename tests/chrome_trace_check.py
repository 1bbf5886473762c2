#!/usr/bin/env python3
"""Checks that a file is a Chrome trace as Weft writes one (run option
trace_level; `weft train --trace FILE`): JSON that Python's json module
reads, an object with a "traceEvents" array of complete events (ph "X":
name, ts and dur in microseconds, pid, tid, args with the op and bytes)
and metadata events (ph "M") naming every process (a device) and thread
(a lane) the complete events use; the complete events of one lane do not
overlap, which the viewers (chrome://tracing, Perfetto) need.

Usage: chrome_trace_check.py FILE [NUMBER_OF_X_EVENTS]; exit status 0 when
the file passes, else 1 with the reason on stderr.  test_cli.py imports
check().
"""
import json
import sys


def check(path, expect=None):
    """The complete events of the trace at `path`; AssertionError if the
    file is not a valid trace (with `expect`: of that many events)."""
    with open(path, encoding='utf-8') as f:
        doc = json.load(f)
    assert isinstance(doc, dict), 'not a JSON object'
    events = doc['traceEvents']
    assert isinstance(events, list), 'traceEvents is not an array'
    complete = [e for e in events if e.get('ph') == 'X']
    meta = [e for e in events if e.get('ph') == 'M']
    assert len(complete) + len(meta) == len(events), 'an unexpected ph'
    if expect is not None:
        assert len(complete) == expect, (len(complete), expect)
    processes = {e['pid']: e['args']['name'] for e in meta
                 if e['name'] == 'process_name'}
    threads = {(e['pid'], e['tid']): e['args']['name'] for e in meta
               if e['name'] == 'thread_name'}
    lanes = {}
    for e in complete:
        for key in ('name', 'ts', 'dur', 'pid', 'tid', 'args'):
            assert key in e, (key, e)
        assert isinstance(e['name'], str) and e['name'], e
        assert e['ts'] >= 0 and e['dur'] >= 0, e
        assert e['pid'] in processes, ('no process_name', e)
        assert (e['pid'], e['tid']) in threads, ('no thread_name', e)
        assert 'op' in e['args'] and e['args']['bytes'] >= 0, e
        lanes.setdefault((e['pid'], e['tid']), []).append(e)
    # Times are printed to the nanosecond: compare in integer nanoseconds.
    ns = lambda us: round(us * 1000)
    for lane, xs in lanes.items():
        xs.sort(key=lambda e: ns(e['ts']))
        for a, b in zip(xs, xs[1:]):
            assert ns(b['ts']) >= ns(a['ts']) + ns(a['dur']), \
                ('overlap in', processes[lane[0]], threads[lane], a, b)
    return complete


def main():
    try:
        check(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else None)
    except (AssertionError, KeyError, ValueError, OSError) as e:
        print('chrome_trace_check: %s: %r' % (sys.argv[1], e),
              file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
