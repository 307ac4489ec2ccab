"""Pass 2, analyse: what the program means.

Builds a `Model`: the threaded functions with their frames (parameters, locals with C
scoping resolved, slots, thread labels, CALL sites, which code each entry reaches), the
parameter lists of every threaded function in reach (this file and its headers, through
libclang), and clang's facts about types and constants. Tree-sitter gives the structure
and the byte ranges the lowering rewrites; libclang (`facts.Facts`) what the
preprocessor and the type system decide. The language's checks run on the model in
`checks.py`; both report through the same sink, and later passes do not fail.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
from dataclasses import dataclass, field

import tree_sitter

from etcpre.diagnostics import DiagnosticSink
from etcpre.passes import reach
from etcpre.passes.facts import Facts, Param, Var
from etcpre.passes.parse import ParseResult, language
from etcpre.passes.primitives import CALL_PRIMITIVES, Kind
from etcpre.passes.syntax import (
    Node,
    NodeIndex,
    call_name,
    declarator_identifier,
    declares_function,
    label_number,
    text,
    walk,
)
from etcpre.passes.text import WorkingText

RESERVED_FIELDS = frozenset({"_slots", "_ret", "_hdr"})
# the node types the analysis and the checks find with a NodeIndex
INDEXED = frozenset({"threaded_function_definition", "threaded_function_declaration",
                     "function_definition", "call_expression", "type_qualifier",
                     "return_statement", "goto_statement", "pointer_expression",
                     # and for the lowering (lower.MARKED_TYPES, lower.HOISTED_TYPES)
                     "subscript_expression", "field_expression", "parenthesized_expression",
                     "declaration", "thread_label", "sync_slots_declaration",
                     "type_definition", "preproc_def", "preproc_function_def",
                     "struct_specifier", "union_specifier", "enum_specifier",
                     # and for the scope walk (_Builder: SCOPE_TYPES and identifiers)
                     "identifier", "compound_statement", "for_statement", "enumerator",
                     "preproc_ifdef", "preproc_if", "preproc_elif", "preproc_elifdef",
                     "preproc_else", "preproc_call", "preproc_include",
                     "field_declaration_list"})
# the node types the scope walk does not just walk through (_Builder._visit): a subtree
# holding none of them has its identifiers bound at once
SCOPE_TYPES = ("compound_statement", "for_statement", "declaration", "type_definition",
               "enumerator", "thread_label", "sync_slots_declaration", "preproc_ifdef",
               "preproc_if", "preproc_elif", "preproc_elifdef", "preproc_else", "preproc_def",
               "preproc_function_def", "preproc_call", "preproc_include",
               "field_declaration_list")


class Reporter:
    """Diagnostics at working-text offsets, reported where they are in the .tc file."""

    def __init__(self, working: WorkingText, sink: DiagnosticSink) -> None:
        self.working = working
        self.sink = sink

    def error(self, offset: int, message: str) -> None:
        self.sink.error(self.working.source, self.working.origin(offset), message)

    def warning(self, offset: int, message: str) -> None:
        self.sink.warning(self.working.source, self.working.origin(offset), message)

    def line(self, offset: int) -> int:
        return self.working.line(offset)


@dataclass
class Local:
    """A parameter or local variable: one field of the activation frame (or, for a
    static local, a file-scope variable; for a VLA no thread boundary crosses, a C
    local of the thread function)."""

    name: str
    field: str
    declaration: Node  # parameter_declaration or declaration
    declarator: Node  # declarator without initializer
    init: Node | None = None
    is_param: bool = False
    is_static: bool = False
    in_block: bool = False  # stays a C local of its block (a VLA)
    var: Var | None = None  # clang's facts (locals)
    param: Param | None = None  # clang's facts (parameters)


@dataclass(frozen=True)
class Field:
    """One field of a parameter frame `_f_P`."""

    name: str
    declaration: str  # C declaration of the field
    assignable: bool  # `=` can copy it


@dataclass
class Signature:
    """What starting a threaded function needs: its parameter frame's fields."""

    name: str
    fields: list[Field]
    origin: str  # "this file" or the header's path
    static: bool = False
    ends_with: str | None = None  # "END_FUNCTION", "RETURN" or None (unknown)
    layout: str = ""  # a digest of the parameters' sizes, alignments and kinds
    defined_here: bool = False


@dataclass
class ThreadedFunction:
    name: str
    node: Node
    body: Node
    static: bool = False
    params: list[Local] = field(default_factory=list)
    locals: list[Local] = field(default_factory=list)  # frame fields, declaration order
    statics: list[Local] = field(default_factory=list)
    block_locals: list[Local] = field(default_factory=list)
    slots_decl: Node | None = None
    nslots: int | None = None
    labels: dict[int, Node] = field(default_factory=dict)
    calls: list[Node] = field(default_factory=list)  # CALL expressions, in order
    refs: dict[int, Local] = field(default_factory=dict)  # identifier start -> Local
    ends_with: str | None = None
    reach: reach.Reach | None = None
    declarations: set[int] = field(default_factory=set)  # ids of those of its locals

    @property
    def frame_fields(self) -> list[Local]:
        return self.params + self.locals

    def entries(self) -> reach.Entries:
        return reach.Entries(self.body, self.labels, self.calls, frozenset(self.declarations))


@dataclass
class Model:
    working: WorkingText
    root: Node
    facts: Facts
    functions: list[ThreadedFunction]
    prototypes: list[Node]  # threaded_function_declaration nodes in this file
    signatures: dict[str, Signature]
    plain_functions: list[Node]  # function_definition nodes in this file
    used_callees: dict[str, list[str]]  # threaded function -> callees it starts
    inactive: list[tuple[int, int]]  # code the preprocessor skips
    index: NodeIndex  # the nodes the analysis and the checks look for (INDEXED)
    # (INVOKE/TOKEN/CALL's start byte, argument index) the translator warned about: the
    # lowering converts them explicitly, so that cc does not say it again
    warned_args: set[tuple[int, int]] = field(default_factory=set)

    @functools.cached_property
    def ascii_only(self) -> bool:
        """Is the working text all ASCII (a C column is then its byte count)?"""
        return self.working.data.isascii()

    @property
    def global_exprs(self) -> set[tuple[int, int]]:
        return self.facts.global_pointers


def node_index(root: Node) -> NodeIndex:
    """The index of the tree the analysis reads (`analyse` makes it when not given)."""
    return NodeIndex(root, INDEXED, frozenset({"compound_statement"}))


@dataclass
class Prepared:
    """What the analysis finds without clang's facts (the index, each function's scopes,
    labels and reachability), done while the clang child works; `analyse` completes it
    once the facts are there."""

    root: Node
    index: NodeIndex
    builders: list[_Builder]
    found: DiagnosticSink  # what it reported, handed on by `analyse`


def prepare(working: WorkingText, root: Node) -> Prepared:
    """The part of the analysis that needs the syntax tree alone."""
    from etcpre.passes import checks  # noqa: F401, PLC0415 - loaded for analyse(), see there

    index = node_index(root)
    index.know_calls()
    found = DiagnosticSink()
    rep = Reporter(working, found)
    builders = [_walk(working, d, rep, index) for d in index.all("threaded_function_definition")]
    for b in builders:
        b.fn.reach = reach.analyse(b.fn.entries())
    return Prepared(root, index, builders, found)


def analyse(parsed: ParseResult, facts: Facts, sink: DiagnosticSink,
            prepared: Prepared | None = None) -> Model:
    """The model of the parsed program; `prepared` (by `prepare`) is used up, and made
    again when it is of another tree (a macro expansion or an inactive branch changed
    the text since)."""
    from etcpre.passes import checks  # noqa: PLC0415 - checks reads the Model defined here

    working = parsed.working
    root = parsed.root
    if prepared is None or prepared.root != root:
        prepared = prepare(working, root)
    rep = Reporter(working, sink)
    index = prepared.index
    defs = index.all("threaded_function_definition")
    protos = index.all("threaded_function_declaration")
    plain = index.all("function_definition")
    signatures = _signatures(defs, protos, facts, rep)
    sink.diagnostics.extend(prepared.found.diagnostics)
    functions = []
    for b in prepared.builders:
        b.bind(facts, rep)
        signatures[b.fn.name].ends_with = b.fn.ends_with
        functions.append(b.fn)
    model = Model(working, root, facts, functions, protos, signatures, plain, {},
                  facts.skipped, index)
    checks.check(model, rep)
    return model


# ---------------------------------------------------------------- signatures


def params_of(node: Node) -> list[Node]:
    plist = node.child_by_field_name("parameters")
    if plist is None:
        return []
    params = [c for c in plist.named_children if c.type == "parameter_declaration"]
    if len(params) == 1 and text(params[0]).strip() == "void":
        return []
    return params


def storage(node: Node) -> str | None:
    s = node.child_by_field_name("storage")
    return text(s) if s is not None else None


def _signatures(defs: list[Node], protos: list[Node], facts: Facts,
                rep: Reporter) -> dict[str, Signature]:
    """For every threaded function in reach, its parameter frame. A function defined in
    this file takes its definition's names; declared elsewhere, its first declaration's
    (fields of unnamed parameters are named by position: the layout is what matters)."""
    sigs: dict[str, Signature] = {}
    for name, decls in facts.threaded.items():
        main = [d for d in decls if d.path is None]
        definition = next((d for d in main if d.definition), None)
        chosen = definition or (main[0] if main else decls[0])
        origin = "this file" if chosen.path is None else chosen.path
        static = any(d.static for d in decls)
        layout = hashlib.sha1(";".join(p.layout for p in chosen.params).encode()).hexdigest()
        sigs[name] = Signature(name, [_field(p, k) for k, p in enumerate(chosen.params, 1)],
                               origin, static, layout=layout[:10],
                               defined_here=definition is not None)
    seen_def: dict[str, Node] = {}
    for node in protos + defs:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            continue
        name = text(name_node)
        plist = node.child_by_field_name("parameters")
        if plist is not None and any(c.type == "variadic_parameter"
                                     for c in plist.named_children):
            rep.error(plist.start_byte, "a threaded function cannot take '...'")
        st = storage(node)
        if st is not None and st not in ("static", "extern"):
            rep.error(node.start_byte, f"a threaded function cannot be '{st}'")
        if node.type == "threaded_function_definition":
            for p in params_of(node):
                decl = p.child_by_field_name("declarator")
                if decl is None or declarator_identifier(decl) is None:
                    rep.error(p.start_byte, "parameters of a threaded function's definition "
                                            "need names (they become fields of its frame)")
            if name in seen_def:
                line = rep.line(seen_def[name].start_byte)
                rep.error(name_node.start_byte,
                          f"redefinition of threaded function '{name}' (first defined on "
                          f"line {line})")
            seen_def[name] = node
        if name not in sigs:  # clang did not see it (an error it reported): keep going
            sigs[name] = Signature(name, [], "this file")
    return sigs


def _field(p: Param, k: int) -> Field:
    """The parameter frame's field for a parameter: its declaration as written, with
    arrays and functions as the pointers they are passed as and without a top-level
    const (the frame is filled by assignment)."""
    name = p.name or f"_p{k}"
    decl = adjusted_declaration(p.text, p.name) if p.name else None
    if decl is None:
        decl = f"__typeof__({p.type}) {name}"
    return Field(name, decl, not p.member_const)


_SNIPPET = "THREADED _etc_(%s);"


# a parse per parameter; a program repeats its parameter lists (every frame field and
# parameter frame asks), and the answer depends on the text alone
@functools.lru_cache(maxsize=4096)
def adjusted_declaration(decl_text: str, name: str, keep_const: bool = False,
                         rename: str | None = None) -> str | None:
    """A parameter's declaration as the type it is passed as: `int a[]` -> `int *a`;
    `double m[][4]` -> `double (*m)[4]`; `int f(int)` -> `int (*f)(int)`; and, unless
    keep_const, `const int n` -> `int n`. The name becomes `rename` if given. None when
    the text is not a plain declaration of `name` (then the caller spells the type)."""
    data = (_SNIPPET % decl_text).encode()
    root = tree_sitter.Parser(language()).parse(data).root_node
    proto = next((n for n in walk(root) if n.type == "parameter_declaration"), None)
    declarator = proto.child_by_field_name("declarator") if proto is not None else None
    ident = declarator_identifier(declarator) if declarator is not None else None
    if root.has_error or proto is None or ident is None or text(ident) != name:
        return None
    holder = ident.parent  # the derivation applied to the name first
    while holder is not None and holder.type == "parenthesized_declarator":
        holder = holder.parent
    new = rename or name
    edits: list[tuple[int, int, str]] = [(ident.start_byte, ident.end_byte, new)]
    quals: list[Node] = []
    inner = holder.child_by_field_name("declarator") if holder is not None else None
    inner_text = text(inner).replace(name, new) if inner is not None else new
    if holder is not None and inner is not None and holder.type == "array_declarator":
        nested = holder.parent is not None and holder.parent.type in (
            "array_declarator", "function_declarator")
        ptr = f"*{inner_text}"
        edits = [(holder.start_byte, holder.end_byte, f"({ptr})" if nested else ptr)]
    elif holder is not None and inner is not None and holder.type == "function_declarator":
        edits = [(inner.start_byte, inner.end_byte, f"(*{inner_text})")]
    elif holder is not None and holder.type == "pointer_declarator":
        quals = [c for c in holder.children if c.type == "type_qualifier"]
    else:
        quals = [c for c in proto.children if c.type == "type_qualifier"]
    if not keep_const:
        edits += [(q.start_byte, q.end_byte, "") for q in quals if text(q) == "const"]
    out = bytearray(data[proto.start_byte:proto.end_byte])
    for start, end, rep in sorted(edits, reverse=True):
        out[start - proto.start_byte:end - proto.start_byte] = rep.encode()
    return " ".join(out.decode("utf-8", errors="replace").split())


# ---------------------------------------------------------------- one function


class _Scopes:
    """C's block scopes: for each name, the stack of what it means (a frame local,
    or None for a declaration that is not one and hides it)."""

    def __init__(self) -> None:
        self.meanings: dict[str, list[Local | None]] = {}
        self.declared: list[list[str]] = [[]]  # names declared in each open scope

    @property
    def depth(self) -> int:
        return len(self.declared)

    def push(self) -> None:
        self.declared.append([])

    def pop(self) -> None:
        for name in self.declared.pop():
            self.meanings[name].pop()

    def declare(self, local: Local) -> None:
        self._bind(local.name, local)

    def hide(self, name: str) -> None:
        """A non-frame declaration (extern, function, typedef, enum constant) shadows."""
        self._bind(name, None)

    def _bind(self, name: str, meaning: Local | None) -> None:
        self.meanings.setdefault(name, []).append(meaning)
        self.declared[-1].append(name)


class _Builder:
    """Walks one threaded function body: locals, references, labels, slots. What
    depends on clang's facts (a VLA stays a C local and takes no frame field, the
    number of slots, the parameters' types) is recorded and decided by `bind`."""

    def __init__(self, working: WorkingText, fn: ThreadedFunction, rep: Reporter,
                 index: NodeIndex) -> None:
        self.working = working
        self.fn = fn
        self.rep = rep
        self.identifiers = index.within(fn.body, "identifier")
        self.identifier_starts = [n.start_byte for n in self.identifiers]
        self.scope_starts = sorted(n.start_byte for n in index.within(fn.body, *SCOPE_TYPES))
        self.scopes = _Scopes()
        self.taken: set[str] = set(RESERVED_FIELDS)
        self.static_names: set[str] = set()
        self.param_positions: list[tuple[int, Local]] = []  # (position, parameter)
        # per declaration of locals: its declarators' identifiers (where clang's facts
        # are), and its locals with their identifiers
        self.declared: list[tuple[list[int], list[tuple[Local, int]]]] = []

    def field_name(self, name: str) -> str:
        cand = name
        i = 1
        while cand in self.taken or cand.startswith("_etc"):
            cand = f"{name}_{i}"
            i += 1
        self.taken.add(cand)
        return cand

    def static_name(self, name: str) -> str:
        base = f"_{self.fn.name}_{name}"
        cand = base
        i = 1
        while cand in self.static_names:
            cand = f"{base}_{i}"
            i += 1
        self.static_names.add(cand)
        return cand

    def params(self) -> None:
        for k, p in enumerate(params_of(self.fn.node)):
            d = p.child_by_field_name("declarator")
            ident = declarator_identifier(d) if d is not None else None
            if ident is None or d is None:
                continue
            name = text(ident)
            local = Local(name, self.field_name(name), p, d, is_param=True)
            self.param_positions.append((k, local))
            self.fn.params.append(local)
            self.scopes.declare(local)

    def bind(self, facts: Facts, rep: Reporter) -> None:
        """Completes the function with clang's facts: parameters' types, each local a
        frame field (named in declaration order, after the parameters) or, declared
        with a VLA, a C local of its block, and the number of slots (reported to
        `rep`)."""
        fn = self.fn
        self.rep = rep
        decl = next((d for d in facts.threaded.get(fn.name, [])
                     if d.path is None and d.definition), None)
        clang_params = list(decl.params) if decl is not None else []
        for k, local in self.param_positions:
            local.param = clang_params[k] if k < len(clang_params) else None
        for idents, locals_ in self.declared:
            # a declaration with a VLA stays a C declaration of its block, whole
            in_block = any(v is not None and v.vla for v in map(facts.vars.get, idents))
            for local, ident in locals_:
                local.var = facts.vars.get(ident)
                if local.is_static:
                    continue
                if in_block:
                    local.in_block = True
                    fn.block_locals.append(local)
                else:
                    local.field = self.field_name(local.name)
                    fn.locals.append(local)
        if fn.slots_decl is not None:
            self._slot_count(fn.slots_decl, facts)

    def walk_body(self) -> None:
        self._visit_now(self.fn.body)

    def _visit(self, node: Node, stack: list[tuple[str, Node | None]]) -> None:
        # named children only: an anonymous node is a token, without children
        # (grammar/src/node-types.json), and none of the types below
        t = node.type
        if t == "identifier":  # the most frequent, first
            meanings = self.scopes.meanings.get(
                (node.text or b"").decode("utf-8", errors="replace"))
            if meanings and meanings[-1] is not None:
                self.fn.refs[node.start_byte] = meanings[-1]
        elif t in ("compound_statement", "for_statement"):
            self.scopes.push()
            stack.append(("pop", None))
            stack.extend(("visit", c) for c in reversed(node.named_children))
        elif t == "declaration":
            self.declaration(node)
        elif t == "type_definition":
            for d in node.children_by_field_name("declarator"):
                ident = declarator_identifier(d)
                if ident is not None:
                    self.scopes.hide(text(ident))
        elif t == "enumerator":
            name = node.child_by_field_name("name")
            value = node.child_by_field_name("value")
            if name is not None:
                self.scopes.hide(text(name))
            if value is not None:
                stack.append(("visit", value))
        elif t == "thread_label":
            self.label(node)
        elif t == "sync_slots_declaration":
            self.slots(node)
        elif t in ("preproc_ifdef", "preproc_if", "preproc_elif", "preproc_elifdef",
                   "preproc_else"):
            skip = {node.child_by_field_name("name"), node.child_by_field_name("condition")}
            stack.extend(("visit", c) for c in reversed(node.named_children) if c not in skip)
        elif t in ("preproc_def", "preproc_function_def", "preproc_call", "preproc_include",
                   "field_declaration_list", "field_identifier", "statement_identifier"):
            return
        else:
            start, end = node.start_byte, node.end_byte
            starts = self.scope_starts
            i = bisect.bisect_left(starts, start)
            if i < len(starts) and starts[i] < end:
                stack.extend(("visit", c) for c in reversed(node.named_children))
            else:  # only identifiers to look at, in one scope: no need to walk to them
                self._identifiers(start, end)

    def _identifiers(self, start: int, end: int) -> None:
        """Binds the identifiers in start..end as _visit does, found in the index."""
        starts = self.identifier_starts
        nodes = self.identifiers
        meanings_of = self.scopes.meanings
        refs = self.fn.refs
        for k in range(bisect.bisect_left(starts, start), bisect.bisect_left(starts, end)):
            node = nodes[k]
            meanings = meanings_of.get((node.text or b"").decode("utf-8", errors="replace"))
            if meanings and meanings[-1] is not None:
                refs[starts[k]] = meanings[-1]

    def declaration(self, node: Node) -> None:
        """Declares the names in order, each visible in its own initialiser (C scoping)
        and array sizes visited before the name is (each subtree with its own
        iterative walk)."""
        storage_ = {text(c) for c in node.children if c.type == "storage_class_specifier"}
        idents = [i.start_byte for d in node.children_by_field_name("declarator")
                  for i in [declarator_identifier(d)] if i is not None]
        locals_: list[tuple[Local, int]] = []
        later: list[Node] = []
        for c in node.children:
            if c.type == "enum_specifier":  # its enumerators are names in this scope
                self._enumerators(c)
            elif c.type in ("struct_specifier", "union_specifier"):
                later.append(c)  # array sizes inside member declarations
        for d in node.children_by_field_name("declarator"):
            init = d.child_by_field_name("value") if d.type == "init_declarator" else None
            target = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            ident = declarator_identifier(target) if target is not None else None
            if ident is None or target is None:
                continue
            name = text(ident)
            sizes = [s for sub in walk(target) if sub.type == "array_declarator"
                     for s in [sub.child_by_field_name("size")] if s is not None]
            for s in sizes:  # evaluated before the name is in scope
                self._visit_now(s)
            if "extern" in storage_ or declares_function(target):
                self.scopes.hide(name)
                if init is not None:
                    self._visit_now(init)
                continue
            if "static" in storage_:
                local = Local(name, self.static_name(name), node, target, init,
                              is_static=True)
                self.fn.statics.append(local)
            else:  # a frame field or a C local of its block: bind() says
                local = Local(name, name, node, target, init)
            locals_.append((local, ident.start_byte))
            self.scopes.declare(local)
            if init is not None:
                self._visit_now(init)
        if locals_:
            self.declared.append((idents, locals_))
            self.fn.declarations.add(node.id)
        for c in later:
            self._visit_now(c)

    def _enumerators(self, spec: Node) -> None:
        for e in walk(spec):
            if e.type == "enumerator":
                name = e.child_by_field_name("name")
                value = e.child_by_field_name("value")
                if value is not None:
                    self._visit_now(value)
                if name is not None:
                    self.scopes.hide(text(name))

    def _visit_now(self, node: Node) -> None:
        """The scope walk of a subtree (the body; an expression in a declaration, done
        before going on), iterative: (action, node) pairs on an explicit stack."""
        inner: list[tuple[str, Node | None]] = [("visit", node)]
        depth = self.scopes.depth
        while inner:
            action, n = inner.pop()
            if action == "pop":
                self.scopes.pop()
                continue
            assert n is not None
            self._visit(n, inner)
        while self.scopes.depth > depth:
            self.scopes.pop()

    def label(self, node: Node) -> None:
        n = label_number(node)
        if n is None:
            return
        if n == 0:
            self.rep.error(node.start_byte, "THREAD_0 is implicit: thread 0 starts the function; "
                                            "labels number threads from THREAD_1")
            return
        if n in self.fn.labels:
            line = self.rep.line(self.fn.labels[n].start_byte)
            self.rep.error(node.start_byte,
                           f"duplicate thread label THREAD_{n} in threaded function "
                           f"'{self.fn.name}' (first on line {line})")
            return
        self.fn.labels[n] = node

    def slots(self, node: Node) -> None:
        if self.fn.slots_decl is not None:
            self.rep.error(node.start_byte, "SYNC_SLOTS declared twice in one threaded function")
            return
        self.fn.slots_decl = node

    def _slot_count(self, node: Node, facts: Facts) -> None:
        size = node.child_by_field_name("size")
        slots_name = next((c for c in node.children if c.type == "SYNC_SLOTS"), None)
        var = facts.vars.get(slots_name.start_byte) if slots_name is not None else None
        shown = text(size) if size is not None else "?"
        if var is None or var.array_size is None or var.vla:
            self.rep.error(size.start_byte if size is not None else node.start_byte,
                           f"SYNC_SLOTS[{shown}]: the number of slots must be an integer "
                           "constant from 1 to 2147483647")
            return
        if not 1 <= var.array_size <= 2**31 - 1:
            self.rep.error(size.start_byte if size is not None else node.start_byte,
                           f"SYNC_SLOTS[{shown}]: a function has from 1 to 2147483647 slots")
            return
        self.fn.nslots = var.array_size


def _walk(working: WorkingText, node: Node, rep: Reporter, index: NodeIndex) -> _Builder:
    """A threaded function's walk, before clang's facts."""
    name_node = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    assert name_node is not None and body is not None
    name = text(name_node)
    fn = ThreadedFunction(name, node, body, static=storage(node) == "static")
    b = _Builder(working, fn, rep, index)
    b.params()
    b.walk_body()
    enders: set[str] = set()
    for c in index.within(body, "call_expression"):
        callee = index.call_name(c)
        if callee in ("END_FUNCTION", "RETURN"):
            enders.add(callee)
        elif callee == "CALL" and len(index.call_args(c)) >= 1:
            fn.calls.append(c)
    if len(enders) == 1:
        fn.ends_with = enders.pop()
    elif len(enders) == 2:
        rep.error(name_node.start_byte,
                  f"threaded function '{fn.name}' uses both END_FUNCTION() and RETURN(): "
                  "a function started by INVOKE/TOKEN ends with END_FUNCTION(), one "
                  "started by CALL ends with RETURN()")
    return b


def primitive_calls(root: Node) -> list[Node]:
    """Every call of a primitive under root, in source order."""
    return [n for n in walk(root) if n.type == "call_expression" and
            CALL_PRIMITIVES.get(call_name(n) or "") is not None]


__all__ = ["Field", "Kind", "Local", "Model", "Reporter", "Signature", "ThreadedFunction",
           "analyse", "primitive_calls"]
