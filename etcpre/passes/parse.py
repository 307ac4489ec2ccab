"""Pass 1, parse: the tree-sitter grammar for Threaded-C (grammar/) gives the syntax tree.

Syntax errors are ERROR and MISSING nodes; each becomes one diagnostic, so a file with
several mistakes reports all of them in one run.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import tree_sitter
import tree_sitter_threaded_c

from etcpre.diagnostics import DiagnosticSink
from etcpre.passes.text import WorkingText


def language() -> tree_sitter.Language:
    return tree_sitter.Language(tree_sitter_threaded_c.language())


@dataclass(frozen=True)
class ParseResult:
    working: WorkingText
    tree: tree_sitter.Tree

    @property
    def root(self) -> tree_sitter.Node:
        return self.tree.root_node


def tree(working: WorkingText) -> tree_sitter.Tree:
    """The syntax tree, without reporting (the translator parses again after each
    round of macro expansion; only the last parse reports)."""
    return tree_sitter.Parser(language()).parse(working.data)


def parse(working: WorkingText, sink: DiagnosticSink,
          parsed: tree_sitter.Tree | None = None) -> ParseResult:
    result = ParseResult(working, parsed if parsed is not None else tree(working))
    data = working.data
    for node in _error_nodes(result.root):
        offset = node.start_byte
        if node.is_missing:
            # a MISSING node has no width; point at the token that made it missing
            while offset < len(data) and data[offset:offset + 1] in b" \t":
                offset += 1
        sink.error(working.source, working.origin(offset), _describe(working, node))
    return result


def _error_nodes(root: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """Outermost ERROR nodes and every MISSING node, in source order."""
    if not root.has_error:
        return
    cursor = root.walk()
    while True:
        node = cursor.node
        assert node is not None
        descend = True
        if node.is_missing:
            yield node
            descend = False
        elif node.is_error:
            yield node
            descend = False
        elif not node.has_error:
            descend = False
        if descend and cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


def _describe(source: WorkingText, node: tree_sitter.Node) -> str:
    if node.is_missing:
        what = node.type if not node.is_named else node.type.replace("_", " ")
        return f"syntax error: expected '{what}'" if not node.is_named else (
            f"syntax error: expected {what}")
    first = node
    while first.child_count:
        first = first.children[0]
    token = source.text(first.start_byte, first.end_byte).strip()
    if not token:
        return "syntax error"
    if len(token) > 40:
        token = token[:37] + "..."
    if not token.isprintable():
        return "syntax error: unexpected character"
    return f"syntax error: unexpected '{token}'"
