"""Pass 3, lower: Threaded-C constructs become C that calls the runtime (etc.h).

The translation scheme is the thesis's (chapter 2.2, Fig. 2.12-2.17):
- each thread n of f becomes `void _f_n(void *)`; thread 0 gets the parameter frame
  `_f_P`, allocates the activation frame `_f_F` and copies the parameters in;
- every local and parameter is a field of `_f_F`, reached through `_fp`;
- a thread function holds the whole body, entered with `goto THREAD_n;`, so a thread
  inside a loop continues the loop (Fig. 2.17); reaching another thread's label ends the
  current thread, exactly like END_THREAD();
- CALL splits the caller: the code after it is continuation `_f_Ck`, entered the same
  way, which the callee's RETURN() resumes (Fig. 2.16).

Rendering is recursive over the tree: a node with nothing to rewrite inside is copied
byte for byte, so comments, layout and line numbers of the source survive.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from etcpre.diagnostics import DiagnosticSink
from etcpre.passes.analyse import Local, Model, ThreadedFunction
from etcpre.passes.primitives import PRIMITIVES, Kind
from etcpre.passes.syntax import (
    Node,
    call_args,
    call_name,
    const_int,
    label_number,
    text,
    walk,
)

_ANYWHERE = {
    "POLL": "etc_poll", "TO_GLOBAL": "ETC_TO_GLOBAL", "TO_LOCAL": "ETC_TO_LOCAL",
    "MAKE_GPTR": "ETC_MAKE_GPTR", "OWNER_OF": "ETC_OWNER_OF", "IS_OWNER": "ETC_IS_OWNER",
}
_VALUES = {"NUM_NODES": "ETC_NUM_NODES", "NODE_ID": "ETC_NODE_ID"}
_PREPROC_BLOCKS = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif",
                             "preproc_elifdef"})


@dataclass
class GeneratedFunction:
    """The C that replaces one threaded function definition."""

    fn: ThreadedFunction
    param_struct: str | None  # None when a prototype above already emitted it
    frame_struct: str
    prototypes: str
    statics: list[str]
    threads: list[tuple[str, str, str, str]]  # (C name, parameter, prologue, body)
    callee_structs: list[str]  # parameter frames of callees declared in headers
    user_main: str | None
    types: list[tuple[int, str]] = field(default_factory=list)  # (source offset, C)


@dataclass
class Lowered:
    model: Model
    functions: dict[int, GeneratedFunction] = field(default_factory=dict)  # by start byte
    prototypes: dict[int, str] = field(default_factory=dict)  # by start byte
    plain: dict[int, str] = field(default_factory=dict)  # plain functions, rewritten


def param_struct(name: str, params: list[tuple[str, str]]) -> str:
    """`_f_P`, the parameter frame; same layout in every file that starts `f`."""
    fields = "".join(f"    {decl};\n" for _, decl in params)
    guard = f"_etc_have_{name}_P"
    return (f"#ifndef {guard}\n#define {guard}\n"
            f"typedef struct _{name}_P {{\n    etc_ret _ret;\n{fields}}} _{name}_P;\n"
            f"void _{name}_0(void *_etc_vpp);\n#endif\n")


def descriptor_name(fn_name: str) -> str:
    """The function's descriptor (etc.h etc_fn_info), which emit writes."""
    return f"_etc_fn_{fn_name}"


def lower(model: Model, sink: DiagnosticSink) -> Lowered:
    del sink  # the analyse pass reported everything; lowering cannot fail
    out = Lowered(model)
    emitted: set[str] = set()
    for proto in model.prototypes:
        name = text(proto.child_by_field_name("name"))  # type: ignore[arg-type]
        out.prototypes[proto.start_byte] = param_struct(name, model.signatures[name].params)
        emitted.add(name)
    for fn in model.functions:
        out.functions[fn.node.start_byte] = _function(model, fn, emitted)
    for p in model.plain_functions:
        r = _Renderer(model, None, None, p)
        if r.interesting:
            out.plain[p.start_byte] = r.render(p)
    return out


def _function(model: Model, fn: ThreadedFunction, emitted: set[str]) -> GeneratedFunction:
    sig = model.signatures[fn.name]
    pstruct = None
    if fn.name not in emitted:
        pstruct = param_struct(fn.name, sig.params)
        emitted.add(fn.name)
    callee_structs = []
    for callee in model.used_callees.get(fn.name, []):
        csig = model.signatures.get(callee)
        if csig is not None and callee not in emitted and csig.origin != "this file":
            callee_structs.append(param_struct(callee, csig.params))
            emitted.add(callee)
    entries = ["0"] + [str(n) for n in sorted(fn.labels)] + \
        [f"C{k}" for k in range(1, len(fn.calls) + 1)]
    protos = "".join(f"void _{fn.name}_{e}(void *_etc_v);\n" for e in entries[1:])
    hoisted = hoisted_types(fn)
    moved = frozenset(n.start_byte for n in hoisted)
    threads = []
    for e in entries:
        r = _Renderer(model, fn, e, fn.body, moved)
        param = "_etc_vpp" if e == "0" else "_etc_v"
        threads.append((f"_{fn.name}_{e}", param, _prologue(fn, e), r.render(fn.body)))
    statics = [_static(model, fn, group) for group in _groups(fn.statics)]
    types = [(n.start_byte, text(n) + (";" if n.type != "type_definition" else ""))
             for n in hoisted]
    return GeneratedFunction(fn, pstruct, _frame_struct(fn), protos, statics, threads,
                             callee_structs, _user_main(fn) if fn.name == "MAIN" else None,
                             types)


_TAG_SPECIFIERS = frozenset({"struct_specifier", "union_specifier", "enum_specifier"})


def _line_breaks(node: Node) -> str:
    """What stands for code dropped from a thread: its line breaks, so #line stays true."""
    return "\n" * text(node).count("\n")


def hoisted_types(fn: ThreadedFunction) -> list[Node]:
    """Types defined inside a threaded function: typedefs and struct/union/enum
    definitions standing as block items. They move to file scope, ahead of the frame
    struct, because frame fields (file scope) may have those types."""
    out = []
    for node in walk(fn.body):
        if node.type == "type_definition" or (
                node.type in _TAG_SPECIFIERS and node.child_by_field_name("body") is not None
                and node.parent is not None
                and node.parent.type in ("compound_statement", *_PREPROC_BLOCKS)):
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
    if loc.array_size is not None and d.type == "array_declarator" and \
            d.child_by_field_name("size") is None:
        close = next((c for c in d.children if c.type == "]"), None)
        if close is not None:
            edits.append((close.start_byte, close.start_byte, str(loc.array_size)))
    return _apply(d, edits)


def _apply(node: Node, edits: list[tuple[int, int, str]]) -> str:
    data = node.text or b""
    base = node.start_byte
    out = b""
    pos = 0
    for start, end, rep in sorted(edits):
        out += data[pos:start - base] + rep.encode()
        pos = end - base
    return (out + data[pos:]).decode("utf-8", errors="replace")


def _prefix(decl: Node, strip_const: bool) -> str:
    """Declaration specifiers as written, minus storage class (and top-level const)."""
    first = decl.child_by_field_name("declarator")
    end = first.start_byte if first is not None else decl.end_byte
    edits = []
    for c in decl.children:
        if c.start_byte >= end:
            break
        if c.type == "storage_class_specifier" or \
                (strip_const and c.type == "type_qualifier" and text(c) == "const"):
            edits.append((c.start_byte, c.end_byte, ""))
    data = (decl.text or b"")[: end - decl.start_byte]
    out = b""
    pos = 0
    for start, stop, rep in edits:
        out += data[pos:start - decl.start_byte] + rep.encode()
        pos = stop - decl.start_byte
    return (out + data[pos:]).decode("utf-8", errors="replace").strip()


def _frame_struct(fn: ThreadedFunction) -> str:
    lines = ["    ETC_FRAME_HEADER"]
    if fn.slots_decl is not None:
        lines.append(f"    etc_slot _slots[{fn.nslots_text}];")
    lines.append("    etc_ret _ret;")
    for p in fn.params:
        if p.field == p.name:
            lines.append(f"    {text(p.declaration)};")
        else:
            prefix = _prefix(p.declaration, strip_const=False)
            lines.append(f"    {prefix} {_declarator_text(p)};")
    for group in _groups(fn.locals):
        plain = group[0].declarator.type in ("identifier", "array_declarator")
        prefix = _prefix(group[0].declaration, strip_const=plain)
        decls = ", ".join(_declarator_text(loc) for loc in group)
        lines.append(f"    {prefix} {decls};")
    body = "\n".join(lines)
    return f"typedef struct _{fn.name}_F {{\n{body}\n}} _{fn.name}_F;\n"


def _static(model: Model, fn: ThreadedFunction, group: list[Local]) -> str:
    prefix = _prefix(group[0].declaration, strip_const=False)
    parts = []
    for loc in group:
        d = _declarator_text(loc)
        if loc.init is not None:
            d += " = " + _Renderer(model, fn, "0", loc.init).render(loc.init)
        parts.append(d)
    return f"static {prefix} {', '.join(parts)};\n"


def _prologue(fn: ThreadedFunction, entry: str) -> str:
    name = fn.name
    if entry != "0":
        goto = f"THREAD_{entry}" if not entry.startswith("C") else f"_etc_{entry}"
        return (f"    _{name}_F *_fp = (_{name}_F *)_etc_v;\n"
                f"    goto {goto};\n")
    copies = "".join(f"    _fp->{p.field} = _pp->{p.name};\n" for p in fn.params)
    return (f"    _{name}_P *_pp = (_{name}_P *)_etc_vpp;\n"
            f"    _{name}_F *_fp = (_{name}_F *)etc_frame_alloc(sizeof *_fp);\n"
            f"    etc_frame_check_init(_fp, \"{name}\", {fn.nslots_text or 0});\n"
            f"    etc_fn_enter(&{descriptor_name(name)});\n"
            f"    _fp->_ret = _pp->_ret;\n{copies}"
            f"    etc_param_free(_pp, sizeof *_pp);\n")


def _user_main(fn: ThreadedFunction) -> str:
    sets = ""
    if len(fn.params) == 2:
        sets = (f"    _etc_pp->{fn.params[0].name} = argc;\n"
                f"    _etc_pp->{fn.params[1].name} = argv;\n")
    return ("/* The runtime calls this on node 0 to start THREADED MAIN. */\n"
            "void etc_user_main(int argc, char **argv)\n{\n"
            "    _MAIN_P *_etc_pp = (_MAIN_P *)etc_param_alloc(sizeof *_etc_pp);\n"
            "    _etc_pp->_ret = (etc_ret){0, 0};\n"
            f"{sets}"
            "    (void)argc;\n    (void)argv;\n"
            "    etc_invoke(0, _MAIN_0, _etc_pp, sizeof *_etc_pp);\n}\n")


class _Renderer:
    """Renders a subtree with every Threaded-C construct lowered, for one entry point."""

    def __init__(self, model: Model, fn: ThreadedFunction | None, entry: str | None,
                 scope: Node, hoisted: frozenset[int] = frozenset()) -> None:
        self.model = model
        self.fn = fn
        self.entry = entry
        self.fname = fn.name if fn is not None else _plain_name(scope)
        self.call_index = {c.start_byte: i + 1 for i, c in enumerate(fn.calls)} if fn else {}
        self.hoisted = hoisted  # where the types hoisted_types() moves to file scope start
        marks = set()
        for node in walk(scope):
            if self._maybe_special(node):
                marks.add(node.start_byte)
        self._marks = sorted(marks)
        self.interesting = bool(marks)

    def _maybe_special(self, node: Node) -> bool:
        t = node.type
        if self.fn is not None:
            if self._is_hoisted(node):
                return True
            if t == "identifier" and (node.start_byte in self.fn.refs or
                                      node.text in (b"NUM_NODES", b"NODE_ID")):
                return True
            if t in ("declaration", "thread_label", "sync_slots_declaration"):
                return True
        elif t == "identifier" and node.text in (b"NUM_NODES", b"NODE_ID"):
            return True
        if t == "call_expression" and call_name(node) in PRIMITIVES:
            return True
        if t in ("pointer_expression", "subscript_expression", "field_expression"):
            return self._global_operand(node) is not None
        return False

    def _has_marks(self, node: Node) -> bool:
        i = bisect.bisect_left(self._marks, node.start_byte)
        return i < len(self._marks) and self._marks[i] < node.end_byte

    # -- generic

    def render(self, node: Node, dead: bool = False) -> str:
        if not self._has_marks(node) and not dead:
            return text(node)
        special = self._special(node) if not dead else None
        if special is not None:
            return special
        return self._children(node, dead)

    def _children(self, node: Node, dead_in: bool = False) -> str:
        data = node.text or b""
        base = node.start_byte
        out: list[str] = []
        pos = 0
        block = self.fn is not None and node.type == "compound_statement"
        prunable = block or (self.fn is not None and node.type in _PREPROC_BLOCKS)
        # Code is dead after a thread boundary, until a label makes it reachable again,
        # and before this entry's own label unless a loop can come back to it.
        # A preprocessor conditional inherits the state of the block around it.
        if block:
            dead = self.entry != "0" and self._holds_entry(node) and not self._in_loop(node)
        else:
            dead = prunable and dead_in
        # a conditional's own condition or macro name is not one of its items
        header = {node.child_by_field_name("condition"), node.child_by_field_name("name")}
        for c in node.children:
            out.append(data[pos:c.start_byte - base].decode("utf-8", errors="replace"))
            item = prunable and c.is_named and c.type != "comment" and c not in header
            if item and dead and not self._reachable_inside(c):
                out.append(self._dead(c))
            else:
                out.append(self.render(c))
                if item:
                    dead = self._ends_thread(c)
            pos = c.end_byte - base
        out.append(data[pos:].decode("utf-8", errors="replace"))
        return "".join(out)

    def _dead(self, item: Node) -> str:
        """An item this thread's function can never reach. Code goes (its line breaks
        stay, so #line stays true); what only declares names stays, because later
        code may use them: typedefs, struct/enum definitions, extern declarations,
        prototypes and preprocessor directives (whose conditionals are walked)."""
        t = item.type
        if t in _PREPROC_BLOCKS:
            return self.render(item, dead=True)
        if t in ("type_definition", "preproc_def", "preproc_function_def", "preproc_call",
                 "preproc_include", *_TAG_SPECIFIERS) or \
                (t == "declaration" and self._declares_no_local(item)):
            return self.render(item)
        return _line_breaks(item)

    def _is_hoisted(self, node: Node) -> bool:
        return node.start_byte in self.hoisted and (node.type == "type_definition" or
                                                    node.type in _TAG_SPECIFIERS)

    def _declares_no_local(self, decl: Node) -> bool:
        assert self.fn is not None
        return not any(loc.declaration == decl for loc in self.fn.locals + self.fn.statics)

    def _ends_thread(self, item: Node) -> bool:
        """Does this block item unconditionally leave the current C function?"""
        if item.type == "thread_label":
            return str(label_number(item)) != self.entry
        if item.type != "expression_statement":
            return False
        expr = next((c for c in item.named_children if c.type != "comment"), None)
        name = call_name(expr) if expr is not None and expr.type == "call_expression" else None
        if name in ("END_THREAD", "END_FUNCTION", "RETURN", "INVOKE", "TOKEN"):
            return name not in ("INVOKE", "TOKEN")
        if name == "CALL" and expr is not None:
            return self.entry != f"C{self.call_index.get(expr.start_byte)}"
        return False

    def _holds_entry(self, item: Node) -> bool:
        for n in walk(item):
            if n.type == "thread_label" and str(label_number(n)) == self.entry:
                return True
            if n.type == "call_expression" and call_name(n) == "CALL" and \
                    self.entry == f"C{self.call_index.get(n.start_byte)}":
                return True
        return False

    def _in_loop(self, node: Node) -> bool:
        assert self.fn is not None
        p: Node | None = node
        while p is not None and p != self.fn.body:
            if p.type in ("while_statement", "for_statement", "do_statement"):
                return True
            p = p.parent
        return False

    def _reachable_inside(self, item: Node) -> bool:
        """Can control enter this item by a jump (this entry's label, a C label, a case)?"""
        for n in walk(item):
            t = n.type
            if t in ("labeled_statement", "case_statement"):
                return True
            if t == "thread_label" and str(label_number(n)) == self.entry:
                return True
            if t == "call_expression" and call_name(n) == "CALL" and \
                    self.entry == f"C{self.call_index.get(n.start_byte)}":
                return True
        return False

    def _special(self, node: Node) -> str | None:
        t = node.type
        fn = self.fn
        if self._is_hoisted(node):
            return _line_breaks(node)  # moved to file scope
        if t == "identifier":
            if fn is not None and node.start_byte in fn.refs:
                loc = fn.refs[node.start_byte]
                return loc.field if loc.is_static else f"_fp->{loc.field}"
            return _VALUES.get(text(node))
        if t == "call_expression":
            return self._call(node)
        if t == "expression_statement" and fn is not None:
            return self._statement(node)
        if t == "declaration" and fn is not None:
            return self._declaration(node)
        if t == "thread_label" and fn is not None:
            n = str(label_number(node))
            return f"return; THREAD_{n}: ;" if n == self.entry else "return;"
        if t == "sync_slots_declaration":
            return ";"
        if t in ("pointer_expression", "subscript_expression", "field_expression"):
            return self._deref(node)
        return None

    # -- GLOBAL pointers

    def _is_global(self, node: Node | None) -> bool:
        return node is not None and (node.start_byte, node.end_byte) in self.model.global_exprs

    def _global_operand(self, node: Node) -> Node | None:
        """The GLOBAL pointer operand that `node` dereferences, if any."""
        t = node.type
        if t == "pointer_expression":
            op = node.child_by_field_name("operator")
            arg = node.child_by_field_name("argument")
            if op is not None and op.type == "*" and self._is_global(arg):
                return arg
            if op is not None and op.type == "&" and arg is not None and \
                    self._global_operand(arg) is not None:
                return arg  # &*p, &p[i], &p->f: address arithmetic, no access
        elif t == "subscript_expression":
            for f in ("argument", "index"):
                sub = node.child_by_field_name(f)
                if self._is_global(sub):
                    return sub
        elif t == "field_expression":
            op = node.child_by_field_name("operator")
            arg = node.child_by_field_name("argument")
            if op is not None and op.type == "->" and self._is_global(arg):
                return arg
        return None

    def _deref(self, node: Node) -> str | None:
        operand = self._global_operand(node)
        if operand is None:
            return None
        t = node.type
        if t == "pointer_expression" and text(node.child_by_field_name("operator")) == "&":
            return self._address_of(operand)  # type: ignore[arg-type]
        wrapped = f'ETC_DEREF({self.render(operand)}, "{self.fname}", __FILE__, __LINE__)'
        if t == "pointer_expression":
            return f"*{wrapped}"
        return self._children_with(node, operand, wrapped)

    def _address_of(self, target: Node) -> str:
        """&*p, &p[i], &p->f on a GLOBAL p: a GLOBAL pointer, computed without access."""
        t = target.type
        g = self._global_operand(target)
        assert g is not None
        p = self.render(g)
        if t == "pointer_expression":
            return f"({p})"
        if t == "subscript_expression":
            other = target.child_by_field_name("index" if g == target.child_by_field_name(
                "argument") else "argument")
            return f"(({p}) + ({self.render(other)}))"  # type: ignore[arg-type]
        member = text(target.child_by_field_name("field"))  # type: ignore[arg-type]
        return (f"((__typeof__(&({p})->{member}))((char *)({p}) + "
                f"__builtin_offsetof(__typeof__(*({p})), {member})))")

    def _children_with(self, node: Node, child: Node, replacement: str) -> str:
        data = node.text or b""
        base = node.start_byte
        out: list[str] = []
        pos = 0
        for c in node.children:
            out.append(data[pos:c.start_byte - base].decode("utf-8", errors="replace"))
            out.append(replacement if c == child else self.render(c))
            pos = c.end_byte - base
        out.append(data[pos:].decode("utf-8", errors="replace"))
        return "".join(out)

    # -- primitives

    def _slot(self, arg: Node) -> str:
        fn = self.fn
        assert fn is not None
        if const_int(arg) is not None:
            return f"&_fp->_slots[{text(arg)}]"
        return (f'ETC_SLOT(_fp, ({self.render(arg)}), {fn.nslots_text}, "{fn.name}", '
                "__FILE__, __LINE__)")

    def _thread(self, arg: Node) -> str:
        return f"_{self.fname}_{const_int(arg)}"

    def _call(self, node: Node) -> str | None:
        name = call_name(node) or ""
        prim = PRIMITIVES.get(name)
        if prim is None:
            return None
        args = call_args(node)
        r = [self.render(a) for a in args]
        if name in _ANYWHERE:
            return f"{_ANYWHERE[name]}({', '.join(r)})"
        if self.fn is None or prim.kind in (Kind.CONTROL, Kind.START):
            return None  # reported by analyse / lowered as a statement
        if name == "INIT_SYNC":
            return (f"etc_init_sync({self._slot(args[0])}, {r[1]}, {r[2]}, "
                    f"{self._thread(args[3])}, _fp)")
        if name == "SYNC":
            return f"etc_sync({self._slot(args[0])})"
        if name == "INCR_SYNC":
            return f"etc_incr_sync({self._slot(args[0])}, {r[1]})"
        if name == "SPAWN":
            return f"etc_spawn({self._thread(args[0])}, _fp)"
        if name == "RSYNC":
            return f"etc_rsync({r[0]})"
        if name == "INCR_RSYNC":
            return f"etc_incr_rsync({r[0]}, {r[1]})"
        if name == "RSPAWN":
            return f"etc_rspawn({r[0]}, (etc_thread)({r[1]}))"
        if name == "SLOT_ADR":
            return f"ETC_TO_GLOBAL({self._slot(args[0])})"
        if name == "FRAME_ADR":
            return "ETC_TO_GLOBAL((void *)_fp)"
        if name == "IP_ADR":
            return f"((void *){self._thread(args[0])})"
        # data transfer
        local_slot = prim.slot_arg is not None
        slot = f"ETC_TO_GLOBAL({self._slot(args[-1])})" if local_slot else r[-1]
        if name.startswith("DATA_"):
            value = f"(void *)({r[0]})" if name.endswith("_G") else r[0]
            return f"{prim.runtime}({value}, (void *)({r[1]}), {slot})"
        if name.startswith("GET_"):
            return f"{prim.runtime}((void *)({r[0]}), (void *)({r[1]}), {slot})"
        return f"{prim.runtime}((void *)({r[0]}), (void *)({r[1]}), ({r[2]}), {slot})"

    def _statement(self, node: Node) -> str | None:
        expr = next((c for c in node.named_children if c.type != "comment"), None)
        if expr is None or expr.type != "call_expression":
            return None
        name = call_name(expr) or ""
        prim = PRIMITIVES.get(name)
        if prim is None or prim.kind not in (Kind.CONTROL, Kind.START):
            return None
        if name == "END_THREAD":
            return "return;"
        leave = f"etc_fn_leave(&{descriptor_name(self.fname)});"
        if name == "END_FUNCTION":
            return f"{{ {leave} etc_frame_free(_fp, sizeof *_fp); return; }}"
        if name == "RETURN":
            return (f"{{ etc_ret _etc_r = _fp->_ret; {leave} etc_frame_free(_fp, sizeof *_fp); "
                    "etc_return(_etc_r); return; }")
        return self._start(name, expr)

    def _start(self, name: str, call: Node) -> str:
        fn = self.fn
        assert fn is not None
        args = call_args(call)
        fidx = 1 if name == "INVOKE" else 0
        callee = text(args[fidx])
        sig = self.model.signatures[callee]
        sets = "".join(f" _etc_pp->{p} = {self.render(a)};"
                       for (p, _), a in zip(sig.params, args[fidx + 1:], strict=False))
        head = (f"{{ _{callee}_P *_etc_pp = (_{callee}_P *)etc_param_alloc(sizeof *_etc_pp);")
        size = "sizeof *_etc_pp"
        if name == "INVOKE":
            return (f"{head} _etc_pp->_ret = (etc_ret){{0, 0}};{sets} "
                    f"etc_invoke({self.render(args[0])}, _{callee}_0, _etc_pp, {size}); }}")
        if name == "TOKEN":
            return (f"{head} _etc_pp->_ret = (etc_ret){{0, 0}};{sets} "
                    f"etc_token(_{callee}_0, _etc_pp, {size}); }}")
        k = self.call_index[call.start_byte]
        label = f" _etc_C{k}: ;" if self.entry == f"C{k}" else ""
        # one statement, so that `if (c) CALL(f);` stays correct; the continuation
        # function enters at the label right after the return
        return (f"{head} _etc_pp->_ret = (etc_ret){{_{fn.name}_C{k}, _fp}};{sets} "
                f"etc_call(_{callee}_0, _etc_pp); return;{label} }}")

    # -- declarations become assignments to frame fields

    def _declaration(self, node: Node) -> str | None:
        fn = self.fn
        assert fn is not None
        locals_ = [loc for loc in fn.locals + fn.statics if loc.declaration == node]
        if not locals_:
            return None  # extern, prototype: kept as written
        in_for = node.parent is not None and node.parent.type == "for_statement"
        parts = []
        for loc in locals_:
            if loc.init is None or loc.is_static:
                continue
            init = self.render(loc.init)
            target = f"_fp->{loc.field}"
            aggregate = loc.init.type == "initializer_list" or (
                loc.init.type in ("string_literal", "concatenated_string") and
                loc.declarator.type == "array_declarator")
            if aggregate:
                parts.append(f"{{ __typeof__({target}) _etc_init = {init}; "
                             f"__builtin_memcpy(&{target}, &_etc_init, sizeof _etc_init); }}")
            else:
                parts.append(f"{target} = {init};" if not in_for else f"{target} = {init}")
        if in_for:
            return ", ".join(parts) + ";"
        return " ".join(parts) if parts else ";"


def _plain_name(node: Node) -> str:
    from etcpre.passes.syntax import declarator_identifier  # noqa: PLC0415

    d = node.child_by_field_name("declarator")
    ident = declarator_identifier(d) if d is not None else None
    return text(ident) if ident is not None else "?"
