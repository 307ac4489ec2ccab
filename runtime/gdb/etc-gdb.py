"""etc-gdb.py: gdb support for Threaded-C programs built by etcc (docs/debugging.md).

Load it with one command:  gdb -x "$(etcc --gdb-script)" ./program
(or, inside gdb: source PATH, with the path `etcc --gdb-script` prints).

- `print x` (and `p x`, `print/x x`) finds x among the locals and parameters of the
  threaded function whose thread is running: they are fields of its activation
  frame `_fp`, so `print r1 + r2` means `print _fp->r1 + _fp->r2` there, and a
  static local is found under the name etcpre gave it. gdb's own `print` cannot be
  taught names (its symbol lookup has no Python hook), so this file replaces the
  command with one that rewrites those names and hands the rest to gdb's `call`,
  which is `print` with the same formats and options (it prints nothing for void).
- GLOBAL pointers (the node + 1 in the top 16 bits of the address) print as
  `node:address`, e.g. `1:0x4c6a10` for node 1's 0x4c6a10; `$etc_addr(p)` is the
  address alone, for `print *$etc_addr(p)` on the node that owns it.
- `$etc("x")` is the frame's x, for other commands (`break 17 if $etc("n") == 3`).
- `etc-locals` lists the frame's fields with their values, and `bt full` shows
  them as each thread's locals (gdb's `info locals` shows only `_fp`: it takes no
  frame filter).
- `etc-where` says which node this is and which thread of which threaded function
  the selected frame runs.
"""

from __future__ import annotations

import re

import gdb  # type: ignore[import-not-found]
from gdb.FrameDecorator import FrameDecorator  # type: ignore[import-not-found]

ADDR_BITS = 48
ADDR_MASK = (1 << ADDR_BITS) - 1
THREAD_NAME = re.compile(r"^_(?P<fn>\w+?)_(?P<entry>\d+|C\d+)$")
HIDDEN = {"_hdr", "_slots", "_ret"}  # runtime fields of the frame, not the program's
TOKEN = re.compile(r"""
    "(?:[^"\\]|\\.)*" | '(?:[^'\\]|\\.)*'   # string and character literals
  | \$\w*                                   # gdb's $ variables and functions
  | \d[\w.]*                                # numbers
  | ->
  | [A-Za-z_]\w*
  | \s+
  | .
""", re.VERBOSE | re.DOTALL)


def _thread_of(frame: gdb.Frame | None) -> tuple[str, str] | None:
    """(threaded function, entry) when the frame runs a thread etcpre made."""
    if frame is None or frame.function() is None:
        return None
    m = THREAD_NAME.match(frame.function().name)
    if m is None or gdb.lookup_static_symbol(f"_etc_fn_{m['fn']}") is None:
        return None
    return m["fn"], m["entry"]


def _frame_fields(frame: gdb.Frame | None) -> tuple[gdb.Value | None, list[str]]:
    """The activation frame `_fp` of a thread and the names of its fields."""
    if _thread_of(frame) is None:
        return None, []
    try:
        fp = frame.read_var("_fp")  # type: ignore[union-attr]
        fields = fp.dereference().type.strip_typedefs().fields()
    except (gdb.error, ValueError, RuntimeError):
        return None, []
    return fp, [f.name for f in fields if f.name and f.name not in HIDDEN]


def _selected() -> gdb.Frame | None:
    try:
        return gdb.selected_frame()
    except gdb.error:
        return None


def rewrite(expr: str, frame: gdb.Frame | None) -> str:
    """expr with each name of a local of the running threaded function replaced by
    its place: `_fp->name`, or the file-scope variable of a static local."""
    fn = _thread_of(frame)
    if fn is None:
        return expr
    _, fields = _frame_fields(frame)
    out, prev = [], ""
    for tok in TOKEN.findall(expr):
        if re.fullmatch(r"[A-Za-z_]\w*", tok) and prev not in (".", "->", "struct", "union",
                                                                 "enum"):
            if tok in fields:
                tok = f"_fp->{tok}"
            elif gdb.lookup_symbol(tok)[0] is None and \
                    gdb.lookup_static_symbol(f"_{fn[0]}_{tok}") is not None:
                tok = f"_{fn[0]}_{tok}"
        if not tok.isspace():
            prev = tok
        out.append(tok)
    return "".join(out)


def _split_print_args(arg: str) -> tuple[str, str]:
    """(what stays as written: /FMT or options, the expression)."""
    s = arg.lstrip()
    if s.startswith("/"):
        head, _, rest = s.partition(" ")
        return head + " ", rest
    if s.startswith("-"):
        head, sep, rest = s.partition(" -- ")
        return (head + sep, rest) if sep else (s, "")
    return "", s


class EtcPrint(gdb.Command):
    """print EXPR: gdb's print, where the locals of a threaded function are found by
    their names (they live in its activation frame _fp; see etc-gdb.py)."""

    def __init__(self) -> None:
        super().__init__("print", gdb.COMMAND_DATA, gdb.COMPLETE_EXPRESSION)

    def invoke(self, arg: str, from_tty: bool) -> None:
        head, expr = _split_print_args(arg)
        gdb.execute(f"call {head}{rewrite(expr, _selected())}".rstrip(), from_tty)


class EtcWhere(gdb.Command):
    """etc-where: the node, and the thread of the threaded function the selected frame
    runs."""

    def __init__(self) -> None:
        super().__init__("etc-where", gdb.COMMAND_STACK)

    def invoke(self, arg: str, from_tty: bool) -> None:
        node = gdb.parse_and_eval("etc_rts.node_id")
        count = gdb.parse_and_eval("etc_rts.num_nodes")
        fn = _thread_of(_selected())
        if fn is None:
            gdb.write(f"node {node} of {count}, not in a thread of a threaded function\n")
            return
        name, entry = fn
        what = f"thread {entry}" if not entry.startswith("C") else \
            f"the continuation after CALL {entry[1:]}"
        gdb.write(f"node {node} of {count}, {what} of '{name}'\n")


class EtcLocals(gdb.Command):
    """etc-locals: the locals and parameters of the running threaded function (the
    fields of its activation frame _fp) and their values."""

    def __init__(self) -> None:
        super().__init__("etc-locals", gdb.COMMAND_STACK)

    def invoke(self, arg: str, from_tty: bool) -> None:
        fp, fields = _frame_fields(_selected())
        if fp is None:
            gdb.write("not in a thread of a threaded function\n")
            return
        for f in fields:
            gdb.write(f"{f} = {fp.dereference()[f].format_string()}\n")


class EtcLocal(gdb.Function):
    """$etc("x"): the local or parameter x of the running threaded function."""

    def __init__(self) -> None:
        super().__init__("etc")

    def invoke(self, name: gdb.Value) -> gdb.Value:
        return gdb.parse_and_eval(rewrite(name.string(), _selected()))


class EtcAddr(gdb.Function):
    """$etc_addr(p): the address of a GLOBAL pointer without its node."""

    def __init__(self) -> None:
        super().__init__("etc_addr")

    def invoke(self, p: gdb.Value) -> gdb.Value:
        return gdb.Value(int(p) & ADDR_MASK).cast(p.type)


class GlobalPointer:
    def __init__(self, value: gdb.Value) -> None:
        self.value = value

    def to_string(self) -> str:
        raw = int(self.value)
        return f"{(raw >> ADDR_BITS) - 1}:{raw & ADDR_MASK:#x}"


def _global_pointer(value: gdb.Value) -> GlobalPointer | None:
    t = value.type.strip_typedefs()
    if t.code != gdb.TYPE_CODE_PTR:
        return None
    try:
        raw = int(value)
    except gdb.error:
        return None
    return GlobalPointer(value) if raw >> ADDR_BITS and raw >> ADDR_BITS != 0xFFFF else None


class _Local:
    def __init__(self, name: str, value: gdb.Value) -> None:
        self.name, self.val = name, value

    def symbol(self) -> str:
        return self.name

    def value(self) -> gdb.Value:
        return self.val


class ThreadFrame(FrameDecorator):
    """A thread's frame: its activation frame's fields are its locals."""

    def frame_locals(self):  # noqa: ANN201 - gdb's protocol
        fp, fields = _frame_fields(self.inferior_frame())
        if fp is None:
            return super().frame_locals()
        return [_Local(f, fp.dereference()[f]) for f in fields]


class ThreadFrames:
    def __init__(self) -> None:
        self.name, self.priority, self.enabled = "etc-threads", 100, True
        gdb.frame_filters[self.name] = self

    def filter(self, frames):  # noqa: ANN001, ANN201 - gdb's protocol
        return (ThreadFrame(f) if _thread_of(f.inferior_frame()) else f for f in frames)


EtcPrint()
EtcWhere()
EtcLocals()
EtcLocal()
EtcAddr()
gdb.pretty_printers.append(_global_pointer)
ThreadFrames()
