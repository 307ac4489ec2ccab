"""In-place initialisation of a frame field from a C initialiser list.

A local variable of a threaded function lives in the heap frame, so `T x = {...};`
becomes stores into `_fp->x`. Copying from a temporary would put the whole object on the
C stack (`char buf[16 << 20] = {1};` would overflow it), so the list is turned into one
store per initialised member or element, after zeroing the object where the list leaves
part of it to zero: C's rules (C11 6.7.9) of brace elision, designators, string
literals for char arrays, unions and anonymous members, applied with clang's types.

Runs in the isolated clang child (`clang_view`): it needs clang's types and
tree-sitter's initialiser together. Returns None for what it does not handle (then the
lowering copies from a compound literal, still correct).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import clang.cindex as ci
import tree_sitter

from etcpre.passes.syntax import const_int

Node = tree_sitter.Node

_ARRAYS = (ci.TypeKind.CONSTANTARRAY, ci.TypeKind.INCOMPLETEARRAY)
_CHARS = (ci.TypeKind.CHAR_S, ci.TypeKind.SCHAR, ci.TypeKind.CHAR_U, ci.TypeKind.UCHAR)
_STRINGS = ("string_literal", "concatenated_string")


class Unsupported(Exception):
    """The planner leaves this initialiser to the compound-literal copy."""


@dataclass(frozen=True)
class Planned:
    path: str  # designator path from the variable: "", ".a", "[2].b"
    node: Node  # the initialising expression
    string: bool  # a string literal initialising a char array


def _canon(t: ci.Type) -> ci.Type:
    return t.get_canonical()


def _is_aggregate(t: ci.Type) -> bool:
    return _canon(t).kind in (*_ARRAYS, ci.TypeKind.RECORD)


def _is_union(t: ci.Type) -> bool:
    decl = _canon(t).get_declaration()
    return decl.kind == ci.CursorKind.UNION_DECL


def _members(t: ci.Type) -> list[tuple[str | None, ci.Type]]:
    """The subobjects an initialiser list fills, in order: (name or None for an
    anonymous member, type). Unnamed bit-fields take no initialiser."""
    t = _canon(t)
    out = []
    for f in t.get_fields():
        if f.is_bitfield() and not f.spelling:
            continue
        # an anonymous member has no name (is_anonymous() is about the member's type)
        out.append((f.spelling or None, f.type))
    return out


def _count(t: ci.Type) -> int:
    t = _canon(t)
    if t.kind == ci.TypeKind.CONSTANTARRAY:
        return t.element_count
    raise Unsupported("array of unknown size inside an initialiser")


class _Level:
    """One level of the current-object position: an aggregate and an index into it."""

    def __init__(self, t: ci.Type, path: str) -> None:
        self.type = _canon(t)
        self.path = path
        self.index = 0
        self.is_array = self.type.kind in _ARRAYS
        self.members = [] if self.is_array else _members(self.type)
        self.union = not self.is_array and _is_union(self.type)

    def size(self) -> int:
        return _count(self.type) if self.is_array else len(self.members)

    def exhausted(self) -> bool:
        if self.union and self.index > 0:
            return True
        return self.index >= self.size()

    def current(self) -> tuple[ci.Type, str]:
        if self.is_array:
            return self.type.element_type, f"{self.path}[{self.index}]"
        name, mtype = self.members[self.index]
        return mtype, self.path if name is None else f"{self.path}.{name}"


class Planner:
    """Turns `T x = { ... };` into stores. `type_of(node)` gives clang's type of an
    initialising expression (to tell a struct value from the start of an elided list)."""

    def __init__(self, type_of: Callable[[Node], ci.Type | None]) -> None:
        self.type_of = type_of
        self.stores: list[Planned] = []
        self.designated = False

    def plan(self, t: ci.Type, init: Node) -> list[Planned]:
        self._list(t, "", init)
        return self.stores

    def zero_first(self, t: ci.Type) -> bool:
        """Does the list leave part of the object to zero (or is that unclear)?"""
        if self.designated or any(s.string for s in self.stores):
            return True
        try:
            return _leaves(t) != len(self.stores)
        except Unsupported:
            return True

    def _list(self, t: ci.Type, path: str, init: Node) -> None:
        elems = [c for c in init.named_children if c.type != "comment"]
        if not _is_aggregate(t):
            if elems:  # `int x = {5};`: the first element
                first = elems[0]
                if first.type == "initializer_list":
                    self._list(t, path, first)
                else:
                    self.stores.append(Planned(path, first, False))
            return
        stack = [_Level(t, path)]
        for elem in elems:
            value = elem
            if elem.type == "initializer_pair":
                self.designated = True
                stack = self._designate(t, path, elem)
                value = elem.child_by_field_name("value")
                if value is None:
                    raise Unsupported("designator without value")
            if not stack:
                break  # excess initialisers: cc reports them
            self._place(stack, value)
            _advance(stack)

    def _designate(self, t: ci.Type, path: str, pair: Node) -> list[_Level]:
        stack = [_Level(t, path)]
        designators = pair.children_by_field_name("designator")
        for k, d in enumerate(designators):
            level = stack[-1]
            if d.type == "subscript_designator":
                if not level.is_array:
                    raise Unsupported("[index] designator for a non-array")
                expr = next((c for c in d.named_children if c.type != "comment"), None)
                index = const_int(expr)
                if index is None or index < 0:
                    raise Unsupported("non-literal array designator")
                level.index = index
            elif d.type == "field_designator":
                if level.is_array:
                    raise Unsupported(".field designator for an array")
                name = (d.named_children[0].text or b"").decode() if d.named_children else ""
                self._find_field(stack, name)
            else:
                raise Unsupported(f"designator {d.type}")
            if k + 1 < len(designators):
                sub_t, sub_path = stack[-1].current()
                if not _is_aggregate(sub_t):
                    raise Unsupported("designator into a scalar")
                stack.append(_Level(sub_t, sub_path))
        return stack

    def _find_field(self, stack: list[_Level], name: str) -> None:
        """Point the top level at member `name`, entering anonymous members."""
        level = stack[-1]
        for i, (mname, _) in enumerate(level.members):
            if mname == name:
                level.index = i
                return
        for i, (mname, mtype) in enumerate(level.members):
            if mname is None and _has_field(mtype, name):
                level.index = i
                inner = _Level(mtype, level.path)
                stack.append(inner)
                self._find_field(stack, name)
                return
        raise Unsupported(f"no member {name}")

    def _place(self, stack: list[_Level], value: Node) -> None:
        """Initialise the subobject at the position with `value`, eliding braces."""
        while True:
            sub_t, sub_path = stack[-1].current()
            if value.type == "initializer_list":
                self._list(sub_t, sub_path, value)
                return
            if not _is_aggregate(sub_t):
                self.stores.append(Planned(sub_path, value, False))
                return
            canon = _canon(sub_t)
            if canon.kind in _ARRAYS and value.type in _STRINGS and \
                    _canon(canon.element_type).kind in _CHARS:
                self.stores.append(Planned(sub_path, value, True))
                return
            vt = self.type_of(value)
            if vt is not None and canon.kind == ci.TypeKind.RECORD and \
                    _canon(vt).spelling.replace("const ", "") == canon.spelling.replace(
                        "const ", ""):
                self.stores.append(Planned(sub_path, value, False))
                return
            stack.append(_Level(sub_t, sub_path))  # brace elision: fill its first member


def _advance(stack: list[_Level]) -> None:
    stack[-1].index += 1
    while len(stack) > 1 and stack[-1].exhausted():
        stack.pop()
        stack[-1].index += 1
    if stack and stack[0].exhausted():
        stack.clear()


def _has_field(t: ci.Type, name: str) -> bool:
    for mname, mtype in _members(t):
        if mname == name or (mname is None and _has_field(mtype, name)):
            return True
    return False


def _leaves(t: ci.Type, depth: int = 0) -> int:
    """How many scalar stores a fully written list for t has."""
    if depth > 64:
        raise Unsupported("type nested too deeply")
    c = _canon(t)
    if c.kind in _ARRAYS:
        return _count(c) * _leaves(c.element_type, depth + 1)
    if c.kind == ci.TypeKind.RECORD:
        members = _members(c)
        if _is_union(c):
            return _leaves(members[0][1], depth + 1) if members else 0
        return sum(_leaves(m, depth + 1) for _, m in members)
    return 1
