"""Reachability: which code each C function of a threaded function can never reach.

Each entry point of a threaded function (thread 0, every `THREAD_n` label, every CALL
continuation `Ck`) becomes a C function entered with a jump to its label (Fig. 2.17).
Within a block, code after a thread boundary (another thread's label, END_THREAD,
END_FUNCTION, RETURN, a CALL that is not this entry's) or after a jump (`break`,
`continue`, `return`, `goto`) cannot be reached by falling through, and code before
this entry's own label cannot be reached either unless a loop brings control back to
it; such code is reachable again only through a jump target inside it: a C label,
this entry's own label or continuation, or a `case` label, which only its switch
reaches: a `case` is a target for an entry only when that entry can execute the
switch's head (it falls through to it, or a loop or a C label leads back to it).

A `case` label and the statements after it (tree-sitter's `case_statement`) are a
block of their own, entered from its label or by falling through from the previous
one; a thread label ends it (the statements after a thread label in a case are items
of the switch's body).

This module only decides; `lower` renders, asking block by block what an entry keeps
(`Reach.plan`), and tells it, for a switch, whether the entry executes its head
(`dispatch`).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from etcpre.passes.syntax import Node, call_name, label_number

PREPROC_BLOCKS = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif",
                            "preproc_elifdef"})
# what reach plans item by item: compound statements, preprocessor conditionals, cases
BLOCKS = frozenset({"compound_statement", "case_statement", *PREPROC_BLOCKS})
TAG_SPECIFIERS = frozenset({"struct_specifier", "union_specifier", "enum_specifier"})
LOOPS = frozenset({"while_statement", "for_statement", "do_statement"})
# statements inside which a switch's head may be executed again whatever the state
# before them: a loop repeats it, a C label or a case label may be jumped to
REENTERED = frozenset({*LOOPS, "labeled_statement", "case_statement"})
_ENDERS = frozenset({"END_THREAD", "END_FUNCTION", "RETURN"})
_JUMPS = frozenset({"break_statement", "continue_statement", "return_statement",
                    "goto_statement"})
# what may hold a statement (the grammar has no statement expressions): the walk
# over a body looks for statements only, and for a CALL only as a statement
STATEMENT_HOLDERS = frozenset({
    "compound_statement", "if_statement", "else_clause", "while_statement",
    "for_statement", "do_statement", "switch_statement", "case_statement",
    "labeled_statement", "attributed_statement", "expression_statement",
    *PREPROC_BLOCKS})
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


@dataclass
class Plan:
    """What one entry's C function keeps of one block: the indices (into
    `items(block)`) of the items it keeps; for each kept preprocessor conditional or
    case whether it starts dead; whether control can fall into each item (`dead_before`)
    and out of the block's end (`end_dead`)."""

    items: list[Node]
    kept: list[int]
    sub_dead: dict[int, bool]
    children: list[Node]  # the block's children (shared by every plan of it)
    child_index: list[int]  # where each item is among them
    before: list[bool]  # the state before each item and after the last (shared plan's)
    changed: dict[int, bool] = field(default_factory=dict)  # the held entry's own stretch
    end_dead: bool = False

    def dead_before(self, k: int) -> bool:
        """Can control not fall into item k (only a jump target inside reaches it)?"""
        return self.changed.get(k, self.before[k])


def items(block: Node) -> list[Node]:
    """The block items of a compound statement, a preprocessor conditional or a case."""
    header = {block.child_by_field_name("condition"), block.child_by_field_name("name"),
              block.child_by_field_name("value")}
    return [c for c in block.children if c.is_named and c.type != "comment" and c not in header]


def case_header_end(case: Node) -> int:
    """Where the `case X:` or `default:` of a case statement ends (the index of the
    first child after its colon)."""
    return next(i for i, c in enumerate(case.children) if c.type == ":") + 1


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
        self.jump_target: set[int] = set()  # ids of nodes holding a C label
        # ids of nodes holding a case label of their switch (up to its body)
        self.case_holders: set[int] = set()
        self.switch_bodies: set[int] = set()  # ids of the compound bodies of switches
        self.in_loop: set[int] = set()  # ids of compound statements inside a loop
        self.block_starts: list[int] = []  # start bytes of every block, sorted
        self._items: dict[int, tuple[list[Node], list[Node], list[int]]] = {}
        self._holder: dict[int, dict[str, int]] = {}  # block -> entry -> its item
        self._shared: dict[tuple[int, bool, bool], Plan] = {}
        self._held: dict[tuple[str, int, bool, bool], Plan] = {}
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
        # each ancestor: its id, its children looped, it is a switch
        path: list[tuple[int, bool, bool]] = []
        while True:
            node = cursor.node
            assert node is not None
            t = node.type
            looped = bool(path) and path[-1][1]
            if t in BLOCKS:
                starts.append(node.start_byte)
                if t == "compound_statement":
                    if looped:
                        self.in_loop.add(node.id)
                    if path and path[-1][2]:
                        self.switch_bodies.add(node.id)
            entry = None
            if t == "thread_label":
                entry = str(label_number(node))
            elif t == "call_expression":
                entry = self.call_entry.get(node.id)
            if entry is not None:
                for holder in (node.id, *(i for i, _, _ in path)):
                    holds.setdefault(holder, set()).add(entry)
            if t == "labeled_statement":
                self.jump_target.add(node.id)
                self.jump_target.update(i for i, _, _ in path)
            elif t == "case_statement":
                self.case_holders.add(node.id)
                for i, _, switch in reversed(path):
                    if switch:
                        break
                    self.case_holders.add(i)
            if t in STATEMENT_HOLDERS and cursor.goto_first_child():
                path.append((node.id, looped or t in LOOPS, t == "switch_statement"))
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

    def _ends_flow(self, item: Node, entry: str | None) -> bool:
        """Does this block item unconditionally leave the code after it, in entry's C
        function? (None: an entry whose label and CALL are elsewhere.)"""
        t = item.type
        if t == "thread_label":
            return str(label_number(item)) != entry
        if t in _JUMPS:
            return True
        if t != "expression_statement":
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

    def _step(self, item: Node, k: int, dead: bool, entry: str | None, dispatch: bool,
              plan: Plan) -> bool:
        """One item of a block: records what the plan keeps, returns the state after."""
        if item.type == "case_statement":
            # entered from its label when the entry executes the switch's head, else
            # only by falling into it (or through a target inside)
            start = dead and not dispatch
            inner = self.plan(entry, item, start, dispatch)
            if start and not inner.kept:
                return True
            plan.kept.append(k)
            plan.sub_dead[k] = start
            return inner.end_dead
        reachable = item.id in self.jump_target or (
            dispatch and item.id in self.case_holders) or (
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
        return self._ends_flow(item, entry)

    def _shared_plan(self, block: Node, dead: bool, dispatch: bool) -> Plan:
        """The plan of every entry not held in `block`, from a start state."""
        key = (block.id, dead, dispatch)
        plan = self._shared.get(key)
        if plan is None:
            its, children, where = self._items_of(block)
            before: list[bool] = []
            plan = Plan(its, [], {}, children, where, before)
            for k, item in enumerate(its):
                before.append(dead)
                dead = self._step(item, k, dead, None, dispatch, plan)
            before.append(dead)
            plan.end_dead = dead
            self._shared[key] = plan
        return plan

    def plan(self, entry: str | None, block: Node, dead: bool | None = None,
             dispatch: bool = False) -> Plan:
        """What entry's C function keeps of `block`. `dead`: the start state of a
        preprocessor conditional or a case (from its enclosing block's plan); a
        compound statement starts dead for an entry inside it (its code before the
        entry's label is reached only by a loop), else alive; a switch's body starts
        dead (only its labels are entered). `dispatch`: does the entry execute the
        head of the switch whose cases the block holds?"""
        held = entry is not None and entry in self.holds.get(block.id, frozenset())
        if dead is None:
            if block.id in self.switch_bodies:
                dead = True
            elif block.type == "case_statement":  # planned from its block: unknown here
                dead = False
            else:
                dead = entry != "0" and held and block.id not in self.in_loop
        dispatch = dispatch and block.id in self.case_holders
        shared = self._shared_plan(block, dead, dispatch)
        if not held:
            return shared
        assert entry is not None
        key = (entry, block.id, dead, dispatch)
        plan = self._held.get(key)
        if plan is None:
            plan = self._held[key] = self._held_plan(entry, block, shared, dispatch)
        return plan

    def _held_plan(self, entry: str, block: Node, shared: Plan, dispatch: bool) -> Plan:
        its = shared.items
        holder = self._holder.get(block.id)
        if holder is None:
            holder = self._holder[block.id] = {
                e: k for k, item in enumerate(its) for e in self.holds.get(item.id, ())}
        j = holder[entry]
        cut = bisect.bisect_left(shared.kept, j)
        before = shared.before
        plan = Plan(its, shared.kept[:cut], {k: shared.sub_dead[k] for k in shared.kept[:cut]
                                              if k in shared.sub_dead},
                    shared.children, shared.child_index, before)
        state = before[j]
        k = j
        while k < len(its) and (k == j or state != before[k]):
            plan.changed[k] = state
            state = self._step(its[k], k, state, entry, dispatch, plan)
            k += 1
        plan.end_dead = state if k == len(its) else shared.end_dead
        rest = bisect.bisect_left(shared.kept, k)
        plan.kept.extend(shared.kept[rest:])
        plan.sub_dead.update((i, shared.sub_dead[i]) for i in shared.kept[rest:]
                             if i in shared.sub_dead)
        return plan

    def keeps(self, entry: str, node: Node, body: Node) -> bool:
        """Is `node` (inside `body`) part of entry's C function? (What the renderer
        decides on its walk down, for one node.)"""
        chain = []
        n: Node | None = node
        while n is not None and n.id != body.id:
            chain.append(n)
            n = n.parent
        block: Node | None = body
        dead: bool | None = None
        dispatch = False  # of the innermost switch around
        entered = True  # can control reach the innermost item around from its start?
        for n in reversed(chain):  # from the body down
            inner_dead = None
            if block is not None:  # n is a child of block: is it an item it drops?
                p = self.plan(entry, block, dead, dispatch)
                k = next((i for i, it in enumerate(p.items) if it.id == n.id), None)
                if k is not None:
                    if k not in p.kept:
                        return False
                    entered = not p.dead_before(k)
                    inner_dead = p.sub_dead.get(k)
            t = n.type
            if t == "compound_statement":
                block, dead = n, None
                if n.id in self.switch_bodies:
                    dispatch = entered
            elif t in PREPROC_BLOCKS or (t == "case_statement" and block is not None):
                block, dead = n, inner_dead
            else:
                block = None
                if t in REENTERED:
                    entered = True
        return True
