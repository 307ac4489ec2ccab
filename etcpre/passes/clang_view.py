"""libclang's view of a .tc file: everything the C preprocessor and type system decide.

libclang parses the working text (see `text.py`) after a prelude that declares the
language's keywords and the primitives (generated from `primitives.py`), with two
rewrites made from tree-sitter's tree, both insertions that keep the user's tokens:

- `T *GLOBAL p` is shown as `T __etc_g *p`, where `__etc_g` is a private address space
  on the *pointee*. Clang keeps address spaces through arithmetic, member access
  (`&p->a.b[i]` is a GLOBAL pointer too), calls and casts, so an expression is a GLOBAL
  pointer exactly when its type says so, and mixing GLOBAL and local pointers is a type
  error clang reports. Headers that use GLOBAL are shown to clang with the same rewrite.
- `INVOKE(n, f, a, b)` is shown as `INVOKE(n, f(a, b))` (TOKEN and CALL alike), and a
  threaded function as a C function returning int, so that the arguments are checked
  against f's parameters exactly as cc checks a call.

What comes back (`Facts`) is plain data with offsets into the working text: which `#if`
branches are inactive, which macro uses the translator must see through (and their
expansions), the types and values the analysis asks about, every threaded function
declared in the file and its headers, and the diagnostics to forward. The parse runs
in the clang child (`clang_child`), so a libclang crash is reported, never fatal.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

import clang.cindex as ci
import tree_sitter

from etcpre.options import Options
from etcpre.passes import clang_child, cursor_walk, expand, forked, initialise, libclang
from etcpre.passes.facts import Arg, Call, Diag, Facts, Param, Store, ThreadedDecl, Var
from etcpre.passes.primitives import PRIMITIVES, prelude_declarations
from etcpre.passes.text import Edit, EditMap, WorkingText, apply
from etcpre.passes.view_edits import view_edits

GLOBAL_ADDRESS_SPACE = 77
# From this many function definitions in the file, and this many bytes of them, a
# child of the clang child walks the later half: each function's walk has a fixed
# cost (the C walk's arrays and their views, the setup of its facts), so a file of
# many functions walks long (180 small functions of 5,000 lines: 96 ms; 10 large
# ones of as many lines: 28 ms, where the fork and a third busy process on two
# CPUs cost more than they save).
WALK_SPLIT_FROM_FUNCTIONS = 32
WALK_SPLIT_FROM_BYTES = 32 << 10
PRELUDE_NAME = "/__etc__/etc_analysis_prelude.h"

# What clang sees before the file (never compiled into the program).
PRELUDE = f"""
#define __etc_g __attribute__((address_space({GLOBAL_ADDRESS_SPACE})))
#define GLOBAL
#define THREADED __attribute__((annotate("etc_threaded"))) int
typedef struct etc_slot {{ int cnt, rst; void *ip, *fp; }} SLOT;
typedef SLOT __etc_g *SPTR;
double etc_time(void), etc_time_raw(void), ct_read(void);
void etc_delay(double seconds);
{prelude_declarations()}"""

# the analysis says these better (argument counts, undeclared names)
_NOT_FORWARDED = re.compile(r"too (many|few) arguments|undeclared|implicit")


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
        if out and os.path.isfile(os.path.join(out, "stddef.h")):
            return out
    return fallback_include_dir()


def fallback_include_dir() -> str:
    """The minimal builtin headers shipped with etcpre (stddef.h, stdarg.h, ...)."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))),
                        "clang_include")


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def clang_args(options: Options, source_dir: str) -> list[str]:
    # local headers are found next to the file that includes them, as cc does; nesting
    # is limited by the stack (clang_child), not by a bracket count
    args = ["-x", "c", "-std=gnu11", "-include", PRELUDE_NAME, "-ferror-limit=0",
            "-fbracket-depth=1000000", "-iquote", source_dir]
    builtin = builtin_include_dir()
    if builtin:
        args += ["-isystem", builtin]
    return args + options.cpp_args()


def gather(working: WorkingText, root: tree_sitter.Node, options: Options) -> Facts:
    """Facts about the working text (whose tree is `root`), from libclang run in the
    clang child."""
    pending = clang_child.start(working, options)
    pending.show(view_edits(root))
    return pending.facts()


def collect(path: str, data: bytes, edits: list[Edit], args: list[str]) -> Facts:
    """In the clang child (`clang_child`): libclang's facts about the working text
    `data` of the file at `path`, shown to libclang with `edits` (`view_edits`) and
    the command-line arguments `args` (`clang_args`)."""
    return _Collector(path, data, edits, args).run()


# ---------------------------------------------------------------- collection


def _spell(t: str) -> str:
    """A clang type spelling as a Threaded-C programmer writes it."""
    t = re.sub(r"__attribute__\(\(address_space\(77\)\)\)\s*", "__etc_g ", t)
    t = re.sub(r"__etc_g ([^*]*?)\s*\*", lambda m: f"{m.group(1).strip()} *GLOBAL", t)
    return t.replace("__etc_g ", "")


def spell_message(msg: str) -> str:
    """A clang message with address spaces spelled as GLOBAL (and the prelude's
    macros' types by what they mean)."""
    msg = re.sub(r"'[^']*' \(aka ('[^']*')\)", r"\1", msg)
    msg = re.sub(r"'([^']*)'", lambda m: f"'{_spell(m.group(1))}'", msg)
    return msg.replace("changes address space of pointer", "mixes GLOBAL and local pointers")


def _is_global_pointer(t: ci.Type) -> bool:
    t = t.get_canonical()
    return t.kind == ci.TypeKind.POINTER and \
        t.get_pointee().get_address_space() == GLOBAL_ADDRESS_SPACE


_ARRAYS = (ci.TypeKind.CONSTANTARRAY, ci.TypeKind.INCOMPLETEARRAY,
           ci.TypeKind.VARIABLEARRAY, ci.TypeKind.DEPENDENTSIZEDARRAY)
_RECORDS = (ci.TypeKind.RECORD,)

# kinds as the ids in libclang's structs (the walk compares them without the binding)
_POINTER = ci.TypeKind.POINTER.value
_VOID = ci.TypeKind.VOID.value
_ARRAY_KINDS = frozenset(k.value for k in _ARRAYS)
_K = ci.CursorKind
_MACRO_INSTANTIATION = _K.MACRO_INSTANTIATION.value
_FUNCTION_DECL = _K.FUNCTION_DECL.value
_VAR_DECL = _K.VAR_DECL.value
_PARM_DECL = _K.PARM_DECL.value
_CALL_EXPR = _K.CALL_EXPR.value
_DECL_REF_EXPR = _K.DECL_REF_EXPR.value
_UNEXPOSED_EXPR = _K.UNEXPOSED_EXPR.value
_CHARACTER_LITERAL = _K.CHARACTER_LITERAL.value
_INIT_LIST_EXPR = _K.INIT_LIST_EXPR.value
_ANNOTATE_ATTR = _K.ANNOTATE_ATTR.value
# what a threaded function's body has that the translator rewrites (a macro's body
# producing one must be expanded)
_LOCAL_KINDS = frozenset(k.value for k in (_K.PARM_DECL, _K.LABEL_STMT, _K.RETURN_STMT))


_UNKNOWN = object()  # a cache's miss, where None is a value


@dataclass(frozen=True)
class _Ref:
    """A declaration a DECL_REF_EXPR refers to."""

    cursor: ci.Cursor
    kind: int
    name: str
    threaded: bool  # a THREADED function
    where: tuple[str | None, int]  # of a function (Collector.where), else ("", 0)


def _has_const(t: ci.Type, depth: int = 0) -> bool:
    """Is a C object of type t (or a member of it) const?"""
    t = t.get_canonical()
    if t.is_const_qualified() and depth >= 0:
        return True
    depth = max(depth, 0)
    if depth > 32:
        return False
    if t.kind in _ARRAYS:
        return _has_const(t.element_type, depth + 1)
    if t.kind in _RECORDS:
        return any(_has_const(f.type, depth + 1) for f in t.get_fields())
    return False


def _layout(t: ci.Type) -> str:
    """A parameter's size, alignment and kind: what two files must agree on for a
    parameter frame one builds and the other reads (names of types may differ)."""
    c = t.get_canonical()
    kind = _value_kind(c)
    if kind == "pointer" and _is_global_pointer(c):
        kind = "global"
    elif kind == "integer":
        kind = "unsigned" if c.kind in (ci.TypeKind.BOOL, ci.TypeKind.CHAR_U, ci.TypeKind.UCHAR,
                                        ci.TypeKind.USHORT, ci.TypeKind.UINT, ci.TypeKind.ULONG,
                                        ci.TypeKind.ULONGLONG) else "signed"
    return f"{c.get_size()}.{c.get_align()}.{kind}"


def _value_kind(t: ci.Type) -> str:
    return _kind_class(t.get_canonical().kind.value)


_FLOATING = frozenset(k.value for k in (ci.TypeKind.FLOAT, ci.TypeKind.DOUBLE,
                                        ci.TypeKind.LONGDOUBLE))
_INTEGER = frozenset(k.value for k in (
    ci.TypeKind.BOOL, ci.TypeKind.CHAR_U, ci.TypeKind.UCHAR, ci.TypeKind.CHAR16,
    ci.TypeKind.CHAR32, ci.TypeKind.USHORT, ci.TypeKind.UINT, ci.TypeKind.ULONG,
    ci.TypeKind.ULONGLONG, ci.TypeKind.CHAR_S, ci.TypeKind.SCHAR, ci.TypeKind.WCHAR,
    ci.TypeKind.SHORT, ci.TypeKind.INT, ci.TypeKind.LONG, ci.TypeKind.LONGLONG,
    ci.TypeKind.ENUM))


def _kind_class(canonical_kind: int) -> str:
    if canonical_kind in _FLOATING:
        return "floating"
    if canonical_kind == _POINTER:
        return "pointer"
    if canonical_kind in _INTEGER:
        return "integer"
    return "other"


def _owned(cur: ci.Cursor, tu: ci.TranslationUnit | None) -> ci.Cursor:
    """A copy of a walked cursor that outlives the walk, with the binding's `_tu`."""
    copy = ci.Cursor.from_buffer_copy(cur)
    if tu is not None:
        copy._tu = tu
    return copy


def _strip_walked(tree: cursor_walk.Tree, index: int) -> cursor_walk.Node:
    """A walked expression under clang's implicit conversions (which the API shows as
    UNEXPOSED_EXPR with one child of the same extent)."""
    node = tree.nodes[index]
    while node.kind == _UNEXPOSED_EXPR:
        kids = tree.children(node)
        if len(kids) != 1:
            break
        node = tree.nodes[kids[0]]
    return node


def _strip_implicit(cur: ci.Cursor) -> ci.Cursor:
    """The expression under clang's implicit conversions (which the API shows as
    UNEXPOSED_EXPR with one child of the same extent)."""
    while cur.kind == ci.CursorKind.UNEXPOSED_EXPR:
        kids = list(cur.get_children())
        if len(kids) != 1:
            break
        cur = kids[0]
    return cur


class _Collector:
    """Runs in the isolated child: parses the view and gathers Facts."""

    def __init__(self, path: str, data: bytes, edits: list[Edit], args: list[str]) -> None:
        self.path = path
        self.data = data
        self._root: tree_sitter.Node | None = None
        self.args = args
        self.facts = Facts()
        view, self.vmap = apply(data, edits)
        self.view = view
        self.header_maps: dict[str, tuple[EditMap, bytes]] = {}
        self.main_handle = 0
        self.file_names: dict[int, tuple[str, EditMap | None]] = {}  # by libclang's handle
        self.threaded_files: dict[int, bool] = {}  # ... that may declare THREADED
        self.use_ranges: dict[tuple[int, int], ci.Cursor] = {}  # macro uses, main file
        self.use_starts: dict[int, tuple[int, int]] = {}  # ... by where they start
        self.needed: set[tuple[int, int]] = set()  # ... whose expansion the passes need
        self.called: set[int] = set()  # threaded functions' names called as C functions
        self.raw = libclang.Raw()
        self.walker = cursor_walk.Walker()
        self.main_file: cursor_walk.MainFile | None = None  # known once parsed
        self.refs: dict[bytes, _Ref | None] = {}  # by the referenced cursor's bytes
        self.pointees: dict[bytes, tuple[int, str, str] | None] = {}  # ... Arg.pointee
        self.var_types: dict[bytes, tuple[bool, int | None, bool]] = {}  # ... Var's
        # a parameter's (adjusted type, type): what Param says of them
        self.param_types: dict[bytes, tuple[str, str, str, bool, bool, bool]] = {}

    @property
    def root(self) -> tree_sitter.Node:
        """The working text's syntax tree (initialisers need it; parsed when first
        asked for: etcpre's process has it, but the child started before it did)."""
        if self._root is None:
            from etcpre.passes.parse import language  # noqa: PLC0415 - as in _header_views

            self._root = tree_sitter.Parser(language()).parse(self.data).root_node
        return self._root

    # -- parsing

    def run(self) -> Facts:
        index = ci.Index.create()
        shown = self.view.decode("utf-8", errors="replace")
        unsaved = [(self.path, shown), (PRELUDE_NAME, PRELUDE)]
        opts = ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD
        try:
            tu = index.parse(self.path, args=self.args, unsaved_files=unsaved, options=opts)
            headers = self._header_views(tu)
            if headers:
                tu = index.parse(self.path, args=self.args, unsaved_files=unsaved + headers,
                                 options=opts)
        except ci.TranslationUnitLoadError as exc:
            self.facts.fatal = Diag(None, 0, True, f"libclang could not parse the file: {exc}")
            return self.facts
        self.main_handle = self.raw.know_main_file(tu, self.path, len(shown.encode()))
        self.main_file = cursor_walk.MainFile(self.main_handle, self.raw.main_base,
                                              self.raw.main_limit, GLOBAL_ADDRESS_SPACE,
                                              self.vmap)
        self._diagnostics(tu)
        if self.facts.fatal is not None:
            return self.facts
        self.facts.skipped = [(self.to_working(s), self.to_working(e))
                              for s, e in libclang.skipped_ranges(tu, self.path)]
        self._top_level(tu)
        return self.facts

    def _header_views(self, tu: ci.TranslationUnit) -> list[tuple[str, str]]:
        """Headers that use GLOBAL, rewritten as the main file is."""
        from etcpre.passes.parse import language  # noqa: PLC0415

        parser = tree_sitter.Parser(language())
        out = []
        seen: set[str] = set()
        for inc in tu.get_includes():
            name = inc.include.name
            if name in seen or name == PRELUDE_NAME:
                continue
            seen.add(name)
            try:
                data = _read(name)
            except OSError:
                continue
            if b"GLOBAL" not in data:
                continue
            edits = view_edits(parser.parse(data).root_node)
            if not edits:
                continue
            view, emap = apply(data, edits)
            self.header_maps[os.path.abspath(name)] = (emap, data)
            out.append((name, view.decode("utf-8", errors="replace")))
        return out

    # -- positions

    def to_working(self, view_offset: int) -> int:
        return self.vmap.to_old(view_offset)

    def where(self, loc: ci.SourceLocation) -> tuple[str | None, int]:
        """(None, working offset) in the main file, (path, offset as written) in a
        header, ("", 0) elsewhere (the prelude, the command line)."""
        handle, off = self.raw.file_location(loc)
        if handle == self.main_handle:
            return None, self.to_working(off)
        if not handle:
            return "", 0
        known = self.file_names.get(handle)
        if known is None:
            name = libclang.file_name(handle)
            header = self.header_maps.get(os.path.abspath(name))
            known = ("" if name == PRELUDE_NAME else name, header[0] if header else None)
            self.file_names[handle] = known
        name, emap = known
        if not name:
            return "", 0
        return name, emap.to_old(off) if emap is not None else off

    def span(self, cur: ci.Cursor) -> tuple[int, int] | None:
        """The working-text range of a cursor in the main file."""
        got = self.raw.main_range(cur)
        if got is None:
            return None
        return self.to_working(got[0]), self.to_working(got[1])

    def header_text(self, path: str, start: int, end: int) -> str:
        full = os.path.abspath(path)
        if full in self.header_maps:
            data = self.header_maps[full][1]
        else:
            try:
                data = _read(path)
            except OSError:
                return ""
        return data[start:end].decode("utf-8", errors="replace")

    # -- diagnostics

    def _diagnostics(self, tu: ci.TranslationUnit) -> None:
        for d in tu.diagnostics:
            if d.severity < ci.Diagnostic.Warning:
                continue
            path, off = self.where(d.location)
            fatal = d.severity >= ci.Diagnostic.Fatal
            if fatal and self.facts.fatal is None:
                if path == "":
                    self.facts.fatal = Diag(None, 0, True, spell_message(d.spelling))
                else:
                    self.facts.fatal = Diag(path, off, True, spell_message(d.spelling))
                continue
            if path == "":
                continue
            msg = d.spelling
            if "address space" in msg and d.severity >= ci.Diagnostic.Error:
                self.facts.diagnostics.append(
                    Diag(path, off, True, spell_message(msg) +
                         " (convert with TO_GLOBAL() or TO_LOCAL())"))
            elif msg.startswith("conflicting types for") or \
                    msg.startswith("redefinition of parameter"):
                self.facts.diagnostics.append(
                    Diag(path, off, True, spell_message(msg) + self._previous(d, path)))
            elif path is None and not _NOT_FORWARDED.search(msg):
                self.facts.diagnostics.append(
                    Diag(path, off, d.severity >= ci.Diagnostic.Error, spell_message(msg),
                         always=False))

    def _previous(self, d: ci.Diagnostic, path: str | None) -> str:
        """` (the other declaration: line N)` from clang's note, or ``."""
        for note in d.children:
            if "previous" not in note.spelling:
                continue
            npath, _ = self.where(note.location)
            line = note.location.line
            if npath is None and path is None:
                return f" (the other declaration is on line {line})"
            if npath:
                return f" (the other declaration is in {npath}, line {line})"
        return ""

    # -- declarations and bodies

    def _top_level(self, tu: ci.TranslationUnit) -> None:
        raw = self.raw
        tops = raw.children(tu.cursor)
        for top in tops:
            top._tu = tu  # the binding's methods need it
            if top._kind_id == _MACRO_INSTANTIATION:
                sp = self.span(top)
                if sp is not None:
                    self.use_ranges[sp] = top
                    self.use_starts[sp[0]] = sp
        cut = self._cut(tops)
        child = self._walk_in_child(tops[cut:]) if cut < len(tops) else None
        self._walk_tops(tops[:cut] if child is not None else tops)
        if child is not None:
            try:
                facts, needed = child.result()
            except (forked.ChildError, forked.ChildRaised):
                self._walk_tops(tops[cut:])  # here then: a crash is this process's to report
            else:
                self.facts.absorb(facts)
                self.needed |= needed
        self._expansions()

    def _cut(self, tops: list[ci.Cursor]) -> int:
        """Where the walk splits between this process and a child of its own: at the
        main-file function definition that leaves the definitions before it nearest to
        half of their bytes, when there are WALK_SPLIT_FROM_FUNCTIONS of them, of
        WALK_SPLIT_FROM_BYTES or more, and two CPUs; else after the last declaration."""
        defs = []
        for k, top in enumerate(tops):
            if top._kind_id == _FUNCTION_DECL:
                sp = self.span(top)
                if sp is not None and top.is_definition():
                    defs.append((k, sp[1] - sp[0]))
        total = sum(size for _, size in defs)
        if len(defs) < max(2, WALK_SPLIT_FROM_FUNCTIONS) or total < WALK_SPLIT_FROM_BYTES \
                or forked.usable_cpus() < 2:
            return len(tops)
        best, before = (total, len(tops)), 0
        for k, size in defs:
            if before and abs(2 * before - total) < best[0]:
                best = (abs(2 * before - total), k)
            before += size
        return best[1]

    def _walk_in_child(self, tops: list[ci.Cursor]) \
            -> forked.Forked[tuple[Facts, set[tuple[int, int]]]] | None:
        """Forks a child that walks `tops` (the parse is there already: the child has it)
        and hands back what the walk found: its facts and its needed macro uses."""
        def walk() -> tuple[Facts, set[tuple[int, int]]]:
            self.facts, self.needed = Facts(), set()  # the file-wide facts are the parent's
            self._walk_tops(tops)
            return self.facts, self.needed

        try:
            return forked.Forked(walk)
        except OSError:
            return None  # no fork: this process walks them too

    def _walk_tops(self, tops: list[ci.Cursor]) -> None:
        raw = self.raw
        for top in tops:
            kind = top._kind_id
            if kind == _VAR_DECL and self.span(top) is not None:
                self._walk(top, None)
            if kind != _FUNCTION_DECL:
                continue
            path, off = self.where(raw.location(top))
            if path == "":
                continue  # the prelude
            threaded = self._may_be_threaded(path) and self._is_threaded(top)
            if threaded:
                self._threaded_decl(top, path, off)
            else:
                self.facts.functions.add(top.spelling)
            if path is None and top.is_definition():
                self._walk(top, top if threaded else None)

    def _may_be_threaded(self, path: str | None) -> bool:
        """Only the main file and headers that say THREADED declare threaded
        functions (reading a declaration's attributes costs)."""
        if path is None:
            return True
        known = self.threaded_files.get(hash(path))
        if known is None:
            try:
                known = b"THREADED" in _read(path)
            except OSError:
                known = True
            self.threaded_files[hash(path)] = known
        return known

    def _threaded_decl(self, cur: ci.Cursor, path: str | None, off: int) -> None:
        params = []
        adjusted_types = list(cur.type.argument_types()) \
            if cur.type.kind == ci.TypeKind.FUNCTIONPROTO else []
        for k, p in enumerate(cur.get_arguments()):
            adjusted = adjusted_types[k] if k < len(adjusted_types) else p.type
            ext = p.extent
            if path is None:
                s, e = self.span(p) or (0, 0)
                text = self.data[s:e].decode("utf-8", errors="replace")
            else:
                _, s = self.where(ext.start)
                _, e = self.where(ext.end)
                text = self.header_text(path, s, e)
            t = p.type
            key = bytes(adjusted) + bytes(t)
            if key not in self.param_types:
                self.param_types[key] = (
                    _spell(adjusted.spelling), adjusted.get_canonical().spelling,
                    _layout(adjusted), not _has_const(t), t.is_const_qualified(),
                    _has_const(t, depth=-1))
            params.append(Param(p.spelling, text, *self.param_types[key]))
        static = cur.storage_class == ci.StorageClass.STATIC
        decl = ThreadedDecl(cur.spelling, tuple(params), path, off, cur.location.line,
                            cur.is_definition(), static)
        self.facts.threaded.setdefault(cur.spelling, []).append(decl)

    def _is_threaded(self, cur: ci.Cursor) -> bool:
        return any(c._kind_id == _ANNOTATE_ATTR and c.spelling == "etc_threaded"
                   for c in self.raw.children(cur))

    def _walk(self, top: ci.Cursor, threaded: ci.Cursor | None) -> None:
        """One function (or file-scope variable) of the main file, every expression.

        The C walk (`cursor_walk`) visits a cursor, then its children last first (a
        stack's order): where two cursors map to one offset (a macro's expansion), the
        one visited later wins. Only the cursors it marks are looked at here."""
        macros = bool(self.use_starts)
        in_threaded = threaded is not None
        locals_of: dict[bytes, bool] = {}  # a referenced declaration: a local of `threaded`
        assert self.main_file is not None, "walked before the parse"
        with self.walker.walk(self.main_file, top, in_threaded, macros) as tree:
            nodes = tree.nodes
            for index in tree.wanted:
                node = nodes[index]
                kind = node.kind
                if node.flags & cursor_walk.EXPRESSION:
                    needed = self._expression(tree, node, threaded, locals_of, macros)
                elif kind == _VAR_DECL and threaded is not None:
                    kids = [_owned(nodes[k].cursor, top._tu) for k in tree.children(node)]
                    self._var(_owned(node.cursor, top._tu), threaded, kids)
                    needed = True
                else:
                    needed = in_threaded and kind in _LOCAL_KINDS
                if needed and macros:
                    use = self._expanded_from_body(node)
                    if use is not None:
                        self.needed.add(use)

    def _expanded_from_body(self, node: cursor_walk.Node) -> tuple[int, int] | None:
        """The main-file macro use whose expansion brought this cursor from a macro's
        definition (not from the use's own arguments), if any."""
        if node.flags & cursor_walk.IN_MAIN:
            return None  # written in the main file where it stands, no macro's
        if node.expansion < 0:
            return None
        use = self.use_starts.get(node.expansion)
        if use is None:
            return None
        if node.spelling < 0:
            return use  # spelled in a header's definition
        f = node.spelling
        if f == use[0] or not use[0] <= f < use[1]:
            return use  # the body's own token, or spelled in a definition
        return None  # written in the use's arguments

    def _ref(self, node: cursor_walk.Node) -> _Ref | None:
        """What a walked DECL_REF_EXPR refers to (None: nothing), computed once per
        declaration."""
        if not node.ref_kind:
            return None
        key = bytes(node.ref)
        got = self.refs.get(key, _UNKNOWN)
        if got is _UNKNOWN:
            got = self.refs[key] = self._ref_of(ci.Cursor.from_buffer_copy(node.ref))
        return got

    def _ref_of(self, ref: ci.Cursor) -> _Ref | None:
        raw = self.raw
        if raw.is_null(ref):
            return None
        kind = ref._kind_id
        name = ref.spelling
        if kind != _FUNCTION_DECL:
            return _Ref(ref, kind, name, False, ("", 0))
        return _Ref(ref, kind, name, self._is_threaded(ref), self.where(raw.location(ref)))

    def _ref_needed(self, ref: _Ref | None, threaded: ci.Cursor | None,
                    locals_of: dict[bytes, bool]) -> bool:
        """Would a reference to this declaration need the translator if a macro's body
        produced it?"""
        if ref is None:
            return False
        if ref.kind == _FUNCTION_DECL:
            return ref.name in PRIMITIVES or ref.threaded
        if ref.kind == _VAR_DECL and ref.name in PRIMITIVES:
            return True  # NUM_NODES, NODE_ID
        if threaded is None or ref.kind not in (_VAR_DECL, _PARM_DECL):
            return False
        key = bytes(ref.cursor)
        local = locals_of.get(key)
        if local is None:
            raw = self.raw
            local = bool(raw.equal(raw.semantic_parent(ref.cursor), threaded))
            locals_of[key] = local
        return local

    def _expression(self, tree: cursor_walk.Tree, node: cursor_walk.Node,
                    threaded: ci.Cursor | None, locals_of: dict[bytes, bool],
                    macros: bool) -> bool:
        """Gathers what an expression tells; returns whether it would need the
        translator if a macro's body produced it (only asked when `macros`)."""
        flags = node.flags
        kind = node.kind
        sp = None
        if flags & cursor_walk.POINTERISH:
            if flags & cursor_walk.GLOBAL_POINTER:
                sp = self._node_span(node)
                if sp is not None:
                    self.facts.global_pointers.add(sp)
            elif flags & cursor_walk.ARRAY:
                sp = self._node_span(node)
                if sp is not None:
                    self.facts.arrays.add(sp)
                    if flags & cursor_walk.GLOBAL_ARRAY and node.parent >= 0:
                        parent = tree.nodes[node.parent]
                        if parent.kind == _UNEXPOSED_EXPR \
                                and parent.flags & cursor_walk.GLOBAL_POINTER:
                            self.facts.global_decays.add(sp)
        if kind == _CALL_EXPR:
            self._call(tree, node)
        elif kind == _DECL_REF_EXPR:
            ref = self._ref(node)
            if ref is not None and ref.kind == _FUNCTION_DECL and ref.threaded:
                sp = sp or self._node_span(node)
                if sp is not None and sp[0] not in self.called:
                    self.facts.threaded_uses.append((sp[0], ref.name, False))
            return macros and self._ref_needed(ref, threaded, locals_of)
        return macros and bool(flags & cursor_walk.GLOBAL_OBJECT)

    @staticmethod
    def _node_span(node: cursor_walk.Node) -> tuple[int, int] | None:
        """`span` of a walked cursor (the C walk has its main-file extent)."""
        if node.start < 0:
            return None
        return node.start, node.end

    def _call(self, tree: cursor_walk.Tree, node: cursor_walk.Node) -> None:
        kids = tree.children(node)
        if not kids:
            return
        callee = _strip_walked(tree, kids[0])
        if callee.kind != _DECL_REF_EXPR:
            return
        sp = self._node_span(callee)
        if sp is None:
            return
        ref = self._ref(callee)
        # a reference's spelling is its declaration's
        name = ref.name if ref is not None else callee.cursor.spelling
        what = "other"
        if ref is not None and ref.kind == _FUNCTION_DECL:
            rpath, roff = ref.where
            if rpath == "" and name in PRIMITIVES:
                what = "primitive"
            elif ref.threaded:
                what = "threaded"
            elif rpath is None and roff == sp[0]:
                what = "undeclared"  # declared implicitly by the call itself
            else:
                what = "function"
        args: tuple[Arg, ...] = ()
        if what == "primitive":
            args = tuple(self._arg(_strip_walked(tree, a)) for a in kids[1:])
        elif what == "threaded":
            self.called.add(sp[0])
            self.facts.threaded_uses.append((sp[0], name, True))
        self.facts.calls[sp[0]] = Call(name, what, args)

    def _arg(self, inner: cursor_walk.Node) -> Arg:
        """An argument of a primitive, under clang's implicit conversions."""
        kind, value = self.walker.evaluate(inner.cursor)
        constant = ""
        if kind == cursor_walk.EVAL_INT:
            constant = "char" if inner.kind == _CHARACTER_LITERAL else "int"
        elif kind == cursor_walk.EVAL_FLOAT:
            constant, value = "float", None
        else:
            value = None
        t = self.raw.cursor_type(inner.cursor)
        key = bytes(t)
        if key not in self.pointees:
            self.pointees[key] = self._pointee(t)
        return Arg(constant, value if isinstance(value, int) else None, self.pointees[key])

    def _pointee(self, t: ci.Type) -> tuple[int, str, str] | None:
        """Arg.pointee of an argument of type t."""
        raw = self.raw
        t = raw.canonical(t)
        if t._kind_id in _ARRAY_KINDS:
            t_el = raw.element(t)
            return t_el.get_size(), self._value_kind(t_el), _spell(t_el.spelling)
        if t._kind_id == _POINTER:
            pt = raw.pointee(t)
            size = pt.get_size() if pt._kind_id != _VOID else -1
            return size, self._value_kind(pt), _spell(pt.spelling)
        return None

    def _value_kind(self, t: ci.Type) -> str:
        return _kind_class(self.raw.canonical(t)._kind_id)

    def _var(self, cur: ci.Cursor, threaded: ci.Cursor, kids: list[ci.Cursor]) -> None:
        # every block-scope variable's semantic parent is its function (blocks are not
        # declaration contexts in C); anything else is not a local of this function
        raw = self.raw
        if not raw.equal(raw.semantic_parent(cur), threaded):
            return
        name_path, name_off = self.where(raw.location(cur))
        if name_path is not None:
            return
        t = raw.canonical(raw.cursor_type(cur))
        key = bytes(t)
        if key not in self.var_types:
            t._tu = cur._tu  # the binding's methods below need it
            self.var_types[key] = (
                _variably_modified(t),
                t.get_array_size() if t.kind == ci.TypeKind.CONSTANTARRAY else None,
                not _has_const(t))
        vla, size, assignable = self.var_types[key]
        stores, zero = self._initialiser(cur, name_off, kids)
        self.facts.vars[name_off] = Var(vla, size, assignable, stores, zero)

    def _initialiser(self, cur: ci.Cursor, name_off: int, kids: list[ci.Cursor]) \
            -> tuple[tuple[Store, ...] | None, bool]:
        """The declaration's initialiser list as in-place stores (initialise.py)."""
        init = next((c for c in kids if c._kind_id == _INIT_LIST_EXPR), None)
        if init is None:
            return None, False
        init._tu = cur._tu
        node = self.root.descendant_for_byte_range(name_off, name_off)
        while node is not None and node.type != "init_declarator":
            node = node.parent
        value = node.child_by_field_name("value") if node is not None else None
        if value is None or value.type != "initializer_list":
            return None, False
        types: dict[tuple[int, int], ci.Type] = {}
        stack = [init]
        while stack:
            c = stack.pop()
            sp = self.span(c)
            if sp is not None and c.kind.is_expression():
                types.setdefault(sp, _strip_implicit(c).type)
            stack.extend(c.get_children())
        planner = initialise.Planner(lambda n: types.get((n.start_byte, n.end_byte)))
        try:
            planned = planner.plan(cur.type, value)
        except initialise.Unsupported:
            return None, False
        stores = tuple(Store(p.path, p.node.start_byte, p.node.end_byte, p.string)
                       for p in planned)
        return stores, planner.zero_first(cur.type)

    # -- macro uses the translator must see through

    def _expansions(self) -> None:
        """Edits replacing each outermost needed macro use by its expansion."""
        last_end = -1
        for s, e in sorted(self.needed):
            if s < last_end:
                continue  # inside an expansion made this round; seen again next round
            last_end = e
            try:
                text = self._expansion(self.use_ranges[(s, e)], s, e)
            except expand.ExpandError as exc:
                self.facts.expansion_errors.append((s, str(exc)))
                continue
            self.facts.expansions.append(Edit(s, e, text))

    def _expansion(self, use: ci.Cursor, start: int, end: int) -> bytes:
        definition = use.referenced
        if definition is None:
            raise expand.ExpandError(f"cannot find the definition of macro '{use.spelling}'")
        path, ds = self.where(definition.extent.start)
        _, de = self.where(definition.extent.end)
        if path is None:
            text = self.data[ds:de]
        elif path:
            text = self.header_text(path, ds, de).encode()
        else:
            raise expand.ExpandError(f"macro '{use.spelling}' is defined on the command line; "
                                     "etcpre must rewrite its use (define it in the file)")
        d = expand.parse_definition(text)
        written = self.data[start:end]
        args = None
        if d.params is not None:
            args = expand.split_arguments(expand.tokenize(written[len(d.name):]))
        result = expand.join(expand.expand(d, args))
        shown = b" ".join(written.split())
        note = b" /* " + shown + b" */" if b"*/" not in shown and len(shown) <= 60 else b""
        return result + note + b"\n" * written.count(b"\n")


def _variably_modified(t: ci.Type, depth: int = 0) -> bool:
    if depth > 32:
        return False
    if t.kind == ci.TypeKind.VARIABLEARRAY:
        return True
    if t.kind in _ARRAYS:
        return _variably_modified(t.element_type.get_canonical(), depth + 1)
    return False
