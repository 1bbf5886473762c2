#!/usr/bin/env python3
"""The ABI guard's type check: the public headers' functions, with their
parameter and result types and every struct, enum and typedef they reach,
compared by abidiff (abigail-tools) with abi/weft-headers.abi.

libweft is built without debug information, so abidiff of the library
itself sees symbol names only (tests/abi_symbols.sh).  Here the compiler
lists every function the headers declare (gcc -aux-info), this script
writes a stub library defining each with its declared type (C2x unnamed
parameters, empty bodies), compiles it with -g and records it with abidw:
the record is the headers' ABI, types included.  A removed function, a
changed parameter or result type, a struct whose fields moved or changed,
an enum value renumbered: abidiff's "incompatible" bit fails the test.
Fields appended at a struct's end, which the ABI's rules allow (every
struct begins with struct_size), are suppressed (abi/appended.suppr), and
additions pass and are listed.

Prints TAP.  Usage:
  abi_headers.py BASELINE SUPPRESSIONS INCLUDE_DIR CC... [--update]
--update rewrites BASELINE (after a minor version appends to the ABI).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HEADERS = ("weft/weft.h", "weft/plugin.h")
DECL = re.compile(r"^/\* .*? \*/ extern (.*?)\b(weft_\w+) \((.*)\);$")


def stub_source(aux):
    """C2x source defining every weft_ function of `aux` (gcc -aux-info)."""
    lines = ["#include \"%s\"" % h for h in HEADERS]
    seen = set()
    for raw in aux.splitlines():
        m = DECL.match(raw.strip())
        if not m or m.group(2) in seen:
            continue
        result, name, params = m.group(1).strip(), m.group(2), m.group(3)
        seen.add(name)
        # A macro of the same name (weft_session_options_init) must not
        # expand here: the parentheses keep it out.
        head = "%s (%s)(%s)" % (result, name, params)
        if result == "void":
            lines.append("%s {}" % head)
        else:
            lines.append("%s { static %s r; return r; }" % (head, result))
    return "\n".join(lines) + "\n", len(seen)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def main():
    args = sys.argv[1:]
    update = "--update" in args
    args = [a for a in args if a != "--update"]
    baseline, suppressions, include, cc = args[0], args[1], args[2], args[3:]
    print("1..1")
    for tool in ("abidw", "abidiff"):
        if shutil.which(tool) is None:
            print("ok 1 # SKIP %s not installed (Debian package "
                  "abigail-tools)" % tool)
            return 0
    with tempfile.TemporaryDirectory() as tmp:
        probe = os.path.join(tmp, "probe.c")
        with open(probe, "w") as f:
            f.write("".join("#include \"%s\"\n" % h for h in HEADERS))
        aux = os.path.join(tmp, "aux.txt")
        r = run(cc + ["-std=c11", "-I", include, "-aux-info", aux,
                      "-fsyntax-only", probe])
        if r.returncode != 0:
            print("not ok 1 - the headers do not compile\n# " +
                  r.stderr.replace("\n", "\n# "))
            return 1
        source, count = stub_source(open(aux).read())
        stub_c = os.path.join(tmp, "stub.c")
        with open(stub_c, "w") as f:
            f.write(source)
        stub = os.path.join(tmp, "libweft-headers.so")
        r = run(cc + ["-std=c2x", "-g", "-O0", "-shared", "-fPIC", "-I",
                      include, "-o", stub, stub_c])
        if r.returncode != 0:
            print("not ok 1 - the stub of %d functions does not compile\n# "
                  % count + r.stderr.replace("\n", "\n# "))
            return 1
        record = os.path.join(tmp, "now.abi")
        r = run(["abidw", "--no-show-locs", "--no-corpus-path",
                 "--out-file", record, stub])
        if r.returncode != 0:
            print("not ok 1 - abidw failed\n# " + r.stderr)
            return 1
        if update:
            shutil.copyfile(record, baseline)
            print("ok 1 - %s rewritten (%d functions)" % (baseline, count))
            return 0
        r = run(["abidiff", "--no-show-locs", "--suppressions", suppressions,
                 baseline, record])
        out = r.stdout + r.stderr
        for line in out.splitlines():
            print("# " + line)
        # abidiff marks a changed type as an ABI change (bit 4), the same as
        # an addition; its summary lines tell them apart: anything removed
        # or changed (not filtered out by the suppressions) is a break.
        broken = 0
        for m in re.finditer(r"changes summary: (\d+) Removed[^,]*, "
                             r"(?:(\d+) Changed[^,]*, )?", out):
            broken += int(m.group(1)) + int(m.group(2) or 0)
        if r.returncode & 8 or broken:
            print("not ok 1 - the public headers removed or changed part of "
                  "the 1.x ABI")
            return 1
        if r.returncode & 3:
            print("not ok 1 - abidiff could not compare (exit status %d)" %
                  r.returncode)
            return 1
        print("ok 1 - the headers' %d functions and their types keep the "
              "1.x ABI of %s" % (count, os.path.basename(baseline)))
        return 0


if __name__ == "__main__":
    sys.exit(main())
