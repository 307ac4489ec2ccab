"""libclang's view of a .tc file: types, GLOBAL-ness and declarations across headers.

libclang parses the .tc file itself, after a prelude that declares the primitives, with
one source change made by tree-sitter: `T *GLOBAL p` is shown to clang as
`T __etc_g *GLOBAL p` where `__etc_g` is a private address space on the *pointee*. Clang
keeps address spaces through arithmetic, member access, calls and casts, so the type of
every expression tells whether it is a GLOBAL pointer, and passing a GLOBAL pointer where
a local one is expected is a type error clang reports. Offsets in the clang view are
mapped back to the .tc file, where tree-sitter's nodes live.
"""

from __future__ import annotations

import bisect
import functools
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import clang.cindex as ci
import tree_sitter

GLOBAL_ADDRESS_SPACE = 77
_MARK = b"__etc_g "
_PRELUDE_NAME = "/__etc__/etc_analysis_prelude.h"

# The primitives as clang should type-check them (never compiled into the program).
PRELUDE = """
#define __etc_g __attribute__((address_space(77)))
#define GLOBAL
#define THREADED __attribute__((annotate("etc_threaded"))) void
typedef struct etc_slot { int cnt, rst; void *ip, *fp; } SLOT;
typedef SLOT __etc_g *SPTR;
extern const int NUM_NODES, NODE_ID;
void POLL(void);
void END_THREAD(void);
void END_FUNCTION(void);
void RETURN(void);
void INVOKE(int node, ...);
void TOKEN(void (*f)(), ...);
void CALL(void (*f)(), ...);
void INIT_SYNC(int slot, int count, int reset, int thread);
void SYNC(int slot);
void RSYNC(SPTR slot);
void INCR_SYNC(int slot, int value);
void INCR_RSYNC(SPTR slot, int value);
void SPAWN(int thread);
void RSPAWN(const volatile void __etc_g *frame, void *ip);
SPTR SLOT_ADR(int slot);
void __etc_g *FRAME_ADR(void);
void *IP_ADR(int thread);
void BLKMOV_SYNC(const volatile void __etc_g *src, void __etc_g *dest, long n, int slot);
void BLKMOV_RSYNC(const volatile void __etc_g *src, void __etc_g *dest, long n, SPTR slot);
#define TO_GLOBAL(p) ((__typeof__(*(p)) __etc_g *)(p))
#define MAKE_GPTR(node, p) ((void)(node), (__typeof__(*(p)) __etc_g *)(p))
void *TO_LOCAL(const volatile void __etc_g *g);
int OWNER_OF(const volatile void __etc_g *g);
int IS_OWNER(const volatile void __etc_g *g);
double etc_time(void), etc_time_raw(void), ct_read(void); void etc_delay(double seconds);
#define __ETC_TRANSFER(X, T) \\
  void DATA_SYNC_##X(T value, void __etc_g *dest, int slot); \\
  void DATA_RSYNC_##X(T value, void __etc_g *dest, SPTR slot); \\
  void GET_SYNC_##X(const volatile void __etc_g *src, void __etc_g *dest, int slot); \\
  void GET_RSYNC_##X(const volatile void __etc_g *src, void __etc_g *dest, SPTR slot);
__ETC_TRANSFER(B, char)
__ETC_TRANSFER(S, short)
__ETC_TRANSFER(L, int)
__ETC_TRANSFER(LL, long long)
__ETC_TRANSFER(F, float)
__ETC_TRANSFER(D, double)
__ETC_TRANSFER(G, const volatile void __etc_g *)
#undef __ETC_TRANSFER
"""


@functools.lru_cache(maxsize=1)
def builtin_include_dir() -> str | None:
    """Where stddef.h and friends live: the PyPI libclang wheel ships no headers.

    The C compiler that will compile the output has them; ask it (gcc and clang both
    answer -print-file-name=include). Fall back to the minimal set shipped with etcpre.
    """
    forced = os.environ.get("ETCPRE_BUILTIN_INCLUDE")  # tests force the fallback
    if forced:
        return forced
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if not cc or not shutil.which(cc.split()[0]):
            continue
        try:
            out = subprocess.run(
                [*cc.split(), "-print-file-name=include"],
                capture_output=True, text=True, timeout=10, check=False,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            continue
        if out and (Path(out) / "stddef.h").is_file():
            return out
    return fallback_include_dir()


def fallback_include_dir() -> str:
    """The minimal builtin headers shipped with etcpre (stddef.h, stdarg.h, ...)."""
    return str(Path(__file__).resolve().parent.parent / "clang_include")


@dataclass(frozen=True)
class ThreadedDecl:
    """A THREADED function declared or defined somewhere libclang saw (headers too)."""

    name: str
    params: list[tuple[str, str]]  # (name, declaration text as written)
    file: str
    line: int
    in_main_file: bool


@dataclass
class ClangView:
    global_exprs: set[tuple[int, int]] = field(default_factory=set)
    threaded: dict[str, ThreadedDecl] = field(default_factory=dict)
    plain_functions: set[str] = field(default_factory=set)
    # declared name offset -> (is VLA, constant array size or None)
    var_types: dict[int, tuple[bool, int | None]] = field(default_factory=dict)
    # (offset, message) of GLOBAL/local pointer mix-ups clang found
    address_space_errors: list[tuple[int, str]] = field(default_factory=list)
    fatal: tuple[int | None, str] | None = None  # (offset in main file, message)


class _OffsetMap:
    """Maps offsets in the clang view back to the .tc file (insertions only)."""

    def __init__(self, insert_at: list[int]) -> None:
        # positions in the *view* where a mark starts, sorted
        self._view_starts = [pos + i * len(_MARK) for i, pos in enumerate(insert_at)]

    def to_source(self, view_off: int) -> int:
        n = bisect.bisect_right(self._view_starts, view_off)
        if n and view_off < self._view_starts[n - 1] + len(_MARK):
            return self._view_starts[n - 1] - (n - 1) * len(_MARK)
        return view_off - n * len(_MARK)


def global_qualifiers(root: tree_sitter.Node) -> list[tree_sitter.Node]:
    """Every `GLOBAL` type qualifier in the tree."""
    out: list[tree_sitter.Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "type_qualifier" and node.text == b"GLOBAL":
            out.append(node)
        elif node.child_count:
            stack.extend(node.children)
    return out


def view_text(data: bytes, root: tree_sitter.Node) -> tuple[bytes, _OffsetMap]:
    """The .tc text as clang sees it: GLOBAL moved onto the pointee as an address space."""
    inserts: list[int] = []
    blanks: list[tuple[int, int]] = []
    for q in global_qualifiers(root):
        blanks.append((q.start_byte, q.end_byte))
        parent = q.parent
        if parent is not None and parent.type in ("pointer_declarator",
                                                  "abstract_pointer_declarator"):
            star = next((c for c in parent.children if c.type == "*"), None)
            if star is not None:
                inserts.append(star.start_byte)
    buf = bytearray(data)
    for start, end in blanks:
        buf[start:end] = b" " * (end - start)
    inserts.sort()
    out = bytearray()
    prev = 0
    for pos in inserts:
        out += buf[prev:pos] + _MARK
        prev = pos
    out += buf[prev:]
    return bytes(out), _OffsetMap(inserts)


def clang_args(defines: list[str], undefines: list[str], include_dirs: list[str],
               source_dir: str) -> list[str]:
    args = ["-x", "c", "-std=gnu11", "-include", _PRELUDE_NAME, "-Wno-everything",
            "-ferror-limit=0", f"-I{source_dir}"]
    builtin = builtin_include_dir()
    if builtin:
        args += ["-isystem", builtin]
    args += [f"-I{d}" for d in include_dirs]
    args += [f"-D{d}" for d in defines]
    args += [f"-U{u}" for u in undefines]
    return args


def interesting(root: tree_sitter.Node) -> tuple[set[tuple[int, int]], set[int]]:
    """What the later passes ask clang about: operands of *, [] and -> (is it GLOBAL?)
    and the names declared by array declarators (VLA? size of `T a[] = {...}`?)."""
    want: set[tuple[int, int]] = set()
    arrays: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        t = node.type
        if t == "pointer_expression" or t == "field_expression":
            arg = node.child_by_field_name("argument")
            if arg is not None:
                want.add((arg.start_byte, arg.end_byte))
        elif t == "subscript_expression":
            for f in ("argument", "index"):
                sub = node.child_by_field_name(f)
                if sub is not None:
                    want.add((sub.start_byte, sub.end_byte))
        elif t == "array_declarator":
            inner = node.child_by_field_name("declarator")
            while inner is not None and inner.type != "identifier":
                inner = inner.child_by_field_name("declarator")
            if inner is not None:
                arrays.add(inner.start_byte)
        stack.extend(node.children)
    return want, arrays


def analyse(path: str, data: bytes, root: tree_sitter.Node, args: list[str]) -> ClangView:
    text, omap = view_text(data, root)
    index = ci.Index.create()
    try:
        tu = index.parse(
            path, args=args,
            unsaved_files=[(path, text.decode("utf-8", errors="replace")),
                           (_PRELUDE_NAME, PRELUDE)],
        )
    except ci.TranslationUnitLoadError as exc:
        return ClangView(fatal=(None, f"libclang could not parse the file: {exc}"))
    view = ClangView()
    main = os.path.abspath(path)
    for diag in tu.diagnostics:
        loc = diag.location
        in_main = loc.file is not None and os.path.abspath(loc.file.name) == main
        if diag.severity >= ci.Diagnostic.Fatal and view.fatal is None:
            if in_main:
                view.fatal = (omap.to_source(loc.offset), diag.spelling)
            else:
                where = f"{loc.file.name}:{loc.line}:{loc.column}: " if loc.file else ""
                view.fatal = (None, f"{where}{diag.spelling}")
        elif in_main and "address space" in diag.spelling:
            view.address_space_errors.append((omap.to_source(loc.offset), diag.spelling))
    want, arrays = interesting(root)
    _collect(tu.cursor, main, omap, view, want, arrays)
    return view


def _is_global_pointer(t: ci.Type) -> bool:
    t = t.get_canonical()
    return t.kind == ci.TypeKind.POINTER and \
        t.get_pointee().get_address_space() == GLOBAL_ADDRESS_SPACE


def _collect(tu_cursor: ci.Cursor, main: str, omap: _OffsetMap, view: ClangView,
             want: set[tuple[int, int]], arrays: set[int]) -> None:
    points = sorted({a for a, _ in want} | arrays)
    file_cache: dict[str, bytes] = {}
    for top in tu_cursor.get_children():
        loc = top.location
        if loc.file is None:
            continue
        in_main = os.path.abspath(loc.file.name) == main
        if top.kind == ci.CursorKind.FUNCTION_DECL:
            _function(top, in_main, omap, view, file_cache)
        if in_main:
            _walk_main(top, omap, view, want, points)


def _function(cur: ci.Cursor, in_main: bool, omap: _OffsetMap, view: ClangView,
              file_cache: dict[str, bytes]) -> None:
    threaded = any(c.kind == ci.CursorKind.ANNOTATE_ATTR and c.spelling == "etc_threaded"
                   for c in cur.get_children())
    if not threaded:
        view.plain_functions.add(cur.spelling)
        return
    if cur.spelling in view.threaded and view.threaded[cur.spelling].in_main_file:
        return
    if in_main:
        # the main file's declarations are read from tree-sitter (exact text)
        view.threaded[cur.spelling] = ThreadedDecl(cur.spelling, [], cur.location.file.name,
                                                   cur.location.line, True)
        return
    fname = cur.location.file.name
    if fname not in file_cache:
        try:
            file_cache[fname] = Path(fname).read_bytes()
        except OSError:
            file_cache[fname] = b""
    data = file_cache[fname]
    params = []
    for p in cur.get_arguments():
        ext = p.extent
        text = data[ext.start.offset:ext.end.offset].decode("utf-8", errors="replace")
        params.append((p.spelling, text))
    view.threaded[cur.spelling] = ThreadedDecl(cur.spelling, params, fname,
                                               cur.location.line, False)


def _walk_main(top: ci.Cursor, omap: _OffsetMap, view: ClangView,
               want: set[tuple[int, int]], points: list[int]) -> None:
    """Visit only subtrees that contain something asked about (the walk is the cost)."""
    stack = [top]
    while stack:
        cur = stack.pop()
        ext = cur.extent
        start, end = omap.to_source(ext.start.offset), omap.to_source(ext.end.offset)
        i = bisect.bisect_left(points, start)
        if i == len(points) or points[i] >= end:
            continue
        kind = cur.kind
        if kind.is_expression():
            if (start, end) in want and _is_global_pointer(cur.type):
                view.global_exprs.add((start, end))
        elif kind == ci.CursorKind.VAR_DECL:
            t = cur.type
            vla = t.kind == ci.TypeKind.VARIABLEARRAY
            size = t.get_array_size() if t.kind == ci.TypeKind.CONSTANTARRAY else None
            view.var_types[omap.to_source(cur.location.offset)] = (vla, size)
        stack.extend(cur.get_children())
