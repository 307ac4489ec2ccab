"""Reachability: which code each C function of a threaded function can never reach.

Each entry point of a threaded function (thread 0, every `THREAD_n` label, every CALL
continuation `Ck`) becomes a C function entered with a jump to its label (Fig. 2.17).
Within a block, code after a thread boundary (another thread's label, END_THREAD,
END_FUNCTION, RETURN, a CALL that is not this entry's) cannot be reached by falling
through, and code before this entry's own label cannot be reached either unless a loop
brings control back to it; such code is reachable again only through a jump target
inside it (a C label, a `case`, this entry's own label or continuation).

This module only decides; `lower` renders, asking block by block what an entry keeps
(`Reach.plan`).
"""

from __future__ import annotations

import bisect
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
class Plan:
    """What one entry's C function keeps of one block (a compound statement or a
    preprocessor conditional): the indices (into `items(block)`) of the items it
    keeps, and for each kept preprocessor conditional whether it starts dead."""

    items: list[Node]
    kept: list[int]
    sub_dead: dict[int, bool]
    children: list[Node]  # the block's children (shared by every plan of it)
    child_index: list[int]  # where each item is among them


def items(block: Node) -> list[Node]:
    """The block items of a compound statement or a preprocessor conditional."""
    header = {block.child_by_field_name("condition"), block.child_by_field_name("name")}
    return [c for c in block.children if c.is_named and c.type != "comment" and c not in header]


def analyse(entries: Entries) -> Reach:
    return Reach(entries)


class Reach:
    """Which block items each entry's C function keeps, asked block by block.

    An entry whose label (or CALL) is not inside a block sees that block as every such
    entry does: its plan is computed once and shared. An entry held in a block sees it
    as the shared plan with the same start, except from the item holding it to where
    its state meets the shared one again (the end of its own thread): the work per
    entry is the code that entry keeps, so the whole analysis and the output grow with
    the code, not with threads times code."""

    def __init__(self, entries: Entries) -> None:
        self.entries = entries
        self.names = entries.names()
        self.call_entry = {c.id: f"C{k}" for k, c in enumerate(entries.calls, 1)}
        self.holds: dict[int, frozenset[str]] = {}  # node id -> entries inside it
        self.jump_target: set[int] = set()  # ids of nodes holding a C label or case
        self.in_loop: set[int] = set()  # ids of compound statements inside a loop
        self.block_starts: list[int] = []  # start bytes of every block, sorted
        self._items: dict[int, tuple[list[Node], list[Node], list[int]]] = {}
        self._holder: dict[int, dict[str, int]] = {}  # block -> entry -> its item
        self._shared: dict[tuple[int, bool], tuple[Plan, list[bool]]] = {}
        self._collect()

    # -- facts, once, bottom-up

    def _collect(self) -> None:
        # one pre-order walk with the ancestors at hand: what a node holds (entries,
        # jump targets) is its own and its descendants', found in a few places, so
        # each find is given to its ancestors (a union at every node cost a walk of
        # every node's children)
        holds: dict[int, set[str]] = {}
        starts = []
        cursor = self.entries.body.walk()
        path: list[tuple[int, bool]] = []  # each ancestor: its id, its children looped
        while True:
            node = cursor.node
            assert node is not None
            t = node.type
            looped = bool(path) and path[-1][1]
            if t == "compound_statement" or t in PREPROC_BLOCKS:
                starts.append(node.start_byte)
                if looped and t == "compound_statement":
                    self.in_loop.add(node.id)
            entry = None
            if t == "thread_label":
                entry = str(label_number(node))
            elif t == "call_expression":
                entry = self.call_entry.get(node.id)
            if entry is not None:
                for holder in (node.id, *(i for i, _ in path)):
                    holds.setdefault(holder, set()).add(entry)
            if t in ("labeled_statement", "case_statement"):
                self.jump_target.add(node.id)
                self.jump_target.update(i for i, _ in path)
            if cursor.goto_first_child():
                path.append((node.id, looped or t in _LOOPS))
                continue
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent():
                    self.holds = {k: frozenset(v) for k, v in holds.items()}
                    self.block_starts = sorted(starts)
                    return
                path.pop()

    def _items_of(self, block: Node) -> tuple[list[Node], list[Node], list[int]]:
        """The block's items, its children, and where each item is among them (once:
        the binding makes a new list of children at every call)."""
        got = self._items.get(block.id)
        if got is None:
            its = items(block)
            children = block.children
            where = {c.id: i for i, c in enumerate(children)}
            got = self._items[block.id] = (its, children, [where[it.id] for it in its])
        return got

    def _ends_thread(self, item: Node, entry: str | None) -> bool:
        """Does this block item unconditionally leave entry's C function? (None: an
        entry whose label and CALL are elsewhere.)"""
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

    # -- plans

    def _step(self, item: Node, k: int, dead: bool, entry: str | None, plan: Plan) -> bool:
        """One item of a block: records what the plan keeps, returns the state after."""
        reachable = item.id in self.jump_target or (
            entry is not None and entry in self.holds.get(item.id, frozenset()))
        preproc = item.type in PREPROC_BLOCKS
        if dead and not reachable:
            if preproc:
                plan.kept.append(k)
                plan.sub_dead[k] = True
            elif self._declares_only(item):
                plan.kept.append(k)
            return True
        plan.kept.append(k)
        if preproc:
            plan.sub_dead[k] = False
        return self._ends_thread(item, entry)

    def _shared_plan(self, block: Node, dead: bool) -> tuple[Plan, list[bool]]:
        """The plan of every entry not held in `block`, from a start state, and the
        state before each item (and after the last)."""
        key = (block.id, dead)
        got = self._shared.get(key)
        if got is None:
            its, children, where = self._items_of(block)
            plan = Plan(its, [], {}, children, where)
            before = []
            for k, item in enumerate(its):
                before.append(dead)
                dead = self._step(item, k, dead, None, plan)
            before.append(dead)
            got = self._shared[key] = (plan, before)
        return got

    def plan(self, entry: str, block: Node, dead: bool | None = None) -> Plan:
        """What entry's C function keeps of `block`. `dead`: the start state of a
        preprocessor conditional (its enclosing block's); a compound statement starts
        dead for an entry inside it (its code before the entry's label is reached only
        by a loop), else alive."""
        held = entry in self.holds.get(block.id, frozenset())
        if dead is None:
            dead = entry != "0" and held and block.id not in self.in_loop
        shared, before = self._shared_plan(block, dead)
        if not held:
            return shared
        its = shared.items
        holder = self._holder.get(block.id)
        if holder is None:
            holder = self._holder[block.id] = {
                e: k for k, item in enumerate(its) for e in self.holds.get(item.id, ())}
        j = holder[entry]
        cut = bisect.bisect_left(shared.kept, j)
        plan = Plan(its, shared.kept[:cut], {k: shared.sub_dead[k] for k in shared.kept[:cut]
                                              if k in shared.sub_dead},
                    shared.children, shared.child_index)
        state = before[j]
        k = j
        while k < len(its) and (k == j or state != before[k]):
            state = self._step(its[k], k, state, entry, plan)
            k += 1
        rest = bisect.bisect_left(shared.kept, k)
        plan.kept.extend(shared.kept[rest:])
        plan.sub_dead.update((i, shared.sub_dead[i]) for i in shared.kept[rest:]
                             if i in shared.sub_dead)
        return plan

    def keeps(self, entry: str, node: Node, body: Node) -> bool:
        """Is `node` (inside `body`) part of entry's C function?"""
        chain = []
        n: Node | None = node
        while n is not None and n.id != body.id:
            chain.append(n)
            n = n.parent
        block: Node | None = body
        dead: bool | None = None
        for n in reversed(chain):  # from the body down
            inner_dead = None
            if block is not None:  # n is a child of block: is it an item it drops?
                p = self.plan(entry, block, dead)
                k = next((i for i, it in enumerate(p.items) if it.id == n.id), None)
                if k is not None and k not in p.kept:
                    return False
                inner_dead = p.sub_dead.get(k) if k is not None else None
            if n.type == "compound_statement":
                block, dead = n, None
            elif n.type in PREPROC_BLOCKS:
                block, dead = n, inner_dead
            else:
                block = None
        return True
