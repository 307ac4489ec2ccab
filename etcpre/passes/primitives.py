"""The Threaded-C primitives (reference section 2, thesis appendix A): the one table.

Each row says everything the translator knows about a primitive: its arguments and what
each one is (so the analyse pass checks them), the C prototype libclang type-checks calls
against (so the clang prelude is generated from it), and the C it lowers to (a template
the lower pass fills in). The highlighting query's test reads it too. A new primitive is
one row here and, where it needs one, a runtime function in etc.h.

The grammar keeps primitives as ordinary calls (see docs/architecture.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    CONTROL = "control"  # END_THREAD, END_FUNCTION, RETURN: a statement that ends a thread
    START = "start"  # INVOKE, TOKEN, CALL: a statement that starts a threaded function
    SLOT = "slot"  # operates on a local slot or thread of the current frame
    REMOTE = "remote"  # operates through a GLOBAL slot or frame pointer
    TRANSFER = "transfer"  # DATA_/GET_/BLKMOV_
    ADDRESS = "address"  # SLOT_ADR, FRAME_ADR, IP_ADR
    ANYWHERE = "anywhere"  # usable in plain C too (POLL, global-address operations)
    VALUE = "value"  # NUM_NODES, NODE_ID: values, not calls; usable everywhere


class Arg(Enum):
    """What an argument is; the analyse pass checks constant slots and threads."""

    SLOT = "slot"  # a slot number of the current function (constant or run-time)
    THREAD = "thread"  # a thread number of the current function (integer constant)
    VALUE = "value"  # any expression of the prototype's type
    FUNCTION = "function"  # the threaded function INVOKE/TOKEN/CALL start


@dataclass(frozen=True)
class Primitive:
    name: str
    kind: Kind
    args: tuple[tuple[str, Arg, str], ...]  # (name, what it is, C type for clang)
    result: str = "void"  # C type for clang
    lowering: str | None = None  # C template (None: lowered by code in lower.py)
    prelude: str | None = None  # clang declaration when a prototype cannot say it
    suffix: str | None = None  # transfer suffix (B, S, L, LL, F, D, G)

    @property
    def arity(self) -> int | None:
        return None if self.kind is Kind.START else len(self.args)

    def arg_index(self, what: Arg) -> int | None:
        return next((i for i, a in enumerate(self.args) if a[1] is what), None)

    @property
    def slot_arg(self) -> int | None:
        return self.arg_index(Arg.SLOT)

    @property
    def thread_arg(self) -> int | None:
        return self.arg_index(Arg.THREAD)

    def declaration(self) -> str:
        """The declaration libclang sees in the prelude."""
        if self.prelude is not None:
            return self.prelude
        if self.kind is Kind.VALUE:
            return f"extern const {self.result} {self.name};"
        params = ", ".join(f"{ctype} {name}" for name, _, ctype in self.args) or "void"
        return f"{self.result} {self.name}({params});"


# Lowering templates (str.format: a literal brace is doubled): {a0}, {a1}, ... are the
# rendered arguments; {slot0} is the address of local slot a0 (checked at run time in
# the checking build when not constant); {gslot0} the same made GLOBAL; {thread0} the C
# function of thread a0; {fname} the threaded function's name.
_G = "__etc_g"
_SPTR = "SPTR"
_SRC = f"const volatile void {_G} *"
_DEST = f"void {_G} *"

# suffix -> (C type of the value, runtime suffix, size in bytes, value kind)
TRANSFER_TYPES: dict[str, tuple[str, str, int, str]] = {
    "B": ("char", "b", 1, "integer"),
    "S": ("short", "s", 2, "integer"),
    "L": ("int", "l", 4, "integer"),
    "LL": ("long long", "ll", 8, "integer"),
    "F": ("float", "f", 4, "floating"),
    "D": ("double", "d", 8, "floating"),
    "G": (_SRC, "g", 8, "pointer"),
}


def _transfers() -> list[Primitive]:
    out = []
    for sfx, (ctype, rt, _, _) in TRANSFER_TYPES.items():
        value = "(void *)({a0})" if sfx == "G" else "{a0}"
        out += [
            Primitive(f"DATA_SYNC_{sfx}", Kind.TRANSFER,
                      (("value", Arg.VALUE, ctype), ("dest", Arg.VALUE, _DEST),
                       ("slot", Arg.SLOT, "int")),
                      lowering=f"etc_data_sync_{rt}({value}, (void *)({{a1}}), {{gslot2}})",
                      suffix=sfx),
            Primitive(f"DATA_RSYNC_{sfx}", Kind.TRANSFER,
                      (("value", Arg.VALUE, ctype), ("dest", Arg.VALUE, _DEST),
                       ("sptr", Arg.VALUE, _SPTR)),
                      lowering=f"etc_data_sync_{rt}({value}, (void *)({{a1}}), {{a2}})",
                      suffix=sfx),
            Primitive(f"GET_SYNC_{sfx}", Kind.TRANSFER,
                      (("src", Arg.VALUE, _SRC), ("dest", Arg.VALUE, _DEST),
                       ("slot", Arg.SLOT, "int")),
                      lowering=f"etc_get_sync_{rt}((void *)({{a0}}), (void *)({{a1}}), "
                               "{gslot2})",
                      suffix=sfx),
            Primitive(f"GET_RSYNC_{sfx}", Kind.TRANSFER,
                      (("src", Arg.VALUE, _SRC), ("dest", Arg.VALUE, _DEST),
                       ("sptr", Arg.VALUE, _SPTR)),
                      lowering=f"etc_get_sync_{rt}((void *)({{a0}}), (void *)({{a1}}), {{a2}})",
                      suffix=sfx),
        ]
    return out


def _table() -> dict[str, Primitive]:
    slot = ("slot", Arg.SLOT, "int")
    thread = ("thread", Arg.THREAD, "int")
    prims = [
        Primitive("END_THREAD", Kind.CONTROL, (), lowering="return;"),
        Primitive("END_FUNCTION", Kind.CONTROL, (),
                  lowering='{{ ETC_CHECK_END(_fp->_ret, "{fname}", 0); '
                           "etc_fn_leave(&{descriptor}); "
                           "etc_frame_free(_fp, sizeof *_fp); return; }}"),
        Primitive("RETURN", Kind.CONTROL, (),
                  lowering='{{ etc_ret _etc_r = _fp->_ret; ETC_CHECK_END(_etc_r, "{fname}", 1); '
                           "etc_fn_leave(&{descriptor}); etc_frame_free(_fp, sizeof *_fp); "
                           "etc_return(_etc_r); return; }}"),
        # clang sees INVOKE(n, f, a, b) as INVOKE(n, f(a, b)), a threaded function as a
        # C function returning int: the arguments are checked as a call of f
        Primitive("INVOKE", Kind.START, (("node", Arg.VALUE, "int"),
                                          ("function", Arg.FUNCTION, "int"))),
        Primitive("TOKEN", Kind.START, (("function", Arg.FUNCTION, "int"),)),
        Primitive("CALL", Kind.START, (("function", Arg.FUNCTION, "int"),)),
        Primitive("INIT_SYNC", Kind.SLOT,
                  (slot, ("count", Arg.VALUE, "int"), ("reset", Arg.VALUE, "int"), thread),
                  lowering="etc_init_sync({slot0}, {a1}, {a2}, {thread3}, _fp)"),
        Primitive("SYNC", Kind.SLOT, (slot,), lowering="etc_sync({slot0})"),
        Primitive("INCR_SYNC", Kind.SLOT, (slot, ("value", Arg.VALUE, "int")),
                  lowering="etc_incr_sync({slot0}, {a1})"),
        Primitive("SPAWN", Kind.SLOT, (thread,), lowering="etc_spawn({thread0}, _fp)"),
        Primitive("RSYNC", Kind.REMOTE, (("sptr", Arg.VALUE, _SPTR),),
                  lowering="etc_rsync({a0})"),
        Primitive("INCR_RSYNC", Kind.REMOTE,
                  (("sptr", Arg.VALUE, _SPTR), ("value", Arg.VALUE, "int")),
                  lowering="etc_incr_rsync({a0}, {a1})"),
        Primitive("RSPAWN", Kind.REMOTE,
                  (("frame", Arg.VALUE, _SRC), ("ip", Arg.VALUE, "void *")),
                  lowering="etc_rspawn({a0}, (etc_thread)({a1}))"),
        Primitive("SLOT_ADR", Kind.ADDRESS, (slot,), result=_SPTR,
                  lowering="ETC_TO_GLOBAL({slot0})"),
        Primitive("FRAME_ADR", Kind.ADDRESS, (), result=_DEST,
                  lowering="ETC_TO_GLOBAL((void *)_fp)"),
        Primitive("IP_ADR", Kind.ADDRESS, (thread,), result="void *",
                  lowering="((void *){thread0})"),
        Primitive("BLKMOV_SYNC", Kind.TRANSFER,
                  (("src", Arg.VALUE, _SRC), ("dest", Arg.VALUE, _DEST),
                   ("nbytes", Arg.VALUE, "long"), slot),
                  lowering="etc_blkmov_sync((void *)({a0}), (void *)({a1}), ({a2}), "
                           "{gslot3})"),
        Primitive("BLKMOV_RSYNC", Kind.TRANSFER,
                  (("src", Arg.VALUE, _SRC), ("dest", Arg.VALUE, _DEST),
                   ("nbytes", Arg.VALUE, "long"), ("sptr", Arg.VALUE, _SPTR)),
                  lowering="etc_blkmov_sync((void *)({a0}), (void *)({a1}), ({a2}), {a3})"),
        *_transfers(),
        Primitive("POLL", Kind.ANYWHERE, (), lowering="etc_poll()"),
        # type-generic: the prelude says them as macros
        Primitive("TO_GLOBAL", Kind.ANYWHERE, (("p", Arg.VALUE, "void *"),),
                  lowering="ETC_TO_GLOBAL({a0})",
                  prelude=f"#define TO_GLOBAL(p) ((__typeof__(*(p)) {_G} *)(p))"),
        Primitive("MAKE_GPTR", Kind.ANYWHERE,
                  (("node", Arg.VALUE, "int"), ("p", Arg.VALUE, "void *")),
                  lowering="ETC_MAKE_GPTR({a0}, {a1})",
                  prelude=f"#define MAKE_GPTR(node, p) ((void)(node), "
                          f"(__typeof__(*(p)) {_G} *)(p))"),
        Primitive("TO_LOCAL", Kind.ANYWHERE, (("g", Arg.VALUE, _SRC),), result="void *",
                  lowering="ETC_TO_LOCAL({a0})"),
        Primitive("OWNER_OF", Kind.ANYWHERE, (("g", Arg.VALUE, _SRC),), result="int",
                  lowering="ETC_OWNER_OF({a0})"),
        Primitive("IS_OWNER", Kind.ANYWHERE, (("g", Arg.VALUE, _SRC),), result="int",
                  lowering="ETC_IS_OWNER({a0})"),
        Primitive("NUM_NODES", Kind.VALUE, (), result="int", lowering="ETC_NUM_NODES"),
        Primitive("NODE_ID", Kind.VALUE, (), result="int", lowering="ETC_NODE_ID"),
    ]
    return {p.name: p for p in prims}


PRIMITIVES: dict[str, Primitive] = _table()

# Names that are values, not calls; allowed everywhere.
VALUE_PRIMITIVES = frozenset(p.name for p in PRIMITIVES.values() if p.kind is Kind.VALUE)
CALL_PRIMITIVES = {name: p for name, p in PRIMITIVES.items() if p.kind is not Kind.VALUE}


def prelude_declarations() -> str:
    """The primitives as clang should type-check them (the clang prelude's body)."""
    return "\n".join(p.declaration() for p in PRIMITIVES.values()) + "\n"
