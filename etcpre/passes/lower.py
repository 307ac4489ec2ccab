"""Pass 3, lower: Threaded-C constructs become C that calls the runtime (etc.h).

The translation scheme is the thesis's (chapter 2.2, Fig. 2.12-2.17):
- each thread n of f becomes `void _f_n(void *)`; thread 0 gets the parameter frame
  `_f_P`, allocates the activation frame `_f_F` and copies the parameters in;
- every local and parameter is a field of `_f_F`, reached through `_fp`; a local is
  initialised in place, member by member (`initialise.py`), never through a copy on
  the C stack;
- a thread function holds the whole body, entered with `goto THREAD_n;`, so a thread
  inside a loop continues the loop (Fig. 2.17); reaching another thread's label ends the
  current thread, exactly like END_THREAD(); what an entry can never reach is dropped
  (`reach.py` decides);
- CALL splits the caller: the code after it is continuation `_f_Ck`, entered the same
  way, which the callee's RETURN() resumes (Fig. 2.16);
- a GLOBAL pointer dereference becomes ETC_DEREF, and the address of a member or
  element reached through a GLOBAL pointer (`&p->a.b[i]`, `p->arr`) stays GLOBAL
  (ETC_GADDR: the pointer plus the member's offset, on the same node).

Rendering is recursive over the tree: a node with nothing to rewrite inside is copied
byte for byte, so comments, layout and line numbers of the source survive.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, fields

from etcpre.passes import forked
from etcpre.passes.analyse import (
    Local,
    Model,
    Signature,
    ThreadedFunction,
    adjusted_declaration,
)
from etcpre.passes.facts import Store
from etcpre.passes.primitives import CALL_PRIMITIVES, PRIMITIVES, VALUE_PRIMITIVES, Kind
from etcpre.passes.reach import (
    BLOCKS,
    LOOPS,
    PREPROC_BLOCKS,
    REENTERED,
    TAG_SPECIFIERS,
    Reach,
    case_header_end,
)
from etcpre.passes.syntax import (
    Node,
    NodeIndex,
    declarator_identifier,
    label_number,
    text,
    walk,
)


@dataclass
class SharedBody:
    """The one C function every thread function of a threaded function calls
    (SHARED_BODY): its name, the switch that starts it at the entry's label, and the
    body."""

    name: str
    dispatch: str
    text: str


@dataclass
class GeneratedFunction:
    """The C that replaces one threaded function definition."""

    fn: ThreadedFunction
    param_struct: str | None  # None when emitted before (a prototype, a caller)
    frame_struct: list[tuple[str, int | None]]  # fields, with their declarations' offsets
    prototypes: str
    statics: list[str]
    threads: list[tuple[str, str, str, str]]  # (C name, parameter, prologue, body)
    callee_structs: list[str]  # parameter frames of callees not emitted yet
    user_main: str | None
    types: list[tuple[int, str]] = field(default_factory=list)  # (working offset, C)
    layouts: list[str] = field(default_factory=list)  # the link-time check (_layouts)
    shared_body: SharedBody | None = None  # when the threads call one body (SHARED_BODY)


@dataclass
class Lowered:
    model: Model
    functions: dict[int, GeneratedFunction] = field(default_factory=dict)  # by start byte
    prototypes: dict[int, str] = field(default_factory=dict)  # by start byte
    plain: dict[int, str] = field(default_factory=dict)  # plain functions, rewritten


def param_struct(sig: Signature) -> str:
    """`_f_P`, the parameter frame; the same layout in every file that starts `f`."""
    fields = "".join(f"    {f.declaration};\n" for f in sig.fields)
    guard = f"_etc_have_{sig.name}_P"
    static = "static " if sig.static else ""
    return (f"#ifndef {guard}\n#define {guard}\n"
            f"typedef struct _{sig.name}_P {{\n    etc_ret _ret;\n{fields}}} _{sig.name}_P;\n"
            f"{static}void _{sig.name}_0(void *_etc_vpp);\n#endif\n")


def descriptor_name(fn_name: str) -> str:
    """The function's descriptor (etc.h etc_fn_info), which emit writes."""
    return f"_etc_fn_{fn_name}"


def _layouts(model: Model, fn: ThreadedFunction, referred: list[str]) -> list[str]:
    """The link-time check that files agree on parameter frames: the file defining f
    defines a symbol named after the layout of f's parameters, every file starting f
    (not defining it) refers to the symbol its own declaration of f names (once per
    file: `referred` are those this function is first to start); a disagreement is
    then an undefined symbol at link, which etcc explains."""
    out = []
    sig = model.signatures[fn.name]
    if not sig.static and fn.name != "MAIN":
        out.append(f"/* the link checks that every file starts {fn.name} with these "
                   f"parameters */\nconst char _etc_layout_{fn.name}_{sig.layout} = 0;\n")
    for callee in referred:
        symbol = f"_etc_layout_{callee}_{model.signatures[callee].layout}"
        out.append(f"extern const char {symbol};\n"
                   f"__attribute__((used)) static const char *const _etc_uses_{callee} = "
                   f"&{symbol};\n")
    return out


# Functions bigger than this in all (bytes of their definitions) are lowered in two
# processes, half of them in a forked child (`forked.py`), when two CPUs are there to
# run them: the child shares the model without a copy, and what it sends back is C
# text. Below it, the fork costs more than the half it saves.
PARALLEL_FROM_BYTES = 32 << 10


def lower(model: Model, parallel_from: int | None = None) -> Lowered:
    """The analyse pass reported everything; lowering cannot fail. Two processes
    lower the functions when they are `parallel_from` bytes or more in all
    (default PARALLEL_FROM_BYTES)."""
    out = Lowered(model)
    emitted: set[str] = set()
    for proto in model.prototypes:
        name = text(proto.child_by_field_name("name"))  # type: ignore[arg-type]
        out.prototypes[proto.start_byte] = param_struct(model.signatures[name])
        emitted.add(name)
    jobs = list(zip(model.functions, _emissions(model, emitted), strict=True))
    threshold = PARALLEL_FROM_BYTES if parallel_from is None else parallel_from
    for fn, gen in _generate(model, jobs, threshold):
        out.functions[fn.node.start_byte] = gen
    for p in model.plain_functions:
        marks = _marks(model, None, p, frozenset())
        if marks.points:
            out.plain[p.start_byte] = _Renderer(model, None, None, marks, scope=p).render(p)
    return out


@dataclass
class _Emission:
    """What of the file-wide, once-only C a threaded function's code carries: its own
    parameter frame (unless a prototype or a caller emitted it), the frames of the
    callees not emitted yet, and the layout symbols of the callees it is first to
    refer to (`_layouts`). Decided for every function first, in file order, so that
    the functions are then lowered in any order, in either process."""

    own_struct: bool
    callee_structs: list[str]
    referred: list[str]


def _emissions(model: Model, emitted: set[str]) -> list[_Emission]:
    referred: set[str] = set()
    out = []
    for fn in model.functions:
        own = fn.name not in emitted
        emitted.add(fn.name)
        callees, refs = [], []
        for callee in model.used_callees.get(fn.name, []):
            csig = model.signatures.get(callee)
            if csig is None:
                continue
            # declared in a header or defined later in this file: its frame first
            if callee not in emitted:
                callees.append(callee)
                emitted.add(callee)
            if not (csig.defined_here or csig.static or callee in referred):
                referred.add(callee)
                refs.append(callee)
        out.append(_Emission(own, callees, refs))
    return out


def _generate(model: Model, jobs: list[tuple[ThreadedFunction, _Emission]],
              parallel_from: int) -> list[tuple[ThreadedFunction, GeneratedFunction]]:
    """Every function's C, in `jobs`' order: in this process, or about half of it (by
    size) in a forked child when that pays."""
    sizes = [fn.node.end_byte - fn.node.start_byte for fn, _ in jobs]
    if len(jobs) < 2 or sum(sizes) < parallel_from or forked.usable_cpus() < 2:
        return [(fn, _function(model, fn, em)) for fn, em in jobs]
    shares: tuple[list[int], list[int]] = ([], [])  # this process's, the child's
    loads = [0, 0]
    for k in sorted(range(len(jobs)), key=lambda k: -sizes[k]):  # each to the lighter
        share = 0 if loads[0] <= loads[1] else 1
        shares[share].append(k)
        loads[share] += sizes[k]
    mine, theirs = shares
    try:
        child = forked.Forked(lambda: [_detached(_function(model, *jobs[k])) for k in theirs])
    except OSError:  # no fork: all of it here
        mine, theirs = mine + theirs, []
    done = {k: _function(model, *jobs[k]) for k in mine}
    if theirs:
        try:
            for k, state in zip(theirs, child.result(), strict=True):
                done[k] = GeneratedFunction(jobs[k][0], **state)  # type: ignore[arg-type]
        except (forked.ChildError, forked.ChildRaised):
            # the same code here: a bug then shows as any other of this process
            for k in theirs:
                done[k] = _function(model, *jobs[k])
    return [(jobs[k][0], done[k]) for k in range(len(jobs))]


def _detached(gen: GeneratedFunction) -> dict[str, object]:
    """A GeneratedFunction without its ThreadedFunction (syntax nodes, which do not
    pickle): the rest is text."""
    return {f.name: getattr(gen, f.name) for f in fields(gen) if f.name != "fn"}


def _function(model: Model, fn: ThreadedFunction, emission: _Emission) -> GeneratedFunction:
    pstruct = param_struct(model.signatures[fn.name]) if emission.own_struct else None
    callee_structs = [param_struct(model.signatures[c]) for c in emission.callee_structs]
    hoisted = hoisted_items(fn, model.index)
    moved = frozenset(n.start_byte for n in hoisted if n.type != "preproc_def" and
                      n.type != "preproc_function_def")
    assert fn.reach is not None
    entries = fn.entries().names()
    marks = _marks(model, fn, fn.body, moved)
    static = "static " if fn.static else ""
    protos = "".join(f"{static}void _{fn.name}_{e}(void *_etc_v);\n" for e in entries[1:])
    threads = []
    shared = None
    if _shares_body(fn):
        # one body, entered at each thread's label by a switch: every thread
        # function is the body's call (see SHARED_BODY)
        body_name = f"_{fn.name}_body"
        cases = "".join(f" case {i}: goto {_entry_label(e)};" for i, e in enumerate(entries)
                        if e != "0")
        shared = SharedBody(body_name, f"    switch (_etc_entry) {{{cases} default: break; }}\n",
                            _Renderer(model, fn, ALL_ENTRIES, marks, moved).render(fn.body))
        for i, e in enumerate(entries):
            param = "_etc_vpp" if e == "0" else "_etc_v"
            threads.append((f"_{fn.name}_{e}", param, _prologue(model, fn, e, goto=False),
                            f"{{ {body_name}(_fp, {i}); }}"))
    else:
        # where a renderer must look inside: a mark, or a block whose items it may drop
        walked = _Marks(sorted({*marks.points, *fn.reach.block_starts}), marks.indexed,
                        sorted({*marks.structural, *fn.reach.block_starts}))
        for e in entries:
            r = _Renderer(model, fn, e, walked, moved, fn.reach)
            param = "_etc_vpp" if e == "0" else "_etc_v"
            threads.append((f"_{fn.name}_{e}", param, _prologue(model, fn, e),
                            r.render(fn.body)))
    statics = [_static(model, fn, group) for group in _groups(fn.statics)]
    types = [(n.start_byte, text(n).rstrip() + (";" if n.type in TAG_SPECIFIERS else ""))
             for n in hoisted]
    return GeneratedFunction(fn, pstruct, _frame_struct(fn), protos, statics, threads,
                             callee_structs,
                             _user_main(model, fn) if fn.name == "MAIN" else None, types,
                             _layouts(model, fn, emission.referred), shared)


# SHARED_BODY: a thread function holds the code its entry reaches. When thread labels
# sit inside a loop, each of them reaches the whole loop, and one function per entry
# repeats it: n threads in a loop gave n copies of it (100 threads in a switch in a
# loop: 726 lines of Threaded-C, 73,053 of C). Past this many copies of the body, the
# threaded function is one C function entered through a switch on the entry, and each
# thread function calls it (never inlined, so the C stays linear).
SHARED_BODY_COPIES = 2
ALL_ENTRIES = "*"  # the renderer's entry for a shared body: every label is a target


def _entry_label(entry: str) -> str:
    return f"THREAD_{entry}" if not entry.startswith("C") else f"_etc_{entry}"


def _shares_body(fn: ThreadedFunction) -> bool:
    """Whether one-function-per-entry would repeat more than SHARED_BODY_COPIES
    bodies' worth of code: each entry whose label is inside a loop reaches at least
    the outermost loop around it."""
    body = fn.body
    size = max(1, body.end_byte - body.start_byte)
    repeated = 0
    for target in [*fn.labels.values(), *fn.calls]:
        outer = None
        node = target.parent
        while node is not None and node.id != body.id:
            if node.type in LOOPS:
                outer = node
            node = node.parent
        if outer is not None:
            repeated += outer.end_byte - outer.start_byte
    return repeated > SHARED_BODY_COPIES * size


# Dropped code of up to this many lines is replaced by its line breaks, longer code by
# a #line directive (three lines of C).
SKIP_BY_LINE_BREAKS = 3

# Source-map markers (see emit.source_map): text copied from the working text at an
# offset, or generated for the construct at an offset. Emit removes them.
MARK_OPEN, MARK_CLOSE = "\ue000", "\ue001"


def copied(start: int, end: int, body: str) -> str:
    return f"{MARK_OPEN}V{start},{end - start}{MARK_CLOSE}{body}"


def generated(offset: int) -> str:
    return f"{MARK_OPEN}G{offset}{MARK_CLOSE}"


class _Out:
    """The pieces of a rendering. A copy of the working text that follows the
    previous one directly, on the same line, joins it (ASCII only, where the C width
    is the byte count): one mark instead of one per token, and the source map locates
    every column as before, past the end of a line too (a piece whose mark would be
    on a later line keeps its mark)."""

    def __init__(self, data: bytes, ascii_only: bool = False) -> None:
        self.data = data
        self.ascii_only = ascii_only  # the whole text is ASCII: no piece is to check
        self.pieces: list[str] = []
        self.start = self.end = -1  # the pending copy (none when start == end)
        self.open = False  # ... and the next copy may join it (no line break in it)

    def copy_node(self, start: int, end: int) -> None:
        """A node's text, with its mark even when it is empty (as copied() gives)."""
        if start == end:
            self.add(copied(start, end, ""))
        else:
            self.copy(start, end)

    def copy(self, start: int, end: int) -> None:
        if start >= end:
            return
        data = self.data
        if not self.ascii_only:
            piece = data[start:end]
            if not piece.isascii():  # decoding may change the width: a piece of its own
                self.add(copied(start, end, piece.decode("utf-8", errors="replace")))
                return
        if not (self.open and start == self.end):
            self._flush()
            self.start = start
        self.end = end
        self.open = data.find(b"\n", start, end) < 0

    def add(self, text: str) -> None:
        self._flush()
        self.pieces.append(text)

    def text(self) -> str:
        self._flush()
        return "".join(self.pieces)

    def _flush(self) -> None:
        if self.start < self.end:
            self.pieces.append(copied(self.start, self.end,
                                      self.data[self.start:self.end].decode("ascii")))
        self.start = self.end = -1
        self.open = False


def _line_breaks(node: Node) -> str:
    """What stands for code dropped from a thread: its line breaks, so #line stays true."""
    return "\n" * text(node).count("\n")


def hoisted_items(fn: ThreadedFunction, index: NodeIndex) -> list[Node]:
    """What a threaded function defines for its frame: typedefs and struct/union/enum
    definitions standing as block items, and macro definitions. They go to file scope,
    ahead of the frame struct, because frame fields (file scope) may use them; the
    types leave the body, the macros stay (an identical redefinition is C)."""
    out = []
    for node in index.within(fn.body, *HOISTED_TYPES):
        if node.type not in TAG_SPECIFIERS:
            out.append(node)
        elif node.child_by_field_name("body") is not None:
            parent = node.parent  # rare: asking for it costs a walk from the root
            if parent is not None and parent.type in ("compound_statement", *PREPROC_BLOCKS):
                out.append(node)
    return out


def _groups(locals_: list[Local]) -> list[list[Local]]:
    """Locals declared by one declaration stay together (a struct body is written once)."""
    groups: list[list[Local]] = []
    for loc in locals_:
        if groups and groups[-1][0].declaration == loc.declaration:
            groups[-1].append(loc)
        else:
            groups.append([loc])
    return groups


def _declarator_text(loc: Local) -> str:
    """The declarator as written, renamed to its field, with `[]` sized from clang."""
    d = loc.declarator
    edits: list[tuple[int, int, str]] = []
    for node in walk(d):
        if node.type in ("identifier", "field_identifier") and text(node) == loc.name:
            edits.append((node.start_byte, node.end_byte, loc.field))
            break
    size = loc.var.array_size if loc.var is not None else None
    if size is not None and d.type == "array_declarator" and \
            d.child_by_field_name("size") is None:
        close = next((c for c in d.children if c.type == "]"), None)
        if close is not None:
            edits.append((close.start_byte, close.start_byte, str(size)))
    return _apply(d, edits)


def _apply(node: Node, edits: list[tuple[int, int, str]]) -> str:
    data = node.text or b""
    base = node.start_byte
    out = b""
    pos = 0
    for start, end, new in sorted(edits):
        out += data[pos:start - base] + new.encode()
        pos = end - base
    return (out + data[pos:]).decode("utf-8", errors="replace")


def _prefix(decl: Node) -> str:
    """Declaration specifiers as written, minus the storage class."""
    first = decl.child_by_field_name("declarator")
    end = first.start_byte if first is not None else decl.end_byte
    edits = [(c.start_byte, c.end_byte, "") for c in decl.children
             if c.start_byte < end and c.type == "storage_class_specifier"]
    return _apply_prefix(decl, end, edits)


def _apply_prefix(decl: Node, end: int, edits: list[tuple[int, int, str]]) -> str:
    data = (decl.text or b"")[: end - decl.start_byte]
    out = b""
    pos = 0
    for start, stop, new in edits:
        out += data[pos:start - decl.start_byte] + new.encode()
        pos = stop - decl.start_byte
    return " ".join((out + data[pos:]).decode("utf-8", errors="replace").split())


def _param_field(p: Local) -> str:
    """A parameter's frame field: as written (const kept: the body cannot assign it),
    arrays and functions as the pointers they are passed as."""
    written = text(p.declaration)
    adjusted = adjusted_declaration(written, p.name, keep_const=True, rename=p.field)
    if adjusted is not None:
        return adjusted
    shown = p.param.type if p.param is not None else "int"
    return f"__typeof__({shown}) {p.field}"


def _frame_struct(fn: ThreadedFunction) -> list[tuple[str, int | None]]:
    """The activation frame's fields, each with the working offset of the declaration
    it comes from (emit gives each its .tc line, so cc's diagnostics about a field
    point at the declaration)."""
    lines: list[tuple[str, int | None]] = [("    ETC_FRAME_HEADER", None)]
    if fn.slots_decl is not None:
        size = fn.slots_decl.child_by_field_name("size")
        shown = f" /* SYNC_SLOTS[{text(size)}] */" if size is not None and \
            text(size) != str(fn.nslots) else ""
        lines.append((f"    etc_slot _slots[{fn.nslots}];{shown}", fn.slots_decl.start_byte))
    lines.append(("    etc_ret _ret;", None))
    for p in fn.params:
        lines.append((f"    {_param_field(p)};", p.declaration.start_byte))
    for group in _groups(fn.locals):
        decls = ", ".join(_declarator_text(loc) for loc in group)
        lines.append((f"    {_prefix(group[0].declaration)} {decls};",
                      group[0].declaration.start_byte))
    return lines


def _static(model: Model, fn: ThreadedFunction, group: list[Local]) -> str:
    prefix = _prefix(group[0].declaration)
    parts = []
    for loc in group:
        d = _declarator_text(loc)
        if loc.init is not None:
            marks = _marks(model, fn, loc.init, frozenset())
            d += " = " + _Renderer(model, fn, "0", marks).render(loc.init)
        parts.append(d)
    return f"static {prefix} {', '.join(parts)};\n"


def _copy(target: str, value: str, assignable: bool) -> str:
    """`target = value` as an expression, also where target is (or holds) const:
    then the value is built in a temporary of the target's type and copied."""
    if assignable:
        return f"{target} = {value}"
    return (f"({{ __typeof__({target}) _etc_t = {value}; "
            f"__builtin_memcpy((void *)&{target}, &_etc_t, sizeof _etc_t); }})")


def _prologue(model: Model, fn: ThreadedFunction, entry: str, goto: bool = True) -> str:
    name = fn.name
    if entry != "0":
        jump = f"    goto {_entry_label(entry)};\n" if goto else ""
        return f"    _{name}_F *_fp = (_{name}_F *)_etc_v;\n{jump}"
    fields = model.signatures[name].fields
    copies = ""
    for p, f in zip(fn.params, fields, strict=False):
        assignable = p.param.assignable if p.param is not None else True
        if assignable:
            copies += f"    _fp->{p.field} = _pp->{f.name};\n"
        else:
            copies += (f"    __builtin_memcpy((void *)&_fp->{p.field}, &_pp->{f.name}, "
                       f"sizeof _fp->{p.field});\n")
    return (f"    _{name}_P *_pp = (_{name}_P *)_etc_vpp;\n"
            f"    _{name}_F *_fp = (_{name}_F *)etc_frame_alloc(sizeof *_fp);\n"
            f"    etc_frame_check_init(_fp, \"{name}\", {fn.nslots or 0});\n"
            f"    etc_fn_enter(&{descriptor_name(name)});\n"
            f"    _fp->_ret = _pp->_ret;\n{copies}"
            f"    etc_param_free(_pp, sizeof *_pp);\n")


def _user_main(model: Model, fn: ThreadedFunction) -> str:
    sets = ""
    fields = model.signatures[fn.name].fields
    if len(fields) == 2:
        sets = (f"    _etc_pp->{fields[0].name} = argc;\n"
                f"    _etc_pp->{fields[1].name} = argv;\n")
    return ("/* The runtime calls this on node 0 to start THREADED MAIN. */\n"
            "void etc_user_main(int argc, char **argv)\n{\n"
            "    _MAIN_P *_etc_pp = (_MAIN_P *)etc_param_alloc(sizeof *_etc_pp);\n"
            "    _etc_pp->_ret = ETC_STARTED(0, 0, NULL, NULL);\n"
            f"{sets}"
            "    (void)argc;\n    (void)argv;\n"
            "    etc_invoke(0, _MAIN_0, _etc_pp, sizeof *_etc_pp);\n}\n")


# what _marks looks at in a body (besides what starts at a local or a hoisted type,
# and the names of value primitives, found in the text: identifiers are the most
# numerous nodes)
MARKED_TYPES = ("subscript_expression", "pointer_expression", "field_expression",
                "parenthesized_expression", "declaration", "thread_label",
                "sync_slots_declaration", "call_expression")
_VALUE_NAME = re.compile(rb"\b(?:" + b"|".join(
    re.escape(name.encode()) for name in sorted(VALUE_PRIMITIVES)) + rb")\b")
HOISTED_TYPES = ("type_definition", "preproc_def", "preproc_function_def", *TAG_SPECIFIERS)


@dataclass(frozen=True)
class _Marks:
    """What a function's renderers share (computed once per function)."""

    points: list[int]  # start bytes of the nodes that may need rewriting, sorted
    indexed: frozenset[tuple[int, int]]  # operands of [] and unary * (ranges)
    # the points other than plain references to locals (those are most of them): a
    # subtree holding none of these is rendered by replacing its references in the text
    structural: list[int]


def _marks(model: Model, fn: ThreadedFunction | None, scope: Node,
           hoisted: frozenset[int]) -> _Marks:
    """Where under `scope` something may need rewriting (once per function: every
    entry's renderer shares it)."""
    refs: set[int] = set()
    marks = set()  # the structural points
    indexed = set()
    facts = model.facts
    nodes: Iterable[Node]
    if model.index.has(scope):  # a body: only the node types that may be rewritten,
        nodes = model.index.within(scope, *MARKED_TYPES)
        if fn is not None:  # and the nodes starting where a local or a type is
            refs = {k for k in fn.refs if scope.start_byte <= k < scope.end_byte}
            marks = {k for k in hoisted if scope.start_byte <= k < scope.end_byte}
        # where a value primitive may be named (a superset: in a comment or a string,
        # a mark only makes the renderer look there)
        marks.update(m.start() for m in _VALUE_NAME.finditer(
            model.working.data, scope.start_byte, scope.end_byte))
    else:
        nodes = walk(scope)
    for node in nodes:
        # a decaying GLOBAL array indexed or dereferenced is an access, not an address
        if node.type == "subscript_expression" or (
                node.type == "pointer_expression" and
                text(node.child_by_field_name("operator")) == "*"):  # type: ignore[arg-type]
            arg = node.child_by_field_name("argument")
            if arg is not None:
                indexed.add((arg.start_byte, arg.end_byte))
        t = node.type
        special = False
        span = (node.start_byte, node.end_byte)
        if fn is not None and (node.start_byte in hoisted or
                               t in ("declaration", "thread_label", "sync_slots_declaration")):
            special = True
        elif t == "identifier":
            special = text(node) in VALUE_PRIMITIVES
        elif t == "call_expression":
            special = model.index.call_name(node) in CALL_PRIMITIVES
        if t in ("pointer_expression", "subscript_expression", "field_expression"):
            special = special or _global_operand(model, node) is not None or \
                span in facts.global_decays
        elif t == "parenthesized_expression" and span in facts.global_decays:
            special = True
        if special:
            marks.add(node.start_byte)
    return _Marks(sorted(marks | refs), frozenset(indexed), sorted(marks))


class _Renderer:
    """Renders a subtree with every Threaded-C construct lowered, for one entry point.

    `marks` (from `_marks`, once per function, with the starts of the blocks whose
    items an entry may drop) say where something may need rewriting; a subtree
    holding no mark is copied byte for byte."""

    def __init__(self, model: Model, fn: ThreadedFunction | None, entry: str | None,
                 marks: _Marks, hoisted: frozenset[int] = frozenset(),
                 reached: Reach | None = None, scope: Node | None = None) -> None:
        self.model = model
        self.fn = fn
        self.entry = entry
        self.fname = fn.name if fn is not None else _plain_name(scope) if scope else "?"
        self.call_index = {c.start_byte: i + 1 for i, c in enumerate(fn.calls)} if fn else {}
        self.hoisted = hoisted  # where the types hoisted_items() moves to file scope start
        self._marks = marks.points
        self._structural = marks.structural
        self._indexed = marks.indexed
        self.data = model.working.data
        self._ascii = model.ascii_only
        # blocks are walked item by item where the entry may drop some (reach's plan)
        self._reach = reached if entry is not None else None
        self._sub_dead: dict[int, bool] = {}  # a conditional's or case's start, from its block
        # the walk's context for the plans: does the entry execute the innermost
        # switch's head; can control reach the current item from its start
        self._dispatch = False
        self._entered = True
        self._switch_dispatch: dict[int, bool] = {}  # a switch body's id: its dispatch

    def _has_marks(self, node: Node) -> bool:
        points = self._marks
        i = bisect.bisect_left(points, node.start_byte)
        return i < len(points) and points[i] < node.end_byte

    # -- generic

    def render(self, node: Node, parent: Node | None = None) -> str:
        out = _Out(self.data, self._ascii)
        self._render_into(node, parent, out)
        return out.text()

    def _render_into(self, node: Node, parent: Node | None, out: _Out) -> None:
        """Appends the pieces (one list for the whole walk: joining at every level
        would copy deep code once per level)."""
        # a token (an anonymous node: grammar/src/node-types.json gives none children)
        # is its text whatever marks it holds: no rewrite applies to one
        if not node.is_named or not self._has_marks(node):
            out.copy_node(node.start_byte, node.end_byte)
            return
        if self._references_only(node):
            self._references_into(node.start_byte, node.end_byte, out)
            return
        special = self._special(node, parent)
        if special is not None:
            out.add(generated(node.start_byte))
            out.add(special)
            return
        self._children_into(node, out)

    def _references_only(self, node: Node) -> bool:
        """Is every rewrite in this subtree a reference to a local (no structural
        point), in ASCII (where a reference's length is its name's)?"""
        if self.fn is None:
            return False
        points = self._structural
        start, end = node.start_byte, node.end_byte
        i = bisect.bisect_left(points, start)
        if i < len(points) and points[i] < end:
            return False
        return self._ascii or self.data[start:end].isascii()

    def _references_into(self, start: int, end: int, out: _Out) -> None:
        """start..end with each reference to a local rewritten as _special() would,
        without walking the nodes between them."""
        assert self.fn is not None
        refs = self.fn.refs
        points = self._marks
        data = self.data
        pieces = out.pieces
        pos = start
        joined = False  # the first copy joins what `out` holds; the later ones are pieces
        for k in range(bisect.bisect_left(points, start), len(points)):
            at = points[k]
            if at >= end:
                break
            loc = refs[at]
            if loc.in_block:
                continue
            rewritten = generated(at) + (loc.field if loc.is_static else f"_fp->{loc.field}")
            if not joined:
                out.copy(pos, at)
                out.add(rewritten)
                joined = True
            else:  # as copy() then add() make them (ASCII: no piece to check)
                if pos < at:
                    pieces.append(copied(pos, at, data[pos:at].decode("ascii")))
                pieces.append(rewritten)
            pos = at + len(loc.name)
        out.copy(pos, end)

    def _children_into(self, node: Node, out: _Out) -> None:
        # slices of the whole text (_Out.copy): node.text would copy the subtree again
        entered = self._entered
        if self._reach is not None and self.entry is not None:
            t = node.type
            if t in BLOCKS:
                self._block_into(node, out)
                return
            if t == "switch_statement":
                body = node.child_by_field_name("body")
                if body is not None:
                    self._switch_dispatch[body.id] = entered
            elif t in REENTERED:
                self._entered = True
        pos = node.start_byte
        points = self._marks
        for c in node.children:
            start, end = c.start_byte, c.end_byte
            out.copy(pos, start)
            # _render_into's first test, here: most children hold nothing to rewrite
            i = bisect.bisect_left(points, start)
            if c.is_named and i < len(points) and points[i] < end:
                self._render_into(c, node, out)
            else:
                out.copy_node(start, end)
            pos = end
        out.copy(pos, node.end_byte)
        self._entered = entered

    def _block_into(self, node: Node, out: _Out) -> None:
        """A block, visiting only what this entry keeps: each run of dropped items
        (with what lies between them) is skipped in one step."""
        reach = self._reach
        assert reach is not None and self.entry is not None
        dead = self._sub_dead.get(node.id)
        dispatch = self._switch_dispatch.get(node.id, True) \
            if node.id in reach.switch_bodies else self._dispatch
        plan = reach.plan(self.entry, node, dead, dispatch)
        outer = (self._dispatch, self._entered)
        self._dispatch = dispatch
        children, where = plan.children, plan.child_index
        pos = node.start_byte
        next_child = 0
        if dead and node.type == "case_statement":
            # a case label this entry cannot reach: what it keeps of the case (a target
            # inside, its own label) goes without the label, so no label stands alone
            next_child = case_header_end(node)
            pos = children[next_child - 1].end_byte
            out.add("\n" * self.data.count(b"\n", node.start_byte, pos))

        def copy_up_to(end: int) -> None:  # children next_child .. end - 1, as they are
            nonlocal pos, next_child
            for c in children[next_child:end]:
                out.copy(pos, c.start_byte)
                self._render_into(c, node, out)
                pos = c.end_byte
            next_child = max(next_child, end)

        previous = -1
        for k in [*plan.kept, len(plan.items)]:
            if k > previous + 1:  # items previous+1 .. k-1 are dropped
                first, last = where[previous + 1], where[k - 1]
                copy_up_to(first)
                pos = self._skip_into(pos, children[first].start_byte, children[last].end_byte,
                                      out)
                next_child = last + 1
            if k == len(plan.items):
                break
            if k in plan.sub_dead:
                self._sub_dead[plan.items[k].id] = plan.sub_dead[k]
            self._entered = not plan.dead_before(k)
            copy_up_to(where[k] + 1)
            previous = k
        copy_up_to(len(children))
        out.copy(pos, node.end_byte)
        self._dispatch, self._entered = outer

    def _skip_into(self, pos: int, start: int, end: int, out: _Out) -> int:
        """Drops start..end (after the gap from pos): its line breaks stand for it where
        they are few, else a line directive, so that each thread function holds only
        the code it runs and the output grows with the code, not with threads times
        code. Returns where copying goes on."""
        data = self.data
        if data.count(b"\n", start, end) <= SKIP_BY_LINE_BREAKS:
            out.copy(pos, start)
            out.add("\n" * data.count(b"\n", start, end))
            return end
        # whole lines where the code is alone on its lines: no line of blanks around
        line_start = data.rfind(b"\n", pos, start) + 1
        if line_start and not data[line_start:start].strip():
            out.copy(pos, line_start)
        else:
            out.copy(pos, start)
            out.add("\n")
        line_end = data.find(b"\n", end)
        if line_end >= 0 and not data[end:line_end].strip():
            end = line_end + 1
        out.add(self.model.working.resume_at(end))
        return end

    def _children(self, node: Node) -> str:
        out = _Out(self.data, self._ascii)
        self._children_into(node, out)
        return out.text()

    def _is_hoisted(self, node: Node) -> bool:
        return node.start_byte in self.hoisted and (node.type == "type_definition" or
                                                    node.type in TAG_SPECIFIERS)

    def _special(self, node: Node, parent: Node | None) -> str | None:
        t = node.type
        fn = self.fn
        if node.start_byte in self.hoisted and self._is_hoisted(node):
            return _line_breaks(node)  # moved to file scope
        if t == "identifier":
            if fn is not None and node.start_byte in fn.refs:
                loc = fn.refs[node.start_byte]
                if loc.in_block:
                    return None
                return loc.field if loc.is_static else f"_fp->{loc.field}"
            prim = PRIMITIVES.get(text(node))
            return prim.lowering if prim is not None and prim.kind is Kind.VALUE else None
        if t == "call_expression":
            return self._call(node)
        if t == "expression_statement" and fn is not None:
            return self._statement(node)
        if t == "declaration" and fn is not None:
            return self._declaration(node, parent)
        if t == "thread_label" and fn is not None:
            n = str(label_number(node))
            own = n == self.entry or self.entry == ALL_ENTRIES
            return f"return; THREAD_{n}: ;" if own else "return;"
        if t == "sync_slots_declaration":
            return ";"
        if t in ("pointer_expression", "subscript_expression", "field_expression",
                 "parenthesized_expression"):
            return self._global(node)
        return None

    # -- GLOBAL pointers

    def _global(self, node: Node) -> str | None:
        model = self.model
        span = (node.start_byte, node.end_byte)
        if span in model.facts.global_decays and span not in self._indexed:
            addr = self._address(node, "[0]")  # p->arr used as a value: &p->arr[0]
            if addr is not None:
                return addr
        if node.type == "parenthesized_expression":
            return None
        operand = _global_operand(model, node)
        if operand is None:
            return None
        if node.type == "pointer_expression" and \
                text(node.child_by_field_name("operator")) == "&":  # type: ignore[arg-type]
            addr = self._address(operand, "")
            if addr is not None:
                return addr
        wrapped = f'ETC_DEREF({self.render(operand)}, "{self.fname}", __FILE__, __LINE__)'
        if node.type == "pointer_expression":
            return f"*{wrapped}"
        return self._children_with(node, operand, wrapped)

    def _address(self, target: Node, tail: str) -> str | None:
        """The address of the object `target` designates, reached through a GLOBAL
        pointer, computed without access and kept on the pointer's node: &*p is p,
        &p[i] is p + i, &p->a.b[i] is p plus the offset of a.b[i]."""
        model = self.model
        designator = tail
        node = target
        while True:
            while node.type == "parenthesized_expression":
                inner = [c for c in node.named_children if c.type != "comment"]
                if len(inner) != 1:
                    return None
                node = inner[0]
            t = node.type
            if t == "field_expression":
                arg = node.child_by_field_name("argument")
                op = node.child_by_field_name("operator")
                member = node.child_by_field_name("field")
                if arg is None or op is None or member is None:
                    return None
                designator = f"{text(member)}{designator}"
                if op.type == "->":
                    base = arg
                    break
                designator = f".{designator}"
                node = arg
            elif t == "subscript_expression":
                arg = node.child_by_field_name("argument")
                index = node.child_by_field_name("index")
                if arg is None or index is None:
                    return None
                if (arg.start_byte, arg.end_byte) in model.facts.arrays:
                    designator = f"[{self.render(index)}]{designator}"
                    node = arg
                    continue
                pointer, other = (arg, index) if _is_global(model, arg) else (index, arg)
                if not _is_global(model, pointer):
                    return None
                base_text = f"({self.render(pointer)}) + ({self.render(other)})"
                return self._gaddr(base_text, designator)
            elif t == "pointer_expression":
                op = node.child_by_field_name("operator")
                arg = node.child_by_field_name("argument")
                if op is None or op.type != "*" or arg is None:
                    return None
                base = arg
                break
            else:
                return None
        if not _is_global(model, base):
            return None
        return self._gaddr(self.render(base), designator)

    @staticmethod
    def _gaddr(base: str, designator: str) -> str:
        designator = designator.lstrip(".")
        if not designator:
            return f"({base})"
        return f"ETC_GADDR({base}, {designator})"

    def _children_with(self, node: Node, child: Node, replacement: str) -> str:
        out = _Out(self.data, self._ascii)
        pos = node.start_byte
        for c in node.children:
            out.copy(pos, c.start_byte)
            if c == child:
                out.add(generated(c.start_byte) + replacement)
            else:
                self._render_into(c, node, out)
            pos = c.end_byte
        out.copy(pos, node.end_byte)
        return out.text()

    # -- primitives

    def constant(self, arg: Node, k: int, call: Node) -> int | None:
        facts = self.model.facts.calls.get(call.start_byte)
        if facts is None or k >= len(facts.args) or facts.args[k].constant != "int":
            return None
        return facts.args[k].value

    def slot(self, call: Node, k: int) -> str:
        fn = self.fn
        assert fn is not None
        arg = self.model.index.call_args(call)[k]
        if self.constant(arg, k, call) is not None:
            return f"&_fp->_slots[{self.render(arg)}]"
        return (f'ETC_SLOT(_fp, ({self.render(arg)}), {fn.nslots}, "{fn.name}", '
                "__FILE__, __LINE__)")

    def thread(self, call: Node, k: int) -> str:
        arg = self.model.index.call_args(call)[k]
        return f"_{self.fname}_{self.constant(arg, k, call)}"

    def _call(self, node: Node) -> str | None:
        prim = CALL_PRIMITIVES.get(self.model.index.call_name(node) or "")
        if prim is None or prim.kind in (Kind.CONTROL, Kind.START):
            return None  # lowered as a statement
        if self.fn is None and prim.kind is not Kind.ANYWHERE:
            return None  # reported by analyse
        assert prim.lowering is not None
        return prim.lowering.format_map(_Fields(self, node))

    def _statement(self, node: Node) -> str | None:
        expr = next((c for c in node.named_children if c.type != "comment"), None)
        if expr is None or expr.type != "call_expression":
            return None
        prim = CALL_PRIMITIVES.get(self.model.index.call_name(expr) or "")
        if prim is None or prim.kind not in (Kind.CONTROL, Kind.START):
            return None
        if prim.kind is Kind.CONTROL:
            assert prim.lowering is not None
            return prim.lowering.format_map(_Fields(self, expr))
        return self._start(prim.name, expr)

    def _start(self, name: str, call: Node) -> str:
        fn = self.fn
        assert fn is not None
        args = self.model.index.call_args(call)
        fidx = 1 if name == "INVOKE" else 0
        callee = text(args[fidx])
        sig = self.model.signatures[callee]
        sets = ""
        for k, (f, a) in enumerate(zip(sig.fields, args[fidx + 1:], strict=False)):
            target = f"_etc_pp->{f.name}"
            value = self.render(a)
            if (call.start_byte, fidx + 1 + k) in self.model.warned_args:
                value = f"(__typeof__({target}))({value})"  # etcpre said it already
            sets += f" {_copy(target, value, f.assignable)};"
        head = (f"{{ _{callee}_P *_etc_pp = (_{callee}_P *)etc_param_alloc(sizeof *_etc_pp);")
        size = "sizeof *_etc_pp"
        if name == "INVOKE":
            return (f'{head} _etc_pp->_ret = ETC_STARTED(0, 0, "{fn.name}", "INVOKE");{sets} '
                    f"etc_invoke({self.render(args[0])}, _{callee}_0, _etc_pp, {size}); }}")
        if name == "TOKEN":
            return (f'{head} _etc_pp->_ret = ETC_STARTED(0, 0, "{fn.name}", "TOKEN");{sets} '
                    f"etc_token(_{callee}_0, _etc_pp, {size}); }}")
        k = self.call_index[call.start_byte]
        own = self.entry == f"C{k}" or self.entry == ALL_ENTRIES
        label = f" _etc_C{k}: ;" if own else ""
        # one statement, so that `if (c) CALL(f);` stays correct; the continuation
        # function enters at the label right after the return
        return (f"{head} _etc_pp->_ret = ETC_STARTED(_{fn.name}_C{k}, _fp, \"{fn.name}\", "
                f'"CALL");{sets} etc_call(_{callee}_0, _etc_pp); return;{label} }}')

    # -- declarations become initialisations of frame fields

    def _declaration(self, node: Node, parent: Node | None) -> str | None:
        fn = self.fn
        assert fn is not None
        locals_ = [loc for loc in fn.locals + fn.statics + fn.block_locals
                   if loc.declaration == node]
        if not locals_:
            return None  # extern, prototype: kept as written
        if any(loc.in_block for loc in locals_):
            return self._children(node)  # stays a C declaration of its block
        in_for = parent is not None and parent.type == "for_statement"
        parts: list[str] = []
        for loc in locals_:
            if loc.init is not None and not loc.is_static:
                parts += self._initialise(loc)
        if in_for:
            return ", ".join(parts) + ";"
        return " ".join(f"{p};" for p in parts) if parts else ";"

    def _initialise(self, loc: Local) -> list[str]:
        """Expressions that initialise loc's frame field in place."""
        assert loc.init is not None
        target = f"_fp->{loc.field}"
        var = loc.var
        assignable = var.assignable if var is not None else True
        init = loc.init
        if init.type == "initializer_list":
            if var is not None and var.stores is not None and assignable:
                out = [f"__builtin_memset(&{target}, 0, sizeof {target})"] \
                    if var.zero_first else []
                return out + [self._store(target, s, init) for s in var.stores]
            return [_copy(target, self.render(init), False)]
        if init.type in ("string_literal", "concatenated_string") and \
                loc.declarator.type == "array_declarator":
            if assignable:
                return [self._string(target, init)]
            return [_copy(target, self.render(init), False)]
        return [_copy(target, self.render(init), assignable)]

    def _store(self, target: str, store: Store, init: Node) -> str:
        node = init.descendant_for_byte_range(store.start, store.end)
        while node is not None and (node.start_byte, node.end_byte) != (store.start,
                                                                         store.end):
            node = node.parent
        assert node is not None
        if store.string:
            return self._string(f"{target}{store.path}", node)
        return f"{target}{store.path} = {self.render(node)}"

    def _string(self, target: str, literal: Node) -> str:
        """A char array from a string literal: the characters, then zeros (C11 6.7.9p14)."""
        lit = self.render(literal)
        if not re.search(r"\\(0|x0*(?![0-9a-fA-F]))", lit) and not re.match(r"\s*[LuU]", lit):
            return f"__builtin_strncpy({target}, {lit}, sizeof {target})"
        return (f"__builtin_memset({target}, 0, sizeof {target}), "
                f"__builtin_memcpy({target}, {lit}, sizeof {lit} < sizeof {target} ? "
                f"sizeof {lit} : sizeof {target})")


_FIELD = re.compile(r"(gslot|slot|thread|a)(\d+)")


class _Fields:
    """The fields of a lowering template (see primitives.py), computed when asked for."""

    def __init__(self, renderer: _Renderer, call: Node) -> None:
        self.renderer = renderer
        self.call = call

    def __getitem__(self, key: str) -> str:
        r = self.renderer
        if key == "fname":
            return r.fname
        if key == "descriptor":
            return descriptor_name(r.fname)
        m = _FIELD.fullmatch(key)
        if m is None:
            raise KeyError(key)
        kind, k = m.group(1), int(m.group(2))
        if kind == "gslot":
            return f"ETC_TO_GLOBAL({r.slot(self.call, k)})"
        if kind == "slot":
            return r.slot(self.call, k)
        if kind == "thread":
            return r.thread(self.call, k)
        return r.render(r.model.index.call_args(self.call)[k])


def _is_global(model: Model, node: Node | None) -> bool:
    return node is not None and (node.start_byte, node.end_byte) in model.global_exprs


def _global_operand(model: Model, node: Node) -> Node | None:
    """The GLOBAL pointer operand that `node` dereferences (or whose address it takes
    through a dereference), if any."""
    t = node.type
    if t == "pointer_expression":
        op = node.child_by_field_name("operator")
        arg = node.child_by_field_name("argument")
        if op is not None and op.type == "*" and _is_global(model, arg):
            return arg
        if op is not None and op.type == "&" and arg is not None and \
                _is_global(model, node) and _reaches_global(model, arg):
            return arg  # &p->a.b[i]: address arithmetic on p, no access
    elif t == "subscript_expression":
        for f in ("argument", "index"):
            sub = node.child_by_field_name(f)
            if _is_global(model, sub) and (sub.start_byte, sub.end_byte) not in \
                    model.facts.global_decays:  # p->arr[i]: the access is p's
                return sub
    elif t == "field_expression":
        op = node.child_by_field_name("operator")
        arg = node.child_by_field_name("argument")
        if op is not None and op.type == "->" and _is_global(model, arg):
            return arg
    return None


def _reaches_global(model: Model, node: Node) -> bool:
    """Is `node` an lvalue reached by dereferencing a GLOBAL pointer?"""
    while node.type in ("parenthesized_expression", "field_expression",
                        "subscript_expression", "pointer_expression"):
        if _global_operand(model, node) is not None:
            return True
        inner = node.child_by_field_name("argument") if node.type != \
            "parenthesized_expression" else next(
                (c for c in node.named_children if c.type != "comment"), None)
        if inner is None:
            return False
        node = inner
    return False


def _plain_name(node: Node) -> str:
    d = node.child_by_field_name("declarator")
    ident = declarator_identifier(d) if d is not None else None
    return text(ident) if ident is not None else "?"
