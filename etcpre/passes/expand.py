"""Expanding one use of a C macro, as the preprocessor does, into text.

A macro whose body names a primitive, NODE_ID, a frame local of a threaded function,
a thread label, or dereferences a GLOBAL pointer hides from tree-sitter what the
translator must rewrite. Where libclang shows such a use (`clang_view`), the use is
replaced in the working text by its expansion, one level at a time: arguments are
substituted as written and the result is parsed again, so macros inside it are seen by
the next round exactly as the preprocessor would rescan them.

The definition and the arguments are tokenised here (preprocessing tokens, C11 6.4);
`#` and `##`, `__VA_ARGS__` and GNU's `, ## __VA_ARGS__` behave as in cpp.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(rb"""
    (?P<ws>(?:[ \t\r\n\f\v]|\\\r?\n|/\*.*?\*/|//[^\n]*)+)
  | (?P<str>(?:u8|[uUL])?"(?:[^"\\\n]|\\.)*")
  | (?P<chr>(?:u8|[uUL])?'(?:[^'\\\n]|\\.)*')
  | (?P<num>\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.])*)
  | (?P<id>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<punct>%:%:|\.\.\.|<<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[*/%+\-&^|]=|\#\#
              |<:|:>|<%|%>|%:|[\[\](){}.&*+\-~!/%<>^|?:;=,\#])
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)


@dataclass(frozen=True)
class Tok:
    text: bytes
    space: bool  # whitespace before it

    @property
    def is_ident(self) -> bool:
        return bool(re.fullmatch(rb"[A-Za-z_$][A-Za-z0-9_$]*", self.text))


class ExpandError(Exception):
    """A use the expander cannot reproduce; the message is ready for the user."""


def tokenize(data: bytes) -> list[Tok]:
    out: list[Tok] = []
    space = False
    for m in _TOKEN.finditer(data):
        if m.lastgroup == "ws":
            space = True
            continue
        out.append(Tok(m.group(), space))
        space = False
    return out


@dataclass(frozen=True)
class Definition:
    name: str
    params: list[str] | None  # None: object-like
    variadic: bool
    body: list[Tok]


def parse_definition(text: bytes) -> Definition:
    """A definition as `NAME(params) body` or `NAME body` (the text after #define)."""
    m = re.match(rb"\s*([A-Za-z_$][A-Za-z0-9_$]*)", text)
    if m is None:
        raise ExpandError("cannot read the macro's definition")
    name = m.group(1).decode()
    rest = text[m.end():]
    if not rest.startswith(b"("):
        return Definition(name, None, False, tokenize(rest))
    close = rest.find(b")")
    if close < 0:
        raise ExpandError(f"cannot read the parameters of macro '{name}'")
    names = [p.strip() for p in rest[1:close].decode().split(",")] if rest[1:close].strip() \
        else []
    variadic = bool(names) and names[-1].endswith("...")
    if variadic:
        last = names[-1][:-3].strip()
        names[-1] = last or "__VA_ARGS__"
    return Definition(name, names, variadic, tokenize(rest[close + 1:]))


def split_arguments(tokens: list[Tok]) -> list[list[Tok]]:
    """`( a , f(b, c) )` -> [[a], [f ( b , c )]]: top-level commas split."""
    if not tokens or tokens[0].text != b"(" or tokens[-1].text != b")":
        raise ExpandError("cannot read the macro's arguments")
    args: list[list[Tok]] = [[]]
    depth = 0
    for tok in tokens[1:-1]:
        if tok.text == b"(":
            depth += 1
        elif tok.text == b")":
            depth -= 1
        if tok.text == b"," and depth == 0:
            args.append([])
        else:
            args[-1].append(tok)
    return args


def expand(definition: Definition, args: list[list[Tok]] | None) -> list[Tok]:
    """One level of expansion: the body with the arguments substituted."""
    body = definition.body
    if any(t.text == definition.name.encode() for t in body):
        raise ExpandError(f"macro '{definition.name}' names itself; etcpre rewrites a macro "
                          "use by expanding it, which cannot show that")
    if definition.params is None:
        return list(body)
    params = definition.params
    argmap = _bind(definition, args or [[]])
    out: list[Tok] = []
    i = 0
    while i < len(body):
        tok = body[i]
        name = tok.text.decode(errors="replace")
        nxt = body[i + 1] if i + 1 < len(body) else None
        if tok.text in (b"#", b"%:") and nxt is not None and nxt.text.decode() in params:
            out.append(Tok(_stringify(argmap[nxt.text.decode()]), tok.space))
            i += 2
            continue
        if tok.text in (b"##", b"%:%:") and out and nxt is not None:
            right = argmap.get(nxt.text.decode(), [nxt]) if nxt.is_ident else [nxt]
            if nxt.text == b"__VA_ARGS__" and not right and out[-1].text == b",":
                out.pop()  # GNU: `, ## __VA_ARGS__` drops the comma when empty
            elif right:
                left = out.pop()
                out.append(Tok(left.text + right[0].text, left.space))
                out.extend(right[1:])
            i += 2
            continue
        if tok.is_ident and name in params:
            arg = argmap[name]
            if arg:
                out.append(Tok(arg[0].text, tok.space))
                out.extend(arg[1:])
            i += 1
            continue
        out.append(tok)
        i += 1
    return out


def _bind(definition: Definition, args: list[list[Tok]]) -> dict[str, list[Tok]]:
    params = definition.params or []
    if definition.variadic:
        fixed = len(params) - 1
        if len(args) < fixed:
            raise ExpandError(f"macro '{definition.name}' needs at least {fixed} arguments")
        rest: list[Tok] = []
        for k, a in enumerate(args[fixed:]):
            if k:
                rest.append(Tok(b",", False))
            rest.extend(a)
        bound = dict(zip(params[:-1], args[:fixed], strict=True))
        bound[params[-1]] = rest
        return bound
    if len(params) == 0 and args == [[]]:
        return {}
    if len(args) != len(params):
        raise ExpandError(f"macro '{definition.name}' takes {len(params)} arguments, "
                          f"{len(args)} given")
    return dict(zip(params, args, strict=True))


def _stringify(tokens: list[Tok]) -> bytes:
    parts = []
    for k, t in enumerate(tokens):
        if k and t.space:
            parts.append(b" ")
        text = t.text
        if text.startswith((b'"', b"'")) or re.match(rb"(u8|[uUL])['\"]", text):
            text = text.replace(b"\\", b"\\\\").replace(b'"', b'\\"')
        parts.append(text)
    return b'"' + b"".join(parts) + b'"'


def join(tokens: list[Tok]) -> bytes:
    """Tokens as text: spaced as written, and never pasted into a different token."""
    out = bytearray()
    prev: Tok | None = None
    for t in tokens:
        if prev is not None and (t.space or _would_paste(prev.text, t.text)):
            out += b" "
        out += t.text
        prev = t
    return bytes(out)


def _would_paste(a: bytes, b: bytes) -> bool:
    joined = a + b
    first = _TOKEN.match(joined)
    return first is None or first.end() != len(a)
