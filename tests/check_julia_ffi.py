#!/usr/bin/env python3
"""Checks every foreign call of the Julia binding against the C API.

No Julia runtime can be installed on the machines that build Weft, so the
Julia package (bindings/julia/Weft.jl) is checked by reading it.  For every
`@ccall` (and `ccall`, should one appear) in its src/ and examples/:

  (a) the symbol is exported by the built libweft (its dynamic symbol table,
      read from the ELF file: no binutils needed);
  (b) it is declared in the user-API headers (the ones abi/weft/weft.h
      includes);
  (c) the number of arguments matches the C prototype;
  (d) each argument's Julia type matches the C type;
  (e) the return type matches.

Every Julia struct marked `# C: <struct>` on the line before it is compared
with that C struct field by field (names in order, types, and the layout:
offsets and size computed for the Julia fields against the C compiler's
offsetof/sizeof when --cc is given, else against the header's types), and
every constructor call of such a struct with a `struct_size` field must set
it from `sizeof` of that struct.  Every `@cfunction` marked `# C: <typedef>`
is compared with that function-pointer type.  And rules that keep the
package safe by construction: every call names the library constant whose
value is libweft's soname; every weft_status* a call returns goes straight
into `check(...)` (which destroys it); every `pointer(x)` lies inside a
`GC.@preserve` that names x; finalizers call only the C release functions.

Output is TAP: one line per call site, struct, callback and rule, then the
plan.  With --self-test it then mutates the package in memory in ways that
must fail (a wrong argument type, a dropped argument, a wrong return type,
an unknown symbol, swapped struct fields, ...) and reports one line per
mutation that the check caught.  Exit status 0 when everything passed.

Reading the headers, the library and the Julia sources is in
julia_ffi_read.py beside this script; matching them is here.

Usage: check_julia_ffi.py --headers ABI_DIR --library LIBWEFT
                          --package PACKAGE_DIR [--cc "CC ARGS"] [--self-test]
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

# The reader sits beside this script; the build runs it from the source
# tree, which must not gain a __pycache__.
sys.dont_write_bytecode = True
from julia_ffi_read import (  # noqa: E402
                            CApi, CType, SourceFile, _match_close, _split_args,
                            blank_strings_and_comments, parse_headers,
                            read_callbacks, read_calls, read_library,
                            read_structs)

# ---- Matching types ------------------------------------------------------------

_SCALARS = {
    'int32_t': {'Int32', 'Cint'},
    'int64_t': {'Int64'},
    'size_t': {'Csize_t', 'UInt'},
    'uint32_t': {'UInt32', 'Cuint'},
    'uint64_t': {'UInt64'},
    'double': {'Cdouble', 'Float64'},
    'char': {'UInt8', 'Cchar'},
    'void': {'Cvoid'},
}
_VOID_RETURN = {'Cvoid', 'Nothing'}

# Sizes and alignments on x86-64 and aarch64 Linux (LP64).
_JULIA_LAYOUT = {
    'Int32': 4, 'Cint': 4, 'UInt32': 4, 'Cuint': 4, 'Int64': 8, 'UInt64': 8,
    'Csize_t': 8, 'UInt': 8, 'Cdouble': 8, 'Float64': 8, 'Cstring': 8,
    'UInt8': 1, 'Cchar': 1,
}
_C_LAYOUT = {'int32_t': 4, 'uint32_t': 4, 'int64_t': 8, 'uint64_t': 8,
             'size_t': 8, 'double': 8, 'char': 1}


def _parse_jtype(t: str) -> Tuple[str, Optional[str]]:
    m = re.fullmatch(r'(\w+)\{(.*)\}', t)
    return (m.group(1), m.group(2)) if m else (t, None)


class TypeMatcher:
    def __init__(self, api: CApi, mirrors: Dict[str, str]):
        self.api = api
        self.mirrors = mirrors          # Julia struct name -> C struct name

    def mismatch(self, c: CType, j: str, where: str) -> Optional[str]:
        """None when Julia type `j` passes C type `c` faithfully; else why
        not.  `where` is 'argument', 'return' or 'field'."""
        head, inner = _parse_jtype(j)
        if c.depth == 0:
            if where == 'return' and c.base == 'void':
                return None if j in _VOID_RETURN else 'C returns void'
            if c.base in self.api.enums:
                return None if j in _SCALARS['int32_t'] else \
                    f'enum {c.base} is int32 (Int32 or Cint)'
            if c.base in self.api.fnptrs:
                return None if j == 'Ptr{Cvoid}' else \
                    f'function pointer {c.base} is Ptr{{Cvoid}}'
            if c.base in self.api.structs:
                if self.mirrors.get(j) == c.base:
                    return None
                return f'struct {c.base} by value needs its `# C: {c.base}` mirror'
            if c.base in self.api.opaque:
                return None if j == 'Cvoid' else f'opaque {c.base} is Cvoid'
            if c.base in _SCALARS:
                if c.base == 'void' and where != 'pointee':
                    return 'void is no value'
                return None if j in _SCALARS[c.base] else \
                    f'{c.base} is one of {sorted(_SCALARS[c.base])}'
            return f'no Julia mapping for C type {c.base}'
        if c.base == 'char' and c.depth == 1 and j == 'Cstring':
            return None
        allowed = ('Ptr', 'Ref') if where == 'argument' else ('Ptr',)
        if head not in allowed or inner is None:
            return f'a C pointer is {" or ".join(h + "{...}" for h in allowed)}'
        why = self.mismatch(CType(c.base, c.depth - 1), inner, 'pointee')
        return None if why is None else f'in {j}: {why}'

    def describe(self, c: CType) -> str:
        return str(c)


def type_problems(matcher: 'TypeMatcher', items, where: str) -> List[str]:
    """Mismatches among (label, Julia type or None, C type) triples."""
    problems = []
    for label, jtype, ctype in items:
        if jtype is None:
            problems.append(f'{label} has no ::Type')
            continue
        why = matcher.mismatch(ctype, jtype, where)
        if why:
            problems.append(f'{label}: Julia {jtype} for C {ctype}: {why}')
    return problems


def _align(offset: int, alignment: int) -> int:
    return (offset + alignment - 1) // alignment * alignment


def julia_layout(fields: List[Tuple[str, str]], mirrors_layout) -> Tuple[List[int], int]:
    """Offsets and size of an isbits Julia struct (C rules, as Julia uses)."""
    offsets, offset, widest = [], 0, 1
    for _, t in fields:
        head, _ = _parse_jtype(t)
        if head == 'Ptr':
            size = 8
        elif t in _JULIA_LAYOUT:
            size = _JULIA_LAYOUT[t]
        elif t in mirrors_layout:
            size = mirrors_layout[t]
        else:
            size = 0
        alignment = min(size, 8) or 1
        offset = _align(offset, alignment)
        offsets.append(offset)
        offset += size
        widest = max(widest, alignment)
    return offsets, _align(offset, widest)


def c_layout_from_header(api: CApi, c_name: str) -> Tuple[List[int], int]:
    offsets, offset, widest = [], 0, 1
    for _, c in api.structs[c_name]:
        if c.depth:
            size = 8
        elif c.base in api.enums:
            size = 4
        else:
            size = _C_LAYOUT.get(c.base, 0)
        offset = _align(offset, size or 1)
        offsets.append(offset)
        offset += size
        widest = max(widest, size or 1)
    return offsets, _align(offset, widest)


def c_layout_from_compiler(cc: List[str], abi_dir: str,
                           names: List[str], api: CApi) -> Dict[str, Tuple[List[int], int]]:
    """sizeof and offsetof of each struct as the C compiler lays it out."""
    lines = ['#include <stddef.h>', '#include <stdio.h>',
             '#include "weft/weft.h"', 'int main(void) {']
    for name in names:
        lines.append(f'  printf("{name} %zu", sizeof({name}));')
        for fname, _ in api.structs[name]:
            lines.append(f'  printf(" %zu", offsetof({name}, {fname}));')
        lines.append('  printf("\\n");')
    lines += ['  return 0;', '}']
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, 'layout.c')
        exe = os.path.join(tmp, 'layout')
        with open(source, 'w', encoding='utf-8') as f:
            f.write('\n'.join(lines) + '\n')
        subprocess.run(cc + ['-I', abi_dir, source, '-o', exe], check=True,
                       capture_output=True)
        out = subprocess.run([exe], check=True, capture_output=True,
                             text=True).stdout
    layouts = {}
    for line in out.splitlines():
        parts = line.split()
        layouts[parts[0]] = ([int(p) for p in parts[2:]], int(parts[1]))
    return layouts


# ---- The check -----------------------------------------------------------------

RELEASE_FUNCTIONS = {'weft_tensor_destroy', 'weft_session_destroy',
                     'weft_graph_destroy', 'weft_run_metadata_destroy',
                     'weft_model_destroy', 'weft_dataset_destroy',
                     'weft_summary_writer_destroy'}


@dataclass
class Report:
    lines: List[Tuple[bool, str]] = field(default_factory=list)

    def add(self, ok: bool, text: str) -> None:
        self.lines.append((ok, text))

    def outcome(self, where: str, problems: List[str], success: str) -> None:
        """One line: `where` with its problems, or with `success`."""
        if problems:
            self.add(False, f'{where}: ' + '; '.join(problems))
        else:
            self.add(True, f'{where}: {success}')

    @property
    def failures(self) -> List[str]:
        return [text for ok, text in self.lines if not ok]


@dataclass
class Environment:
    api: CApi
    headers: List[str]
    symbols: set
    soname: Optional[str]
    compiler_layouts: Optional[Dict[str, Tuple[List[int], int]]]


def load_sources(package: str) -> Dict[str, str]:
    sources = {}
    for folder in ('src', 'examples'):
        root = os.path.join(package, folder)
        for dirpath, _, files in os.walk(root):
            for name in sorted(files):
                if name.endswith('.jl'):
                    path = os.path.join(dirpath, name)
                    with open(path, encoding='utf-8') as f:
                        sources[os.path.relpath(path, package)] = f.read()
    return dict(sorted(sources.items()))


def function_bodies(src: SourceFile, name: str) -> List[str]:
    """The code of every method `name` defines: `function name(...) ...
    end`, or `name(...) = ...` with its more indented continuation lines."""
    lines = src.code.split('\n')
    bodies = []
    for k, line in enumerate(lines):
        m = re.match(r'(\s*)(?:function\s+)?' + re.escape(name) +
                     r'\s*\([^)]*\)(?:\s*where\s*\{[^}]*\})?\s*(=|$)', line)
        if not m or (m.group(2) == '' and 'function' not in line):
            continue
        indent = len(m.group(1))
        body = [line[m.end():]]
        for other in lines[k + 1:]:
            if other.strip() and len(other) - len(other.lstrip()) <= indent:
                break
            body.append(other)
        bodies.append('\n'.join(body))
    return bodies


def _preserved_names(line: str) -> List[str]:
    m = re.search(r'GC\.@preserve\s+(.*)', line)
    if not m:
        return []
    names = []
    for word in m.group(1).split():
        if word == 'begin' or not re.fullmatch(r'[A-Za-z_]\w*', word):
            break
        names.append(word)
    return names


def check_package(sources: Dict[str, str], env: Environment) -> Report:
    report = Report()
    api = env.api
    files = [SourceFile(path, text, blank_strings_and_comments(text))
             for path, text in sources.items()]

    structs = [s for f in files for s in read_structs(f)]
    mirrors = {s.name: s.c_name for s in structs}
    matcher = TypeMatcher(api, mirrors)
    calls = [c for f in files for c in read_calls(f)]
    callbacks = [c for f in files for c in read_callbacks(f)]

    # -- each foreign call: (a) to (e)
    for call in calls:
        where = f'{call.name} at {call.file}:{call.line}'
        if call.error:
            report.add(False, f'{where}: cannot read the call: {call.error}')
            continue
        problems = []
        if call.name not in env.symbols:
            problems.append('not exported by libweft')
        proto = api.functions.get(call.name)
        if proto is None:
            problems.append('not declared in the user-API headers '
                            f'({", ".join(env.headers)})')
        else:
            if len(call.args) != len(proto.params):
                problems.append(f'{len(call.args)} arguments, the C prototype '
                                f'has {len(proto.params)}')
            problems += type_problems(matcher, [
                (f'argument {k} ({pname})', jtype, ctype)
                for k, ((_, jtype), (pname, ctype)) in enumerate(
                    zip(call.args, proto.params), 1)], 'argument')
            problems += type_problems(
                matcher, [('return type', call.ret, proto.ret)], 'return')
        report.outcome(where, problems, (
            f'exported, declared in {proto.header}, {len(call.args)} '
            'argument(s) and the return type match') if proto else '')

    # -- mirrored structs
    mirror_sizes: Dict[str, int] = {}
    for s in structs:
        _, size = julia_layout(s.fields, mirror_sizes)
        mirror_sizes[s.name] = size
    for s in structs:
        where = f'struct {s.name} ({s.file}:{s.line}) mirrors {s.c_name}'
        problems = []
        if s.c_name not in api.structs:
            report.add(False, f'{where}: no such struct in the headers')
            continue
        if s.mutable:
            problems.append('a mirror must be an immutable (isbits) struct')
        c_fields = api.structs[s.c_name]
        j_names = [n for n, _ in s.fields]
        c_names = [n for n, _ in c_fields]
        if j_names != c_names:
            problems.append(f'fields {j_names}, C has {c_names}')
        else:
            problems += type_problems(matcher, [
                (f'field {fname}', jtype, ctype)
                for (fname, jtype), (_, ctype) in zip(s.fields, c_fields)],
                'field')
        j_offsets, j_size = julia_layout(s.fields, mirror_sizes)
        if env.compiler_layouts and s.c_name in env.compiler_layouts:
            c_offsets, c_size = env.compiler_layouts[s.c_name]
            source = 'the C compiler'
        else:
            c_offsets, c_size = c_layout_from_header(api, s.c_name)
            source = 'the header'
        if (j_offsets, j_size) != (c_offsets, c_size):
            problems.append(f'layout: Julia offsets {j_offsets} size {j_size}, '
                            f'{source} says {c_offsets} size {c_size}')
        report.outcome(where, problems, f'{len(s.fields)} fields, types and '
                       f'layout ({j_size} bytes, per {source}) match')

    # -- struct_size set from sizeof in every constructor call
    for s in structs:
        if not s.fields or s.fields[0][0] != 'struct_size':
            continue
        sites, problems = 0, []
        for f in files:
            for m in re.finditer(r'(?<![\w.{])' + re.escape(s.name) + r'\(',
                                 f.code):
                before = f.code[max(0, m.start() - 20):m.start()]
                if re.search(r'(struct|function)\s+$', before):
                    continue
                sites += 1
                close = _match_close(f.code, m.end() - 1)
                args = _split_args(f.code[m.end():close - 1])
                line = f.line_of(m.start())
                if not args or re.sub(r'\s+', '', args[0]) != f'sizeof({s.name})':
                    problems.append(f'{f.path}:{line} sets struct_size to '
                                    f'{args[0] if args else "nothing"}')
                if len(args) != len(s.fields):
                    problems.append(f'{f.path}:{line} passes {len(args)} '
                                    f'values for {len(s.fields)} fields')
        if sites == 0:
            problems.append('never constructed, so nothing sets struct_size')
        report.outcome(f'struct_size of {s.name} is sizeof({s.name})', problems,
                       f'in all {sites} constructor call(s)')

    # -- callbacks
    for cb in callbacks:
        where = f'@cfunction at {cb.file}:{cb.line}'
        fn = api.fnptrs.get(cb.c_name)
        if fn is None:
            report.add(False, f'{where}: needs a `C: <function pointer type>` '
                              f'comment naming a typedef of the headers '
                              f'(found {cb.c_name or "none"})')
            continue
        problems = []
        if len(cb.params) != len(fn.params):
            problems.append(f'{len(cb.params)} parameters, {cb.c_name} has '
                            f'{len(fn.params)}')
        problems += type_problems(matcher, [
            (f'parameter {k} ({pname})', jtype, ctype)
            for k, (jtype, (pname, ctype)) in enumerate(
                zip(cb.params, fn.params), 1)], 'field')
        problems += type_problems(matcher, [('return', cb.ret, fn.ret)], 'return')
        report.outcome(f'{where} as {cb.c_name}', problems, 'the types match')

    # -- rule: one library constant, libweft's soname
    problems = []
    consts = [m for f in files for m in
              re.finditer(r'^const\s+libweft\s*=\s*"([^"]*)"', f.text, re.M)]
    if len(consts) != 1:
        problems.append(f'{len(consts)} definitions of `const libweft = "..."`')
    elif env.soname and consts[0].group(1) != env.soname:
        problems.append(f'libweft is "{consts[0].group(1)}", the library\'s '
                        f'soname is "{env.soname}"')
    others = sorted({c.library for c in calls if c.library and c.library != 'libweft'})
    if others:
        problems.append(f'calls name other libraries: {others}')
    report.add(not problems, 'rule: every call goes to libweft, whose soname '
               f'is {env.soname}' + (': ' + '; '.join(problems) if problems else ''))

    # -- rule: statuses go straight into check()
    problems = []
    for call in calls:
        proto = api.functions.get(call.name)
        if proto is None or proto.ret != CType('weft_status', 1):
            continue
        f = next(x for x in files if x.path == call.file)
        before = f.code[:call.offset].rstrip()
        # A status made for C (a callback's error, which the C caller
        # destroys) is handed straight back with `return`.
        if call.name == 'weft_status_create' and re.search(r'\breturn$', before):
            continue
        if not re.search(r'(?<![\w.])check\($', before):
            problems.append(f'{call.name} at {call.file}:{call.line}')
    report.add(not problems, 'rule: every weft_status* goes straight into '
               'check(), which destroys it' +
               (': not so for ' + ', '.join(problems) if problems else ''))

    # -- rule: pointer(x) inside GC.@preserve x
    problems = []
    for f in files:
        lines = f.code.split('\n')
        for m in re.finditer(r'(?<![\w.])pointer\(\s*(\w+)\s*\)', f.code):
            number = f.line_of(m.start())
            name = m.group(1)
            indent = len(lines[number - 1]) - len(lines[number - 1].lstrip())
            preserved = False
            for k in range(number - 1, -1, -1):
                line = lines[k]
                if not line.strip():
                    continue
                level = len(line) - len(line.lstrip())
                if name in _preserved_names(line) and (k == number - 1 or level < indent):
                    preserved = True
                    break
                if k != number - 1 and level < indent:
                    indent = level  # leaving a block: only its openers count
                    if level == 0:
                        break
            if not preserved:
                problems.append(f'pointer({name}) at {f.path}:{number}')
    report.add(not problems, 'rule: every pointer(x) lies inside a '
               'GC.@preserve naming x' +
               (': not so for ' + ', '.join(problems) if problems else ''))

    # -- rule: finalizers only call the C release functions
    problems, finalizers = [], 0
    for f in files:
        for m in re.finditer(r'(?<![\w.])finalizer\(\s*(\w+)\s*,', f.code):
            finalizers += 1
            bodies = [b for g in files for b in function_bodies(g, m.group(1))]
            where = f'{m.group(1)} ({f.path}:{f.line_of(m.start())})'
            if not bodies:
                problems.append(f'{where}: its definition was not found')
            for body in bodies:
                called = set(re.findall(r'@ccall\s+\w+\.(\w+)', body))
                if not called or not called <= RELEASE_FUNCTIONS:
                    problems.append(f'a method of {where} calls '
                                    f'{sorted(called) or "no C function"}')
    if re.search(r'(?<![\w.])finalizer\(\s*(?:x\s*->|function|\w+\s*->)',
                 ''.join(f.code for f in files)):
        problems.append('an anonymous finalizer (name the release function)')
    report.add(not problems and finalizers > 0,
               f'rule: the {finalizers} finalizer(s) call only '
               f'{", ".join(sorted(RELEASE_FUNCTIONS))}' +
               (': ' + '; '.join(problems) if problems else ''))
    return report


# ---- Self-test ------------------------------------------------------------------

# (description, file, text to replace, replacement, what the failure must say)
MUTATIONS = [
    ('an argument of the wrong type', 'src/tensor.jl',
     'Int32(dt)::Int32, dims::Ptr{Int64}', 'Int32(dt)::Int32, dims::Ptr{Int32}',
     'argument 2 (dims)'),
    ('a dropped argument', 'src/tensor.jl',
     'shape::Ptr{Int64}, Int32(length(dims))::Int32,', 'shape::Ptr{Int64},',
     '3 arguments, the C prototype has 4'),
    ('a wrong return type', 'src/tensor.jl',
     'weft_tensor_rank(t::Ptr{Cvoid})::Int32', 'weft_tensor_rank(t::Ptr{Cvoid})::Int64',
     'return type'),
    ('a function libweft does not export', 'src/tensor.jl',
     'libweft.weft_tensor_byte_size(', 'libweft.weft_tensor_bytes(',
     'not exported by libweft'),
    ('a plain pointer for a pointer to pointer', 'src/graph.jl',
     'check(@ccall libweft.weft_graph_create(out::Ptr{Ptr{Cvoid}})',
     'check(@ccall libweft.weft_graph_create(out::Ptr{Cvoid})', 'argument 1 (out_graph)'),
    ('a by-value weft_output passed as a pointer', 'src/graph.jl',
     'weft_op_add_input(b::Ptr{Cvoid}, WeftOutput(o)::WeftOutput)',
     'weft_op_add_input(b::Ptr{Cvoid}, WeftOutput(o)::Ptr{WeftOutput})',
     'argument 2 (input)'),
    ('swapped struct fields', 'src/capi.jl',
     '    devices::Ptr{UInt8}\n    inter_op_threads::Int32\n',
     '    inter_op_threads::Int32\n    devices::Ptr{UInt8}\n',
     'fields ['),
    ('a struct field of the wrong width', 'src/capi.jl',
     '    node::Ptr{Cvoid}\n    index::Int32\n', '    node::Ptr{Cvoid}\n    index::Int64\n',
     'field index'),
    ('struct_size not from sizeof', 'src/session.jl',
     'sizeof(SessionOptionsC),', '48,', 'sets struct_size to 48'),
    ('a status not checked', 'src/graph.jl',
     'check(@ccall libweft.weft_graph_create(', '(@ccall libweft.weft_graph_create(',
     'weft_graph_create at'),
    ('a pointer outside GC.@preserve', 'src/tensor.jl',
     'GC.@preserve A check(@ccall libweft.weft_tensor_create_copy(',
     'check(@ccall libweft.weft_tensor_create_copy(', 'pointer(A) at'),
    ('a finalizer calling more than a release function', 'src/tensor.jl',
     '    @ccall libweft.weft_tensor_destroy(take_pointer!(t)::Ptr{Cvoid})::Cvoid\n',
     '    @ccall libweft.weft_tensor_destroy(take_pointer!(t)::Ptr{Cvoid})::Cvoid\n'
     '    @ccall libweft.weft_status_destroy(C_NULL::Ptr{Cvoid})::Cvoid\n',
     'weft_status_destroy'),
    ('a callback of the wrong signature', 'src/tensor.jl',
     '(Ptr{Cvoid}, Csize_t, Ptr{Cvoid})', '(Ptr{Cvoid}, Ptr{Cvoid})',
     '2 parameters, weft_deleter has 3'),
    ('a list of C strings passed as one string', 'src/dataset.jl',
     'pointers::Ptr{Ptr{UInt8}}', 'pointers::Ptr{UInt8}', 'argument 1 (paths)'),
    ('the wrong soname', 'src/capi.jl',
     'const libweft = "libweft.so.1"', 'const libweft = "libweft.so.0"',
     'soname is'),
]


def self_test(sources: Dict[str, str], env: Environment) -> Report:
    report = Report()
    baseline = set(check_package(sources, env).failures)
    for description, path, old, new, expected in MUTATIONS:
        text = sources.get(path, '')
        if old not in text:
            report.add(False, f'self-test: {description}: the text to mutate is '
                              f'no longer in {path}: {old!r}')
            continue
        mutated = dict(sources)
        mutated[path] = text.replace(old, new, 1)
        failures = check_package(mutated, env).failures
        caught = [f for f in failures if expected in f and f not in baseline]
        if caught:
            report.add(True, f'self-test: {description} is caught '
                             f'({caught[0][:120]})')
        else:
            report.add(False, f'self-test: {description} is NOT caught '
                              f'(expected a failure mentioning {expected!r}; '
                              f'failures: {failures})')
    return report


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--headers', required=True, help='the abi/ directory')
    parser.add_argument('--library', required=True, help='the built libweft')
    parser.add_argument('--package', required=True, help='bindings/julia/Weft.jl')
    parser.add_argument('--cc', default='', help='C compiler command for the layout check')
    parser.add_argument('--self-test', action='store_true')
    args = parser.parse_args(argv[1:])

    api, headers = parse_headers(args.headers)
    layouts = None
    sources = load_sources(args.package)
    if args.cc:
        mirrored = sorted({s.c_name for path, text in sources.items()
                           for s in read_structs(SourceFile(
                               path, text, blank_strings_and_comments(text)))
                           if s.c_name in api.structs})
        layouts = c_layout_from_compiler(shlex.split(args.cc), args.headers,
                                         mirrored, api)
    symbols, soname = read_library(args.library)
    env = Environment(api, headers, symbols, soname, layouts)

    report = check_package(sources, env)
    if args.self_test:
        report.lines += self_test(sources, env).lines
    print('TAP version 13')
    for number, (ok, text) in enumerate(report.lines, 1):
        # '#' starts a TAP directive: keep it out of descriptions.
        text = text.replace('\n', ' ').replace('#', 'No.')
        print(f'{"ok" if ok else "not ok"} {number} - {text}')
    print(f'1..{len(report.lines)}')
    used = {c.name for f in sources.values()
            for c in read_calls(SourceFile('', f, blank_strings_and_comments(f)))}
    print(f'# {len(sources)} Julia files, {len(used)} of the {len(api.functions)} '
          f'C functions of {len(headers)} headers called; '
          f'{len(env.symbols)} functions exported by libweft')
    print('# not called: ' + ', '.join(sorted(set(api.functions) - used)))
    return 1 if report.failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
