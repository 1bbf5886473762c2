"""Reading both sides of the Julia binding's foreign-function boundary, for
tests/check_julia_ffi.py: the C user-API headers (prototypes, structs,
enums, opaque types, function-pointer types), libweft's exported functions
and soname (from its ELF file), and the Julia package's `@ccall`s,
`ccall`s, `# C:`-marked struct mirrors and `@cfunction`s.  Standard library
only."""

import os
import re
import struct
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

# ---- C side -------------------------------------------------------------------


@dataclass(frozen=True)
class CType:
    """A C type reduced to what the binding's types must match: the base
    name (const and `struct` dropped) and the number of `*`s."""
    base: str
    depth: int = 0

    def __str__(self) -> str:
        return self.base + '*' * self.depth


@dataclass
class CFunction:
    name: str
    ret: CType
    params: List[Tuple[str, CType]]
    header: str


@dataclass
class CApi:
    functions: Dict[str, CFunction] = field(default_factory=dict)
    structs: Dict[str, List[Tuple[str, CType]]] = field(default_factory=dict)
    opaque: set = field(default_factory=set)
    enums: set = field(default_factory=set)
    fnptrs: Dict[str, CFunction] = field(default_factory=dict)


_DEFINED_WHEN_COMPILING_C = {'__GNUC__', '__x86_64__', '__linux__'}


def _preprocess(text: str) -> str:
    """Drops comments and preprocessor lines, keeping only the branches a C
    compiler (GCC, not C++, not Windows) takes; macros are not expanded."""
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'),
                  text, flags=re.S)
    text = re.sub(r'//[^\n]*', '', text)
    text = re.sub(r'\\\n', ' ', text)
    out = []
    stack = []  # (taking this branch, some branch already taken)

    def evaluate(expr: str) -> bool:
        expr = re.sub(r'defined\s*\(\s*(\w+)\s*\)|defined\s+(\w+)',
                      lambda m: '1' if (m.group(1) or m.group(2))
                      in _DEFINED_WHEN_COMPILING_C else '0', expr)
        expr = expr.replace('&&', ' and ').replace('||', ' or ')
        expr = re.sub(r'!(?!=)', ' not ', expr)
        expr = re.sub(r'\b[A-Za-z_]\w*\b',
                      lambda m: m.group(0) if m.group(0) in ('and', 'or', 'not')
                      else '0', expr)
        try:
            return bool(eval(expr, {'__builtins__': {}}))  # noqa: S307
        except Exception:
            return False

    for line in text.split('\n'):
        stripped = line.strip()
        active = all(s[0] for s in stack)
        if stripped.startswith('#'):
            directive = stripped[1:].strip()
            word = directive.split()[0] if directive.split() else ''
            rest = directive[len(word):].strip()
            if word == 'ifdef':
                taking = rest in _DEFINED_WHEN_COMPILING_C
                stack.append([taking, taking])
            elif word == 'ifndef':
                taking = rest not in _DEFINED_WHEN_COMPILING_C
                stack.append([taking, taking])
            elif word == 'if':
                taking = evaluate(rest)
                stack.append([taking, taking])
            elif word == 'elif' and stack:
                taking = not stack[-1][1] and evaluate(rest)
                stack[-1] = [taking, stack[-1][1] or taking]
            elif word == 'else' and stack:
                stack[-1] = [not stack[-1][1], True]
            elif word == 'endif' and stack:
                stack.pop()
            out.append('')
            continue
        out.append(line if active else '')
    return '\n'.join(out)


_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|[A-Za-z_]\w*|\d\w*|\S')
_IGNORED_TOKENS = {'WEFT_API', 'WEFT_MUST_USE', 'WEFT_ENUM_BASE', 'extern',
                   '"C"'}


def _statements(text: str) -> List[List[str]]:
    """Top-level declarations: token lists ending at ';' outside braces, or
    at the closing brace of a function body (static inline helpers)."""
    tokens = [t for t in _TOKEN.findall(text)]
    statements, current, depth = [], [], 0
    for token in tokens:
        if token == '{' and depth == 0 and current[-2:] == ['extern', '"C"']:
            current = []  # extern "C" { ... }: its contents are top level
            continue
        if token == '}' and depth == 0:
            continue  # the close of extern "C"
        current.append(token)
        if token == '{':
            depth += 1
        elif token == '}':
            depth -= 1
            if depth == 0 and current and current[0] in ('static', 'inline'):
                statements.append(current)
                current = []
        elif token == ';' and depth == 0:
            statements.append(current[:-1])
            current = []
    return statements


def _split_top(tokens: List[str], separator: str) -> List[List[str]]:
    """Splits at `separator` outside brackets (C tokens, or characters)."""
    parts, current, depth = [], [], 0
    for token in tokens:
        if token in '({[':
            depth += 1
        elif token in ')}]':
            depth -= 1
        if token == separator and depth == 0:
            parts.append(current)
            current = []
        else:
            current.append(token)
    if current:
        parts.append(current)
    return parts


def _ctype(tokens: List[str]) -> CType:
    words = [t for t in tokens if t not in ('const', 'struct', 'enum',
                                            'volatile') and t != '*']
    return CType(' '.join(words), tokens.count('*'))


def _declarator(tokens: List[str]) -> Tuple[str, CType]:
    """`const int64_t* dims` -> ('dims', int64_t*)."""
    tokens = [t for t in tokens if t not in _IGNORED_TOKENS]
    if len(tokens) > 1 and re.match(r'^[A-Za-z_]\w*$', tokens[-1]) and \
            tokens[-1] not in ('const',):
        return tokens[-1], _ctype(tokens[:-1])
    return '', _ctype(tokens)


def _params(tokens: List[str]) -> List[Tuple[str, CType]]:
    if tokens == ['void'] or not tokens:
        return []
    return [_declarator(p) for p in _split_top(tokens, ',')]


def parse_headers(abi_dir: str) -> Tuple[CApi, List[str]]:
    """The user API: the headers abi/weft/weft.h includes."""
    api = CApi()
    with open(os.path.join(abi_dir, 'weft', 'weft.h'), encoding='utf-8') as f:
        headers = re.findall(r'#include\s+"weft/(\w+\.h)"', f.read())
    for header in headers:
        with open(os.path.join(abi_dir, 'weft', header), encoding='utf-8') as f:
            text = _preprocess(f.read())
        for st in _statements(text):
            st = [t for t in st if t not in ('WEFT_MUST_USE', 'WEFT_ENUM_BASE')]
            if not st:
                continue
            if st[0] == 'WEFT_API':
                body = st[1:]
                open_paren = body.index('(')
                name = body[open_paren - 1]
                ret = _ctype(body[:open_paren - 1])
                params = _params(body[open_paren + 1:-1])
                api.functions[name] = CFunction(name, ret, params, header)
            elif st[0] == 'typedef' and st[1] == 'struct' and '{' in st:
                inner = st[st.index('{') + 1:len(st) - 1 - st[::-1].index('}')]
                fields = [_declarator(f) for f in _split_top(inner, ';') if f]
                api.structs[st[-1]] = fields
            elif st[0] == 'typedef' and st[1] == 'struct' and len(st) == 4:
                api.opaque.add(st[-1])
            elif st[0] == 'typedef' and st[1] == 'enum':
                api.enums.add(st[-1])
            elif st[0] == 'typedef' and '(' in st and st[st.index('(') + 1] == '*':
                open_paren = st.index('(')
                name = st[open_paren + 2]
                ret = _ctype(st[1:open_paren])
                rest = st[open_paren + 4:]
                api.fnptrs[name] = CFunction(name, ret, _params(rest[1:-1]),
                                             header)
            elif st[0] == 'struct' and len(st) == 2:
                api.opaque.add(st[1])
    return api, headers


def _elf_sections(data: bytes) -> Optional[list]:
    """The section headers of a 64-bit little-endian ELF file (x86-64,
    aarch64), or None for anything else."""
    if data[:4] != b'\x7fELF' or data[4] != 2 or data[5] != 1:
        return None
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shentsize, shnum = struct.unpack_from('<HH', data, 0x3a)
    # (name, type, flags, addr, offset, size, link, info, align, entsize)
    return [struct.unpack_from('<IIQQQQIIQQ', data, shoff + i * shentsize)
            for i in range(shnum)]


def _c_string_at(data: bytes, start: int) -> str:
    return data[start:data.index(b'\0', start)].decode()


def read_library(library: str) -> Tuple[set, Optional[str]]:
    """The functions a shared library exports (its .dynsym: defined, global
    or weak, functions) and its DT_SONAME, read from the file itself."""
    with open(library, 'rb') as f:
        data = f.read()
    sections = _elf_sections(data)
    if sections is None:
        raise SystemExit(f'{library}: not a 64-bit little-endian ELF file')
    symbols, soname = set(), None
    for sh in sections:
        strtab = sections[sh[6]]
        if sh[1] == 11:  # SHT_DYNSYM
            for off in range(sh[4], sh[4] + sh[5], 24):
                name, info, _, shndx = struct.unpack_from('<IBBH', data, off)
                kind, binding = info & 0xf, info >> 4
                if shndx != 0 and kind in (2, 10) and binding in (1, 2):
                    symbols.add(_c_string_at(data, strtab[4] + name))
        elif sh[1] == 6:  # SHT_DYNAMIC
            for off in range(sh[4], sh[4] + sh[5], 16):
                tag, value = struct.unpack_from('<qQ', data, off)
                if tag == 14:  # DT_SONAME
                    soname = _c_string_at(data, strtab[4] + value)
    return symbols, soname


# ---- Julia side -----------------------------------------------------------------


def blank_strings_and_comments(text: str) -> str:
    """The source with every comment, string, command and character literal
    replaced by spaces (newlines kept), so offsets and lines still match."""
    out = list(text)
    i, n = 0, len(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != '\n':
                out[k] = ' '

    def skip_string(i: int, quote: str) -> int:
        """From the index after the opening quote to after the closing one;
        interpolations $( ... ) may hold strings of their own."""
        while i < n:
            if text.startswith(quote, i):
                return i + len(quote)
            c = text[i]
            if c == '\\':
                i += 2
                continue
            if c == '$' and i + 1 < n and text[i + 1] == '(':
                i = skip_code(i + 2, ')')
                continue
            i += 1
        return i

    def skip_code(i: int, closer: str) -> int:
        depth = 1
        while i < n:
            c = text[i]
            if c == '"':
                q = '"""' if text.startswith('"""', i) else '"'
                i = skip_string(i + len(q), q)
                continue
            if c in '([{':
                depth += 1
            elif c in ')]}':
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return i

    while i < n:
        c = text[i]
        if text.startswith('#=', i):
            end = text.find('=#', i + 2)
            end = n if end < 0 else end + 2
            blank(i, end)
            i = end
        elif c == '#':
            end = text.find('\n', i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif c == '"' or c == '`':
            q = c * 3 if text.startswith(c * 3, i) else c
            end = skip_string(i + len(q), q)
            blank(i, end)
            i = end
        elif c == "'":
            prev = text[i - 1] if i else ' '
            if prev.isalnum() or prev in ')]}_\'':
                i += 1  # adjoint, not a character literal
                continue
            j = i + 1
            while j < n and text[j] != "'":
                j += 2 if text[j] == '\\' else 1
            blank(i, j + 1)
            i = j + 1
        else:
            i += 1
    return ''.join(out)


def _match_close(text: str, i: int) -> int:
    """Index after the bracket closing the one at text[i]."""
    pairs = {'(': ')', '[': ']', '{': '}'}
    depth = 0
    for k in range(i, len(text)):
        if text[k] in pairs:
            depth += 1
        elif text[k] in ')]}':
            depth -= 1
            if depth == 0:
                return k + 1
    raise ValueError('unbalanced brackets')


def _split_args(text: str) -> List[str]:
    """Top-level comma-separated parts of Julia code, stripped."""
    parts = [''.join(p).strip() for p in _split_top(list(text), ',')]
    return parts[:-1] if parts and not parts[-1] else parts


def _split_typed(arg: str) -> Tuple[str, Optional[str]]:
    """`expr::Type` -> (expr, Type) at the last top-level `::`."""
    depth, cut = 0, -1
    for k, c in enumerate(arg):
        if c in '([{':
            depth += 1
        elif c in ')]}':
            depth -= 1
        elif depth == 0 and arg.startswith('::', k):
            cut = k
    if cut < 0:
        return arg, None
    return arg[:cut].strip(), re.sub(r'\s+', '', arg[cut + 2:])


def _type_at(text: str, i: int) -> Tuple[str, int]:
    """A Julia type expression starting at text[i]: Name or Name{...}."""
    m = re.compile(r'\s*([A-Za-z_][\w.]*)').match(text, i)
    if not m:
        return '', i
    end = m.end()
    if end < len(text) and text[end] == '{':
        end = _match_close(text, end)
    return re.sub(r'\s+', '', text[m.start(1):end]), end


@dataclass
class JuliaCall:
    file: str
    line: int
    offset: int        # of `@ccall` / `ccall` in the file
    library: str
    name: str
    args: List[Tuple[str, Optional[str]]]
    ret: str
    error: str = ''    # could not be read


@dataclass
class JuliaStruct:
    file: str
    line: int
    name: str
    c_name: str
    mutable: bool
    fields: List[Tuple[str, str]]


@dataclass
class JuliaCallback:
    file: str
    line: int
    c_name: str
    ret: str
    params: List[str]


@dataclass
class SourceFile:
    path: str          # relative to the package
    text: str
    code: str          # strings and comments blanked

    def line_of(self, offset: int) -> int:
        return self.text.count('\n', 0, offset) + 1


def read_calls(src: SourceFile) -> List[JuliaCall]:
    calls = []
    code = src.code
    for m in re.finditer(r'@ccall\b|(?<![\w@.])ccall\s*\(', code):
        line = src.line_of(m.start())
        try:
            if m.group(0).startswith('@'):
                i = m.end()
                while code[i] in ' \t':
                    i += 1
                wrapped = code[i] == '('
                if wrapped:
                    i += 1
                head = re.compile(r'\s*([A-Za-z_]\w*)\.([A-Za-z_]\w*)\s*\(')
                h = head.match(code, i)
                if not h:
                    raise ValueError('expected library.function(...)')
                open_paren = h.end() - 1
                close = _match_close(code, open_paren)
                inner = code[open_paren + 1:close - 1]
                if ';' in inner:
                    raise ValueError('varargs (;) are not used with libweft')
                args = [_split_typed(a) for a in _split_args(inner)]
                if not code.startswith('::', close):
                    raise ValueError('no return type')
                ret, _ = _type_at(code, close + 2)
                calls.append(JuliaCall(src.path, line, m.start(), h.group(1),
                                       h.group(2), args, ret))
            else:
                open_paren = m.end() - 1
                close = _match_close(code, open_paren)
                parts = _split_args(code[open_paren + 1:close - 1])
                target = re.fullmatch(r'\(\s*:(\w+)\s*,\s*(\w+)\s*\)', parts[0])
                if not target or len(parts) < 3 or not parts[2].startswith('('):
                    raise ValueError('expected ccall((:name, lib), Ret, (Types...), args...)')
                types = _split_args(parts[2].strip()[1:-1])
                values = parts[3:]
                if len(types) != len(values):
                    raise ValueError(f'{len(types)} types for {len(values)} values')
                args = [(v, re.sub(r'\s+', '', t)) for v, t in zip(values, types)]
                calls.append(JuliaCall(src.path, line, m.start(), target.group(2),
                                       target.group(1), args,
                                       re.sub(r'\s+', '', parts[1])))
        except (ValueError, IndexError) as error:
            calls.append(JuliaCall(src.path, line, m.start(), '', '?', [], '',
                                   error=str(error)))
    return calls


def _annotation(src: SourceFile, line: int, window: int = 3) -> Optional[str]:
    """The `# C: name` comment on one of the `window` lines before `line`."""
    lines = src.text.split('\n')
    for k in range(line - 2, max(line - 2 - window, -1), -1):
        m = re.match(r'\s*#\s*C:\s*(\w+)\s*$', lines[k])
        if m:
            return m.group(1)
    return None


def read_structs(src: SourceFile) -> List[JuliaStruct]:
    structs = []
    lines = src.code.split('\n')
    for number, line in enumerate(lines, 1):
        m = re.match(r'\s*(mutable\s+)?struct\s+(\w+)', line)
        if not m:
            continue
        c_name = _annotation(src, number, window=1)
        if c_name is None:
            continue
        fields = []
        for body in lines[number:]:
            stripped = body.strip()
            if stripped == 'end':
                break
            if not stripped:
                continue
            f = re.fullmatch(r'(\w+)::(.+)', stripped)
            fields.append((f.group(1), re.sub(r'\s+', '', f.group(2)))
                          if f else ('?', stripped))
        structs.append(JuliaStruct(src.path, number, m.group(2), c_name,
                                   bool(m.group(1)), fields))
    return structs


def read_callbacks(src: SourceFile) -> List[JuliaCallback]:
    callbacks = []
    for m in re.finditer(r'@cfunction\s*\(', src.code):
        line = src.line_of(m.start())
        close = _match_close(src.code, m.end() - 1)
        parts = _split_args(src.code[m.end():close - 1])
        params = _split_args(parts[2].strip()[1:-1]) if len(parts) > 2 else []
        callbacks.append(JuliaCallback(
            src.path, line, _annotation(src, line) or '',
            re.sub(r'\s+', '', parts[1]) if len(parts) > 1 else '',
            [re.sub(r'\s+', '', p) for p in params]))
    return callbacks
