"""Pass 2, analyse: what the program means, and every error a student can make with it.

Builds a `Model`: the threaded functions with their frames (parameters, locals with C
scoping resolved, slots, thread labels, CALL sites), the signatures of every threaded
function in reach (this file and its headers, through libclang), and the expressions
that are GLOBAL pointers (through libclang's types). All diagnostics of the language
(reference section 2, issue list) are produced here; later passes do not fail.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from etcpre.diagnostics import DiagnosticSink
from etcpre.passes import clang_view
from etcpre.passes.parse import ParseResult
from etcpre.passes.primitives import PRIMITIVES, VALUE_PRIMITIVES, Kind, Primitive
from etcpre.passes.syntax import (
    Node,
    call_args,
    call_name,
    const_int,
    declarator_identifier,
    declares_function,
    label_number,
    text,
    walk,
)
from etcpre.source import SourceFile
from etcpre.translate import Options

RESERVED_FIELDS = frozenset({"_slots", "_ret", "_chk"})


@dataclass
class Local:
    """A parameter or local variable: one field of the activation frame."""

    name: str
    field: str  # frame field (or, for a static local, the file-scope variable)
    declaration: Node  # parameter_declaration or declaration
    declarator: Node  # declarator without initializer
    init: Node | None = None
    is_param: bool = False
    is_static: bool = False
    array_size: int | None = None  # size for `T a[] = {...}` taken from clang


@dataclass
class Signature:
    name: str
    params: list[tuple[str, str]]  # (name, declaration text)
    origin: str  # "this file" or the header's path
    ends_with: str | None = None  # "END_FUNCTION", "RETURN" or None (unknown)


@dataclass
class ThreadedFunction:
    name: str
    node: Node
    body: Node
    params: list[Local] = field(default_factory=list)
    locals: list[Local] = field(default_factory=list)  # frame fields, declaration order
    statics: list[Local] = field(default_factory=list)
    slots_decl: Node | None = None
    nslots: int | None = None
    nslots_text: str | None = None
    labels: dict[int, Node] = field(default_factory=dict)
    calls: list[Node] = field(default_factory=list)  # CALL statements, in order
    refs: dict[int, Local] = field(default_factory=dict)  # identifier start -> Local
    ends_with: str | None = None

    @property
    def frame_fields(self) -> list[Local]:
        return self.params + self.locals


@dataclass
class Model:
    source: SourceFile
    root: Node
    functions: list[ThreadedFunction]
    prototypes: list[Node]  # threaded_function_declaration nodes in this file
    signatures: dict[str, Signature]
    global_exprs: set[tuple[int, int]]
    plain_functions: list[Node]  # function_definition nodes in this file
    used_callees: dict[str, list[str]]  # threaded function -> callees it starts


def analyse(parsed: ParseResult, options: Options, sink: DiagnosticSink) -> Model:
    src = parsed.source
    root = parsed.root
    args = clang_view.clang_args(
        options.defines, options.undefines, options.include_dirs,
        os.path.dirname(os.path.abspath(src.name)) or ".",
    )
    view = clang_view.analyse(src.name, src.data, root, args)
    if view.fatal:
        offset, message = view.fatal
        sink.error(src, offset or 0, message)
    for offset, msg in view.address_space_errors:
        sink.error(src, offset, _address_space_message(msg))
    for q in clang_view.global_qualifiers(root):
        if q.parent is None or q.parent.type not in ("pointer_declarator",
                                                     "abstract_pointer_declarator"):
            sink.error(src, q.start_byte,
                       "GLOBAL qualifies a pointer: write it after the '*' (int *GLOBAL p)")

    defs = [n for n in walk(root) if n.type == "threaded_function_definition"]
    protos = [n for n in walk(root) if n.type == "threaded_function_declaration"]
    plain = [n for n in walk(root) if n.type == "function_definition"]

    signatures = _signatures(src, defs, protos, view, sink)
    functions = [_function(src, d, view, sink) for d in defs]
    for fn in functions:
        signatures[fn.name].ends_with = fn.ends_with
    used: dict[str, list[str]] = {}
    for fn in functions:
        used[fn.name] = _check_function(src, fn, signatures, view, sink)
    for p in plain:
        _check_plain(src, p, sink)
    _check_main(src, functions, sink)
    return Model(src, root, functions, protos, signatures, view.global_exprs, plain, used)


def _address_space_message(msg: str) -> str:
    def show(m: re.Match[str]) -> str:
        return f"'{m.group(1).strip()} *GLOBAL'"
    msg = re.sub(r"'__etc_g ([^'*]*?)\s*\*'", show, msg)
    msg = msg.replace("__attribute__((address_space(77))) ", "").replace("__etc_g ", "")
    msg = msg.replace("changes address space of pointer", "mixes GLOBAL and local pointers")
    return f"{msg} (convert with TO_GLOBAL() or TO_LOCAL())"


# ---------------------------------------------------------------- signatures


def _params_of(node: Node) -> list[Node]:
    plist = node.child_by_field_name("parameters")
    if plist is None:
        return []
    params = [c for c in plist.named_children if c.type == "parameter_declaration"]
    if len(params) == 1 and text(params[0]).strip() == "void":
        return []
    return params


def _param_list(src: SourceFile, node: Node, sink: DiagnosticSink) -> list[tuple[str, str]]:
    out = []
    plist = node.child_by_field_name("parameters")
    if plist is not None and any(c.type == "variadic_parameter" for c in plist.named_children):
        sink.error(src, plist.start_byte, "a threaded function cannot take '...'")
    for p in _params_of(node):
        decl = p.child_by_field_name("declarator")
        ident = declarator_identifier(decl) if decl is not None else None
        if ident is None:
            sink.error(src, p.start_byte,
                       "parameters of a threaded function need names (they become "
                       "fields of its parameter frame)")
            continue
        if decl is not None and decl.type == "array_declarator":
            sink.error(src, p.start_byte,
                       f"array parameter '{text(ident)}' of a threaded function: declare it "
                       "as a pointer")
            continue
        out.append((text(ident), text(p)))
    return out


def _signatures(src: SourceFile, defs: list[Node], protos: list[Node],
                view: clang_view.ClangView, sink: DiagnosticSink) -> dict[str, Signature]:
    sigs: dict[str, Signature] = {}
    for name, decl in view.threaded.items():
        if not decl.in_main_file:
            sigs[name] = Signature(name, decl.params, decl.file)
    seen_def: dict[str, Node] = {}
    for node in protos + defs:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            continue
        name = text(name_node)
        params = _param_list(src, node, sink)
        if node.type == "threaded_function_definition":
            if name in seen_def:
                line = src.line_col(seen_def[name].start_byte)[0]
                sink.error(src, name_node.start_byte,
                           f"redefinition of threaded function '{name}' (first defined on "
                           f"line {line})")
            seen_def[name] = node
        old = sigs.get(name)
        if old is not None and [p[0] for p in old.params] != [p[0] for p in params] and \
                len(old.params) != len(params):
            sink.error(src, name_node.start_byte,
                       f"conflicting declarations of threaded function '{name}' "
                       f"({len(old.params)} and {len(params)} parameters)")
        sigs[name] = Signature(name, params, "this file")
    return sigs


# ---------------------------------------------------------------- one function


class _Scopes:
    def __init__(self) -> None:
        self.stack: list[dict[str, Local]] = [{}]

    def push(self) -> None:
        self.stack.append({})

    def pop(self) -> None:
        self.stack.pop()

    def declare(self, local: Local) -> None:
        self.stack[-1][local.name] = local

    def hide(self, name: str) -> None:
        """A non-frame declaration (extern, function, typedef, enum constant) shadows."""
        self.stack[-1][name] = None  # type: ignore[assignment]

    def lookup(self, name: str) -> Local | None:
        for scope in reversed(self.stack):
            if name in scope:
                return scope[name]
        return None


class _Builder:
    """Walks one threaded function body: locals, references, labels, primitives."""

    def __init__(self, src: SourceFile, fn: ThreadedFunction, view: clang_view.ClangView,
                 sink: DiagnosticSink) -> None:
        self.src = src
        self.fn = fn
        self.view = view
        self.sink = sink
        self.scopes = _Scopes()
        self.taken: set[str] = set(RESERVED_FIELDS)
        self.static_names: set[str] = set()

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

    # -- parameters

    def params(self) -> None:
        for p in _params_of(self.fn.node):
            decl = p.child_by_field_name("declarator")
            ident = declarator_identifier(decl) if decl is not None else None
            if ident is None or decl is None:
                continue
            name = text(ident)
            local = Local(name, self.field_name(name), p, decl, is_param=True)
            self.fn.params.append(local)
            self.scopes.declare(local)

    # -- the walk

    def visit(self, node: Node) -> None:
        t = node.type
        if t == "compound_statement":
            self.scopes.push()
            for c in node.children:
                self.visit(c)
            self.scopes.pop()
        elif t == "for_statement":
            self.scopes.push()
            for c in node.children:
                self.visit(c)
            self.scopes.pop()
        elif t == "declaration":
            self.declaration(node)
        elif t == "type_definition":
            for d in node.children_by_field_name("declarator"):
                ident = declarator_identifier(d)
                if ident is not None:
                    self.scopes.hide(text(ident))
        elif t == "enumerator":
            name = node.child_by_field_name("name")
            if name is not None:
                self.scopes.hide(text(name))
            value = node.child_by_field_name("value")
            if value is not None:
                self.visit(value)
        elif t == "identifier":
            local = self.scopes.lookup(text(node))
            if local is not None:
                self.fn.refs[node.start_byte] = local
        elif t == "thread_label":
            self.label(node)
        elif t == "sync_slots_declaration":
            self.slots(node)
        elif t in ("preproc_ifdef", "preproc_if", "preproc_elif", "preproc_elifdef",
                   "preproc_else"):
            skip = {node.child_by_field_name("name"), node.child_by_field_name("condition")}
            for c in node.children:
                if c not in skip:
                    self.visit(c)
        elif t in ("preproc_def", "preproc_function_def", "preproc_call",
                   "preproc_include", "field_declaration_list"):
            return
        else:
            for c in node.children:
                self.visit(c)

    def declaration(self, node: Node) -> None:
        storage = {text(c) for c in node.children if c.type == "storage_class_specifier"}
        for c in node.children:
            # a struct/enum defined in the declaration may declare enumerators
            if c.type in ("enum_specifier",):
                self.visit(c)
        for d in node.children_by_field_name("declarator"):
            init = d.child_by_field_name("value") if d.type == "init_declarator" else None
            target = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            ident = declarator_identifier(target) if target is not None else None
            if ident is None or target is None:
                continue
            name = text(ident)
            # array sizes are evaluated before the name is in scope
            for sub in walk(target):
                if sub.type == "array_declarator":
                    size = sub.child_by_field_name("size")
                    if size is not None:
                        self.visit(size)
            if "extern" in storage or declares_function(target):
                self.scopes.hide(name)
                if init is not None:
                    self.visit(init)
                continue
            vla, size = self.view.var_types.get(ident.start_byte, (False, None))
            if vla:
                self.sink.error(self.src, ident.start_byte,
                                f"variable-length array '{name}' in threaded function "
                                f"'{self.fn.name}': its frame has a fixed size; allocate "
                                "it with malloc or give it a constant size")
            if "static" in storage:
                local = Local(name, self.static_name(name), node, target, init,
                              is_static=True)
                self.fn.statics.append(local)
            else:
                local = Local(name, self.field_name(name), node, target, init)
                self.fn.locals.append(local)
            local.array_size = size
            self.scopes.declare(local)
            if init is not None:
                self.visit(init)

    def label(self, node: Node) -> None:
        n = label_number(node)
        if n is None:
            return
        if n == 0:
            self.sink.error(self.src, node.start_byte,
                            "THREAD_0 is implicit: thread 0 starts the function; "
                            "labels number threads from THREAD_1")
            return
        if n in self.fn.labels:
            line = self.src.line_col(self.fn.labels[n].start_byte)[0]
            self.sink.error(self.src, node.start_byte,
                            f"duplicate thread label THREAD_{n} in threaded function "
                            f"'{self.fn.name}' (first on line {line})")
            return
        self.fn.labels[n] = node

    def slots(self, node: Node) -> None:
        if self.fn.slots_decl is not None:
            self.sink.error(self.src, node.start_byte,
                            "SYNC_SLOTS declared twice in one threaded function")
            return
        self.fn.slots_decl = node
        size = node.child_by_field_name("size")
        self.fn.nslots = const_int(size)
        self.fn.nslots_text = text(size) if size is not None else None
        if self.fn.nslots is not None and self.fn.nslots < 1:
            self.sink.error(self.src, node.start_byte,
                            f"SYNC_SLOTS[{self.fn.nslots}]: a function needs at least one slot")
        first = next((c for c in self.fn.body.named_children if c.type != "comment"), None)
        if first is not node:
            self.sink.error(self.src, node.start_byte,
                            "SLOT SYNC_SLOTS[N]; must be the first declaration of the "
                            "threaded function")


def _function(src: SourceFile, node: Node, view: clang_view.ClangView,
              sink: DiagnosticSink) -> ThreadedFunction:
    name_node = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    assert name_node is not None and body is not None
    fn = ThreadedFunction(text(name_node), node, body)
    b = _Builder(src, fn, view, sink)
    b.params()
    b.visit(body)
    enders = {call_name(c) for c in walk(body) if c.type == "call_expression"} & \
        {"END_FUNCTION", "RETURN"}
    if len(enders) == 1:
        fn.ends_with = enders.pop()
    elif len(enders) == 2:
        sink.error(src, name_node.start_byte,
                   f"threaded function '{fn.name}' uses both END_FUNCTION() and RETURN(): "
                   "a function started by INVOKE/TOKEN ends with END_FUNCTION(), one "
                   "started by CALL ends with RETURN()")
    return fn


# ---------------------------------------------------------------- checks


def _region(fn: ThreadedFunction, offset: int) -> int:
    """The thread whose label textually precedes `offset` (0 before any label)."""
    best, best_pos = 0, -1
    for n, lab in fn.labels.items():
        if best_pos < lab.start_byte <= offset:
            best, best_pos = n, lab.start_byte
    return best


def _check_function(src: SourceFile, fn: ThreadedFunction, sigs: dict[str, Signature],
                    view: clang_view.ClangView, sink: DiagnosticSink) -> list[str]:
    enabled: set[int] = set()
    initialised: dict[int, Node] = {}
    signalled: set[int] = set()
    dynamic_slot = False
    callees: list[str] = []
    user_labels: dict[str, Node] = {}
    gotos: list[Node] = []
    for node in walk(fn.body):
        if node.type == "return_statement":
            sink.error(src, node.start_byte,
                       f"'return' in threaded function '{fn.name}': end a thread with "
                       "END_THREAD(), the function with END_FUNCTION() or RETURN()")
        elif node.type == "labeled_statement":
            lab = node.child_by_field_name("label")
            if lab is not None:
                user_labels[text(lab)] = node
        elif node.type == "goto_statement":
            gotos.append(node)
        elif node.type == "call_expression":
            name = call_name(node)
            prim = PRIMITIVES.get(name or "")
            if prim is None:
                continue
            args = call_args(node)
            if not _check_arity(src, prim, node, args, sink):
                continue
            if prim.thread_arg is not None:
                n = _check_thread_arg(src, fn, prim, args[prim.thread_arg], sink)
                if n is not None:
                    enabled.add(n)
                elif prim.name == "INIT_SYNC":
                    continue  # reported; its slot is not "initialised"
            if prim.slot_arg is not None:
                s = _check_slot_arg(src, fn, prim, args[prim.slot_arg], sink)
                if s is None:
                    dynamic_slot = True
                elif prim.name == "INIT_SYNC":
                    initialised.setdefault(s, node)
                else:
                    signalled.add(s)
            if prim.kind in (Kind.CONTROL, Kind.START):
                _check_statement(src, prim, node, sink)
            if prim.kind is Kind.START:
                callee = _check_start(src, fn, prim, node, args, sigs, view, sink)
                if callee is not None:
                    callees.append(callee)
                if prim.name == "CALL":
                    fn.calls.append(node)
    for g in gotos:
        lab = g.child_by_field_name("label")
        target = user_labels.get(text(lab)) if lab is not None else None
        if target is None:
            continue
        here, there = _region(fn, g.start_byte), _region(fn, target.start_byte)
        if here != there:
            sink.error(src, g.start_byte,
                       f"goto from thread {here} into thread {there}: a thread starts only "
                       "when its sync slot or SPAWN enables it")
    for n, lab in sorted(fn.labels.items()):
        if n not in enabled:
            sink.warning(src, lab.start_byte,
                         f"thread {n} of '{fn.name}' can never be enabled: no INIT_SYNC, "
                         "SPAWN or IP_ADR names it")
    if not dynamic_slot:
        for s, node in sorted(initialised.items()):
            if s not in signalled:
                sink.warning(src, node.start_byte,
                             f"sync slot {s} of '{fn.name}' is initialised but never "
                             "signalled (no SYNC, INCR_SYNC, SLOT_ADR or transfer names it)")
    return callees


def _check_arity(src: SourceFile, prim: Primitive, node: Node, args: list[Node],
                 sink: DiagnosticSink) -> bool:
    if prim.arity is None:
        need = 2 if prim.name == "INVOKE" else 1
        if len(args) < need:
            what = "a node and a threaded function" if need == 2 else "a threaded function"
            sink.error(src, node.start_byte, f"{prim.name} needs {what}")
            return False
        return True
    if len(args) != prim.arity:
        plural = "s" if prim.arity != 1 else ""
        sink.error(src, node.start_byte,
                   f"{prim.name} takes {prim.arity} argument{plural}, {len(args)} given")
        return False
    return True


def _check_statement(src: SourceFile, prim: Primitive, node: Node,
                     sink: DiagnosticSink) -> None:
    parent = node.parent
    if parent is None or parent.type != "expression_statement":
        sink.error(src, node.start_byte,
                   f"{prim.name}() must be a statement of its own")


def _check_thread_arg(src: SourceFile, fn: ThreadedFunction, prim: Primitive, arg: Node,
                      sink: DiagnosticSink) -> int | None:
    n = const_int(arg)
    if n is None:
        sink.error(src, arg.start_byte,
                   f"{prim.name}: the thread number must be a constant (a THREAD_n label "
                   f"of '{fn.name}')")
        return None
    if n == 0 and prim.name == "INIT_SYNC":
        sink.error(src, arg.start_byte,
                   "INIT_SYNC cannot name thread 0: thread 0 runs once, when the function "
                   "starts")
        return None
    if n not in fn.labels:
        sink.error(src, arg.start_byte,
                   f"{prim.name} names thread {n}, but '{fn.name}' has no THREAD_{n} label")
        return None
    return n


def _check_slot_arg(src: SourceFile, fn: ThreadedFunction, prim: Primitive, arg: Node,
                    sink: DiagnosticSink) -> int | None:
    if fn.slots_decl is None:
        sink.error(src, arg.start_byte,
                   f"{prim.name} uses a sync slot, but '{fn.name}' declares none "
                   "(add 'SLOT SYNC_SLOTS[N];' as its first declaration)")
        return None
    s = const_int(arg)
    if s is None:
        return None
    if s < 0 or (fn.nslots is not None and s >= fn.nslots):
        sink.error(src, arg.start_byte,
                   f"sync slot {s} is out of range: '{fn.name}' declares "
                   f"SYNC_SLOTS[{fn.nslots_text}] (slots 0 to {(fn.nslots or 1) - 1})")
        return None
    return s


def _check_start(src: SourceFile, fn: ThreadedFunction, prim: Primitive, node: Node,
                 args: list[Node], sigs: dict[str, Signature],
                 view: clang_view.ClangView, sink: DiagnosticSink) -> str | None:
    fidx = 1 if prim.name == "INVOKE" else 0
    target = args[fidx]
    if target.type != "identifier":
        sink.error(src, target.start_byte,
                   f"{prim.name}: name the threaded function to start directly")
        return None
    callee = text(target)
    sig = sigs.get(callee)
    if sig is None:
        if callee in view.plain_functions:
            sink.error(src, target.start_byte,
                       f"{prim.name} of '{callee}', which is not a threaded function "
                       "(declare it THREADED)")
        else:
            sink.error(src, target.start_byte,
                       f"{prim.name} of undeclared threaded function '{callee}'")
        return None
    given = len(args) - fidx - 1
    if given != len(sig.params):
        sink.error(src, node.start_byte,
                   f"{prim.name}: '{callee}' takes {len(sig.params)} argument"
                   f"{'s' if len(sig.params) != 1 else ''}, {given} given")
    if prim.name == "CALL" and sig.ends_with == "END_FUNCTION":
        sink.error(src, target.start_byte,
                   f"CALL of '{callee}', which ends with END_FUNCTION(): CALLed functions "
                   "end with RETURN() (use INVOKE or TOKEN)")
    elif prim.name != "CALL" and sig.ends_with == "RETURN" and callee != "MAIN":
        sink.error(src, target.start_byte,
                   f"{prim.name} of '{callee}', which ends with RETURN(): functions started "
                   "by INVOKE/TOKEN end with END_FUNCTION() (use CALL)")
    return callee


def _check_plain(src: SourceFile, fn: Node, sink: DiagnosticSink) -> None:
    declarator = fn.child_by_field_name("declarator")
    ident = declarator_identifier(declarator) if declarator is not None else None
    name = text(ident) if ident is not None else "?"
    for node in walk(fn):
        if node.type == "call_expression":
            prim = PRIMITIVES.get(call_name(node) or "")
            if prim is not None and prim.kind is not Kind.ANYWHERE:
                sink.error(src, node.start_byte,
                           f"{prim.name} cannot be used in plain C function '{name}': only "
                           "threaded functions use threaded primitives (POLL, NUM_NODES and "
                           "NODE_ID work everywhere)")
        elif node.type in ("thread_label", "sync_slots_declaration"):
            what = "a thread label" if node.type == "thread_label" else "SYNC_SLOTS"
            sink.error(src, node.start_byte,
                       f"{what} in plain C function '{name}': only threaded functions have "
                       "threads and slots (declare it THREADED)")


def _check_main(src: SourceFile, fns: list[ThreadedFunction], sink: DiagnosticSink) -> None:
    for fn in fns:
        if fn.name != "MAIN":
            continue
        names = [p.name for p in fn.params]
        types = [re.sub(r"\s+", "", text(p.declaration)) for p in fn.params]
        ok = not names or (len(names) == 2 and types[0].startswith("int") and
                           ("**" in types[1] or "[]" in types[1]))
        if not ok:
            sink.error(src, fn.node.start_byte,
                       "MAIN takes no parameters or (int argc, char **argv)")


__all__ = ["Local", "Model", "Signature", "ThreadedFunction", "VALUE_PRIMITIVES", "analyse"]
