#!/usr/bin/env python3
# Instructions per node, per machine instruction, of one function: the
# executor's hot path without debug information.
#
#   valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file=a.out \
#       build/bench/executor_overhead 1 70
#   (the same with 20 into b.out)
#   bench/callgrind_per_node.py a.out b.out 62000 libweft HostInput
#
# prints the function's disassembly (objdump) with, for each instruction,
# its self cost in the first file minus the second, divided by DIVISOR
# (`1 70` and `1 20` differ by 62 runs of the 1,000-node chain), and the
# total.  OBJ and FUNC are substrings of the object's path and the
# function's (demangled) name.  The objects on disk must be the ones
# profiled: after a rebuild the addresses no longer match.
import re, sys, subprocess, collections
def parse(path):
    cost = collections.defaultdict(float)  # (obj, fn, addr) -> Ir
    names = {'ob': {}, 'fn': {}, 'fl': {}}
    ob = fn = None; addr = 0; incall = False
    for line in open(path):
        line = line.rstrip('\n')
        m = re.match(r'^(ob|fn|fl|fi|fe|cob|cfn|cfi|cfl)=\((\d+)\)(?: (.*))?$', line)
        if m:
            kind, idx, name = m.groups()
            base = {'cob': 'ob', 'cfn': 'fn', 'cfi': 'fl', 'cfl': 'fl', 'fi': 'fl', 'fe': 'fl'}.get(kind, kind)
            if name is not None: names[base][idx] = name
            if kind == 'ob': ob = names['ob'][idx]
            elif kind == 'fn': fn = names['fn'][idx]
            continue
        if line.startswith('calls='):
            incall = True; continue
        m = re.match(r'^(0x[0-9a-f]+|\+\d+|-\d+|\*)\s+(\S+)\s+(\d+)', line)
        if m:
            a, _, c = m.groups()
            if a.startswith('0x'): addr = int(a, 16)
            elif a.startswith('+'): addr += int(a[1:])
            elif a.startswith('-'): addr -= int(a[1:])
            if incall: incall = False; continue  # inclusive call cost line
            cost[(ob, fn, addr)] += int(c)
    return cost
a = parse(sys.argv[1]); b = parse(sys.argv[2]); div = float(sys.argv[3])
obj, func = sys.argv[4], sys.argv[5]
rows = collections.defaultdict(float)
for k, v in a.items():
    if obj in (k[0] or '') and func in (k[1] or ''):
        rows[k[2]] += (v - b.get(k, 0)) / div
if not rows: sys.exit('no match')
objpath = [k[0] for k in a if obj in (k[0] or '')][0]
lo, hi = min(rows), max(rows) + 16
dis = subprocess.run(['objdump', '-d', '--no-show-raw-insn', '-C', f'--start-address={lo:#x}', f'--stop-address={hi:#x}', objpath], capture_output=True, text=True).stdout
total = 0
for line in dis.splitlines():
    m = re.match(r'^\s+([0-9a-f]+):\s+(.*)', line)
    if not m: continue
    ad = int(m.group(1), 16)
    c = rows.get(ad, 0); total += c
    if c > 0.05: print(f'{c:6.2f} {ad:x} {m.group(2)[:100]}')
print('total', round(total, 1))
