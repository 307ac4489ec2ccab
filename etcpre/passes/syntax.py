"""Small helpers over tree-sitter nodes shared by the analyse and lower passes."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from operator import itemgetter

import tree_sitter

Node = tree_sitter.Node

DERIVED_DECLARATORS = frozenset({
    "pointer_declarator", "array_declarator", "function_declarator",
    "parenthesized_declarator", "attributed_declarator",
    "abstract_pointer_declarator", "abstract_array_declarator",
    "abstract_function_declarator", "abstract_parenthesized_declarator",
})


def text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", errors="replace")


def declarator_identifier(decl: Node) -> Node | None:
    """The identifier a (possibly nested) declarator declares."""
    node: Node | None = decl
    while node is not None:
        if node.type in ("identifier", "field_identifier"):
            return node
        if node.type == "init_declarator":
            node = node.child_by_field_name("declarator")
        elif node.type in DERIVED_DECLARATORS:
            nxt = node.child_by_field_name("declarator")
            if nxt is None:
                nxt = next((c for c in node.named_children
                             if c.type not in ("type_qualifier", "ms_pointer_modifier")),
                            None)
            node = nxt
        else:
            return None
    return None


def declares_function(decl: Node) -> bool:
    """True if the innermost derivation applied to the name is a function declarator."""
    innermost = ""
    node: Node | None = decl
    while node is not None and node.type not in ("identifier", "field_identifier"):
        if node.type in ("pointer_declarator", "array_declarator", "function_declarator"):
            innermost = node.type
        if node.type == "init_declarator" or node.type in DERIVED_DECLARATORS:
            nxt = node.child_by_field_name("declarator")
            if nxt is None:
                nxt = next((c for c in node.named_children
                            if c.type not in ("type_qualifier", "ms_pointer_modifier")), None)
            node = nxt
        else:
            break
    return innermost == "function_declarator"


def walk(node: Node) -> Iterator[Node]:
    """Pre-order traversal. A tree cursor: `Node.children` makes a list of new nodes
    at every level, which made the full walks of a 5,000-line file cost 30-50 ms each."""
    cursor = node.walk()
    while True:
        current = cursor.node
        assert current is not None
        yield current
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


class NodeIndex:
    """The nodes of some types in a tree, found in one pre-order walk: by type, in
    pre-order, with their pre-order numbers, so that a pass finds those of a subtree
    without walking it again (a subtree is the numbers from its root's on, as many
    as it has descendants). Only a subtree whose root is of an `anchors` type can be
    asked for."""

    def __init__(self, root: Node, types: frozenset[str], anchors: frozenset[str]) -> None:
        self._numbers: dict[str, list[int]] = {t: [] for t in types}
        self._nodes: dict[str, list[Node]] = {t: [] for t in types}
        self._anchors: dict[int, int] = {}  # an anchor's id: its number
        self._calls: dict[int, tuple[str | None, list[Node]]] = {}  # know_calls()
        cursor = root.walk()
        number = 0
        while True:
            node = cursor.node
            assert node is not None
            t = node.type
            if t in types:
                self._numbers[t].append(number)
                self._nodes[t].append(node)
            if t in anchors:
                self._anchors[node.id] = number
            number += 1
            if cursor.goto_first_child():
                continue
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent():
                    return

    def has(self, node: Node) -> bool:
        """Can `within` be asked about node's subtree?"""
        return node.id in self._anchors

    def all(self, t: str) -> list[Node]:
        """The nodes of type t, in pre-order."""
        return self._nodes[t]

    def within(self, node: Node, *types: str) -> list[Node]:
        """The nodes of these types in node's subtree (node included), in pre-order."""
        first = self._anchors[node.id]
        end = first + node.descendant_count
        found: list[tuple[int, Node]] = []
        for t in types:
            numbers = self._numbers[t]
            i, j = bisect.bisect_left(numbers, first), bisect.bisect_left(numbers, end)
            found += zip(numbers[i:j], self._nodes[t][i:j], strict=True)
        if len(types) > 1:
            found.sort(key=itemgetter(0))
        return [n for _, n in found]

    def know_calls(self) -> None:
        """Keeps call_name and call_args of every indexed call_expression: the checks and
        the lowering ask for them many times, after clang's facts come; this is done
        before."""
        self._calls = {n.id: (call_name(n), call_args(n))
                       for n in self._nodes.get("call_expression", [])}

    def call_name(self, call: Node) -> str | None:
        known = self._calls.get(call.id)
        return known[0] if known is not None else call_name(call)

    def call_args(self, call: Node) -> list[Node]:
        """call_args(call): a list the caller must not change."""
        known = self._calls.get(call.id)
        return known[1] if known is not None else call_args(call)


def call_name(call: Node) -> str | None:
    """The called identifier of a call_expression, or None for other callees."""
    fn = call.child_by_field_name("function")
    if fn is not None and fn.type == "identifier":
        return text(fn)
    return None


def call_args(call: Node) -> list[Node]:
    args = call.child_by_field_name("arguments")
    if args is None:
        return []
    return [c for c in args.named_children if c.type != "comment"]


def const_int(node: Node | None) -> int | None:
    """Value of a constant integer expression made of literals, or None."""
    if node is None:
        return None
    t = node.type
    if t == "number_literal":
        s = text(node).lower().rstrip("ul")
        try:
            if s.startswith("0x"):
                return int(s, 16)
            if s.startswith("0b"):
                return int(s[2:], 2)
            if len(s) > 1 and s.startswith("0") and s.isdigit():
                return int(s, 8)
            return int(s)
        except ValueError:
            return None
    if t == "parenthesized_expression":
        inner = [c for c in node.named_children if c.type != "comment"]
        return const_int(inner[0]) if len(inner) == 1 else None
    if t == "unary_expression":
        op = node.child_by_field_name("operator")
        val = const_int(node.child_by_field_name("argument"))
        if val is None or op is None:
            return None
        return {"-": -val, "+": val, "~": ~val}.get(text(op))
    if t == "binary_expression":
        a = const_int(node.child_by_field_name("left"))
        b = const_int(node.child_by_field_name("right"))
        op = node.child_by_field_name("operator")
        if a is None or b is None or op is None:
            return None
        o = text(op)
        try:
            return {
                "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                "/": lambda: int(a / b), "%": lambda: a % b,
                "<<": lambda: a << b, ">>": lambda: a >> b,
            }[o]()
        except (KeyError, ZeroDivisionError, ValueError):
            return None
    return None


def label_number(label: Node) -> int | None:
    """The n of a `THREAD_n:` label."""
    num = label.child_by_field_name("number")
    digits = re.sub(r"\D", "", text(num)) if num is not None else ""
    return int(digits) if digits else None
