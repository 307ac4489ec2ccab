"""The two rewrites that make a .tc text libclang's view (`clang_view` says what they
are and why): `T *GLOBAL p` shown as `T __etc_g *p`, and `INVOKE(n, f, a, b)` as
`INVOKE(n, f(a, b))`, with a prototype ahead of a start that comes before the
function's declaration. They are found in tree-sitter's tree by etcpre's process,
which hands them to the clang child while that loads libclang (this module does not
import it).
"""

from __future__ import annotations

import functools

import tree_sitter

from etcpre.passes import syntax
from etcpre.passes.primitives import CALL_PRIMITIVES, Kind
from etcpre.passes.text import Edit, apply

MARK = b"__etc_g "  # the address space's macro, defined by clang_view's prelude
_START = frozenset(n for n, p in CALL_PRIMITIVES.items() if p.kind is Kind.START)


def view_edits(root: tree_sitter.Node) -> list[Edit]:
    """The rewrites that make a text libclang's view (see the module docstring)."""
    qualifiers, starts = _view_nodes(root)
    edits = _global_edits(qualifiers)
    for call, _ in starts:
        edits += _start_edits(call)
    return edits + _forward_prototypes(root, edits, starts)


def _view_nodes(root: tree_sitter.Node) \
        -> tuple[list[tree_sitter.Node], list[tuple[tree_sitter.Node, tree_sitter.Node]]]:
    """The `GLOBAL` type qualifiers, and the calls that start a function (INVOKE,
    TOKEN, CALL) with the top-level item holding each, in the order of the text (one
    query per item: tree-sitter's matching is C, a walk over every node in Python was
    not)."""
    qualifiers: list[tree_sitter.Node] = []
    starts: list[tuple[tree_sitter.Node, tree_sitter.Node]] = []
    cursor = tree_sitter.QueryCursor(_view_query())
    for item in root.children:
        for _, captures in cursor.matches(item):
            if "global" in captures:
                qualifiers += captures["global"]
            else:
                starts += ((call, item) for call in captures["start"])
    return qualifiers, starts


@functools.lru_cache(maxsize=1)
def _view_query() -> tree_sitter.Query:
    from etcpre.passes.parse import language  # noqa: PLC0415 - as in _header_views

    names = " ".join(f'"{n}"' for n in sorted(_START))
    return tree_sitter.Query(language(), f"""
        ((type_qualifier) @global (#eq? @global "GLOBAL"))
        (call_expression function: (identifier) @name (#any-of? @name {names})) @start
    """)


def _global_edits(qualifiers: list[tree_sitter.Node]) -> list[Edit]:
    edits: list[Edit] = []
    for q in qualifiers:
        parent = q.parent
        if parent is not None and parent.type in ("pointer_declarator",
                                                  "abstract_pointer_declarator"):
            star = next((c for c in parent.children if c.type == "*"), None)
            if star is not None:
                edits.append(Edit(star.start_byte, star.start_byte, MARK))
        edits.append(Edit(q.start_byte, q.end_byte, b" " * (q.end_byte - q.start_byte)))
    return edits


def _forward_prototypes(root: tree_sitter.Node, edits: list[Edit],
                        starts: list[tuple[tree_sitter.Node, tree_sitter.Node]]) -> list[Edit]:
    """A threaded function started before the file declares it gets its prototype
    ahead of the first item that starts it, as the generated C has its parameter
    frame there (C would otherwise declare it implicitly, and its arguments go
    unchecked)."""
    declared: dict[str, int] = {}
    definitions: dict[str, tree_sitter.Node] = {}
    for item in root.children:
        if item.type in ("threaded_function_definition", "threaded_function_declaration"):
            name = item.child_by_field_name("name")
            if name is not None:
                declared.setdefault(syntax.text(name), item.start_byte)
                if item.type == "threaded_function_definition":
                    definitions.setdefault(syntax.text(name), item)
    out: list[Edit] = []
    done: set[str] = set()
    for node, item in starts:
        if item is root:
            continue
        args = syntax.call_args(node)
        fidx = 1 if syntax.call_name(node) == "INVOKE" else 0
        name = syntax.text(args[fidx]) if len(args) > fidx else ""
        if name in done or name not in definitions or declared[name] <= item.start_byte:
            continue
        done.add(name)
        out.append(Edit(item.start_byte, item.start_byte,
                        _header_view(definitions[name], edits) + b"; "))
    return out


def _header_view(definition: tree_sitter.Node, edits: list[Edit]) -> bytes:
    """`THREADED f(params)` of a definition as libclang's view shows it."""
    params = definition.child_by_field_name("parameters")
    start = definition.start_byte
    end = params.end_byte if params is not None else start
    data = (definition.text or b"")[: end - start]
    inside = [Edit(e.start - start, e.end - start, e.text) for e in edits
              if start <= e.start and e.end <= end]
    return apply(data, inside)[0]


def _start_edits(call: tree_sitter.Node) -> list[Edit]:
    """INVOKE(n, f, a, b) -> INVOKE(n, f(a, b)); TOKEN/CALL(f, a) -> TOKEN/CALL(f(a))."""
    arglist = call.child_by_field_name("arguments")
    if arglist is None:
        return []
    fidx = 1 if syntax.call_name(call) == "INVOKE" else 0
    parts = [c for c in arglist.children if c.type != "comment"]
    # parts: "(" a0 "," a1 "," ... ")"
    args = [c for c in parts if c.is_named]
    close = parts[-1] if parts and parts[-1].type == ")" else None
    if len(args) <= fidx or close is None:
        return []
    target = args[fidx]
    after = parts[parts.index(target) + 1:]
    if after and after[0].type == ",":
        return [Edit(after[0].start_byte, after[0].end_byte, b"("),
                Edit(close.start_byte, close.start_byte, b")")]
    return [Edit(target.end_byte, target.end_byte, b"()")]
