"""The grammar's corpus, through the Python binding (so it is checked without the CLI).

Threaded-C files must give exactly their recorded trees, with no ERROR or MISSING
node. Files under c/ were recorded from tree-sitter-c 0.24.1 itself: both that
grammar and ours must still give exactly those trees, so plain C parses as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import corpus

CASES = [(path, case) for path in corpus.files() for case in corpus.read(path)]
IDS = [f"{path.relative_to(corpus.CORPUS)}::{case.name}" for path, case in CASES]


def _no_errors(node) -> list[str]:  # noqa: ANN001 - tree_sitter.Node
    bad = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.is_error or n.is_missing:
            bad.append(f"{n.type} at {n.start_point}")
        stack.extend(n.children)
    return bad


@pytest.mark.parametrize(("path", "case"), CASES, ids=IDS)
def test_threaded_c_grammar(path: Path, case: corpus.Case) -> None:
    root = corpus.tree(corpus.parser(c_only=False), case.source)
    assert _no_errors(root) == []
    assert corpus.normalize(str(root)) == corpus.normalize(case.expected)


@pytest.mark.parametrize(("path", "case"), [c for c in CASES if corpus.is_c(c[0])],
                         ids=[i for i, c in zip(IDS, CASES, strict=True) if corpus.is_c(c[0])])
def test_c_corpus_is_tree_sitter_c(path: Path, case: corpus.Case) -> None:
    root = corpus.tree(corpus.parser(c_only=True), case.source)
    assert corpus.normalize(str(root)) == corpus.normalize(case.expected)


def test_corpus_covers_the_thesis_and_every_primitive() -> None:
    names = " ".join(c.name for _, c in CASES)
    for fig in ("Fig. 2.3", "Fig. 2.6", "Fig. 2.16 (a)", "Fig. 2.17 (a)", "Fig. B.2 (a)"):
        assert fig in names
    text = " ".join(c.source for _, c in CASES)
    from etcpre.passes.primitives import CALL_PRIMITIVES, PRIMITIVES  # noqa: PLC0415

    for prim in [*PRIMITIVES, "THREADED", "GLOBAL", "SYNC_SLOTS", "SPTR"]:
        assert prim + ("(" if prim in CALL_PRIMITIVES else "") in text, prim
    assert len([1 for p, _ in CASES if corpus.is_c(p)]) >= 30
