"""Reachability: which code each C function of a threaded function can never reach.

Each entry point of a threaded function (thread 0, every `THREAD_n` label, every CALL
continuation `Ck`) becomes a C function entered with a jump to its label (Fig. 2.17).
Within a block, code after a thread boundary (another thread's label, END_THREAD,
END_FUNCTION, RETURN, a CALL that is not this entry's) cannot be reached by falling
through, and code before this entry's own label cannot be reached either unless a loop
brings control back to it; such code is reachable again only through a jump target
inside it (a C label, a `case`, this entry's own label or continuation).

This module only decides; `lower` renders. The analysis runs once per threaded
function over its block items, and its result says for every entry which items that
entry's C function drops.
"""

from __future__ import annotations

from dataclasses import dataclass

from etcpre.passes.syntax import Node, call_name, label_number

PREPROC_BLOCKS = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif",
                            "preproc_elifdef"})
TAG_SPECIFIERS = frozenset({"struct_specifier", "union_specifier", "enum_specifier"})
_LOOPS = frozenset({"while_statement", "for_statement", "do_statement"})
_ENDERS = frozenset({"END_THREAD", "END_FUNCTION", "RETURN"})
# what a dead item keeps because later code may use the names it declares
_DECLARING = frozenset({"type_definition", "preproc_def", "preproc_function_def",
                        "preproc_call", "preproc_include", *TAG_SPECIFIERS})


@dataclass(frozen=True)
class Entries:
    """The entry points of one threaded function, as reachability needs them."""

    body: Node
    labels: dict[int, Node]  # thread number -> its THREAD_n label
    calls: list[Node]  # CALL statements' call expressions, in order: continuation k+1
    frame_declarations: frozenset[int]  # ids of declarations of frame/static locals

    def names(self) -> list[str]:
        return ["0", *(str(n) for n in sorted(self.labels)),
                *(f"C{k}" for k in range(1, len(self.calls) + 1))]


@dataclass(frozen=True)
class Reach:
    """For each entry name ("0", "3", "C1", ...): the ids of the block items its C
    function drops (they are replaced by their line breaks)."""

    dropped: dict[str, frozenset[int]]
    dropped_starts: dict[str, list[int]]  # the same items' start bytes, sorted

    def keeps(self, entry: str, node: Node, body: Node) -> bool:
        """Is `node` (inside `body`) part of entry's C function?"""
        gone = self.dropped[entry]
        n: Node | None = node
        while n is not None and n.id != body.id:
            if n.id in gone:
                return False
            n = n.parent
        return True


def items(block: Node) -> list[Node]:
    """The block items of a compound statement or a preprocessor conditional."""
    header = {block.child_by_field_name("condition"), block.child_by_field_name("name")}
    return [c for c in block.children if c.is_named and c.type != "comment" and c not in header]


def analyse(entries: Entries) -> Reach:
    info = _Facts(entries)
    dropped = {e: info.dropped(e) for e in entries.names()}
    return Reach({e: frozenset(n.id for n in d) for e, d in dropped.items()},
                 {e: sorted(n.start_byte for n in d) for e, d in dropped.items()})


class _Facts:
    """What every entry's analysis asks of the tree, computed once, bottom-up."""

    def __init__(self, entries: Entries) -> None:
        self.entries = entries
        self.call_entry = {c.id: f"C{k}" for k, c in enumerate(entries.calls, 1)}
        self.holds: dict[int, frozenset[str]] = {}  # node id -> entries inside it
        self.jump_target: set[int] = set()  # ids of nodes holding a C label or case
        self.blocks: list[Node] = []  # compound statements, outermost first
        self.in_loop: set[int] = set()  # ids of blocks inside a loop of the body
        self._collect()

    def _collect(self) -> None:
        # iterative post-order, so that nesting depth costs no Python recursion
        stack: list[tuple[Node, bool, bool]] = [(self.entries.body, False, False)]
        while stack:
            node, done, looped = stack.pop()
            if not done:
                if node.type == "compound_statement":
                    self.blocks.append(node)
                    if looped:
                        self.in_loop.add(node.id)
                stack.append((node, True, looped))
                inner = looped or node.type in _LOOPS
                stack.extend((c, False, inner) for c in reversed(node.children))
                continue
            here: set[str] = set()
            if node.type == "thread_label":
                here.add(str(label_number(node)))
            elif node.type == "call_expression" and node.id in self.call_entry:
                here.add(self.call_entry[node.id])
            jump = node.type in ("labeled_statement", "case_statement")
            for c in node.children:
                here |= self.holds.get(c.id, frozenset())
                jump = jump or c.id in self.jump_target
            if here:
                self.holds[node.id] = frozenset(here)
            if jump:
                self.jump_target.add(node.id)

    def _reachable_inside(self, item: Node, entry: str) -> bool:
        return item.id in self.jump_target or entry in self.holds.get(item.id, frozenset())

    def _ends_thread(self, item: Node, entry: str) -> bool:
        """Does this block item unconditionally leave entry's C function?"""
        if item.type == "thread_label":
            return str(label_number(item)) != entry
        if item.type != "expression_statement":
            return False
        expr = next((c for c in item.named_children if c.type != "comment"), None)
        if expr is None or expr.type != "call_expression":
            return False
        name = call_name(expr)
        if name in _ENDERS:
            return True
        return name == "CALL" and self.call_entry.get(expr.id) != entry

    def _declares_only(self, item: Node) -> bool:
        return item.type in _DECLARING or (
            item.type == "declaration" and item.id not in self.entries.frame_declarations)

    def dropped(self, entry: str) -> list[Node]:
        out: list[Node] = []
        # (block, dead at its start); preprocessor conditionals inherit the state of the
        # block around them, compound statements start from their own
        work: list[tuple[Node, bool]] = []
        for block in self.blocks:
            dead = entry != "0" and entry in self.holds.get(block.id, frozenset()) and \
                block.id not in self.in_loop
            work.append((block, dead))
        while work:
            block, dead = work.pop()
            for item in items(block):
                if dead and not self._reachable_inside(item, entry):
                    if item.type in PREPROC_BLOCKS:
                        work.append((item, True))
                    elif not self._declares_only(item):
                        out.append(item)
                    continue
                if item.type in PREPROC_BLOCKS:
                    work.append((item, False))
                dead = self._ends_thread(item, entry)
        return out
