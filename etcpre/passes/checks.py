"""The language's checks (reference sections 2-4): every misuse the translator can see is
an error or a warning at its .tc line, before the C compiler or the linker sees it.

Runs at the end of `analyse` on the model: tree-sitter gives the places, clang's facts
(`facts.Facts`) the values of constant expressions, the types of arguments and the
diagnostics of calls (INVOKE/TOKEN/CALL arguments are type-checked by clang as a call of
the callee; see clang_view).
"""

from __future__ import annotations

import bisect
import difflib
import re

from etcpre.passes.analyse import Model, Reporter, ThreadedFunction, params_of
from etcpre.passes.facts import Arg, Call
from etcpre.passes.primitives import CALL_PRIMITIVES, PRIMITIVES, TRANSFER_TYPES, Kind, Primitive
from etcpre.passes.syntax import Node, call_args, call_name, declarator_identifier, text, walk

_LABEL_REF = re.compile(r"THREAD_(\d+)$")


def check(model: Model, rep: Reporter) -> None:
    _forward(model, rep)
    for q in _global_qualifiers(model):
        if q.parent is None or q.parent.type not in ("pointer_declarator",
                                                     "abstract_pointer_declarator"):
            rep.error(q.start_byte,
                      "GLOBAL qualifies a pointer: write it after the '*' (int *GLOBAL p)")
    starts = _start_targets(model)  # where INVOKE/TOKEN/CALL name their function
    for fn in model.functions:
        model.used_callees[fn.name] = _function(model, fn, rep)
    for p in model.plain_functions:
        _plain(p, rep)
    _threaded_names(model, rep, starts)
    _misspelled(model, rep)
    _main(model, rep)


# ---------------------------------------------------------------- clang's diagnostics


def _forward(model: Model, rep: Reporter) -> None:
    facts = model.facts
    for off, msg in facts.expansion_errors:
        rep.error(off, msg)
    inside = _primitive_arguments(model)
    # argument lists nest or are disjoint, and come outer first: the first one holding
    # an offset is the outermost, the one of the outermost lists that holds it
    outermost = []
    for a in inside:
        if not outermost or a[0] >= outermost[-1][1]:
            outermost.append(a)
    starts = [a[0] for a in outermost]
    for d in facts.diagnostics:
        if d.path is not None:
            _header_diagnostic(rep, d.path, d.offset, d.error, d.message)
            continue
        k = bisect.bisect_right(starts, d.offset) - 1
        where = outermost[k] if k >= 0 and d.offset < outermost[k][1] else None
        if not d.always and where is None:
            continue
        msg = d.message
        if where is not None and where[3]:
            msg = f"{where[3]}: {msg}"
        (rep.error if d.error else rep.warning)(d.offset, msg)
        if where is not None and where[2] and not d.error:
            model.warned_args.add((where[4], _argument_at(where[5], d.offset)))


def _header_diagnostic(rep: Reporter, path: str, offset: int, error: bool, msg: str) -> None:
    from etcpre.source import SourceError, SourceFile  # noqa: PLC0415

    try:
        header = SourceFile.load(path)
    except SourceError:
        rep.error(0, f"{path}: {msg}")
        return
    (rep.sink.error if error else rep.sink.warning)(header, offset, msg)


def _argument_at(args: list[Node], offset: int) -> int:
    return next((k for k, a in enumerate(args) if a.start_byte <= offset < a.end_byte), -1)


def _primitive_arguments(model: Model) -> list[tuple[int, int, bool, str, int, list[Node]]]:
    """(start, end, is a start primitive, what to call it, the call's start, the
    arguments' nodes) of every primitive call's arguments: clang's diagnostics there
    are forwarded (the lowering's casts hide the types from cc). A start of something
    not threaded is reported as that instead."""
    out = []
    for n in model.index.all("call_expression"):
        prim = CALL_PRIMITIVES.get(model.index.call_name(n) or "")
        args = n.child_by_field_name("arguments")
        if prim is None or args is None:
            continue
        what = prim.name
        if prim.kind is Kind.START:
            named = model.index.call_args(n)
            fidx = 1 if prim.name == "INVOKE" else 0
            if len(named) <= fidx or text(named[fidx]) not in model.signatures:
                continue
            what = f"{prim.name} of '{text(named[fidx])}'"
        out.append((args.start_byte, args.end_byte, prim.kind is Kind.START, what,
                    n.start_byte, model.index.call_args(n)))
    return out


def _global_qualifiers(model: Model) -> list[Node]:
    return [n for n in model.index.all("type_qualifier") if n.text == b"GLOBAL"]


# ---------------------------------------------------------------- one function


def _start_targets(model: Model) -> set[int]:
    out = set()
    for n in model.index.all("call_expression"):
        prim = CALL_PRIMITIVES.get(model.index.call_name(n) or "")
        if prim is not None and prim.kind is Kind.START:
            args = model.index.call_args(n)
            fidx = 1 if prim.name == "INVOKE" else 0
            if len(args) > fidx:
                out.add(args[fidx].start_byte)
    return out


def _function(model: Model, fn: ThreadedFunction, rep: Reporter) -> list[str]:
    enabled: set[int] = set()
    initialised: dict[int, Node] = {}
    signalled: set[int] = set()
    dynamic_slot = False
    callees: list[str] = []
    _slots_first(fn, rep)
    for loc in fn.block_locals:
        _vla(fn, loc.declarator, loc.name, rep)
    for node in model.index.within(fn.body, "return_statement", "goto_statement",
                                   "pointer_expression", "call_expression"):
        t = node.type
        if t == "return_statement":
            rep.error(node.start_byte,
                      f"'return' in threaded function '{fn.name}': end a thread with "
                      "END_THREAD(), the function with END_FUNCTION() or RETURN()")
        elif t in ("goto_statement", "pointer_expression"):
            _jump_to_thread(fn, node, rep)
        elif t == "call_expression":
            prim = CALL_PRIMITIVES.get(model.index.call_name(node) or "")
            if prim is None:
                continue
            args = model.index.call_args(node)
            if not _arity(prim, node, args, rep):
                continue
            facts = model.facts.calls.get(node.start_byte)
            if prim.thread_arg is not None:
                n = _thread_arg(fn, prim, args[prim.thread_arg], _arg(facts, prim.thread_arg),
                                rep)
                if n is not None:
                    enabled.add(n)
                elif prim.name == "INIT_SYNC":
                    continue  # reported; its slot is not "initialised"
            if prim.slot_arg is not None:
                s = _slot_arg(fn, prim, args[prim.slot_arg], _arg(facts, prim.slot_arg), rep)
                if s is None:
                    dynamic_slot = True
                elif prim.name == "INIT_SYNC":
                    initialised.setdefault(s, node)
                else:
                    signalled.add(s)
            if prim.kind in (Kind.CONTROL, Kind.START):
                _statement(prim, node, rep)
            if prim.kind is Kind.START:
                callee = _start(model, prim, node, args, rep)
                if callee is not None:
                    callees.append(callee)
            if prim.kind is Kind.TRANSFER and prim.suffix is not None and facts is not None:
                _transfer(prim, node, facts, rep)
    for n, lab in sorted(fn.labels.items()):
        if n not in enabled:
            rep.warning(lab.start_byte,
                        f"thread {n} of '{fn.name}' can never be enabled: no INIT_SYNC, "
                        "SPAWN or IP_ADR names it")
    if not dynamic_slot:
        for s, node in sorted(initialised.items()):
            if s not in signalled:
                rep.warning(node.start_byte,
                            f"sync slot {s} of '{fn.name}' is initialised but never "
                            "signalled (no SYNC, INCR_SYNC, SLOT_ADR or transfer names it)")
    return callees


def _arg(facts: Call | None, k: int) -> Arg | None:
    if facts is None or k >= len(facts.args):
        return None
    return facts.args[k]


def _slots_first(fn: ThreadedFunction, rep: Reporter) -> None:
    """SLOT SYNC_SLOTS[N]; is the first declaration (looking through #if)."""
    if fn.slots_decl is None:
        return
    node: Node | None = fn.body
    first = None
    while node is not None:
        first = next((c for c in node.named_children if c.type != "comment" and
                      c.type not in ("preproc_def", "preproc_function_def", "preproc_call")),
                     None)
        if first is None or first.type not in ("preproc_if", "preproc_ifdef"):
            break
        node = first
    if first is None or first.id != fn.slots_decl.id:
        rep.error(fn.slots_decl.start_byte,
                  "SLOT SYNC_SLOTS[N]; must be the first declaration of the threaded function")


def _vla(fn: ThreadedFunction, declarator: Node, name: str, rep: Reporter) -> None:
    """A VLA stays a C local of its block: no thread boundary may lie in its scope."""
    block = declarator.parent
    while block is not None and block.type != "compound_statement":
        block = block.parent
    if block is None:
        return
    for n in walk(block):
        if n.start_byte < declarator.end_byte:
            continue
        crossing = n.type == "thread_label" or (
            n.type == "call_expression" and call_name(n) == "CALL")
        if crossing:
            what = text(n) if n.type == "thread_label" else "CALL"
            rep.error(declarator.start_byte,
                      f"variable-length array '{name}' in threaded function '{fn.name}': "
                      f"its block holds a thread boundary ({what.rstrip(':')} on line "
                      f"{rep.line(n.start_byte)}), and a frame has a fixed size; allocate "
                      "it with malloc, give it a constant size, or close its block before")
            return


def _jump_to_thread(fn: ThreadedFunction, node: Node, rep: Reporter) -> None:
    """`goto THREAD_n` and `&&THREAD_n` are jumps into thread n's code: only thread n's
    own C function holds the label, so only code that thread reaches may jump there."""
    if node.type == "goto_statement":
        lab = node.child_by_field_name("label")
    else:  # tree-sitter reads GNU's `&&label` as `&(&label)`
        inner = node.child_by_field_name("argument")
        if not text(node).startswith("&&") or inner is None or \
                inner.type != "pointer_expression":
            return
        lab = inner.child_by_field_name("argument")
    m = _LABEL_REF.match(text(lab)) if lab is not None else None
    if m is None or fn.reach is None:
        return
    n = m.group(1)
    what = "goto " if node.type == "goto_statement" else "&&"
    if int(n) not in fn.labels:
        rep.error(node.start_byte, f"{what}THREAD_{n}: '{fn.name}' has no THREAD_{n} label")
        return
    for entry in fn.reach.names:
        if entry != n and fn.reach.keeps(entry, node, fn.body):
            thread = f"thread {entry}" if not entry.startswith("C") else \
                f"the code after CALL number {entry[1:]}"
            rep.error(node.start_byte,
                      f"{what}THREAD_{n} in code that {thread} runs: thread {n} starts only "
                      "when its sync slot or SPAWN enables it")
            return


def _arity(prim: Primitive, node: Node, args: list[Node], rep: Reporter) -> bool:
    if prim.arity is None:
        need = len(prim.args)
        if len(args) < need:
            what = "a node and a threaded function" if need == 2 else "a threaded function"
            rep.error(node.start_byte, f"{prim.name} needs {what}")
            return False
        return True
    if len(args) != prim.arity:
        plural = "s" if prim.arity != 1 else ""
        rep.error(node.start_byte,
                  f"{prim.name} takes {prim.arity} argument{plural}, {len(args)} given")
        return False
    return True


def _statement(prim: Primitive, node: Node, rep: Reporter) -> None:
    parent = node.parent
    if parent is None or parent.type != "expression_statement":
        rep.error(node.start_byte, f"{prim.name}() must be a statement of its own")


def _constant(prim: Primitive, what: str, arg: Node, facts: Arg | None,
              rep: Reporter) -> int | None | bool:
    """The value of a constant integer argument; None if not constant; False when
    reported."""
    if facts is None:
        return None
    if facts.constant == "char":
        rep.error(arg.start_byte, f"{prim.name}: a character constant is not a {what} number")
        return False
    if facts.constant == "float":
        rep.error(arg.start_byte, f"{prim.name}: the {what} number must be an integer")
        return False
    return facts.value if facts.constant == "int" else None


def _thread_arg(fn: ThreadedFunction, prim: Primitive, arg: Node, facts: Arg | None,
                rep: Reporter) -> int | None:
    n = _constant(prim, "thread", arg, facts, rep)
    if n is False:
        return None
    if n is None:
        rep.error(arg.start_byte,
                  f"{prim.name}: the thread number must be an integer constant (a THREAD_n "
                  f"label of '{fn.name}')")
        return None
    assert isinstance(n, int)
    if n == 0 and prim.name == "INIT_SYNC":
        rep.error(arg.start_byte, "INIT_SYNC cannot name thread 0: thread 0 runs once, when "
                                  "the function starts")
        return None
    if n not in fn.labels:
        rep.error(arg.start_byte,
                  f"{prim.name} names thread {n}, but '{fn.name}' has no THREAD_{n} label")
        return None
    return n


def _slot_arg(fn: ThreadedFunction, prim: Primitive, arg: Node, facts: Arg | None,
              rep: Reporter) -> int | None:
    if fn.slots_decl is None:
        rep.error(arg.start_byte,
                  f"{prim.name} uses a sync slot, but '{fn.name}' declares none "
                  "(add 'SLOT SYNC_SLOTS[N];' as its first declaration)")
        return None
    s = _constant(prim, "slot", arg, facts, rep)
    if s is False or s is None:
        return None
    assert isinstance(s, int)
    if fn.nslots is not None and not 0 <= s < fn.nslots:
        size = fn.slots_decl.child_by_field_name("size")
        shown = text(size) if size is not None else str(fn.nslots)
        rep.error(arg.start_byte,
                  f"sync slot {s} is out of range: '{fn.name}' declares "
                  f"SYNC_SLOTS[{shown}] (slots 0 to {fn.nslots - 1})")
        return None
    return s


def _start(model: Model, prim: Primitive, node: Node, args: list[Node],
           rep: Reporter) -> str | None:
    fidx = 1 if prim.name == "INVOKE" else 0
    target = args[fidx]
    if target.type != "identifier":
        rep.error(target.start_byte, f"{prim.name}: name the threaded function to start "
                                     "directly")
        return None
    callee = text(target)
    sig = model.signatures.get(callee)
    if sig is None:
        if callee in model.facts.functions:
            rep.error(target.start_byte, f"{prim.name} of '{callee}', which is not a threaded "
                                         "function (declare it THREADED)")
        else:
            rep.error(target.start_byte, f"{prim.name} of undeclared threaded function "
                                         f"'{callee}'")
        return None
    given = len(args) - fidx - 1
    if given != len(sig.fields):
        rep.error(node.start_byte,
                  f"{prim.name}: '{callee}' takes {len(sig.fields)} argument"
                  f"{'s' if len(sig.fields) != 1 else ''}, {given} given")
    if prim.name == "CALL" and sig.ends_with == "END_FUNCTION":
        rep.error(target.start_byte,
                  f"CALL of '{callee}', which ends with END_FUNCTION(): CALLed functions "
                  "end with RETURN() (use INVOKE or TOKEN)")
    elif prim.name != "CALL" and sig.ends_with == "RETURN" and callee != "MAIN":
        rep.error(target.start_byte,
                  f"{prim.name} of '{callee}', which ends with RETURN(): functions started "
                  "by INVOKE/TOKEN end with END_FUNCTION() (use CALL)")
    return callee


def _transfer(prim: Primitive, node: Node, facts: Call, rep: Reporter) -> None:
    """The suffix says how many bytes move: the destination (and a GET's source) must
    be that size."""
    assert prim.suffix is not None
    _, _, size, kind = TRANSFER_TYPES[prim.suffix]
    args = call_args(node)
    roles = [("destination", 1)] + ([("source", 0)] if prim.name.startswith("GET_") else [])
    for role, k in roles:
        a = _arg(facts, k)
        if a is None or a.pointee is None or k >= len(args):
            continue
        psize, pkind, pshown = a.pointee
        if psize < 0 or pkind == "other":
            continue  # void * or an aggregate: the suffix says the size
        if psize != size:
            rep.error(args[k].start_byte,
                      f"{prim.name} moves {_bytes(size)}, but its {role} points to "
                      f"'{pshown}' ({_bytes(psize)}): use the suffix of that type "
                      f"({_suffixes_for(psize, pkind)})")
        elif pkind != kind:
            rep.warning(args[k].start_byte,
                        f"{prim.name} moves {_KINDS[kind]}, but its {role} points to "
                        f"'{pshown}', {_KINDS[pkind]} of the same size "
                        f"({_suffixes_for(psize, pkind)} moves that)")


_KINDS = {"integer": "an integer", "floating": "a floating-point value",
          "pointer": "a GLOBAL pointer"}


def _bytes(n: int) -> str:
    return f"{n} byte{'s' if n != 1 else ''}"


def _suffixes_for(size: int, kind: str) -> str:
    names = [f"_{sfx}" for sfx, (_, _, s, k) in TRANSFER_TYPES.items() if s == size and
             k == kind] or [f"_{sfx}" for sfx, (_, _, s, _) in TRANSFER_TYPES.items()
                            if s == size] or ["BLKMOV"]
    return " or ".join(names)


# ---------------------------------------------------------------- the rest of the file


def _plain(fn: Node, rep: Reporter) -> None:
    declarator = fn.child_by_field_name("declarator")
    ident = declarator_identifier(declarator) if declarator is not None else None
    name = text(ident) if ident is not None else "?"
    for node in walk(fn):
        if node.type == "call_expression":
            prim = CALL_PRIMITIVES.get(call_name(node) or "")
            if prim is not None and prim.kind is not Kind.ANYWHERE:
                rep.error(node.start_byte,
                          f"{prim.name} cannot be used in plain C function '{name}': only "
                          "threaded functions use threaded primitives (POLL, NUM_NODES and "
                          "NODE_ID work everywhere)")
        elif node.type in ("thread_label", "sync_slots_declaration"):
            what = "a thread label" if node.type == "thread_label" else "SYNC_SLOTS"
            rep.error(node.start_byte,
                      f"{what} in plain C function '{name}': only threaded functions have "
                      "threads and slots (declare it THREADED)")
    if name == "main":
        rep.error(ident.start_byte if ident is not None else fn.start_byte,
                  "a Threaded-C program starts at THREADED MAIN, not at main(): the runtime "
                  "defines main() (write THREADED MAIN(int argc, char **argv))")


def _threaded_names(model: Model, rep: Reporter, starts: set[int]) -> None:
    """A threaded function's name stands only in INVOKE/TOKEN/CALL."""
    for off, name, called in model.facts.threaded_uses:
        if off in starts:
            continue
        if called:
            rep.error(off, f"'{name}' is a threaded function: start it with INVOKE, TOKEN or "
                           "CALL, not like a C function")
        else:
            rep.error(off, f"the name of threaded function '{name}' is not a value: it "
                           "stands only in INVOKE, TOKEN or CALL")


def _misspelled(model: Model, rep: Reporter) -> None:
    names = sorted(PRIMITIVES)
    for off, call in model.facts.calls.items():
        if call.what != "undeclared":
            continue
        close = difflib.get_close_matches(call.callee, names, n=1, cutoff=0.75)
        looks = call.callee.isupper() and re.match(r"(DATA|GET)_R?SYNC_", call.callee)
        if close:
            rep.error(off, f"unknown primitive '{call.callee}': did you mean {close[0]}?")
        elif looks:
            sfx = "|".join(TRANSFER_TYPES)
            rep.error(off, f"unknown primitive '{call.callee}': the transfer suffixes are "
                           f"{sfx.replace('|', ', ')}")


def _main(model: Model, rep: Reporter) -> None:
    for fn in model.functions:
        if fn.name != "MAIN":
            continue
        params = params_of(fn.node)
        types = [re.sub(r"\s+", "", text(p)) for p in params]
        ok = not params or (len(params) == 2 and types[0].startswith("int") and
                            ("**" in types[1] or "[]" in types[1]))
        if not ok:
            rep.error(fn.node.start_byte, "MAIN takes no parameters or (int argc, char **argv)")
